//! Read [`DoctorFacts`] from a [`Root`]: everything doctor's rules need
//! beyond the snapshot. Nothing fails as a whole: a part that cannot be
//! read is [`Fact::Missing`] naming the file, so the rule needing it is
//! skipped with that reason and the others still run.
//!
//! Two parts come over netlink on the live host (qdiscs and TCP sockets,
//! see [`crate::nldump`]); under a fixture root they are read from
//! [`QDISC_FIXTURE`] and [`TCP_FIXTURE`] beside `sys/` and `proc/`, which
//! `nettune capture` writes.

use crate::nldump;
use crate::readctx::{Access, Ctx};
use crate::{HostError, Root};
use model::doctor_facts::{
    BootConfig, BootModuleOptions, BootSetting, BootUdevLine, BqlQueue, Conntrack, CpuPower,
    DoctorFacts, Fact, IdleState, NetProcess, Platform, Qdisc, TcpMemory, TcpSocket, TunedProfile,
};
use model::knobpath::sysctl_path;
use model::parse::conntrack::parse_conntrack_stat;
use model::parse::inet_sockets::parse_inet_sockets;
use model::parse::modprobe_conf::parse_modprobe_conf;
use model::parse::procpid::{parse_cpus_allowed_list, parse_pid_stat, socket_inode, PidStat};
use model::parse::sockstat::parse_sockstat;
use model::parse::sysctl_conf::{order_config_files, parse_sysctl_conf, SYSCTL_DIRS};
use model::parse::sysfs::parse_u64;
use model::parse::tuned_conf::parse_tuned_conf;
use model::parse::udev_rules::parse_udev_rules;
use model::snapshot::HostSnapshot;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

/// Qdiscs under a fixture root (a JSON list of [`Qdisc`]).
pub const QDISC_FIXTURE: &str = "netlink/qdisc.json";
/// Established TCP sockets under a fixture root (a JSON list of [`TcpSocket`]).
pub const TCP_FIXTURE: &str = "netlink/inet_diag.json";

/// Network processes kept (the busiest).
pub const MAX_PROCESSES: usize = 16;
/// Processes whose fds are examined, busiest first.
const MAX_PIDS_SCANNED: usize = 512;
/// PIDs listed from `/proc`.
const MAX_PIDS: usize = 65_536;
/// fd links read per process, and in total.
const MAX_FDS_PER_PID: usize = 8_192;
const MAX_FDS_TOTAL: usize = 200_000;
/// cpuidle states read per CPU.
const MAX_IDLE_STATES: usize = 16;
/// Files read per configuration directory.
const MAX_CONF_FILES: usize = 512;
/// Depth of tuned `include=` chains followed.
const MAX_TUNED_DEPTH: usize = 8;

/// Page size assumed for `tcp_mem` and sockstat `mem` arithmetic.
pub const PAGE_SIZE: u64 = 4096;

/// Read doctor's facts for `snap` under `root`.
pub fn read_doctor_facts(root: &Root, snap: &HostSnapshot) -> DoctorFacts {
    let ctx = Ctx::new(root, false);
    read(&ctx, snap)
}

/// Read doctor's facts and also return every path read (for `capture`).
pub fn read_doctor_facts_recorded(root: &Root, snap: &HostSnapshot) -> (DoctorFacts, Vec<Access>) {
    let ctx = Ctx::new(root, true);
    let f = read(&ctx, snap);
    let (_, log) = ctx.into_parts();
    (f, log)
}

/// Write the netlink-sourced parts of `facts` under `out` as
/// [`QDISC_FIXTURE`] and [`TCP_FIXTURE`], so `--root out` replays them.
/// A part that was missing is not written (it reads back as missing).
pub fn write_netlink_fixtures(
    out: &crate::files::OutDir,
    facts: &DoctorFacts,
) -> Result<(), HostError> {
    fn put<T: serde::Serialize>(
        out: &crate::files::OutDir,
        rel: &str,
        v: &T,
    ) -> Result<(), HostError> {
        let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
        text.push('\n');
        out.write(Path::new(rel), text.as_bytes())
    }
    if let Some(q) = facts.qdiscs.value() {
        put(out, QDISC_FIXTURE, q)?;
    }
    if let Some(t) = facts.tcp_sockets.value() {
        put(out, TCP_FIXTURE, t)?;
    }
    Ok(())
}

fn read(ctx: &Ctx<'_>, snap: &HostSnapshot) -> DoctorFacts {
    DoctorFacts {
        power: read_power(ctx, snap),
        processes: read_processes(ctx),
        qdiscs: read_qdiscs(ctx, snap),
        bql: read_bql(ctx, snap),
        available_qdiscs: read_available_qdiscs(ctx, snap),
        boot: read_boot(ctx),
        conntrack: read_conntrack(ctx),
        tcp_memory: read_tcp_memory(ctx),
        tcp_sockets: read_tcp_sockets(ctx),
        platform: read_platform(ctx),
    }
}

/// A missing fact from a read error: the path and the rest of the message.
fn missing<T>(e: &HostError) -> Fact<T> {
    let path = e
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let full = e.to_string();
    let reason = full
        .strip_prefix(&path)
        .map(|m| m.trim_start_matches(':').trim().to_string())
        .unwrap_or(full);
    Fact::missing(path, reason)
}

/// Read and parse a required file, recording it.
fn fact<T>(
    ctx: &Ctx<'_>,
    path: &str,
    f: impl FnOnce(&str) -> Result<T, model::ParseError>,
) -> Fact<T> {
    ctx.touch(path);
    match ctx.root.parse(path, f) {
        Ok(v) => Fact::Ok { value: v },
        Err(e) => missing(&e),
    }
}

/// Read an optional file (recorded), trimmed.
fn opt(ctx: &Ctx<'_>, path: &str) -> Option<String> {
    ctx.touch(path);
    ctx.root.read_opt(path).ok().flatten()
}

fn list(ctx: &Ctx<'_>, path: &str) -> Option<Vec<String>> {
    ctx.record(Access::Dir(path.into()));
    ctx.root.list(path).ok()
}

const CPU: &str = "/sys/devices/system/cpu";

fn read_power(ctx: &Ctx<'_>, snap: &HostSnapshot) -> Fact<CpuPower> {
    let mut p = CpuPower::default();
    for c in snap.cpus.iter().filter(|c| c.online) {
        let id = c.id.0;
        let d = format!("{CPU}/cpu{id}");
        if let Some(g) =
            opt(ctx, &format!("{d}/cpufreq/scaling_governor")).filter(|s| !s.is_empty())
        {
            p.governors.insert(id, g);
        }
        if p.scaling_driver.is_none() {
            p.scaling_driver =
                opt(ctx, &format!("{d}/cpufreq/scaling_driver")).filter(|s| !s.is_empty());
        }
        let mut states = Vec::new();
        let entries = list(ctx, &format!("{d}/cpuidle")).unwrap_or_default();
        let mut idx: Vec<u32> = entries
            .iter()
            .filter_map(|e| e.strip_prefix("state")?.parse().ok())
            .collect();
        idx.sort_unstable();
        for k in idx.into_iter().take(MAX_IDLE_STATES) {
            let s = format!("{d}/cpuidle/state{k}");
            let (Some(name), Some(lat)) = (
                opt(ctx, &format!("{s}/name")),
                opt(ctx, &format!("{s}/latency")).and_then(|v| parse_u64(&v).ok()),
            ) else {
                continue;
            };
            let disabled = opt(ctx, &format!("{s}/disable")).is_some_and(|v| v.trim() == "1");
            states.push(IdleState {
                index: k,
                name,
                latency_us: lat,
                disabled,
            });
        }
        if !states.is_empty() {
            p.idle_states.insert(id, states);
        }
    }
    if p.governors.is_empty() && p.idle_states.is_empty() {
        let first = snap.cpus.first().map_or(0, |c| c.id.0);
        return Fact::missing(
            format!("{CPU}/cpu{first}/cpufreq/scaling_governor"),
            "not found, and no cpuidle states either (usual in a VM: the hypervisor owns power states)",
        );
    }
    Fact::Ok { value: p }
}

/// Inodes of inet sockets, from `/proc/net/{tcp,tcp6,udp,udp6}`; the first
/// failure when none of them reads.
fn inet_inodes(ctx: &Ctx<'_>) -> Result<HashSet<u64>, Fact<Vec<NetProcess>>> {
    let mut set = HashSet::new();
    let mut first_missing = None;
    let mut any = false;
    for f in ["tcp", "tcp6", "udp", "udp6"] {
        match fact(ctx, &format!("/proc/net/{f}"), parse_inet_sockets) {
            Fact::Ok { value } => {
                any = true;
                set.extend(value.iter().map(|s| s.inode).filter(|i| *i != 0));
            }
            Fact::Missing { path, reason } => {
                first_missing.get_or_insert(Fact::Missing { path, reason });
            }
        }
    }
    match (any, first_missing) {
        (false, Some(m)) => Err(m),
        _ => Ok(set),
    }
}

fn read_processes(ctx: &Ctx<'_>) -> Fact<Vec<NetProcess>> {
    let inodes = match inet_inodes(ctx) {
        Ok(s) => s,
        Err(m) => return m,
    };
    let pids: Vec<u32> = match ctx.root.list("/proc") {
        Ok(v) => v
            .iter()
            .filter_map(|e| e.parse().ok())
            .take(MAX_PIDS)
            .collect(),
        Err(e) => return missing(&e),
    };
    // Busiest first, by CPU time since start.
    let mut stats: Vec<PidStat> = pids
        .iter()
        .filter_map(|p| {
            let t = ctx.root.read(format!("/proc/{p}/stat")).ok()?;
            parse_pid_stat(&t).ok()
        })
        .collect();
    stats.sort_by_key(|s| std::cmp::Reverse(s.utime.saturating_add(s.stime)));
    let mut out = Vec::new();
    let mut fds_total = 0usize;
    for s in stats.iter().take(MAX_PIDS_SCANNED) {
        if out.len() == MAX_PROCESSES || fds_total >= MAX_FDS_TOTAL {
            break;
        }
        let dir = format!("/proc/{}/fd", s.pid);
        let Ok(fds) = ctx.root.list(&dir) else {
            continue;
        };
        let mut sockets = 0u32;
        let mut links = Vec::new();
        for fd in fds.iter().take(MAX_FDS_PER_PID) {
            fds_total += 1;
            let p = format!("{dir}/{fd}");
            if let Ok(t) = ctx.root.read_link(&p) {
                if socket_inode(&t.to_string_lossy()).is_some_and(|i| inodes.contains(&i)) {
                    sockets = sockets.saturating_add(1);
                    links.push(p);
                }
            }
        }
        if sockets == 0 {
            continue;
        }
        let stat_path = format!("/proc/{}/stat", s.pid);
        let status_path = format!("/proc/{}/status", s.pid);
        ctx.touch(&stat_path);
        ctx.touch(&status_path);
        ctx.record(Access::Dir(dir.into()));
        for l in links {
            ctx.record(Access::Link(l.into()));
        }
        let allowed = ctx
            .root
            .read(&status_path)
            .ok()
            .and_then(|t| parse_cpus_allowed_list(&t).ok());
        out.push(NetProcess {
            pid: s.pid,
            comm: s.comm.clone(),
            cpu_ticks: s.utime.saturating_add(s.stime),
            last_cpu: s.processor,
            allowed,
            sockets,
        });
    }
    Fact::Ok { value: out }
}

fn read_json<T: serde::de::DeserializeOwned>(ctx: &Ctx<'_>, rel: &str) -> Fact<T> {
    let p = ctx.root.dir().join(rel);
    match crate::root::read_regular(&p, Path::new(rel), crate::root::MAX_READ) {
        Ok(b) => match serde_json::from_slice(&b) {
            Ok(v) => Fact::Ok { value: v },
            Err(e) => Fact::missing(rel, format!("not valid JSON: {e}")),
        },
        Err(e) => missing(&e),
    }
}

fn read_qdiscs(ctx: &Ctx<'_>, snap: &HostSnapshot) -> Fact<Vec<Qdisc>> {
    if !ctx.root.is_live() {
        return read_json(ctx, QDISC_FIXTURE);
    }
    match nldump::dump_qdiscs() {
        Ok(raw) => Fact::Ok {
            value: nldump::resolve_qdiscs(&raw, |i| {
                snap.interfaces
                    .iter()
                    .find(|x| x.ifindex.map(|n| n as i64) == Some(i64::from(i)))
                    .map(|x| x.name.clone())
            }),
        },
        Err(e) => Fact::missing("netlink RTM_GETQDISC", e.to_string()),
    }
}

fn read_tcp_sockets(ctx: &Ctx<'_>) -> Fact<Vec<TcpSocket>> {
    if !ctx.root.is_live() {
        return read_json(ctx, TCP_FIXTURE);
    }
    match nldump::dump_tcp_sockets() {
        Ok(v) => Fact::Ok { value: v },
        Err(e) => Fact::missing("netlink SOCK_DIAG_BY_FAMILY", e.to_string()),
    }
}

fn read_bql(ctx: &Ctx<'_>, snap: &HostSnapshot) -> Vec<BqlQueue> {
    let mut out = Vec::new();
    for i in &snap.interfaces {
        for q in &i.tx_queues {
            let d = format!(
                "/sys/class/net/{}/queues/tx-{}/byte_queue_limits",
                i.name, q.index
            );
            let n = |f: &str| opt(ctx, &format!("{d}/{f}")).and_then(|v| parse_u64(&v).ok());
            let (limit, limit_max, inflight) = (n("limit"), n("limit_max"), n("inflight"));
            if limit.is_some() || limit_max.is_some() || inflight.is_some() {
                out.push(BqlQueue {
                    interface: i.name.clone(),
                    queue: q.index,
                    limit,
                    limit_max,
                    inflight,
                });
            }
        }
    }
    out
}

/// Qdisc kinds every kernel has built in (`sch_generic.c`, `sch_fifo.c`, `sch_mq.c`).
const CORE_QDISCS: &[&str] = &[
    "pfifo_fast",
    "pfifo",
    "bfifo",
    "pfifo_head_drop",
    "mq",
    "noqueue",
];

fn read_available_qdiscs(ctx: &Ctx<'_>, snap: &HostSnapshot) -> Fact<Vec<String>> {
    let mut kinds: BTreeSet<String> = CORE_QDISCS.iter().map(|s| s.to_string()).collect();
    let mut known = false;
    let sch = |path: &str| -> Option<String> {
        let file = path.rsplit('/').next()?;
        let base = file.split(".ko").next()?;
        base.strip_prefix("sch_").map(str::to_string)
    };
    if let Some(rel) = snap.source.kernel.as_deref().filter(|r| !r.contains('/')) {
        for f in ["modules.builtin", "modules.dep"] {
            let p = format!("/lib/modules/{rel}/{f}");
            if let Some(t) = opt(ctx, &p) {
                known = true;
                for line in t.lines().take(100_000) {
                    let m = line.split(':').next().unwrap_or("");
                    if m.contains("net/sched/") {
                        kinds.extend(sch(m));
                    }
                }
            }
        }
    }
    for m in list(ctx, "/sys/module").unwrap_or_default() {
        if let Some(k) = m.strip_prefix("sch_") {
            // The entry itself is the fact: record it so a capture keeps it.
            ctx.record(Access::Dir(format!("/sys/module/{m}").into()));
            known = true;
            kinds.insert(k.to_string());
        }
    }
    if let Some(d) = snap.sysctls.get("net.core.default_qdisc") {
        // The kernel refuses an unknown default, so the one set exists.
        kinds.insert(d.clone());
    }
    if !known {
        let rel = snap.source.kernel.as_deref().unwrap_or("RELEASE");
        return Fact::missing(
            format!("/lib/modules/{rel}/modules.builtin"),
            "not found, and no sch_* under /sys/module: which qdiscs exist is unknown",
        );
    }
    Fact::Ok {
        value: kinds.into_iter().collect(),
    }
}

/// Directories holding drop-ins, highest priority first.
const MODPROBE_DIRS: &[&str] = &[
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
];
const UDEV_DIRS: &[&str] = &[
    "/etc/udev/rules.d",
    "/run/udev/rules.d",
    "/usr/local/lib/udev/rules.d",
    "/usr/lib/udev/rules.d",
    "/lib/udev/rules.d",
];

/// Files of a drop-in directory set in systemd order.
fn drop_ins(ctx: &Ctx<'_>, dirs: &[&'static str], suffix: &str) -> Vec<String> {
    let listing: Vec<(&str, Vec<String>)> = dirs
        .iter()
        .map(|d| (*d, list(ctx, d).unwrap_or_default()))
        .collect();
    order_config_files(&listing, suffix)
        .into_iter()
        .take(MAX_CONF_FILES)
        .collect()
}

/// Read a configuration file; `None` when absent or masked (`/dev/null`),
/// noted in `unreadable` on any other failure.
fn conf_text(ctx: &Ctx<'_>, path: &str, unreadable: &mut Vec<(String, String)>) -> Option<String> {
    ctx.touch(path);
    match ctx.root.read(path) {
        Ok(t) => Some(t),
        Err(e) if e.is_not_found() || matches!(e, HostError::NotRegular { .. }) => None,
        Err(e) => {
            unreadable.push((path.to_string(), e.to_string()));
            None
        }
    }
}

fn read_boot(ctx: &Ctx<'_>) -> BootConfig {
    let mut b = BootConfig::default();
    let mut files = drop_ins(ctx, SYSCTL_DIRS, ".conf");
    // `sysctl --system` reads /etc/sysctl.conf last; distributions link it
    // in as /etc/sysctl.d/99-sysctl.conf, then it is already in the list.
    let linked = files.iter().any(|f| {
        ctx.record(Access::Link(f.into()));
        ctx.root
            .read_link(f)
            .is_ok_and(|t| t.file_name().is_some_and(|n| n == "sysctl.conf"))
    });
    if !linked {
        files.push("/etc/sysctl.conf".to_string());
    }
    for f in &files {
        let Some(t) = conf_text(ctx, f, &mut b.unreadable) else {
            continue;
        };
        match parse_sysctl_conf(&t) {
            Ok(v) => b.sysctl.extend(v.into_iter().map(|a| BootSetting {
                key: a.key,
                value: a.value,
                file: f.clone(),
                line: a.line,
            })),
            Err(e) => b.unreadable.push((f.clone(), e.to_string())),
        }
    }
    for f in drop_ins(ctx, MODPROBE_DIRS, ".conf") {
        let Some(t) = conf_text(ctx, &f, &mut b.unreadable) else {
            continue;
        };
        match parse_modprobe_conf(&t) {
            Ok(v) => b.modprobe.extend(v.into_iter().map(|o| BootModuleOptions {
                module: o.module,
                params: o.params,
                file: f.clone(),
                line: o.line,
            })),
            Err(e) => b.unreadable.push((f.clone(), e.to_string())),
        }
    }
    for f in drop_ins(ctx, UDEV_DIRS, ".rules") {
        let Some(t) = conf_text(ctx, &f, &mut b.unreadable) else {
            continue;
        };
        match parse_udev_rules(&t) {
            Ok(v) => b.udev.extend(v.into_iter().map(|l| BootUdevLine {
                knobs: l.knobs,
                text: l.text,
                file: f.clone(),
                line: l.line,
            })),
            Err(e) => b.unreadable.push((f.clone(), e.to_string())),
        }
    }
    b.tuned = read_tuned(ctx, &mut b.unreadable);
    b
}

fn read_tuned(ctx: &Ctx<'_>, unreadable: &mut Vec<(String, String)>) -> Option<TunedProfile> {
    let name = opt(ctx, "/etc/tuned/active_profile").filter(|s| !s.is_empty())?;
    let mut prof = TunedProfile {
        name: name.clone(),
        ..Default::default()
    };
    let mut seen = BTreeSet::new();
    for n in name.split_whitespace() {
        tuned_profile(ctx, n, 0, &mut seen, &mut prof, unreadable);
    }
    Some(prof)
}

/// Apply profile `name` into `prof`: its includes first, then its own settings.
fn tuned_profile(
    ctx: &Ctx<'_>,
    name: &str,
    depth: usize,
    seen: &mut BTreeSet<String>,
    prof: &mut TunedProfile,
    unreadable: &mut Vec<(String, String)>,
) {
    if depth > MAX_TUNED_DEPTH
        || name.contains('/')
        || name.contains("..")
        || !seen.insert(name.to_string())
    {
        return;
    }
    let candidates = [
        format!("/etc/tuned/{name}/tuned.conf"),
        format!("/etc/tuned/profiles/{name}/tuned.conf"),
        format!("/usr/lib/tuned/{name}/tuned.conf"),
        format!("/usr/lib/tuned/profiles/{name}/tuned.conf"),
    ];
    let Some((file, text)) = candidates
        .iter()
        .find_map(|f| conf_text(ctx, f, unreadable).map(|t| (f.clone(), t)))
    else {
        unreadable.push((
            format!("/usr/lib/tuned/{name}/tuned.conf"),
            format!("tuned profile {name:?} not found"),
        ));
        return;
    };
    let conf = match parse_tuned_conf(&text) {
        Ok(c) => c,
        Err(e) => {
            unreadable.push((file, e.to_string()));
            return;
        }
    };
    for inc in &conf.include {
        // `${f:...}` functions are tuned's; a literal name is followed.
        if !inc.contains('$') {
            tuned_profile(ctx, inc, depth + 1, seen, prof, unreadable);
        }
    }
    let setting = |e: &model::parse::tuned_conf::TunedEntry| BootSetting {
        key: model::parse::sysctl_conf::normalize_key(&e.key),
        value: e.value.split_whitespace().collect::<Vec<_>>().join(" "),
        file: file.clone(),
        line: e.line,
    };
    prof.sysctl
        .extend(conf.section("sysctl").iter().map(setting));
    prof.cpu
        .extend(conf.section("cpu").iter().map(|e| BootSetting {
            key: e.key.clone(),
            ..setting(e)
        }));
}

fn read_conntrack(ctx: &Ctx<'_>) -> Fact<Conntrack> {
    let count = fact(ctx, "/proc/sys/net/netfilter/nf_conntrack_count", parse_u64);
    let max = fact(ctx, "/proc/sys/net/netfilter/nf_conntrack_max", parse_u64);
    let (count, max) = match (count, max) {
        (Fact::Ok { value: c }, Fact::Ok { value: m }) => (c, m),
        (Fact::Missing { path, reason }, _) | (_, Fact::Missing { path, reason }) => {
            let reason = if reason == "not found" {
                "not found (nf_conntrack is not loaded: no connection tracking)".to_string()
            } else {
                reason
            };
            return Fact::Missing { path, reason };
        }
    };
    let stat = fact(ctx, "/proc/net/stat/nf_conntrack", parse_conntrack_stat)
        .value()
        .cloned();
    Fact::Ok {
        value: Conntrack { count, max, stat },
    }
}

fn parse_triple(s: &str) -> Result<[u64; 3], model::ParseError> {
    let v: Vec<u64> = s
        .split_whitespace()
        .map(|t| {
            t.parse()
                .map_err(|_| model::ParseError::invalid(1, "page count", t))
        })
        .collect::<Result<_, _>>()?;
    <[u64; 3]>::try_from(v).map_err(|_| model::ParseError::format(1, "expected 3 values"))
}

fn read_tcp_memory(ctx: &Ctx<'_>) -> Fact<TcpMemory> {
    let sockstat = match fact(ctx, "/proc/net/sockstat", parse_sockstat) {
        Fact::Ok { value } => value,
        Fact::Missing { path, reason } => return Fact::Missing { path, reason },
    };
    let tcp_mem = fact(ctx, &sysctl_path("net.ipv4.tcp_mem"), parse_triple)
        .value()
        .copied();
    let max_orphans = fact(ctx, &sysctl_path("net.ipv4.tcp_max_orphans"), parse_u64)
        .value()
        .copied();
    Fact::Ok {
        value: TcpMemory {
            sockstat,
            tcp_mem,
            max_orphans,
            page_size: PAGE_SIZE,
        },
    }
}

fn read_platform(ctx: &Ctx<'_>) -> Platform {
    let dmi = |f: &str| opt(ctx, &format!("/sys/class/dmi/id/{f}")).filter(|s| !s.is_empty());
    Platform {
        sys_vendor: dmi("sys_vendor"),
        product_name: dmi("product_name"),
        product_version: dmi("product_version"),
        bios_vendor: dmi("bios_vendor"),
        bios_version: dmi("bios_version"),
        hypervisor: opt(ctx, "/sys/hypervisor/type").filter(|s| !s.is_empty()),
    }
}
