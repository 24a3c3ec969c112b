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

mod spec;
#[cfg(test)]
mod tests;

pub use spec::{bdp_of, lab_info, DelayMechanism, LabSpec, MechanismChoice, MAX_HOSTS};
use spec::{choose, line_failed};

/// Directory holding one marker file per live lab (`NAME.pid`, holding the
/// owner's pid and its start time).
pub const MARKER_DIR: &str = "/run/nettune-lab";

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
    reaped: Vec<Reaped>,
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

/// Delete the namespace `ns` of a dead lab: `Ok(false)` when it is gone
/// already (another build or session reaping the same prefix at once).
fn delete_netns(ns: &str) -> Result<bool, LabError> {
    match run(Command::new("ip").args(["netns", "del", ns])) {
        Ok(_) => Ok(true),
        Err(_) if !Path::new(NETNS_DIR).join(ns).exists() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Remove a dead lab's marker: `Ok(false)` when another reaper did first.
fn remove_marker(path: &Path) -> Result<bool, LabError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(LabError::Marker {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// Where `ip netns add` binds named namespaces.
const NETNS_DIR: &str = "/run/netns";

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
    /// routes, shaping. Labs of `spec.prefix` left by a killed run are
    /// reaped first ([`Lab::reap_stale`]). Anything created is removed
    /// again on error.
    pub fn build(spec: LabSpec) -> Result<Lab, LabError> {
        spec.validate()?;
        let reaped = Lab::reap_stale(&spec.prefix)?;
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
        host::files::write_atomic(&marker, format!("{pid} {started}\n").as_bytes())?;
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
            reaped,
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

    /// Give host `i` (1..hosts, a leaf) `count` more source addresses (a
    /// [`SourcePool`]): /32s of 198.19.I.0/24 on its link end, routed back
    /// by the hub, and room in the host's TIME_WAIT table for every port of
    /// every address at once (`tcp_max_tw_buckets`), so a connection-rate
    /// run bound to a fresh address (`nettune bench --bind`) finds all its
    /// ports free and its sockets enter TIME_WAIT as on a quiet host, not
    /// skip it because earlier runs filled the table.
    pub fn add_source_pool(&self, i: usize, count: u32) -> Result<SourcePool, LabError> {
        let bad = |value: String| LabError::Spec {
            field: "source pool",
            value,
            allowed: "a leaf host (1..hosts) and 1 to 250 addresses",
        };
        let link = self
            .links
            .iter()
            .find(|l| l.host == i)
            .ok_or_else(|| bad(format!("host {i}")))?;
        let addrs =
            SourcePool::addrs(i, count).ok_or_else(|| bad(format!("{count} on host {i}")))?;
        let (hub, leaf) = (&self.hosts[0], &self.hosts[i]);
        for a in &addrs {
            leaf.ip(&["addr", "add", &format!("{a}/32"), "dev", &link.leaf.iface])?;
        }
        let net = SourcePool::net(i).ok_or_else(|| bad(format!("host {i}")))?;
        hub.ip(&[
            "route",
            "add",
            &format!("{net}/24"),
            "via",
            &link.leaf.addr.to_string(),
            "dev",
            &link.hub.iface,
        ])?;
        let buckets = u64::from(count).saturating_mul(65_536);
        leaf.sh(&format!(
            "echo {buckets} > /proc/sys/net/ipv4/tcp_max_tw_buckets"
        ))?;
        Ok(SourcePool { addrs })
    }

    /// What the build reaped first: the labs of `spec.prefix` left by
    /// killed runs.
    pub fn reaped(&self) -> &[Reaped] {
        &self.reaped
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
            if delete_netns(ns)? {
                entry.netns.push(ns.to_string());
            }
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
                if !remove_marker(&path)? {
                    continue;
                }
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

/// Source addresses of one lab host beyond its link address
/// ([`Lab::add_source_pool`]): a run that binds to one no earlier run used
/// in the last minute finds no TIME_WAIT of that run on its 4-tuples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePool {
    addrs: Vec<Ipv4Addr>,
}

impl SourcePool {
    /// The /24 of host `i`'s pool: 198.19.I.0 (inside the lab's
    /// 198.18.0.0/15, above the link /30s, which use slots 0 to 30 of
    /// 198.18.0.0/24).
    fn net(i: usize) -> Option<Ipv4Addr> {
        let i = u8::try_from(i).ok().filter(|i| *i >= 1)?;
        Some(Ipv4Addr::new(198, 19, i, 0))
    }

    /// Host `i`'s first `count` pool addresses: 198.19.I.1 onwards (1 to 250).
    pub fn addrs(i: usize, count: u32) -> Option<Vec<Ipv4Addr>> {
        let [a, b, c, _] = Self::net(i)?.octets();
        let count = u8::try_from(count).ok().filter(|n| (1..=250).contains(n))?;
        Some((1..=count).map(|d| Ipv4Addr::new(a, b, c, d)).collect())
    }

    /// The addresses, in the order runs should take them.
    pub fn list(&self) -> &[Ipv4Addr] {
        &self.addrs
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
