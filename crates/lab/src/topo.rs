//! [`Lab`]: N hosts as network namespaces in a star around host 0, with
//! optional rate limit (tbf) and delay/jitter/loss (netem where the kernel has
//! it, else nettune's userspace delay line over TUN devices), a marker per
//! lab, and [`Lab::reap_stale`] to remove the labs of runs that were killed.
//!
//! Delay means one thing everywhere: [`LabSpec::delay`] is what the round
//! trip between host 0 and another host grows by; half of it is added in each
//! direction (netem on each veth end's egress, or the delay line's two
//! directions). The same holds for jitter (± half each way).
//!
//! Topology: a star. Host 0 (the hub, where a driver or client runs) has one
//! multi-queue veth `vI` to each other host I, whose end is `v0` (on the
//! delay line: a TUN device of the same name at each end). Each link is
//! its own /30 of 198.18.0.0/15, so every link can carry its own rate and
//! delay and host 0 reaches every host in one hop (a chain would put N-2
//! forwarding hops and their softirq cost between the ends). Host 0 forwards
//! (its own namespace's `net.ipv4.ip_forward`) and the other hosts route
//! 198.18.0.0/15 through it, so any two hosts can talk.

use crate::delay::{tun_link, Forwarder};
use crate::{run, run_text, veth, DelaySpec, DelayStats, End, LabError, Netns};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Directory holding one marker file per live lab (`NAME.pid`, holding the
/// owner's pid and its start time).
pub const MARKER_DIR: &str = "/run/nettune-lab";

/// What a [`Lab`] should look like.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSpec {
    /// Name prefix: lowercase letters and digits, 1 to 12 of them. Lab
    /// namespaces are named `PREFIX-PID-SEQ-hI`.
    pub prefix: String,
    /// Number of hosts, 2 to 8.
    pub hosts: u32,
    /// RX and TX queues per veth end, 1 to 16. Links on the userspace delay
    /// line are single-queue TUN devices whatever this says.
    pub queues: u32,
    /// Egress rate of every link end in bits/s (tc tbf), 1 kbit/s to 400 Gbit/s.
    pub rate: Option<u64>,
    /// Delay added to the round trip between host 0 and every other host
    /// (half in each direction), at most 10 s. A 100 ms link is
    /// `delay: Some(100 ms)`: ping between the two hosts shows 100 ms more.
    pub delay: Option<Duration>,
    /// Jitter of the round trip: each direction's delay varies uniformly by
    /// ± half of this, at most 10 s.
    pub jitter: Option<Duration>,
    /// Loss of every packet crossing a link, in each direction, in percent
    /// (0 to 100).
    pub loss: Option<f64>,
    /// Which delay mechanism may be used for delay, jitter and loss.
    pub mechanism: MechanismChoice,
}

/// Which mechanism [`Lab::build`] may use for delay, jitter and loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MechanismChoice {
    /// netem where the kernel has it, else the userspace delay line.
    #[default]
    Auto,
    /// netem only (an error where the kernel has none).
    Netem,
    /// The userspace delay line even where netem exists (to compare them).
    Userspace,
}

impl LabSpec {
    /// `hosts` hosts with `queues` queues, prefix `ntlab`, no shaping.
    pub fn new(hosts: u32, queues: u32) -> LabSpec {
        LabSpec {
            prefix: "ntlab".into(),
            hosts,
            queues,
            rate: None,
            delay: None,
            jitter: None,
            loss: None,
            mechanism: MechanismChoice::Auto,
        }
    }

    /// Check every field's range, before anything is created.
    pub fn validate(&self) -> Result<(), LabError> {
        let bad = |field, value: String, allowed| {
            Err(LabError::Spec {
                field,
                value,
                allowed,
            })
        };
        if self.prefix.is_empty()
            || self.prefix.len() > 12
            || !self
                .prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return bad(
                "prefix",
                self.prefix.clone(),
                "1 to 12 lowercase letters or digits",
            );
        }
        if !(2..=8).contains(&self.hosts) {
            return bad("hosts", self.hosts.to_string(), "2 to 8");
        }
        if !(1..=16).contains(&self.queues) {
            return bad("queues", self.queues.to_string(), "1 to 16");
        }
        if let Some(r) = self.rate {
            if !(1_000..=400_000_000_000).contains(&r) {
                return bad("rate", r.to_string(), "1000 to 400000000000 bit/s");
            }
        }
        for (field, d) in [("delay", self.delay), ("jitter", self.jitter)] {
            if let Some(d) = d {
                if d > Duration::from_secs(10) {
                    return bad(field, format!("{d:?}"), "at most 10 s");
                }
            }
        }
        if let Some(l) = self.loss {
            if !(l.is_finite() && (0.0..=100.0).contains(&l)) {
                return bad("loss", l.to_string(), "0 to 100 %");
            }
        }
        Ok(())
    }

    /// What of delay/jitter/loss is asked for, in words; `None` when nothing.
    fn impairment(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(d) = self.delay {
            parts.push(format!("delay {d:?}"));
        }
        if let Some(j) = self.jitter {
            parts.push(format!("jitter {j:?}"));
        }
        if let Some(l) = self.loss {
            parts.push(format!("loss {l} %"));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// What each direction of a userspace delay line does for this spec:
    /// half the round-trip delay and jitter, the loss, and queue limits of
    /// [`DelaySpec::limits_for`] (at least the bytes in flight at `rate`).
    pub fn delay_spec(&self) -> DelaySpec {
        let delay = self.delay.unwrap_or_default() / 2;
        let jitter = self.jitter.unwrap_or_default() / 2;
        let (limit_packets, limit_bytes) = DelaySpec::limits_for(delay, jitter, self.rate);
        DelaySpec {
            delay,
            jitter,
            loss: self.loss.unwrap_or(0.0) / 100.0,
            limit_packets,
            limit_bytes,
            ..DelaySpec::default()
        }
    }
}

/// How a lab adds delay, jitter and loss (displayed as `netem`,
/// `userspace delay line (TUN)` or `none`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DelayMechanism {
    /// The kernel's netem qdisc on every veth end.
    Netem,
    /// nettune's userspace delay line: the links are TUN device pairs with
    /// a forwarder thread each, instead of veth pairs.
    Userspace,
    /// None: nothing was asked, or (from [`probe_netem`]) the reason netem
    /// is not available.
    None {
        /// Why there is none (what `tc qdisc add ... netem` said, or that no
        /// delay, jitter or loss was asked).
        reason: String,
    },
}

/// A delay line that could not be set up (its TUN device, its forwarder)
/// is [`LabError::NoDelayMechanism`] when it was the fallback for a kernel
/// without netem; other errors (a failed `ip` command) stay what they are.
fn line_failed(asked: Option<&str>, choice: MechanismChoice, e: LabError) -> LabError {
    match e {
        LabError::DelayLine { .. } => LabError::NoDelayMechanism {
            asked: asked.unwrap_or_default().to_string(),
            reason: match choice {
                MechanismChoice::Userspace => format!("the userspace delay line failed: {e}"),
                _ => format!("no netem, and the userspace delay line failed: {e}"),
            },
        },
        e => e,
    }
}

impl DelayMechanism {
    /// Short id for results files: `netem`, `userspace` or `none`.
    pub fn id(&self) -> &'static str {
        match self {
            DelayMechanism::Netem => "netem",
            DelayMechanism::Userspace => "userspace",
            DelayMechanism::None { .. } => "none",
        }
    }
}

impl std::fmt::Display for DelayMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DelayMechanism::Netem => "netem",
            DelayMechanism::Userspace => "userspace delay line (TUN)",
            DelayMechanism::None { .. } => "none",
        })
    }
}

/// The mechanism to use, from what was asked, the choice and the netem
/// probe (run only when it matters). The delay line's own failure surfaces
/// when it is built (see [`line_failed`]).
fn choose(
    asked: Option<&str>,
    choice: MechanismChoice,
    probe: impl FnOnce() -> DelayMechanism,
) -> Result<DelayMechanism, LabError> {
    let Some(asked) = asked else {
        return Ok(DelayMechanism::None {
            reason: "no delay, jitter or loss asked".into(),
        });
    };
    match choice {
        MechanismChoice::Userspace => Ok(DelayMechanism::Userspace),
        MechanismChoice::Auto => match probe() {
            DelayMechanism::Netem => Ok(DelayMechanism::Netem),
            _ => Ok(DelayMechanism::Userspace),
        },
        MechanismChoice::Netem => match probe() {
            DelayMechanism::Netem => Ok(DelayMechanism::Netem),
            DelayMechanism::None { reason } => Err(LabError::NoDelayMechanism {
                asked: asked.to_string(),
                reason: format!("netem was required and `tc qdisc add ... netem` failed: {reason}"),
            }),
            DelayMechanism::Userspace => Err(LabError::NoDelayMechanism {
                asked: asked.to_string(),
                reason: "netem was required".into(),
            }),
        },
    }
}

/// One link of the star (a veth pair, or a TUN pair on the userspace delay
/// line): host 0's end and host `host`'s end.
#[derive(Debug, Clone)]
pub struct Link {
    /// Index of the non-hub host (1..hosts).
    pub host: usize,
    /// The end in host 0 (`vI`).
    pub hub: End,
    /// The end in host `host` (`v0`).
    pub leaf: End,
}

/// A built lab; its namespaces and marker are removed on drop.
#[derive(Debug)]
pub struct Lab {
    name: String,
    spec: LabSpec,
    delay: DelayMechanism,
    links: Vec<Link>,
    // Before `hosts`: the forwarders stop (and their TUN devices go) first.
    lines: Vec<Forwarder>,
    hosts: Vec<Netns>,
    marker: Option<PathBuf>,
}

/// Start time (clock ticks after boot, field 22 of `/proc/PID/stat`) of a
/// live process; `None` when it does not exist or the file does not parse.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')?.checked_add(1)?..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The owner pid encoded in a lab name `PREFIX-PID-...`, if `name` has that
/// exact prefix.
fn owner_of(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    rest.split('-').next()?.parse().ok()
}

/// The lab name (`PREFIX-PID-SEQ`) a namespace `PREFIX-PID-SEQ-hI` belongs to.
fn lab_of(name: &str) -> &str {
    match name.rsplit_once("-h") {
        Some((lab, i)) if !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()) => lab,
        _ => name,
    }
}

/// Whether the owner of a lab is alive: the pid exists and, when the marker
/// recorded a start time, it is the same process (not a reused pid).
fn owner_alive(pid: u32, marker: &Path) -> bool {
    let Some(now) = start_time(pid) else {
        return false;
    };
    let recorded = std::fs::read_to_string(marker).ok().and_then(|s| {
        let mut it = s.split_whitespace();
        let p: u32 = it.next()?.parse().ok()?;
        let t: u64 = it.next()?.parse().ok()?;
        Some((p, t))
    });
    match recorded {
        Some((p, t)) if p == pid => t == now,
        _ => true,
    }
}

fn marker_path(lab: &str) -> PathBuf {
    Path::new(MARKER_DIR).join(format!("{lab}.pid"))
}

/// Whether netem can be installed: tried on the loopback device of `ns` (a
/// namespace of ours, never the host's own interfaces) and removed again.
/// (Not a dummy device: kernels without netem often lack the dummy driver
/// too, and the probe would then say nothing about netem.)
pub fn probe_netem(ns: &Netns) -> DelayMechanism {
    let tc = |args: &[&str]| run(Command::new("tc").args(["-n", ns.name()]).args(args));
    match tc(&["qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]) {
        Ok(_) => {
            let _ = tc(&["qdisc", "del", "dev", "lo", "root"]);
            DelayMechanism::Netem
        }
        Err(LabError::Command { stderr, .. }) => DelayMechanism::None { reason: stderr },
        Err(e) => DelayMechanism::None {
            reason: e.to_string(),
        },
    }
}

/// What [`Lab::reap_stale`] removed for one dead lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// The lab name (`PREFIX-PID-SEQ`).
    pub lab: String,
    /// The dead owner's pid.
    pub owner_pid: u32,
    /// Namespaces deleted.
    pub netns: Vec<String>,
    /// Processes killed inside them.
    pub killed: Vec<u32>,
    /// The marker file removed, if there was one.
    pub marker: Option<PathBuf>,
}

impl Lab {
    /// Build the lab described by `spec`: namespaces, links, addresses,
    /// routes, shaping. Anything created is removed again on error.
    pub fn build(spec: LabSpec) -> Result<Lab, LabError> {
        spec.validate()?;
        let pid = std::process::id();
        let name = format!(
            "{}-{pid}-{}",
            spec.prefix,
            crate::SEQ.fetch_add(1, Ordering::Relaxed)
        );
        std::fs::create_dir_all(MARKER_DIR).map_err(|source| LabError::Marker {
            path: MARKER_DIR.into(),
            source,
        })?;
        let marker = marker_path(&name);
        let started = start_time(pid).unwrap_or(0);
        std::fs::write(&marker, format!("{pid} {started}\n")).map_err(|source| {
            LabError::Marker {
                path: marker.display().to_string(),
                source,
            }
        })?;
        let mut lab = Lab {
            name,
            spec,
            delay: DelayMechanism::None {
                reason: "not probed".into(),
            },
            links: Vec::new(),
            lines: Vec::new(),
            hosts: Vec::new(),
            marker: Some(marker),
        };
        for i in 0..lab.spec.hosts {
            let ns = Netns::create_named(format!("{}-h{i}", lab.name))?;
            lab.hosts.push(ns);
        }
        let asked = lab.spec.impairment();
        lab.delay = choose(asked.as_deref(), lab.spec.mechanism, || {
            probe_netem(&lab.hosts[0])
        })?;
        let line = (lab.delay == DelayMechanism::Userspace).then(|| lab.spec.delay_spec());
        let (hub, leaves) = lab.hosts.split_at(1);
        for (k, leaf) in leaves.iter().enumerate() {
            let host = k + 1;
            let hub_if = format!("v{host}");
            let (h, l) = match &line {
                None => veth(&hub[0], &hub_if, leaf, "v0", lab.spec.queues, k as u32)?,
                Some(spec) => {
                    let (a, b) = crate::slot_addrs(k as u32);
                    let (h, l, fwd) = tun_link(&hub[0], &hub_if, a, leaf, "v0", b, spec.clone())
                        .map_err(|e| line_failed(asked.as_deref(), lab.spec.mechanism, e))?;
                    lab.lines.push(fwd);
                    (h, l)
                }
            };
            lab.links.push(Link {
                host,
                hub: h,
                leaf: l,
            });
        }
        if lab.hosts.len() > 2 {
            lab.hosts[0].sh("echo 1 > /proc/sys/net/ipv4/ip_forward")?;
            for link in &lab.links {
                lab.hosts[link.host].ip(&[
                    "route",
                    "add",
                    "198.18.0.0/15",
                    "via",
                    &link.hub.addr.to_string(),
                ])?;
            }
        }
        for link in &lab.links {
            lab.shape(0, &link.hub.iface)?;
            lab.shape(link.host, &link.leaf.iface)?;
        }
        Ok(lab)
    }

    /// Install tbf (rate) and, with netem, netem (delay/jitter/loss) on one
    /// link end (a veth end, or a TUN device: its egress is what the
    /// forwarder reads, so the rate applies before the delay line).
    fn shape(&self, host: usize, dev: &str) -> Result<(), LabError> {
        let ns = self.hosts[host].name();
        let tc = |args: &[String]| {
            run(Command::new("tc")
                .args(["-n", ns, "qdisc", "add", "dev", dev])
                .args(args))
        };
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        if let Some(rate) = self.spec.rate {
            // Burst: 5 ms at the rate, at least 32 KiB (a few GSO frames).
            let burst = (rate / 8 / 200).max(32 * 1024);
            tc(&s(&[
                "root",
                "handle",
                "1:",
                "tbf",
                "rate",
                &format!("{rate}bit"),
                "burst",
                &burst.to_string(),
                "latency",
                "50ms",
            ]))?;
        }
        if self.delay == DelayMechanism::Netem {
            let mut args = if self.spec.rate.is_some() {
                s(&["parent", "1:1", "handle", "10:", "netem", "limit", "10000"])
            } else {
                s(&["root", "handle", "10:", "netem", "limit", "10000"])
            };
            if self.spec.delay.is_some() || self.spec.jitter.is_some() {
                // Half of the round-trip delay and jitter on each end.
                let d = self.spec.delay.unwrap_or_default().as_micros() / 2;
                args.extend(s(&["delay", &format!("{d}us")]));
                if let Some(j) = self.spec.jitter {
                    args.push(format!("{}us", j.as_micros() / 2));
                }
            }
            if let Some(l) = self.spec.loss {
                args.extend(s(&["loss", &format!("{l}%")]));
            }
            tc(&args)?;
        }
        Ok(())
    }

    /// The lab name, `PREFIX-PID-SEQ`; namespaces are `NAME-hI`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &LabSpec {
        &self.spec
    }

    /// The delay mechanism the links use: [`DelayMechanism::None`] when no
    /// delay, jitter or loss was asked.
    pub fn delay_mechanism(&self) -> &DelayMechanism {
        &self.delay
    }

    /// With the userspace delay line: what each direction of every link
    /// does (one-way delay and jitter, loss, the queue limits in force).
    pub fn delay_spec(&self) -> Option<&DelaySpec> {
        self.lines.first().map(|f| f.spec())
    }

    /// With the userspace delay line: the counters of the line of the link
    /// to host `i` (1..hosts); A is the hub's end, B the host's.
    pub fn delay_stats(&self, i: usize) -> Option<&DelayStats> {
        self.lines.get(i.checked_sub(1)?).map(|f| f.stats())
    }

    /// The hosts' namespaces; index 0 is the hub.
    pub fn hosts(&self) -> &[Netns] {
        &self.hosts
    }

    /// The links, one per non-hub host.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// An address of host `i`: for the hub, its end of the link to host 1;
    /// for another host, its only link end.
    pub fn addr(&self, i: usize) -> Option<Ipv4Addr> {
        if i == 0 {
            self.links.first().map(|l| l.hub.addr)
        } else {
            self.links.iter().find(|l| l.host == i).map(|l| l.leaf.addr)
        }
    }

    /// Remove labs named `PREFIX-PID-...` whose owner PID is dead (or whose
    /// marker records another process's start time): kill the processes in
    /// their namespaces, delete the namespaces and the markers. Namespaces
    /// whose name does not start with `PREFIX-` followed by a pid are never
    /// touched.
    pub fn reap_stale(prefix: &str) -> Result<Vec<Reaped>, LabError> {
        let mut found: BTreeMap<String, Reaped> = BTreeMap::new();
        let list = run_text(Command::new("ip").args(["netns", "list"]))?;
        for line in list.lines() {
            let Some(ns) = line.split_whitespace().next() else {
                continue;
            };
            let Some(pid) = owner_of(ns, prefix) else {
                continue;
            };
            let lab = lab_of(ns).to_string();
            let marker = marker_path(&lab);
            if owner_alive(pid, &marker) {
                continue;
            }
            let entry = found.entry(lab.clone()).or_insert_with(|| Reaped {
                lab,
                owner_pid: pid,
                netns: Vec::new(),
                killed: Vec::new(),
                marker: None,
            });
            if let Ok(pids) = run_text(Command::new("ip").args(["netns", "pids", ns])) {
                for p in pids
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok())
                {
                    let killed = Command::new("kill")
                        .args(["-9", &p.to_string()])
                        .stderr(Stdio::null())
                        .status()
                        .is_ok_and(|s| s.success());
                    if killed {
                        entry.killed.push(p);
                    }
                }
            }
            run(Command::new("ip").args(["netns", "del", ns]))?;
            entry.netns.push(ns.to_string());
        }
        // Markers of dead owners, with or without namespaces left.
        if let Ok(dir) = std::fs::read_dir(MARKER_DIR) {
            for e in dir.flatten() {
                let file = e.file_name().to_string_lossy().into_owned();
                let Some(lab) = file.strip_suffix(".pid") else {
                    continue;
                };
                let Some(pid) = owner_of(lab, prefix) else {
                    continue;
                };
                let path = e.path();
                if owner_alive(pid, &path) {
                    continue;
                }
                std::fs::remove_file(&path).map_err(|source| LabError::Marker {
                    path: path.display().to_string(),
                    source,
                })?;
                found
                    .entry(lab.to_string())
                    .or_insert_with(|| Reaped {
                        lab: lab.to_string(),
                        owner_pid: pid,
                        netns: Vec::new(),
                        killed: Vec::new(),
                        marker: None,
                    })
                    .marker = Some(path);
            }
        }
        Ok(found.into_values().collect())
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.links.clear();
        self.lines.clear();
        self.hosts.clear();
        if let Some(m) = self.marker.take() {
            let _ = std::fs::remove_file(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::require_root;

    fn netns_list() -> String {
        run_text(Command::new("ip").args(["netns", "list"])).unwrap_or_default()
    }

    #[test]
    fn spec_ranges_are_checked_before_anything_runs() {
        for (spec, field) in [
            (LabSpec::new(1, 1), "hosts"),
            (LabSpec::new(9, 1), "hosts"),
            (LabSpec::new(2, 0), "queues"),
            (LabSpec::new(2, 17), "queues"),
            (
                LabSpec {
                    rate: Some(10),
                    ..LabSpec::new(2, 1)
                },
                "rate",
            ),
            (
                LabSpec {
                    loss: Some(f64::NAN),
                    ..LabSpec::new(2, 1)
                },
                "loss",
            ),
            (
                LabSpec {
                    prefix: "nt-lab".into(),
                    ..LabSpec::new(2, 1)
                },
                "prefix",
            ),
        ] {
            match Lab::build(spec) {
                Err(LabError::Spec { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        assert!(LabSpec::new(8, 16).validate().is_ok());
    }

    #[test]
    fn names_parse_to_owner_and_lab() {
        assert_eq!(owner_of("ntlab-123-4-h0", "ntlab"), Some(123));
        assert_eq!(owner_of("ntlabx-123-4-h0", "ntlab"), None);
        assert_eq!(owner_of("ntlab-abc-4", "ntlab"), None);
        assert_eq!(owner_of("other-123-4", "ntlab"), None);
        assert_eq!(lab_of("ntlab-123-4-h7"), "ntlab-123-4");
        assert_eq!(lab_of("ntlab-123-4"), "ntlab-123-4");
        assert!(start_time(std::process::id()).is_some());
    }

    #[test]
    fn three_hosts_two_queues_ping_and_tear_down() {
        if !require_root("lab::topo::three_hosts_two_queues_ping_and_tear_down") {
            return;
        }
        let name;
        {
            let lab = Lab::build(LabSpec::new(3, 2)).unwrap();
            name = lab.name().to_string();
            assert!(marker_path(&name).exists());
            let list = netns_list();
            for i in 0..3 {
                assert!(list.contains(&format!("{name}-h{i}")), "{list}");
            }
            let q = lab.hosts()[0].sh("ls /sys/class/net/v1/queues").unwrap();
            assert!(q.contains("rx-1") && !q.contains("rx-2"), "{q}");
            let q = lab.hosts()[2].sh("ls /sys/class/net/v0/queues").unwrap();
            assert!(q.contains("rx-1") && !q.contains("rx-2"), "{q}");
            for (from, to) in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 1)] {
                let addr = if from == 0 {
                    lab.addr(to).unwrap()
                } else if to == 0 {
                    lab.links[from - 1].hub.addr
                } else {
                    lab.addr(to).unwrap()
                };
                let out = lab.hosts()[from]
                    .sh(&format!("ping -c1 -W1 {addr}"))
                    .unwrap();
                assert!(out.contains("1 received"), "{from}->{to}: {out}");
            }
        }
        let list = netns_list();
        assert!(!list.contains(&name), "{list}");
        assert!(!marker_path(&name).exists());
    }

    #[test]
    fn largest_lab_builds_and_every_host_answers_the_hub() {
        if !require_root("lab::topo::largest_lab_builds_and_every_host_answers_the_hub") {
            return;
        }
        let lab = Lab::build(LabSpec::new(8, 16)).unwrap();
        assert_eq!(lab.links().len(), 7);
        let q = lab.hosts()[0].sh("ls /sys/class/net/v7/queues").unwrap();
        assert!(q.contains("rx-15") && q.contains("tx-15"), "{q}");
        for i in 1..8 {
            let addr = lab.addr(i).unwrap();
            let out = lab.hosts()[0].sh(&format!("ping -c1 -W1 {addr}")).unwrap();
            assert!(out.contains("1 received"), "0->{i}: {out}");
        }
    }

    #[test]
    fn rate_installs_tbf_on_both_ends() {
        if !require_root("lab::topo::rate_installs_tbf_on_both_ends") {
            return;
        }
        let lab = Lab::build(LabSpec {
            rate: Some(100_000_000),
            ..LabSpec::new(2, 1)
        })
        .unwrap();
        for (host, dev) in [(0, "v1"), (1, "v0")] {
            let out = run_text(Command::new("tc").args([
                "-n",
                lab.hosts()[host].name(),
                "qdisc",
                "show",
                "dev",
                dev,
            ]))
            .unwrap();
            assert!(out.contains("tbf") && out.contains("rate 100Mbit"), "{out}");
        }
    }

    #[test]
    fn the_mechanism_is_netem_first_then_the_delay_line() {
        let none = || DelayMechanism::None {
            reason: "Unknown qdisc".into(),
        };
        let probed = |m: DelayMechanism| move || m;
        let unprobed = || -> DelayMechanism { panic!("probed although nothing depends on it") };
        let asked = Some("delay 5ms");
        assert!(matches!(
            choose(None, MechanismChoice::Auto, unprobed),
            Ok(DelayMechanism::None { .. })
        ));
        assert_eq!(
            choose(asked, MechanismChoice::Auto, probed(DelayMechanism::Netem)).unwrap(),
            DelayMechanism::Netem
        );
        assert_eq!(
            choose(asked, MechanismChoice::Auto, none).unwrap(),
            DelayMechanism::Userspace
        );
        assert_eq!(
            choose(asked, MechanismChoice::Userspace, unprobed).unwrap(),
            DelayMechanism::Userspace
        );
        match choose(asked, MechanismChoice::Netem, none) {
            Err(LabError::NoDelayMechanism { asked, reason }) => {
                assert_eq!(asked, "delay 5ms");
                assert!(reason.contains("Unknown qdisc"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failed_delay_line_is_no_delay_mechanism_and_other_errors_stay() {
        let tun = LabError::DelayLine {
            what: "open TUN ntdl1x0a".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        match line_failed(Some("loss 1 %"), MechanismChoice::Auto, tun) {
            e @ LabError::NoDelayMechanism { .. } => {
                let text = e.to_string();
                assert!(
                    text.contains("loss 1 %") && text.contains("no netem"),
                    "{text}"
                );
                assert!(text.contains("open TUN ntdl1x0a"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        let ip = LabError::Command {
            cmd: "ip link".into(),
            status: "1".into(),
            stderr: "x".into(),
        };
        assert!(matches!(
            line_failed(Some("delay 5ms"), MechanismChoice::Auto, ip),
            LabError::Command { .. }
        ));
    }

    #[test]
    fn delay_uses_netem_where_the_kernel_has_it_else_the_delay_line() {
        if !require_root("lab::topo::delay_uses_netem_where_the_kernel_has_it_else_the_delay_line")
        {
            return;
        }
        let spec = LabSpec {
            prefix: "ntdelay".into(),
            delay: Some(Duration::from_millis(5)),
            ..LabSpec::new(2, 1)
        };
        // Probe the kernel the same way the lab does, in a namespace of ours.
        let probe = Netns::create("ntprobe").unwrap();
        let mech = probe_netem(&probe);
        drop(probe);
        let lab = Lab::build(spec).unwrap();
        let qdisc = run_text(Command::new("tc").args([
            "-n",
            lab.hosts()[0].name(),
            "qdisc",
            "show",
            "dev",
            "v1",
        ]))
        .unwrap();
        match (mech, lab.delay_mechanism()) {
            (DelayMechanism::Netem, DelayMechanism::Netem) => {
                assert!(qdisc.contains("netem"), "{qdisc}");
                assert!(
                    qdisc.contains("delay 2.5ms"),
                    "half the RTT each way: {qdisc}"
                );
            }
            (DelayMechanism::None { .. }, DelayMechanism::Userspace) => {
                assert!(!qdisc.contains("netem"), "{qdisc}");
                assert_eq!(
                    lab.delay_spec().map(|s| s.delay),
                    Some(Duration::from_micros(2500))
                );
                assert!(lab.delay_stats(1).is_some() && lab.delay_stats(2).is_none());
            }
            (m, l) => panic!("probe {m:?} but lab uses {l:?}"),
        }
        drop(lab);
        let me = format!("ntdelay-{}-", std::process::id());
        let list = netns_list();
        assert!(!list.contains(&me), "{list}");
    }

    #[test]
    fn stale_labs_are_reaped_and_others_left_alone() {
        if !require_root("lab::topo::stale_labs_are_reaped_and_others_left_alone") {
            return;
        }
        // A pid that is dead: a child we spawned and reaped.
        let mut child = Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let dead = child.id();
        assert!(start_time(dead).is_none(), "pid {dead} reused already");
        let me = std::process::id();
        std::fs::create_dir_all(MARKER_DIR).unwrap();
        let stale = Netns::create_named(format!("ntreap-{dead}-0-h0")).unwrap();
        let stale_marker = marker_path(&format!("ntreap-{dead}-0"));
        std::fs::write(&stale_marker, format!("{dead} 1\n")).unwrap();
        // An orphan marker of a dead owner, with no namespace left.
        let orphan = marker_path(&format!("ntreap-{dead}-9"));
        std::fs::write(&orphan, format!("{dead} 1\n")).unwrap();
        let live = Netns::create_named(format!("ntreap-{me}-1-h0")).unwrap();
        let other = Netns::create_named(format!("ntreapx-{dead}-0-h0")).unwrap();
        let other2 = Netns::create_named(format!("ntother-{dead}-0-h0")).unwrap();
        // A process inside the stale lab, as a killed run would leave.
        let mut sleeper = stale.command("sleep").arg("30").spawn().unwrap();
        let stale_name = stale.name().to_string();
        // `ip netns exec` enters the namespace before it execs sleep: wait
        // until the kernel lists a process there, as a killed run leaves it.
        let entered = std::time::Instant::now() + Duration::from_secs(5);
        while run_text(Command::new("ip").args(["netns", "pids", &stale_name]))
            .map(|p| p.trim().is_empty())
            .unwrap_or(true)
        {
            assert!(
                std::time::Instant::now() < entered,
                "sleep never entered {stale_name}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        std::mem::forget(stale); // the reaper, not Drop, must remove it

        let reaped = Lab::reap_stale("ntreap").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let exited = loop {
            if sleeper.try_wait().unwrap().is_some() {
                break true;
            }
            if std::time::Instant::now() > deadline {
                let _ = sleeper.kill();
                let _ = sleeper.wait();
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let list = netns_list();
        let _ = std::fs::remove_file(&stale_marker);
        let _ = std::fs::remove_file(&orphan);

        assert!(exited, "process in the stale lab survived");
        assert!(!list.contains(&stale_name), "{list}");
        assert!(list.contains(live.name()), "{list}");
        assert!(list.contains(other.name()), "{list}");
        assert!(list.contains(other2.name()), "{list}");
        assert!(!stale_marker.exists() && !orphan.exists());
        let labs: Vec<&str> = reaped.iter().map(|r| r.lab.as_str()).collect();
        let want0 = format!("ntreap-{dead}-0");
        let want9 = format!("ntreap-{dead}-9");
        assert_eq!(labs, vec![want0.as_str(), want9.as_str()], "{reaped:?}");
        assert_eq!(reaped[0].netns, vec![stale_name.clone()]);
        assert_eq!(reaped[0].killed.len(), 1, "{reaped:?}");
        assert_eq!(reaped[0].marker.as_deref(), Some(stale_marker.as_path()));
        assert!(reaped[1].netns.is_empty() && reaped[1].marker.is_some());
    }
}
