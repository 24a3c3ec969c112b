//! `[hosts]`: a lab topology built on this machine, remote agents, or
//! real hosts of a fleet inventory by role (and how those roles resolve).

use std::ops::Range;

use thiserror::Error;
use toml::Spanned;

use super::raw::{RawFleet, RawHosts, RawLab};
use super::validate::{header_span, to_u32, Ctx};
use super::{
    ErrorKind, Experiment, ExperimentError, FleetHosts, Hosts, LabPath, LabTopology, MAX_LAB_HOSTS,
};
use crate::inventory::{select, Format, Host, HostName, Inventory, LimitError};

/// Most agents.
const MAX_AGENTS: usize = 16;

/// Longest `hosts.fleet.inventory` path and `hosts.fleet.limit` pattern, bytes.
const MAX_PATH_BYTES: usize = 4096;

/// Namespaces of a lab; its top is [`MAX_LAB_HOSTS`].
const LAB_HOSTS: super::ranges::IntRange = int_range!(2..=32);
const _: () = assert!(LAB_HOSTS.hi == MAX_LAB_HOSTS as i64);

/// The `[hosts]` table: exactly one of `lab`, `agents` and `fleet`.
pub(super) fn parse_hosts(ctx: &Ctx<'_>, raw: &RawHosts) -> Result<Hosts, ExperimentError> {
    let hspan = header_span(ctx.text, "hosts");
    let structure = |why| Err(ctx.err(hspan.clone(), "hosts", ErrorKind::Structure(why)));
    match (&raw.lab, &raw.agents, &raw.fleet) {
        (Some(_), Some(_), None) => structure("give either hosts.lab or hosts.agents, not both"),
        (None, None, None) => structure(
            "give hosts.lab (a lab topology), hosts.agents (addresses) or hosts.fleet (an inventory)",
        ),
        (None, Some(agents), None) => parse_agents(ctx, agents, hspan.clone()).map(Hosts::Agents),
        (Some(lab), None, None) => parse_lab(ctx, lab, hspan.clone()).map(Hosts::Lab),
        (None, None, Some(fleet)) => parse_fleet(ctx, fleet).map(Hosts::Fleet),
        (_, _, Some(_)) => {
            structure("give one of hosts.lab, hosts.agents and hosts.fleet, not two")
        }
    }
}

/// `hosts.agents`: 1 to [`MAX_AGENTS`] addresses.
fn parse_agents(
    ctx: &Ctx<'_>,
    agents: &[Spanned<String>],
    hspan: Range<usize>,
) -> Result<Vec<String>, ExperimentError> {
    if agents.is_empty() {
        return Err(ctx.err(
            hspan,
            "hosts.agents",
            ErrorKind::Structure("at least one agent address"),
        ));
    }
    if agents.len() > MAX_AGENTS {
        return Err(ctx.err(
            hspan,
            "hosts.agents",
            ErrorKind::TooMany {
                what: "agents",
                count: agents.len(),
                max: MAX_AGENTS,
            },
        ));
    }
    let mut out = Vec::new();
    for (i, a) in agents.iter().enumerate() {
        let s = a.get_ref();
        if s.parse::<std::net::SocketAddr>().is_err() && s.parse::<std::net::IpAddr>().is_err() {
            return Err(ctx.bad(
                a.span(),
                &format!("hosts.agents[{i}]"),
                s,
                "an address such as \"192.0.2.7\" or \"[2001:db8::7]:7878\"",
            ));
        }
        out.push(s.clone());
    }
    Ok(out)
}

/// `[hosts.lab]`: the topology, jitter at most the delay.
fn parse_lab(
    ctx: &Ctx<'_>,
    lab: &RawLab,
    hspan: Range<usize>,
) -> Result<LabTopology, ExperimentError> {
    let path = match lab.path.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
        None | Some(("veth", _)) => LabPath::Veth,
        Some(("loopback", _)) => LabPath::Loopback,
        Some((other, span)) => {
            return Err(ctx.bad(span, "hosts.lab.path", other, "\"veth\" or \"loopback\""))
        }
    };
    let delay = float_range!("a delay of" 0 to 10000 "ms");
    let delay_ms = ctx
        .float(&lab.delay_ms, "hosts.lab.delay_ms", delay)?
        .unwrap_or(0.0);
    let jitter = float_range!("a jitter of" 0 to 10000 "ms");
    let jitter_ms = ctx
        .float(&lab.jitter_ms, "hosts.lab.jitter_ms", jitter)?
        .unwrap_or(0.0);
    if jitter_ms > delay_ms {
        let span = lab.jitter_ms.as_ref().map_or(hspan, Spanned::span);
        return Err(ctx.bad(span, "hosts.lab.jitter_ms", jitter_ms, "at most delay_ms"));
    }
    Ok(LabTopology {
        hosts: to_u32(ctx.int(&lab.hosts, "hosts.lab.hosts", 2, LAB_HOSTS)?),
        queues: to_u32(ctx.int(&lab.queues, "hosts.lab.queues", 1, int_range!(1..=64))?),
        rate_mbit: ctx.float(
            &lab.rate_mbit,
            "hosts.lab.rate_mbit",
            float_range!("a rate of" 0.001 to 100000 "Mbit/s"),
        )?,
        delay_ms,
        jitter_ms,
        loss_pct: ctx
            .float(
                &lab.loss_pct,
                "hosts.lab.loss_pct",
                float_range!("a loss of" 0 to 100 "%"),
            )?
            .unwrap_or(0.0),
        path,
    })
}

/// `[hosts.fleet]`: the inventory file, then the roles, each a host or role name.
fn parse_fleet(ctx: &Ctx<'_>, raw: &RawFleet) -> Result<FleetHosts, ExperimentError> {
    let inv = raw.inventory.get_ref();
    let path_ok = !inv.trim().is_empty()
        && inv.len() <= MAX_PATH_BYTES
        && !inv.chars().any(char::is_control)
        && Format::from_path(std::path::Path::new(inv)).is_some();
    if !path_ok {
        return Err(ctx.bad(
            raw.inventory.span(),
            "hosts.fleet.inventory",
            inv,
            "an inventory file (.toml, .yml/.yaml, or Ansible INI: .ini, .cfg or no extension)",
        ));
    }
    let name = |v: &Spanned<String>, key: &str| -> Result<String, ExperimentError> {
        let s = v.get_ref();
        if HostName::new(s).is_some() && !s.contains(['*', '?', ':']) {
            Ok(s.clone())
        } else {
            Err(ctx.bad(v.span(), key, s, "a host or role name of the inventory"))
        }
    };
    let server = name(&raw.server, "hosts.fleet.server")?;
    let clients = name(&raw.clients, "hosts.fleet.clients")?;
    if clients == server {
        return Err(ctx.err(
            raw.clients.span(),
            "hosts.fleet.clients",
            ErrorKind::Structure("the clients must be other hosts than the server"),
        ));
    }
    let probe = match &raw.probe {
        None => None,
        Some(p) => {
            let s = name(p, "hosts.fleet.probe")?;
            if s == server {
                return Err(ctx.err(
                    p.span(),
                    "hosts.fleet.probe",
                    ErrorKind::Structure("the probe runs on another host than the server"),
                ));
            }
            Some(s)
        }
    };
    let limit = match &raw.limit {
        None => None,
        Some(l) => {
            let s = l.get_ref();
            if s.trim().is_empty() || s.len() > MAX_PATH_BYTES || s.chars().any(char::is_control) {
                return Err(ctx.bad(
                    l.span(),
                    "hosts.fleet.limit",
                    s,
                    "a --limit pattern such as \"rack1:!db\"",
                ));
            }
            Some(s.clone())
        }
    };
    Ok(FleetHosts {
        inventory: inv.clone(),
        server,
        clients,
        probe,
        limit,
    })
}

/// A `[hosts.fleet]` whose names do not fit its inventory.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FleetRoleError {
    /// `limit` could not be applied.
    #[error("hosts.fleet.limit: {0}")]
    Limit(#[source] LimitError),
    /// A name that is no host or role of the (limited) inventory.
    #[error("hosts.fleet.{key}: {term:?} is no host or role of the inventory{}", if *.limited { " after hosts.fleet.limit" } else { "" })]
    NoMatch {
        /// `server`, `clients` or `probe`.
        key: &'static str,
        /// The name as written.
        term: String,
        /// Whether `limit` was applied first.
        limited: bool,
    },
    /// `server` or `probe` stands for more than one host.
    #[error("hosts.fleet.{key}: {term:?} is {count} hosts ({names}); name one host")]
    NotOne {
        /// `server` or `probe`.
        key: &'static str,
        /// The name as written.
        term: String,
        /// How many hosts it selects.
        count: usize,
        /// The first of them, comma-separated.
        names: String,
    },
    /// A `[[factor]] hosts` name that is neither a role nor a host of the run.
    #[error(
        "factor[{index}].hosts: {name:?} is no role or host of this experiment (known: {known})"
    )]
    FactorHost {
        /// The factor's index.
        index: usize,
        /// The name as written.
        name: String,
        /// The names accepted, comma-separated.
        known: String,
    },
    /// Two factors of one knob both name the same host.
    #[error("factor[{second}].hosts: {host} also takes factor[{first}]'s {knob}; one knob takes one level per host")]
    FactorTwice {
        /// The host's inventory name.
        host: String,
        /// The knob.
        knob: &'static str,
        /// The first factor naming the host.
        first: usize,
        /// The second.
        second: usize,
    },
    /// The server host is also a client or the probe.
    #[error("hosts.fleet: {host} is the server and also {role}; they must be other hosts")]
    Overlap {
        /// The server's inventory name.
        host: String,
        /// `a client` or `the probe`.
        role: &'static str,
    },
}

/// The hosts a `[hosts.fleet]` names, found in its inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetRoles {
    /// The host that runs the bench server.
    pub server: Host,
    /// The hosts that run bench clients, in inventory order.
    pub clients: Vec<Host>,
    /// The host that runs the latency probe, if any.
    pub probe: Option<Host>,
}

impl FleetRoles {
    /// The names each host answers to in `[[factor]] hosts`, server first
    /// then the clients in order: its role (`server`, `clients`) and its
    /// inventory name.
    pub fn scope_names(&self) -> Vec<Vec<String>> {
        std::iter::once(("server", &self.server))
            .chain(self.clients.iter().map(|c| ("clients", c)))
            .map(|(role, h)| vec![role.to_string(), h.name.to_string()])
            .collect()
    }

    /// Check `exp`'s `[[factor]] hosts` against these hosts: every name a
    /// role or a host of the run, and no host taking one knob from two
    /// factors.
    pub fn check_factor_hosts(&self, exp: &Experiment) -> Result<(), FleetRoleError> {
        let hosts = self.scope_names();
        for (index, names) in &exp.factor_hosts {
            if let Some(bad) = names.iter().find(|n| !hosts.iter().any(|h| h.contains(n))) {
                // The roles, then at most 16 host names (a fleet may be large).
                let mut known = vec!["server".to_string(), "clients".to_string()];
                known.extend(hosts.iter().filter_map(|h| h.get(1).cloned()).take(16));
                let more = hosts.len().saturating_sub(16);
                let mut known = known.join(", ");
                if more > 0 {
                    known.push_str(&format!(" and {more} more"));
                }
                return Err(FleetRoleError::FactorHost {
                    index: *index,
                    name: crate::text::printable_capped(bad, 64),
                    known,
                });
            }
        }
        for h in &hosts {
            let mut seen: Vec<(super::Knob, usize)> = Vec::new();
            for (i, f) in exp.factors.iter().enumerate() {
                if !exp.factor_applies(i, h) {
                    continue;
                }
                if let Some((_, first)) = seen.iter().find(|(k, _)| *k == f.knob) {
                    return Err(FleetRoleError::FactorTwice {
                        host: h.get(1).cloned().unwrap_or_default(),
                        knob: f.knob.name(),
                        first: *first,
                        second: i,
                    });
                }
                seen.push((f.knob, i));
            }
        }
        Ok(())
    }
}

impl FleetHosts {
    /// Find the server, clients and probe in `inv`, after `limit`: the server
    /// and the probe must be one host each, none of them the server.
    pub fn resolve(&self, inv: &Inventory) -> Result<FleetRoles, FleetRoleError> {
        let limited = match &self.limit {
            None => inv.clone(),
            Some(l) => Inventory {
                hosts: select(inv, l)
                    .map_err(FleetRoleError::Limit)?
                    .into_iter()
                    .cloned()
                    .collect(),
            },
        };
        let pick = |key: &'static str, term: &str| -> Result<Vec<Host>, FleetRoleError> {
            select(&limited, term)
                .map(|hs| hs.into_iter().cloned().collect())
                .map_err(|_| FleetRoleError::NoMatch {
                    key,
                    term: term.to_string(),
                    limited: self.limit.is_some(),
                })
        };
        let one = |key: &'static str, term: &str| -> Result<Host, FleetRoleError> {
            let mut hs = pick(key, term)?;
            if hs.len() == 1 {
                if let Some(h) = hs.pop() {
                    return Ok(h);
                }
            }
            let names: Vec<&str> = hs.iter().take(4).map(|h| h.name.as_str()).collect();
            Err(FleetRoleError::NotOne {
                key,
                term: term.to_string(),
                count: hs.len(),
                names: names.join(", "),
            })
        };
        let server = one("server", &self.server)?;
        let clients = pick("clients", &self.clients)?;
        let probe = match &self.probe {
            None => None,
            Some(p) => Some(one("probe", p)?),
        };
        let overlap = |role| FleetRoleError::Overlap {
            host: server.name.to_string(),
            role,
        };
        if clients.iter().any(|c| c.name == server.name) {
            return Err(overlap("a client"));
        }
        if probe.as_ref().is_some_and(|p| p.name == server.name) {
            return Err(overlap("the probe"));
        }
        Ok(FleetRoles {
            server,
            clients,
            probe,
        })
    }
}
