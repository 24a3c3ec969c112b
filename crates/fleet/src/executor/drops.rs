//! A run's drops by reason on a fleet: each host of the run (the client
//! and the server, or the server and every client of a synchronized run;
//! one host once) is asked `drops_start` over its long-lived session when
//! the run starts and `drops_finish` over the same session when it ends,
//! so a run opens no session of its own (a guest's agent takes one at a
//! time). A host that cannot watch gives one line instead, and the run
//! goes on: an agent that does not list `drops_start` in its `hello`'s
//! caps (an older nettune) is sent nothing; one that answers it cannot (no
//! BPF or perf events, not root) says why; a session that ended during
//! the run (a timeout, a guest's synchronized run) took its watch along.

use super::{one_session, FleetExecutor, Shared};
use crate::ops::doc_error;
use crate::proto::Request;
use model::drops::run::RunDrops;
use runner::exec::{DropsWatch, Executor, HostId};
use serde_json::Value;
use std::time::Duration;

/// The longest an agent keeps one run's watch, seconds: beyond any run
/// the runner bounds, and a watch the executor did not finish (it
/// crashed) ends with the session anyway.
pub(super) const DROPS_LIFETIME: u64 = 6 * 3600;

/// What a run's watch holds per host.
#[derive(Debug)]
enum Watched {
    /// The host's line, known at the start.
    Said(RunDrops),
    /// The host's agent watches; finished over `session`.
    Agent {
        host: String,
        session: Shared,
        deadline: Duration,
    },
}

/// The drops watch of one run on a fleet ([`FleetExecutor::start_drops`]).
#[derive(Debug)]
pub(super) struct FleetDrops(Vec<Watched>);

fn not_recorded(host: &str, why: impl std::fmt::Display) -> RunDrops {
    RunDrops::unavailable(
        host,
        format!("drops by reason: not recorded on {host}: {why}"),
    )
}

impl FleetExecutor {
    /// The distinct hosts of a run of `client` against `server`, the
    /// server first.
    fn run_hosts(&self, client: HostId, server: HostId) -> Vec<HostId> {
        let mut hosts = vec![server];
        let clients = if self.synchronized(client, server) {
            self.load.clone()
        } else {
            vec![client]
        };
        for c in clients {
            if !hosts.contains(&c) {
                hosts.push(c);
            }
        }
        hosts
    }

    /// Start watching the drops of every host of a run.
    pub(super) fn start_drops(&mut self, client: HostId, server: HostId) -> FleetDrops {
        let sync = self.synchronized(client, server);
        let hosts = self.run_hosts(client, server);
        FleetDrops(hosts.into_iter().map(|h| self.start_one(h, sync)).collect())
    }

    fn start_one(&mut self, h: HostId, sync: bool) -> Watched {
        let host = self.host_name(h);
        let Some(slot) = self.hosts.get(h.0) else {
            return Watched::Said(not_recorded(&host, "no such host"));
        };
        if sync && one_session(&slot.job.transport) {
            // The synchronized run ends the guest's long-lived session
            // (its agent port takes one at a time) and its watch with it.
            return Watched::Said(not_recorded(
                &host,
                "a run of several clients reaches this guest over sessions of its own, and its agent takes one session at a time",
            ));
        }
        let session = slot.session.clone();
        let deadline = self.cfg.opts.deadline;
        let peer = match self.with_session(h, deadline, |s| s.peer().clone()) {
            Ok(p) => p,
            Err(e) => return Watched::Said(not_recorded(&host, e)),
        };
        if !peer.caps.iter().any(|c| c == "drops_start") {
            return Watched::Said(not_recorded(
                &host,
                format!(
                    "its agent (nettune {}) is older and does not serve drops_start",
                    peer.nettune_version
                ),
            ));
        }
        let req = Request::DropsStart {
            lifetime: Some(DROPS_LIFETIME),
        };
        match self.request(h, &req, deadline) {
            Ok((v, 0)) if v.get("watching").and_then(Value::as_bool) == Some(true) => {
                Watched::Agent {
                    host,
                    session,
                    deadline,
                }
            }
            Ok((v, 0)) => Watched::Said(RunDrops::unavailable(
                &host,
                v.get("unavailable")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("drops_start answered {v}"), str::to_string),
            )),
            Ok((v, _)) => Watched::Said(not_recorded(&host, doc_error(&v))),
            Err(e) => Watched::Said(not_recorded(&host, e)),
        }
    }
}

/// `drops_finish` over `session`: the agent's entry under the inventory
/// name `host`, or the line saying why none.
fn finish_one(host: &str, session: &Shared, deadline: Duration) -> RunDrops {
    let mut g = session.lock();
    let Some(s) = g.as_mut() else {
        return not_recorded(
            host,
            "its agent's session ended during the run, and the watch with it",
        );
    };
    s.renew(deadline);
    match s.json(&Request::DropsFinish) {
        Ok((v, 0)) => match serde_json::from_value::<RunDrops>(v) {
            Ok(mut d) => {
                // The agent names its kernel's host; results name the
                // inventory's.
                d.host = host.to_string();
                d
            }
            Err(e) => not_recorded(host, format!("drops_finish's answer: {e}")),
        },
        Ok((v, _)) => not_recorded(host, doc_error(&v)),
        Err(f) => {
            drop(g);
            // As a failed step: a timeout ends the session (the next step
            // connects again); a closed pipe loses the host.
            match f.kind {
                "timeout" => session.end(),
                "protocol" => session.broke(f.message.clone()),
                _ => {}
            }
            not_recorded(host, f.message)
        }
    }
}

impl DropsWatch for FleetDrops {
    fn finish(self: Box<Self>) -> Vec<RunDrops> {
        self.0
            .into_iter()
            .map(|w| match w {
                Watched::Said(d) => d,
                Watched::Agent {
                    host,
                    session,
                    deadline,
                } => finish_one(&host, &session, deadline),
            })
            .collect()
    }
}
