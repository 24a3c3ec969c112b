//! The experiment runner's [`Executor`] over a fleet's agents: `nettune
//! experiment` with `[hosts.fleet]` (docs/fleet.md, "Experiments on a
//! fleet").
//!
//! One long-lived [`Session`] per host, each step under its own deadline
//! ([`Session::renew`]). With one load client, `bench` starts `nettune
//! serve` on the server host's agent once (again when a bench finds no
//! server) and runs `bench` on the client's agent against the server's
//! address. With several ([`FleetExecutor::load_from`]), each run is a
//! `fleet bench` ([`crate::bench::run`]: a server for the run, every
//! client's flows started at the same instant) and its clients' results are
//! added up into one ([`crate::merged`]). `inspect`, `doctor` and
//! `plan` are the agent's requests; `apply` is `fleet apply`'s own
//! (through the host's journal, a confirm deadline when the plan can cut
//! the path, a failed apply rolled back) over a fresh session; `rollback`
//! rolls back every generation applied since the last rollback.
//!
//! An agent whose pipe closes (killed, its ssh connection gone) or that
//! cannot be reached again is [`ExecError::HostLost`]: nothing more is sent
//! to it, and [`FleetExecutor::lost`] says which generation stays applied
//! there.
//!
//! Each run's drops by reason ([`Executor::watch_drops`]) are watched by
//! the agents of the run's hosts over their long-lived sessions
//! (`drops_start`, `drops_finish`; the `drops` module).

use crate::bench::{self, Spec, Target};
use crate::fanout::{fan_out, Failure, Options, Session};
use crate::merged::{self, Part};
use crate::ops::{doc_error, HostReport, Job, Outcome, PlanFrom};
use crate::proto::Request;
use model::bench::result::BenchResult;
use model::findings::Report;
use model::plan::Plan;
use model::snapshot::HostSnapshot;
use runner::exec::{DropsWatch, ExecError, Executor, HostId, NotApplicableKind};
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

mod address;
mod args;
mod drops;

pub use address::server_address;
use args::{flag, only, unsupported};

/// How a [`FleetExecutor`] reaches its hosts and applies.
#[derive(Debug, Clone)]
pub struct Config {
    /// Connecting and every step but a bench (which has the runner's
    /// deadline) within `deadline`; `parallel` hosts connected at once.
    pub opts: Options,
    /// Seconds a host waits for the confirm of a plan that can cut the path
    /// (`tune::risk`) before rolling it back by itself; `None`: no deadline.
    pub confirm_within: Option<u32>,
    /// The token of this run's server (clients prove it; never in argv).
    pub token: Option<String>,
}

/// A host the run lost, and what stays applied there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostHost {
    /// Inventory name.
    pub host: String,
    /// What was seen.
    pub reason: String,
    /// The oldest generation applied since the last rollback (it and every
    /// newer one stay in force); `None`: nothing of this run.
    pub generation: Option<u32>,
}

/// A host's long-lived session (none until connected, or after a step
/// ended it), shared with the drops watch of the run going on, which
/// finishes over it; and why its pipe closed when that watch saw it (the
/// host is lost at its next step, as if that step had seen it).
#[derive(Debug, Clone, Default)]
struct Shared(Arc<Mutex<Option<Session>>>, Arc<Mutex<Option<String>>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Option<Session>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's pipe closed: it ends, and the host is lost for `reason`.
    fn broke(&self, reason: String) {
        self.end();
        *self.1.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
    }

    fn take_broken(&self) -> Option<String> {
        self.1.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// End the session (the next step connects again).
    fn end(&self) {
        *self.lock() = None;
    }
}

#[derive(Debug)]
struct Slot {
    job: Job,
    session: Shared,
    lost: Option<String>,
    /// The oldest generation applied since the last rollback.
    applied: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Serving {
    host: HostId,
    port: u16,
    max_duration: u64,
}

/// [`Executor`] over agent sessions; host `i` is the `i`th job.
#[derive(Debug)]
pub struct FleetExecutor {
    hosts: Vec<Slot>,
    cfg: Config,
    routes: Vec<(HostId, HostId, String)>,
    serving: Option<Serving>,
    /// The clients that load the server together (more than one: every
    /// run is a synchronized `fleet bench`).
    load: Vec<HostId>,
}

/// Longest test a server started here accepts at least, seconds.
const MIN_MAX_DURATION: u64 = 60;

/// Time from the last clock estimate to a synchronized start (`fleet
/// bench`'s default `--start-margin`).
const START_MARGIN: Duration = Duration::from_secs(2);

impl FleetExecutor {
    /// An executor over `jobs` (nothing connected yet).
    pub fn new(jobs: Vec<Job>, cfg: Config) -> FleetExecutor {
        FleetExecutor {
            hosts: jobs
                .into_iter()
                .map(|job| Slot {
                    job,
                    session: Shared::default(),
                    lost: None,
                    applied: None,
                })
                .collect(),
            cfg,
            routes: Vec::new(),
            serving: None,
            load: Vec::new(),
        }
    }

    /// Every run's load comes from all of `clients` at once (each reaches
    /// the server by its [`route`](Self::route)): a bench whose client is
    /// one of them runs on every one, started together, and answers their
    /// merged result. One client (or none): the bench runs on its client
    /// alone, as without this call.
    pub fn load_from(&mut self, clients: Vec<HostId>) {
        self.load = clients;
    }

    /// Whether a bench of `client` against `server` is a synchronized run
    /// of every load client ([`load_from`](Self::load_from)).
    fn synchronized(&self, client: HostId, server: HostId) -> bool {
        client != server && self.load.len() > 1 && self.load.contains(&client)
    }

    /// `client` reaches `server`'s bench server at `address` (default: the
    /// server's inventory name).
    pub fn route(&mut self, client: HostId, server: HostId, address: String) {
        self.routes.retain(|(c, s, _)| (*c, *s) != (client, server));
        self.routes.push((client, server, address));
    }

    /// Connect to every host, `parallel` at once; the hosts that failed,
    /// each with its reason (ssh's own words, another version...).
    pub fn connect_all(&mut self) -> Vec<(String, Failure)> {
        let opts = &self.cfg.opts;
        let jobs: Vec<&Job> = self.hosts.iter().map(|s| &s.job).collect();
        let sessions = fan_out(&jobs, opts.parallel, |j| Session::connect(j, opts));
        let mut failed = Vec::new();
        for (slot, r) in self.hosts.iter_mut().zip(sessions) {
            match r {
                Ok(s) => *slot.session.lock() = Some(s),
                Err(f) => failed.push((slot.job.host.clone(), f)),
            }
        }
        failed
    }

    /// The hosts lost so far.
    pub fn lost(&self) -> Vec<LostHost> {
        self.hosts
            .iter()
            .filter_map(|s| {
                s.lost.as_ref().map(|reason| LostHost {
                    host: s.job.host.clone(),
                    reason: reason.clone(),
                    generation: s.applied,
                })
            })
            .collect()
    }

    /// End `h`'s long-lived session (the next step connects again); a
    /// bench server its agent ran goes with it, so the next bench starts
    /// another.
    fn end_session(&mut self, h: HostId) {
        if let Some(slot) = self.hosts.get_mut(h.0) {
            slot.session.end();
        }
        if self.serving.is_some_and(|s| s.host == h) {
            self.serving = None;
        }
    }

    fn slot(&mut self, h: HostId) -> Result<&mut Slot, ExecError> {
        self.hosts.get_mut(h.0).ok_or(ExecError::NoHost(h))
    }

    /// `f` on `h`'s session with a fresh `deadline`, connecting again when
    /// an earlier step ended it; a host already lost, or one that cannot be
    /// reached again, is [`ExecError::HostLost`].
    fn with_session<R>(
        &mut self,
        h: HostId,
        deadline: Duration,
        f: impl FnOnce(&mut Session) -> R,
    ) -> Result<R, ExecError> {
        let opts = self.cfg.opts.clone();
        let slot = self.slot(h)?;
        if let Some(reason) = slot.session.take_broken() {
            return Err(lose(slot, reason));
        }
        if let Some(reason) = &slot.lost {
            return Err(ExecError::HostLost {
                host: slot.job.host.clone(),
                reason: reason.clone(),
            });
        }
        let shared = slot.session.clone();
        let mut g = shared.lock();
        if g.is_none() {
            match Session::connect(&slot.job, &opts) {
                Ok(s) => *g = Some(s),
                Err(f) => {
                    drop(g);
                    return Err(lose(slot, format!("reconnecting: {}", f.message)));
                }
            }
        }
        match g.as_mut() {
            Some(s) => {
                s.renew(deadline);
                Ok(f(s))
            }
            None => Err(ExecError::NoHost(h)),
        }
    }

    /// One request on `h`'s long-lived session within `deadline`.
    fn request(
        &mut self,
        h: HostId,
        req: &Request,
        deadline: Duration,
    ) -> Result<(Value, u8), ExecError> {
        let r = self.with_session(h, deadline, |s| s.json(req))?;
        r.map_err(|f| match self.hosts.get_mut(h.0) {
            Some(slot) => failed(slot, req.name(), f, deadline),
            None => ExecError::NoHost(h),
        })
    }

    /// [`request`](Self::request) with the step deadline; a document with
    /// a non-zero status fails naming its error.
    fn ok_json(&mut self, h: HostId, req: &Request) -> Result<Value, ExecError> {
        let d = self.cfg.opts.deadline;
        match self.request(h, req, d)? {
            (v, 0) => Ok(v),
            (v, code) => Err(ExecError::Failed {
                what: format!("{} on {}", req.name(), self.host_name(h)),
                code: Some(i32::from(code)),
                stderr: doc_error(&v),
            }),
        }
    }

    /// The port of a server on `server` taking tests of `secs`, started
    /// (or started again for longer tests) as needed.
    fn serve(&mut self, server: HostId, secs: u64) -> Result<u16, ExecError> {
        if let Some(s) = self.serving {
            if s.host == server && s.max_duration >= secs {
                return Ok(s.port);
            }
            self.stop_serving();
        }
        let max_duration = secs.max(MIN_MAX_DURATION);
        let req = Request::Serve {
            port: 0,
            max_duration: Some(max_duration),
            lifetime: None,
            token: self.cfg.token.clone(),
            clients: Some(1),
        };
        let v = self.ok_json(server, &req)?;
        let port = v
            .get("port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p != 0)
            .ok_or_else(|| ExecError::Failed {
                what: format!("serve on {}", self.host_name(server)),
                code: None,
                stderr: format!("serve answered without a port: {v}"),
            })?;
        self.serving = Some(Serving {
            host: server,
            port,
            max_duration,
        });
        Ok(port)
    }

    /// Stop the server this executor started, if any (best effort).
    fn stop_serving(&mut self) {
        if let Some(s) = self.serving.take() {
            let d = self.cfg.opts.deadline.min(Duration::from_secs(10));
            let _ = self.request(s.host, &Request::StopServe, d);
        }
    }

    fn address(&self, client: HostId, server: HostId) -> String {
        if client == server {
            // The runner's overhead runs: over the host's loopback.
            return "127.0.0.1".into();
        }
        self.routes
            .iter()
            .find(|(c, s, _)| (*c, *s) == (client, server))
            .map(|(_, _, a)| a.clone())
            .unwrap_or_else(|| self.host_name(server))
    }

    fn bench_once(
        &mut self,
        client: HostId,
        server: HostId,
        args: &[String],
        deadline: Duration,
    ) -> Result<BenchResult, ExecError> {
        let port = self.serve(server, deadline.as_secs())?;
        let mut args = args.to_vec();
        args.extend(["--port".to_string(), port.to_string()]);
        let req = Request::Bench {
            server: self.address(client, server),
            args,
            start_at_unix_ns: None,
            token: self.cfg.token.clone(),
        };
        let what = format!(
            "bench on {} to {}",
            self.host_name(client),
            self.host_name(server)
        );
        match self.request(client, &req, deadline)? {
            (v, 0) => typed(&what, v),
            (v, code) => Err(ExecError::Failed {
                what,
                code: Some(i32::from(code)),
                stderr: doc_error(&v),
            }),
        }
    }
}

impl FleetExecutor {
    /// One run with every load client against `server`, started together
    /// (`fleet bench`'s synchronized start), their results merged. A host
    /// already lost gets nothing; a host whose agent cannot be reached or
    /// whose pipe closes is lost; any client that fails fails the run,
    /// named.
    fn bench_all(
        &mut self,
        server: HostId,
        args: &[String],
        deadline: Duration,
    ) -> Result<BenchResult, ExecError> {
        let load = self.load.clone();
        for h in std::iter::once(server).chain(load.iter().copied()) {
            let slot = self.slot(h)?;
            if let Some(reason) = &slot.lost {
                return Err(ExecError::HostLost {
                    host: slot.job.host.clone(),
                    reason: reason.clone(),
                });
            }
        }
        // A run brings its own server: the one-client path's is not needed.
        self.stop_serving();
        // It reaches every host over sessions of its own: a guest's
        // long-lived one would hold its only port ([`one_session`]).
        for h in std::iter::once(server).chain(load.iter().copied()) {
            if one_session(&self.slot(h)?.job.transport) {
                self.end_session(h);
            }
        }
        let server_job = self.slot(server)?.job.clone();
        let mut clients = Vec::with_capacity(load.len());
        for c in &load {
            clients.push(Target {
                job: self.slot(*c)?.job.clone(),
                server: 0,
                address: self.address(*c, server),
            });
        }
        let spec = Spec {
            servers: vec![server_job],
            clients,
            probes: Vec::new(),
            args: args.to_vec(),
            probe_args: Vec::new(),
            port: 0,
            margin: START_MARGIN,
            samples: crate::clock::DEFAULT_SAMPLES,
            window: deadline,
            token: self.cfg.token.clone(),
        };
        let mut opts = self.cfg.opts.clone();
        opts.deadline = opts
            .deadline
            .saturating_add(deadline)
            .saturating_add(START_MARGIN);
        let rep = bench::run(&spec, &opts);
        // The server first: when it failed, its clients did not run.
        if let Some(f) = rep.servers.first().and_then(|s| s.error.clone()) {
            return Err(self.run_failed(server, "serve", f, opts.deadline));
        }
        let mut failed: Vec<(HostId, Failure)> = Vec::new();
        for (h, c) in load
            .iter()
            .zip(rep.hosts.iter().filter(|h| h.role == "client"))
        {
            if let Some(f) = &c.error {
                failed.push((*h, f.clone()));
            } else if c.result.is_none() {
                failed.push((
                    *h,
                    Failure {
                        kind: "protocol",
                        message: format!("{}: no bench result", c.host),
                    },
                ));
            }
        }
        if !failed.is_empty() {
            // A lost host first: the runner stops the run for it.
            failed.sort_by_key(|(_, f)| !lost_kind(f));
            let mut errs: Vec<ExecError> = Vec::new();
            for (h, f) in failed {
                errs.push(self.run_failed(h, "bench", f, opts.deadline));
            }
            if errs.len() == 1 || matches!(errs.first(), Some(ExecError::HostLost { .. })) {
                if let Some(e) = errs.into_iter().next() {
                    return Err(e);
                }
                return Err(ExecError::NoHost(server));
            }
            let all: Vec<String> = errs.iter().map(ToString::to_string).collect();
            return Err(ExecError::Failed {
                what: format!(
                    "bench of {} client(s) to {}",
                    load.len(),
                    self.host_name(server)
                ),
                code: None,
                stderr: all.join("; "),
            });
        }
        let parts: Vec<Part<'_>> = rep
            .hosts
            .iter()
            .filter(|h| h.role == "client")
            .filter_map(|h| {
                h.result.as_ref().map(|r| Part {
                    host: &h.host,
                    result: r,
                })
            })
            .collect();
        let what = || {
            format!(
                "merging the bench results of {} client(s) to {}",
                load.len(),
                self.host_name(server)
            )
        };
        let mut m = merged::merge(&parts, rep.skew_ns).map_err(|e| ExecError::Failed {
            what: what(),
            code: None,
            stderr: e.to_string(),
        })?;
        if let (Some(w), Some(a)) = (&rep.window, &rep.aggregate) {
            m.notes.push(format!(
                "over the common window of {:.3} s (every client running) the clients together made {:.1} {}/s, {:.3} Mbit/s",
                w.seconds,
                a.per_sec,
                if a.unit.is_empty() { "msgs" } else { &a.unit },
                a.bits_per_sec / 1e6
            ));
        }
        m.notes.extend(rep.notes.iter().cloned());
        Ok(m)
    }

    /// A host's failure in a synchronized run: one that could not be
    /// reached or whose pipe closed is lost; a timeout; else the step failed.
    fn run_failed(&mut self, h: HostId, what: &str, f: Failure, after: Duration) -> ExecError {
        match self.hosts.get_mut(h.0) {
            Some(slot) if lost_kind(&f) => lose(slot, f.message),
            Some(slot) => failed(slot, what, f, after),
            None => ExecError::NoHost(h),
        }
    }
}

/// A failure of a fresh session that loses the host: it could not be
/// reached (as a long-lived session that cannot connect again), or its
/// pipe closed.
fn lost_kind(f: &Failure) -> bool {
    matches!(f.kind, "transport" | "protocol")
}

impl Drop for FleetExecutor {
    fn drop(&mut self) {
        self.stop_serving();
    }
}

/// Mark `slot` lost for `reason`; its [`ExecError::HostLost`].
/// Whether the transport's agent takes one session at a time: a QEMU
/// guest's agent port is one virtio-serial port behind QEMU's socket
/// chardev, which serves one client; a second connection waits unanswered
/// until the first closes.
fn one_session(t: &model::inventory::Transport) -> bool {
    matches!(t, model::inventory::Transport::Guest { .. })
}

fn lose(slot: &mut Slot, reason: String) -> ExecError {
    slot.session.end();
    slot.lost = Some(reason.clone());
    ExecError::HostLost {
        host: slot.job.host.clone(),
        reason,
    }
}

/// A failed request on `slot`'s session: a closed pipe loses the host; a
/// timeout ends the session (the agent was killed; the next step connects
/// again); an error answer is the step's failure.
fn failed(slot: &mut Slot, what: &str, f: Failure, deadline: Duration) -> ExecError {
    match f.kind {
        "protocol" => lose(slot, f.message),
        "timeout" => {
            slot.session.end();
            ExecError::Timeout {
                what: format!("{what} on {}", slot.job.host),
                after: deadline,
            }
        }
        _ => ExecError::Failed {
            what: format!("{what} on {}", slot.job.host),
            code: None,
            stderr: f.message,
        },
    }
}

/// Whether a bench failure says the server is not there (any more).
fn no_server(e: &ExecError) -> bool {
    match e {
        ExecError::Failed { stderr, .. } => {
            stderr.contains("refused") || stderr.contains("reset by peer")
        }
        _ => false,
    }
}

/// An agent's answer read as the type its request promises;
/// [`ExecError::Malformed`] naming `what` (the call and host) when it is not.
fn typed<T: serde::de::DeserializeOwned>(what: &str, v: Value) -> Result<T, ExecError> {
    serde_json::from_value(v).map_err(|source| ExecError::Malformed {
        what: what.to_string(),
        source,
    })
}

impl Executor for FleetExecutor {
    fn hosts(&self) -> usize {
        self.hosts.len()
    }

    fn host_name(&self, host: HostId) -> String {
        self.hosts
            .get(host.0)
            .map_or_else(|| host.to_string(), |s| s.job.host.clone())
    }

    fn bench(
        &mut self,
        client: HostId,
        server: HostId,
        args: &[String],
        deadline: Duration,
    ) -> Result<BenchResult, ExecError> {
        if self.synchronized(client, server) {
            return self.bench_all(server, args, deadline);
        }
        match self.bench_once(client, server, args, deadline) {
            Err(e) if no_server(&e) => {
                // The server went (killed, its lifetime): start it again, once.
                self.serving = None;
                let _ = self.request(server, &Request::StopServe, self.cfg.opts.deadline);
                self.bench_once(client, server, args, deadline)
            }
            r => r,
        }
    }

    fn watch_drops(&mut self, client: HostId, server: HostId) -> Box<dyn DropsWatch> {
        Box::new(self.start_drops(client, server))
    }

    fn inspect(&mut self, host: HostId) -> Result<HostSnapshot, ExecError> {
        let root = self.slot(host)?.job.root.clone();
        let v = self.ok_json(
            host,
            &Request::Inspect {
                root,
                iface: Vec::new(),
            },
        )?;
        typed(&format!("inspect on {}", self.host_name(host)), v)
    }

    fn doctor(&mut self, host: HostId, args: &[String]) -> Result<Report, ExecError> {
        let name = self.host_name(host);
        only(args, &["--sample", "--profile", "--bdp", "--allowance"])
            .map_err(|a| unsupported("doctor", &name, a))?;
        let seconds = match flag(args, "--sample") {
            Some(s) => Some(
                model::units::parse_seconds(s)
                    .map_err(|e| unsupported("doctor", &name, &format!("--sample {s}: {e}")))?,
            ),
            None => None,
        };
        let root = self.slot(host)?.job.root.clone();
        let req = Request::Doctor {
            seconds,
            root,
            profile: flag(args, "--profile").cloned(),
            bdp: flag(args, "--bdp").cloned(),
            allowance: flag(args, "--allowance").cloned(),
        };
        // Doctor's severity statuses 0..=2 are findings, not failures.
        let d = self.cfg.opts.deadline;
        match self.request(host, &req, d)? {
            (v, 0..=2) => typed(&format!("doctor on {name}"), v),
            (v, code) => Err(ExecError::Failed {
                what: format!("doctor on {name}"),
                code: Some(i32::from(code)),
                stderr: doc_error(&v),
            }),
        }
    }

    fn plan(&mut self, host: HostId, args: &[String]) -> Result<Plan, ExecError> {
        let name = self.host_name(host);
        only(
            args,
            &["--profile", "--iface", "--cpus", "--exclude-cpus", "--bdp"],
        )
        .map_err(|a| unsupported("plan", &name, a))?;
        let root = self.slot(host)?.job.root.clone();
        let req = Request::Plan {
            profile: flag(args, "--profile")
                .cloned()
                .unwrap_or_else(|| "balanced".into()),
            root,
            iface: flag(args, "--iface")
                .map(|i| i.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
            cpus: flag(args, "--cpus").cloned(),
            exclude_cpus: flag(args, "--exclude-cpus").cloned(),
            bdp: flag(args, "--bdp").cloned(),
        };
        let v = self.ok_json(host, &req)?;
        typed(&format!("plan on {name}"), v)
    }

    fn apply(&mut self, host: HostId, plan: &Plan) -> Result<(), ExecError> {
        // Lost already: nothing more goes there.
        self.with_session(host, self.cfg.opts.deadline, |_| ())?;
        let plan = serde_json::to_value(plan).map_err(|source| ExecError::Malformed {
            what: format!("apply on {}", self.host_name(host)),
            source,
        })?;
        let opts = self.cfg.opts.clone();
        // A cell's plan reloads a module only when its factor says
        // `reload = true` (it carries `options.reload_modules` then).
        let how = crate::apply::How {
            force: false,
            confirm_within: self.cfg.confirm_within,
            allow_reload: false,
        };
        // A guest's agent takes one session at a time ([`one_session`]).
        if one_session(&self.slot(host)?.job.transport) {
            self.end_session(host);
        }
        let slot = self.slot(host)?;
        let job = slot.job.clone();
        // `fleet apply`'s own steps, over a session of their own (a
        // confirm goes over yet another): the long-lived one stays, except
        // on a guest (above).
        let s = Session::connect(&job, &opts)
            .map_err(|f| lose(slot, format!("connecting to apply: {}", f.message)))?;
        let rep = HostReport::new(&job, &opts);
        let rep = crate::apply::apply(s, &job, &PlanFrom::Document(plan), how, &opts, rep);
        if rep.outcome == Outcome::Ok {
            if let Some(g) = rep.result.as_ref().and_then(crate::apply::generation) {
                slot.applied = Some(slot.applied.map_or(g, |a| a.min(g)));
            }
            return Ok(());
        }
        let why = rep.error.unwrap_or(Failure {
            kind: "remote",
            message: format!("{}: apply failed", job.host),
        });
        let what = format!("apply on {}", job.host);
        match (why.kind, rep.outcome) {
            // The agent went away mid-apply: what it left is unknown.
            ("protocol" | "transport", _) => Err(lose(slot, why.message)),
            (_, Outcome::RollbackFailed) => Err(ExecError::Failed {
                what,
                code: rep.code.map(i32::from),
                stderr: why.message,
            }),
            // The agent answered the kind: never read from its words.
            ("knob_absent", _) => Err(ExecError::not_applicable(
                NotApplicableKind::KnobAbsent,
                why.message,
            )),
            ("not_root", _) => Err(ExecError::NotRoot {
                what,
                reason: why.message,
            }),
            _ => Err(ExecError::Failed {
                what,
                code: rep.code.map(i32::from),
                stderr: why.message,
            }),
        }
    }

    fn rollback(&mut self, host: HostId) -> Result<(), ExecError> {
        let slot = self.slot(host)?;
        let Some(id) = slot.applied else {
            // Nothing applied since the last rollback.
            return Ok(());
        };
        let req = Request::Rollback {
            root: slot.job.root.clone(),
            state_dir: slot.job.state_dir.clone(),
            id: Some(id),
            force: false,
        };
        self.ok_json(host, &req)?;
        if let Some(slot) = self.hosts.get_mut(host.0) {
            slot.applied = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
