//! The search space of a lab host: which factors to vary for an objective,
//! their current level (read from the host snapshot) and the levels worth
//! trying, each probed on every host through `tune::levels::cell_plan` (the
//! experiment's not-applicable path): a level a host cannot take is left
//! out with the reason.

use std::fmt;

use model::experiment::{Factor, Knob, Level};
use model::plan::NetnsScope;
use model::snapshot::{HostSnapshot, Interface, Probe};
use tune::autotune::Objective;

use crate::exec::{ExecError, Executor, HostId};
use crate::step::StepOutcome;

/// A level (or a whole factor, `level: None`) left out of the space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excluded {
    /// The knob.
    pub knob: Knob,
    /// The level, or `None` when the whole factor is out.
    pub level: Option<String>,
    /// Why, naming the host and file.
    pub reason: String,
}

impl fmt::Display for Excluded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.level {
            Some(l) => write!(f, "{}={l}: {}", self.knob.name(), self.reason),
            None => write!(f, "{}: {}", self.knob.name(), self.reason),
        }
    }
}

/// One factor proposed for an objective, before probing.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The knob.
    pub knob: Knob,
    /// The levels to try besides the current one.
    pub levels: Vec<Level>,
    /// Where the levels come from (the rule or profile).
    pub source: &'static str,
}

/// The space built for a host, with what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltSpace {
    /// The factors, current level first.
    pub factors: Vec<Factor>,
    /// Where each factor's levels come from.
    pub sources: Vec<(Knob, &'static str)>,
    /// Levels and factors left out, with the reason.
    pub excluded: Vec<Excluded>,
}

/// The first interface that is not loopback (the lab's veth end).
fn device(snap: &HostSnapshot) -> Option<&Interface> {
    snap.interfaces.iter().find(|i| i.name != "lo")
}

fn ints(text: &str) -> Vec<u64> {
    text.split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// A sysctl key of the knobs the space reads from `sysctls`.
fn sysctl_key(knob: Knob) -> Option<&'static str> {
    Some(match knob {
        Knob::TcpTwReuse => "net.ipv4.tcp_tw_reuse",
        Knob::IpLocalPortRange => "net.ipv4.ip_local_port_range",
        Knob::TcpRmem => "net.ipv4.tcp_rmem",
        Knob::TcpWmem => "net.ipv4.tcp_wmem",
        Knob::CongestionControl => "net.ipv4.tcp_congestion_control",
        _ => return None,
    })
}

/// Why a host's current level of a knob cannot be read (the factor is
/// left out of the space with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unread {
    /// The sysctl is not in the snapshot (the kernel lacks it).
    #[error("{key} is absent on this host")]
    SysctlAbsent {
        /// The sysctl key.
        key: &'static str,
    },
    /// The sysctl's text is not a level of the knob.
    #[error("{key} = `{text}` is not a level it takes")]
    NotALevel {
        /// The sysctl key.
        key: &'static str,
        /// Its text.
        text: String,
    },
    /// The host has no interface but loopback.
    #[error("no interface but loopback on this host")]
    NoDevice,
    /// The device lacks the knob's sysfs file (older kernels lack
    /// `napi_defer_hard_irqs`, before 5.10, and `threaded`, before 5.12).
    #[error("no {file} file on {device}")]
    FileAbsent {
        /// The file, under the device's sysfs directory.
        file: &'static str,
        /// The device.
        device: String,
    },
    /// The device's driver reports no interrupt coalescing (`ethtool -c`
    /// refused, as e1000 on the 82540EM and vmxnet3 before version 3 do:
    /// their `set_coalesce` refuses too), or left out the attribute.
    #[error("{device}: {attr} not readable: {reason}")]
    Coalesce {
        /// The device.
        device: String,
        /// The ethtool attribute (`rx-usecs`).
        attr: &'static str,
        /// What `ethtool -c` said.
        reason: String,
    },
    /// A knob autotune never varies from the host's level.
    #[error("autotune does not read this knob's current level")]
    NotRead,
}

/// Why a `KNOB=LEVEL` change is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadChange {
    /// No `=`.
    #[error("`{0}` is not KNOB=LEVEL (rps_cpus=1, busy_poll=50)")]
    Form(String),
    /// A knob name nettune does not know.
    #[error("`{text}`: unknown knob `{name}` (known: {})", Knob::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "))]
    Knob {
        /// The change as given.
        text: String,
        /// The name in it.
        name: String,
    },
    /// A level the knob does not take.
    #[error("`{text}`: `{level}` is not a level of {}: {}", .knob.name(), .knob.accepts())]
    Level {
        /// The change as given.
        text: String,
        /// The knob.
        knob: Knob,
        /// The level in it.
        level: String,
    },
}

/// The host's current level of `knob`, or why it cannot be read.
pub fn current_level(snap: &HostSnapshot, knob: Knob) -> Result<Level, Unread> {
    if let Some(key) = sysctl_key(knob) {
        let text = snap.sysctls.get(key).ok_or(Unread::SysctlAbsent { key })?;
        let v = ints(text);
        let level = match (knob, v.as_slice()) {
            (Knob::CongestionControl, _) => Some(Level::Name(text.trim().to_string())),
            (Knob::TcpTwReuse, [x]) => i64::try_from(*x).ok().map(Level::Int),
            (Knob::IpLocalPortRange, [a, b]) => match (u16::try_from(*a), u16::try_from(*b)) {
                (Ok(a), Ok(b)) => Some(Level::Range([a, b])),
                _ => None,
            },
            (Knob::TcpRmem | Knob::TcpWmem, [a, b, c]) => Some(Level::Triple([*a, *b, *c])),
            _ => None,
        };
        return level.ok_or_else(|| Unread::NotALevel {
            key,
            text: text.clone(),
        });
    }
    // Bench options: the bench's own default.
    match knob {
        Knob::BusyPoll | Knob::Sndbuf | Knob::Rcvbuf => return Ok(Level::Int(0)),
        Knob::CpuPin => return Ok(Level::Cpus(Vec::new())),
        Knob::UdpGso | Knob::UdpGro => return Ok(Level::Bool(false)),
        _ => {}
    }
    let dev = device(snap).ok_or(Unread::NoDevice)?;
    let absent = |file: &'static str| Unread::FileAbsent {
        file,
        device: dev.name.clone(),
    };
    match knob {
        Knob::GroFlushTimeout => dev
            .gro_flush_timeout
            .and_then(|v| i64::try_from(v).ok())
            .map(Level::Int)
            .ok_or_else(|| absent("gro_flush_timeout")),
        Knob::NapiDeferHardIrqs => dev
            .napi_defer_hard_irqs
            .map(|v| Level::Int(i64::from(v)))
            .ok_or_else(|| absent("napi_defer_hard_irqs")),
        Knob::ThreadedNapi => dev
            .threaded
            .map(|v| Level::Bool(v != 0))
            .ok_or_else(|| absent("threaded")),
        Knob::RpsCpus => dev
            .rx_queues
            .first()
            .and_then(|q| q.rps_cpus.as_ref())
            .map(|s| Level::Cpus(s.iter().collect()))
            .ok_or_else(|| absent("queues/rx-0/rps_cpus")),
        Knob::XpsCpus => dev
            .tx_queues
            .first()
            .and_then(|q| q.xps_cpus.as_ref())
            .map(|s| Level::Cpus(s.iter().collect()))
            .ok_or_else(|| absent("queues/tx-0/xps_cpus")),
        Knob::CoalesceRxUsecs => coalesce_level(dev, "rx-usecs"),
        _ => Err(Unread::NotRead),
    }
}

/// `attr` of the device's `ethtool -c` (the snapshot's coalescing), or
/// what the probe said instead.
fn coalesce_level(dev: &Interface, attr: &'static str) -> Result<Level, Unread> {
    let unread = |reason: String| Unread::Coalesce {
        device: dev.name.clone(),
        attr,
        reason,
    };
    let co = match &dev.ethtool.coalesce {
        Probe::Ok { value } => value,
        Probe::Unsupported { reason } => return Err(unread(format!("unsupported ({reason})"))),
        Probe::Error { message } => return Err(unread(message.clone())),
        Probe::Absent => return Err(unread("coalescing not read".into())),
    };
    co.get(attr)
        .and_then(|v| i64::try_from(*v).ok())
        .map(Level::Int)
        .ok_or_else(|| unread("the driver does not report it".into()))
}

/// Why a coalescing level would be refused by a device's driver family
/// (`tune::coalesce_family`: the values its `set_coalesce` takes, and no
/// ITR 0 on an e1000 that may be an 82547), checked before any apply: one
/// refused `ethtool -C` rolls a whole arm back.
fn coalesce_refusal(snap: &HostSnapshot, knob: Knob, level: &Level) -> Option<String> {
    let (Knob::CoalesceRxUsecs, Level::Int(v)) = (knob, level) else {
        return None;
    };
    let v = u64::try_from(*v).ok()?;
    snap.interfaces
        .iter()
        .filter(|i| i.name != "lo")
        .find_map(|i| {
            let driver = i.ethtool.driver.value()?.driver.as_deref()?;
            if v == 0 && !tune::coalesce_family::zero_allowed(driver, i.pci_id) {
                let id = i.pci_id.map_or("unknown".to_string(), |p| p.to_string());
                return Some(format!(
                    "{}: {driver} of PCI id {id} may be an 82547, which Intel's e1000 README says may hang with ITR 0",
                    i.name
                ));
            }
            let co = i.ethtool.coalesce.value()?;
            let fam = tune::coalesce_family::family(driver)?;
            fam.accepts_on("rx-usecs", v, false, co)
                .err()
                .map(|e| format!("{}: {e}", i.name))
        })
}

/// Why a host of `snaps` cannot take `knob=level`, naming the host.
fn refused_on(
    snaps: &[(HostId, HostSnapshot)],
    scope: NetnsScope,
    knob: Knob,
    level: &Level,
) -> Option<String> {
    snaps.iter().find_map(|(h, s)| {
        tune::levels::cell_plan(s, scope, &[(knob, level.clone())])
            .err()
            .map(|e| e.reason)
            .or_else(|| coalesce_refusal(s, knob, level))
            .map(|r| format!("{r} on {h}"))
    })
}

/// The CPU the throughput level pins the workload to: the first of the
/// device's local CPUs (every online CPU when it names none) that serves
/// none of the device's IRQs (`model::findings::irq_cpus`, when narrower
/// than every online CPU), else the first of them; the first online CPU
/// without a device. A virtual device (veth) has no IRQs: its first local
/// CPU.
fn pin_cpu(snap: &HostSnapshot) -> Option<u32> {
    let online = &snap.cpu.online;
    let Some(dev) = device(snap) else {
        return online.first();
    };
    let local = dev
        .local_cpus
        .as_ref()
        .map(|l| l.intersection(online))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| online.clone());
    let serving = |cpu: u32| {
        dev.irqs
            .iter()
            .filter_map(|n| snap.irq(*n))
            .filter_map(model::findings::irq_cpus)
            .any(|set| {
                let a = set.intersection(online);
                a != *online && a.contains(cpu)
            })
    };
    let free = local.iter().find(|&c| !serving(c));
    free.or_else(|| local.first())
}

/// Socket buffer maximum the throughput levels raise `tcp_rmem`/`tcp_wmem`
/// to: 32 MiB, the BDP of 10 Gbit/s at 25 ms (the socket-buffers rule's
/// sizing for a fast path with the profile's default RTT).
const BUFFER_MAX: u64 = 32 << 20;

/// SO_RCVBUF the max-pps level asks for: 4 MiB, the size the doctor's
/// `Udp.RcvbufErrors` finding gives receivers that drop at full buffers
/// (capped by `net.core.rmem_max` as for any application).
const UDP_RCVBUF: i64 = 4 << 20;

/// The factors worth varying for `objective` on the host of `snap`, with
/// the levels the planner's rules and profiles would set (never blind
/// ranges). Levels equal to the current one are dropped later.
pub fn proposals(objective: Objective, snap: &HostSnapshot) -> Vec<Proposal> {
    let latency = tune::profile::builtin("latency").ok();
    let busy_poll_us = latency.map_or(50, |p| i64::from(p.settings.busy_poll_us));
    let online: Vec<u32> = snap.cpu.online.iter().collect();
    let mut out = Vec::new();
    let rps = Proposal {
        knob: Knob::RpsCpus,
        levels: vec![Level::Cpus(online.clone())],
        source: "rps rule: spread receive processing over the online CPUs",
    };
    let busy = Proposal {
        knob: Knob::BusyPoll,
        levels: vec![Level::Int(busy_poll_us)],
        source: "busy_poll rule: the latency profile's busy_poll_us",
    };
    let threaded = Proposal {
        knob: Knob::ThreadedNapi,
        levels: vec![Level::Bool(true), Level::Bool(false)],
        source: "NAPI: threaded polling on or off",
    };
    let gro = Proposal {
        knob: Knob::GroFlushTimeout,
        levels: vec![Level::Int(20_000), Level::Int(50_000)],
        source: "NAPI: gro_flush_timeout of the kernel's napi documentation (20-50 µs)",
    };
    let defer = Proposal {
        knob: Knob::NapiDeferHardIrqs,
        levels: vec![Level::Int(2)],
        source: "NAPI: napi_defer_hard_irqs with a gro_flush_timeout",
    };
    match objective {
        Objective::MaxCps => {
            out.push(Proposal {
                knob: Knob::TcpTwReuse,
                levels: vec![Level::Int(1)],
                source: "doctor's TIME_WAIT finding: reuse TIME_WAIT sockets for new connections",
            });
            out.push(Proposal {
                knob: Knob::IpLocalPortRange,
                levels: vec![Level::Range([1024, 65535])],
                source: "doctor's ephemeral port finding: the widest local port range",
            });
            out.extend([rps, busy, threaded]);
        }
        Objective::MaxThroughput => {
            let triple = |key: &str| {
                let v = snap.sysctls.get(key).map(|t| ints(t)).unwrap_or_default();
                match v.as_slice() {
                    [a, b, c] if *c < BUFFER_MAX => vec![Level::Triple([*a, *b, BUFFER_MAX])],
                    _ => Vec::new(),
                }
            };
            let source = "socket-buffers rule: raise the autotuning maximum to the BDP";
            out.push(Proposal {
                knob: Knob::TcpRmem,
                levels: triple("net.ipv4.tcp_rmem"),
                source,
            });
            out.push(Proposal {
                knob: Knob::TcpWmem,
                levels: triple("net.ipv4.tcp_wmem"),
                source,
            });
            out.push(Proposal {
                knob: Knob::CongestionControl,
                levels: ["cubic", "bbr"]
                    .iter()
                    .map(|n| Level::Name((*n).into()))
                    .collect(),
                source: "congestion control: the available algorithms the rules know",
            });
            if let Some(cpu) = pin_cpu(snap) {
                out.push(Proposal {
                    knob: Knob::CpuPin,
                    levels: vec![Level::Cpus(vec![cpu])],
                    source: "app-on-irq-cpu rule: the workload on one CPU of the NIC's node that serves none of its IRQs (netperf -T, iperf3 -A)",
                });
            }
            out.extend([gro, defer, threaded, rps]);
        }
        Objective::MaxPps => {
            // First: a budget too small for every arm races these first.
            out.push(Proposal {
                knob: Knob::UdpGso,
                levels: vec![Level::Bool(true)],
                source: "UDP GSO (UDP_SEGMENT): one send carries many datagrams (bench option)",
            });
            out.push(Proposal {
                knob: Knob::UdpGro,
                levels: vec![Level::Bool(true)],
                source: "UDP GRO (UDP_GRO): one receive takes many datagrams (bench option)",
            });
            out.push(Proposal {
                knob: Knob::Rcvbuf,
                levels: vec![Level::Int(UDP_RCVBUF)],
                source: "doctor's UDP receive-buffer finding: SO_RCVBUF 4 MiB (bench option)",
            });
            out.extend([rps, busy, gro, threaded]);
        }
        Objective::MinP99 => {
            out.extend([busy, threaded, defer]);
            out.push(Proposal {
                knob: Knob::CoalesceRxUsecs,
                levels: vec![Level::Int(0)],
                source: "interrupt coalescing: rx-usecs 0 (ITR 0), no moderation, where the driver takes it (ethtool -C)",
            });
        }
    }
    out
}

/// Build the space for `objective`: the proposals for the first host's
/// snapshot, each level probed on every host (`cell_plan` in `scope`); a
/// level a host cannot take, or equal to the current one, is left out.
pub fn build(
    objective: Objective,
    snaps: &[(HostId, HostSnapshot)],
    scope: NetnsScope,
) -> BuiltSpace {
    let mut built = BuiltSpace {
        factors: Vec::new(),
        sources: Vec::new(),
        excluded: Vec::new(),
    };
    let Some((h0, first)) = snaps.first() else {
        return built;
    };
    for p in proposals(objective, first) {
        let current = match current_level(first, p.knob) {
            Ok(l) => l,
            Err(reason) => {
                built.excluded.push(Excluded {
                    knob: p.knob,
                    level: None,
                    reason: format!("{reason} ({h0})"),
                });
                continue;
            }
        };
        let mut levels = vec![current.clone()];
        for level in p.levels {
            if level == current || levels.contains(&level) {
                continue;
            }
            match refused_on(snaps, scope, p.knob, &level) {
                Some(reason) => built.excluded.push(Excluded {
                    knob: p.knob,
                    level: Some(level.to_string()),
                    reason,
                }),
                None => levels.push(level),
            }
        }
        if levels.len() > 1 {
            built.sources.push((p.knob, p.source));
            built.factors.push(Factor {
                knob: p.knob,
                levels,
            });
        } else if !built.excluded.iter().any(|e| e.knob == p.knob) {
            built.excluded.push(Excluded {
                knob: p.knob,
                level: None,
                reason: format!("already at the level the rules would set ({current})"),
            });
        }
    }
    built
}

/// The first sentence of an apply's refusal (the executor's stderr without
/// the journal's "rolled back" tail).
fn refusal(e: &ExecError) -> String {
    let text = match e {
        ExecError::Failed { stderr, .. } => stderr.clone(),
        ExecError::NotRoot { reason, .. } => reason.clone(),
        other => other.to_string(),
    };
    let first = text.split("; this apply").next().unwrap_or(&text);
    first.trim_start_matches("nettune: ").trim().to_string()
}

/// Apply each level of the space once on every host and roll it back (the
/// runner's one step, measuring nothing): a
/// level a host refuses (a file it has but cannot write, as veth's
/// `threaded`) is left out with the host's reason, and a factor left with
/// only its current level goes too. Ctrl-C (or an executor that cannot
/// roll back) stops the probe with the error.
pub fn probe(
    exec: &mut dyn Executor,
    built: &mut BuiltSpace,
    snaps: &[(HostId, HostSnapshot)],
    scope: NetnsScope,
) -> Result<(), ExecError> {
    let mut kept = Vec::new();
    for mut f in std::mem::take(&mut built.factors) {
        let mut levels = vec![f.levels[0].clone()];
        for level in f.levels.drain(1..) {
            let mut refused = None;
            let changes = [(f.knob, level.clone())];
            for (h, snap) in snaps {
                let Ok(cp) = tune::levels::cell_plan(snap, scope, &changes) else {
                    continue;
                };
                if cp.plan.changes.is_empty() {
                    continue;
                }
                // The runner's one step, with nothing to measure.
                let mut setup = crate::step::HostLevels {
                    snapshots: snaps,
                    hosts: std::slice::from_ref(h),
                    scope,
                    changes: &changes,
                    applied: Vec::new(),
                };
                match crate::step::apply_measure_rollback(exec, &mut setup, |_, _| ()) {
                    StepOutcome::Measured { rollback, .. } => rollback?,
                    StepOutcome::ApplyFailed {
                        error: ExecError::Cancelled,
                        ..
                    } => return Err(ExecError::Cancelled),
                    StepOutcome::ApplyFailed { error, rollback } => {
                        rollback?;
                        refused = Some(format!("{} on {h}", refusal(&error)));
                        break;
                    }
                }
            }
            match refused {
                Some(reason) => built.excluded.push(Excluded {
                    knob: f.knob,
                    level: Some(level.to_string()),
                    reason,
                }),
                None => levels.push(level),
            }
        }
        if levels.len() > 1 {
            f.levels = levels;
            kept.push(f);
        } else {
            built.sources.retain(|(k, _)| *k != f.knob);
        }
    }
    built.factors = kept;
    Ok(())
}

/// `KNOB=LEVEL` (`rps_cpus=1`, `busy_poll=50`, `tcp_tw_reuse=1`), the level
/// written as `--dry-run` shows it; the error says what is wrong with it.
pub fn parse_change(text: &str) -> Result<(Knob, Level), BadChange> {
    let (name, level) = text
        .split_once('=')
        .ok_or_else(|| BadChange::Form(text.to_string()))?;
    let name = name.trim();
    let knob = Knob::from_name(name).ok_or_else(|| BadChange::Knob {
        text: text.to_string(),
        name: name.to_string(),
    })?;
    let level = knob
        .level_from_text(level)
        .ok_or_else(|| BadChange::Level {
            text: text.to_string(),
            knob,
            level: level.trim().to_string(),
        })?;
    Ok((knob, level))
}

/// What `--candidate` gives the source column.
pub const ASKED: &str = "--candidate: also race this change";

/// Add the changes asked for (`--candidate`) to the space, raced first
/// (a small budget races them before the proposals): each level next to
/// the host's current level of its knob, probed on every host as the
/// proposals are; a level a host cannot take, or equal to the current one,
/// is left out with the reason.
pub fn add_candidates(
    built: &mut BuiltSpace,
    snaps: &[(HostId, HostSnapshot)],
    scope: NetnsScope,
    asked: &[(Knob, Level)],
) {
    let Some((h0, first)) = snaps.first() else {
        return;
    };
    let mut planted: Vec<Factor> = Vec::new();
    // Levels planted so far per planted factor: they go after the
    // current level, before the proposals' levels.
    let mut counts: Vec<usize> = Vec::new();
    for (knob, level) in asked {
        let left_out = |reason: String| Excluded {
            knob: *knob,
            level: Some(level.to_string()),
            reason: format!("--candidate: {reason}"),
        };
        // The factor of the knob, moved to the planted ones.
        let at = match planted.iter().position(|f| f.knob == *knob) {
            Some(i) => i,
            None => {
                let f = match built.factors.iter().position(|f| f.knob == *knob) {
                    Some(i) => built.factors.remove(i),
                    None => match current_level(first, *knob) {
                        Ok(current) => Factor {
                            knob: *knob,
                            levels: vec![current],
                        },
                        Err(reason) => {
                            built.excluded.push(left_out(format!("{reason} ({h0})")));
                            continue;
                        }
                    },
                };
                built.sources.retain(|(k, _)| k != knob);
                built.sources.push((*knob, ASKED));
                planted.push(f);
                counts.push(0);
                planted.len() - 1
            }
        };
        let factor = &mut planted[at];
        if factor.levels.first() == Some(level) {
            built
                .excluded
                .push(left_out("already the host's current level".into()));
            continue;
        }
        if let Some(i) = factor.levels.iter().position(|l| l == level) {
            if i <= counts[at] {
                continue; // asked twice
            }
            // A proposal's level asked for: raced with the planted ones.
            let l = factor.levels.remove(i);
            let to = (counts[at] + 1).min(factor.levels.len());
            factor.levels.insert(to, l);
            counts[at] += 1;
            continue;
        }
        match refused_on(snaps, scope, *knob, level) {
            Some(reason) => built.excluded.push(left_out(reason)),
            None => {
                let to = (counts[at] + 1).min(factor.levels.len());
                factor.levels.insert(to, level.clone());
                counts[at] += 1;
            }
        }
    }
    planted.retain(|f| {
        let keep = f.levels.len() > 1;
        if !keep {
            built.sources.retain(|(k, _)| *k != f.knob);
        }
        keep
    });
    planted.append(&mut built.factors);
    built.factors = planted;
}

/// Leave out each factor whose bench option the workload's own arguments
/// already set (`--workload`'s `args`, e.g. `--cpus 1` or `--udp-gso`):
/// the baseline runs with that option, so the current level (the bench's
/// default) would be wrong, and every arm would override the user's
/// choice. The option is found in the bench arguments of the factor's
/// levels on the first host.
pub fn workload_sets(
    built: &mut BuiltSpace,
    snaps: &[(HostId, HostSnapshot)],
    scope: NetnsScope,
    workload: &[String],
) {
    let Some((_, snap)) = snaps.first() else {
        return;
    };
    let mut kept = Vec::new();
    for f in std::mem::take(&mut built.factors) {
        let flag = f.levels.iter().skip(1).find_map(|l| {
            tune::levels::cell_plan(snap, scope, &[(f.knob, l.clone())])
                .ok()?
                .bench_args
                .into_iter()
                .find(|a| a.starts_with("--") && workload.contains(a))
        });
        match flag {
            Some(flag) => {
                built.sources.retain(|(k, _)| *k != f.knob);
                built.excluded.push(Excluded {
                    knob: f.knob,
                    level: None,
                    reason: format!("the workload's args set {flag}"),
                });
            }
            None => kept.push(f),
        }
    }
    built.factors = kept;
}

/// Start the space from `setting` (`--from`: levels already in force on
/// the hosts): each factor of a knob it sets has that level as its current
/// one, and a factor left with no other level goes, with the reason. Host
/// knobs already read so from the snapshot; bench options (busy polling,
/// socket buffers, congestion control per socket) are only known here.
pub fn start_from(built: &mut BuiltSpace, setting: &[(Knob, Level)]) {
    let mut kept = Vec::new();
    for mut f in std::mem::take(&mut built.factors) {
        if let Some((_, level)) = setting.iter().find(|(k, _)| *k == f.knob) {
            // The level before `--from` is no longer the current one.
            let mut levels = vec![level.clone()];
            levels.extend(f.levels.drain(1..).filter(|l| l != level));
            f.levels = levels;
        }
        if f.levels.len() > 1 {
            kept.push(f);
        } else {
            built.sources.retain(|(k, _)| *k != f.knob);
            built.excluded.push(Excluded {
                knob: f.knob,
                level: None,
                reason: format!("--from already sets it ({})", f.levels[0]),
            });
        }
    }
    built.factors = kept;
}
