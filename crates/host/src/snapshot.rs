//! Read a [`HostSnapshot`] from a [`Root`].
//!
//! Reading never fails as a whole: every file that is missing where it should
//! exist, unreadable or malformed leaves its field `None` (or empty) and adds
//! a [`Note`](model::snapshot::Note) naming the file. Knobs that older kernels or virtual devices
//! legitimately lack (`effective_affinity` before 4.15, `cpufreq` in VMs,
//! `xps_cpus` on single-queue devices) are `None` without a note.

use crate::ethtool::{self, Ethtool, EthtoolStateExt};
use crate::owners;
pub use crate::readctx::Access;
use crate::readctx::Ctx;
use crate::Root;
use model::knobpath::sysctl_path;
use model::parse::interrupts::parse_interrupts;
use model::parse::irqname::NameShape;
use model::parse::irqname::{map_queues, parse_irq_name, retain_existing, MappedIrq, OwnedIrq};
use model::parse::sysfs::{
    is_pci_address, parse_distances, parse_i32, parse_list_or_null, parse_mem_total_kib,
    parse_pci_hex, parse_u32, parse_u64,
};
use model::snapshot::{
    Cpu, CpuSummary, HostSnapshot, IfaceStats, Interface, Irq, NumaNode, QueueSource, RxQueue,
    Source, TxQueue, SNAPSHOT_SCHEMA_VERSION,
};
use model::{CpuId, CpuSet, IrqNumber, NodeId, ParseError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Network sysctls read into [`HostSnapshot::sysctls`]; missing ones are noted.
pub const SYSCTLS: &[&str] = &[
    "net.core.rmem_default",
    "net.core.rmem_max",
    "net.core.wmem_default",
    "net.core.wmem_max",
    "net.core.optmem_max",
    "net.core.netdev_max_backlog",
    "net.core.netdev_budget",
    "net.core.netdev_budget_usecs",
    "net.core.dev_weight",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.rps_sock_flow_entries",
    "net.core.somaxconn",
    "net.core.default_qdisc",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_mem",
    "net.ipv4.udp_mem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_moderate_rcvbuf",
];

/// Sysctls read when present, without a note when absent (removed in newer kernels).
pub const OPTIONAL_SYSCTLS: &[&str] = &[
    "net.ipv4.tcp_low_latency",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_adv_win_scale",
];

/// Read a snapshot of the host at `root`, with ethtool state from the
/// default source: netlink on the live host, `ethtool/<iface>.json` under a
/// fixture root.
pub fn read_snapshot(root: &Root) -> HostSnapshot {
    let src = ethtool::default_source(root);
    read_snapshot_with(root, src.as_ref())
}

/// Only the snapshot's `owners` (irqbalance, tuned and their files), of the
/// host (or fixture) at `root`: what `verify` reports beside its knobs,
/// without reading the rest of a snapshot.
pub fn read_owners(root: &Root) -> model::snapshot::ForeignOwners {
    owners::read_owners(&Ctx::new(root, false))
}

/// The host facts a `bench` result carries, of the host (or fixture) at
/// `root`; never fails (what cannot be read is left out).
pub fn read_bench_facts(root: &Root) -> model::bench_facts::HostFacts {
    read_bench_facts_on(root, None)
}

/// [`read_bench_facts`] with the interface the traffic of a connection
/// from `local` to `peer` used ([`crate::bench_path::path_interface`]),
/// listed even when it is `lo`.
pub fn read_bench_facts_on(
    root: &Root,
    conn: Option<(std::net::IpAddr, std::net::IpAddr)>,
) -> model::bench_facts::HostFacts {
    let path = conn.and_then(|(local, peer)| crate::bench_path::path_interface(root, local, peer));
    model::bench_facts::from_snapshot_on(&read_snapshot(root), path.as_deref())
}

/// Read a snapshot taking ethtool state from `eth`.
pub fn read_snapshot_with(root: &Root, eth: &dyn Ethtool) -> HostSnapshot {
    let ctx = Ctx::new(root, false);
    let snap = read_into(&ctx, eth);
    let (notes, _) = ctx.into_parts();
    HostSnapshot { notes, ..snap }
}

/// Read a snapshot and also return every path read (for `capture`).
pub fn read_snapshot_recorded(root: &Root, eth: &dyn Ethtool) -> (HostSnapshot, Vec<Access>) {
    let ctx = Ctx::new(root, true);
    let snap = read_into(&ctx, eth);
    let (notes, log) = ctx.into_parts();
    (HostSnapshot { notes, ..snap }, log)
}

fn read_into(ctx: &Ctx<'_>, eth: &dyn Ethtool) -> HostSnapshot {
    let root = ctx.root;
    let label = if root.is_live() {
        None
    } else {
        let p = root.dir().join("LABEL");
        crate::root::read_regular(&p, &p, 64 * 1024)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let source = Source {
        root: root.dir().display().to_string(),
        hostname: ctx.req("/proc/sys/kernel/hostname"),
        kernel: ctx.req("/proc/sys/kernel/osrelease"),
        label,
    };
    let cpu = read_cpu_summary(ctx);
    let nodes = read_nodes(ctx, &cpu);
    let cpus = read_cpus(ctx, &cpu, &nodes);
    let mut irqs = read_irqs(ctx);
    let mut interfaces = Vec::new();
    let names = ctx.interfaces().unwrap_or_default();
    let mut mapped = Vec::new();
    for name in &names {
        let (iface, m) = read_interface(ctx, name, &names, &irqs, eth);
        interfaces.push(iface);
        mapped.push(m);
    }
    for (i, m) in interfaces.iter().zip(mapped) {
        for n in &i.irqs {
            if let Some(irq) = irqs.iter_mut().find(|q| q.number == *n) {
                irq.interface = Some(i.name.clone());
            }
        }
        for x in m {
            if let Some(irq) = irqs.iter_mut().find(|q| q.number.0 == x.number) {
                irq.queue = x.queue;
                irq.queue_source = x.source;
            }
        }
    }
    HostSnapshot {
        schema_version: SNAPSHOT_SCHEMA_VERSION,
        source,
        cpu,
        cpus,
        nodes,
        interfaces,
        irqs,
        sysctls: read_sysctls(ctx),
        owners: owners::read_owners(ctx),
        notes: Vec::new(),
    }
}

const CPU: &str = "/sys/devices/system/cpu";
const NODE: &str = "/sys/devices/system/node";

fn read_cpu_summary(ctx: &Ctx<'_>) -> CpuSummary {
    let list = |f: &str| ctx.req_parse(format!("{CPU}/{f}"), CpuSet::parse_list);
    let online = list("online").unwrap_or_default();
    let possible = list("possible").unwrap_or_else(|| online.clone());
    CpuSummary {
        possible,
        online,
        isolated: ctx
            .opt_parse(format!("{CPU}/isolated"), CpuSet::parse_list)
            .unwrap_or_default(),
        nohz_full: ctx
            .opt_parse(format!("{CPU}/nohz_full"), parse_list_or_null)
            .unwrap_or_default(),
        idle_driver: ctx
            .opt(format!("{CPU}/cpuidle/current_driver"))
            .filter(|s| !s.is_empty()),
        idle_governor: ctx
            .opt(format!("{CPU}/cpuidle/current_governor"))
            .or_else(|| ctx.opt(format!("{CPU}/cpuidle/current_governor_ro")))
            .filter(|s| !s.is_empty()),
    }
}

fn read_nodes(ctx: &Ctx<'_>, cpu: &CpuSummary) -> Vec<NumaNode> {
    let mut ids: Vec<u32> = ctx
        .list_opt(NODE)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.strip_prefix("node")?.parse().ok())
        .collect();
    ids.sort_unstable();
    if ids.is_empty() {
        let cpus = if cpu.possible.is_empty() {
            cpu.online.clone()
        } else {
            cpu.possible.clone()
        };
        return vec![NumaNode {
            id: NodeId(0),
            cpus,
            distances: vec![10],
            mem_total_kib: ctx.opt_parse("/proc/meminfo", parse_mem_total_kib),
        }];
    }
    ids.iter()
        .map(|&n| {
            let d = format!("{NODE}/node{n}");
            NumaNode {
                id: NodeId(n),
                cpus: ctx
                    .req_parse(format!("{d}/cpulist"), CpuSet::parse_list)
                    .unwrap_or_default(),
                distances: ctx
                    .opt_parse(format!("{d}/distance"), parse_distances)
                    .unwrap_or_default(),
                mem_total_kib: ctx.opt_parse(format!("{d}/meminfo"), parse_mem_total_kib),
            }
        })
        .collect()
}

fn read_cpus(ctx: &Ctx<'_>, sum: &CpuSummary, nodes: &[NumaNode]) -> Vec<Cpu> {
    let present = ctx
        .opt_parse(format!("{CPU}/present"), CpuSet::parse_list)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| sum.possible.union(&sum.online));
    present
        .iter()
        .map(|id| {
            let d = format!("{CPU}/cpu{id}");
            let online = match ctx.opt_parse(format!("{d}/online"), parse_u32) {
                Some(v) => v == 1,
                None => sum.online.contains(id),
            };
            let topo = |f: &str| ctx.opt_parse(format!("{d}/topology/{f}"), parse_u32);
            let node = nodes
                .iter()
                .find(|n| n.cpus.contains(id))
                .map(|n| n.id)
                .or_else(|| {
                    ctx.list_opt(&d)?
                        .iter()
                        .find_map(|e| e.strip_prefix("node")?.parse().ok().map(NodeId))
                });
            let siblings = if online {
                ctx.req_parse(
                    format!("{d}/topology/thread_siblings_list"),
                    CpuSet::parse_list,
                )
            } else {
                ctx.opt_parse(
                    format!("{d}/topology/thread_siblings_list"),
                    CpuSet::parse_list,
                )
            };
            Cpu {
                id: CpuId(id),
                online,
                core_id: topo("core_id"),
                package: topo("physical_package_id"),
                node,
                siblings: siblings.unwrap_or_else(|| CpuSet::single(id)),
                governor: ctx
                    .opt(format!("{d}/cpufreq/scaling_governor"))
                    .filter(|s| !s.is_empty()),
            }
        })
        .collect()
}

/// `/proc/interrupts`, salvaging the lines before a malformed one (a
/// truncated read or an unexpected line) with a note.
fn read_interrupts(ctx: &Ctx<'_>) -> Option<model::parse::interrupts::Interrupts> {
    const PATH: &str = "/proc/interrupts";
    let text = ctx.req(PATH)?;
    match parse_interrupts(&text) {
        Ok(p) => Some(p),
        Err(e) => {
            let line = match &e {
                ParseError::Invalid { line, .. } | ParseError::Format { line, .. } => *line,
                ParseError::Empty => 0,
            };
            let head: String = text
                .lines()
                .take(line.saturating_sub(1))
                .map(|l| format!("{l}\n"))
                .collect();
            let salvaged = if line > 2 {
                parse_interrupts(&head).ok()
            } else {
                None
            };
            let msg = match &salvaged {
                Some(_) => format!("{e}; kept the {} lines before it", line - 1),
                None => e.to_string(),
            };
            ctx.note(PATH, msg);
            salvaged
        }
    }
}

fn read_irqs(ctx: &Ctx<'_>) -> Vec<Irq> {
    let Some(parsed) = read_interrupts(ctx) else {
        return Vec::new();
    };
    let ncols = parsed.cpus.iter().map(|c| c.0 + 1).max().unwrap_or(0) as usize;
    parsed
        .irqs
        .iter()
        .map(|l| {
            let mut per_cpu = vec![0u64; ncols];
            for (col, cpu) in parsed.cpus.iter().enumerate() {
                if let (Some(slot), Some(v)) = (per_cpu.get_mut(cpu.0 as usize), l.per_cpu.get(col))
                {
                    *slot = *v;
                }
            }
            let d = format!("/proc/irq/{}", l.number.0);
            let parsed_name = parse_irq_name(&l.name);
            let queue = parsed_name
                .queue
                .filter(|_| parsed_name.shape != NameShape::Numbered);
            Irq {
                number: l.number,
                name: l.name.clone(),
                chip: l.chip.clone(),
                per_cpu,
                smp_affinity: ctx.req_parse(format!("{d}/smp_affinity"), CpuSet::parse_mask),
                effective_affinity: ctx
                    .opt_parse(format!("{d}/effective_affinity"), CpuSet::parse_mask),
                node: ctx.opt_parse(format!("{d}/node"), parse_i32),
                interface: None,
                queue_source: queue.map(|_| QueueSource::Name),
                queue,
            }
        })
        .collect()
}

fn queue_index(entry: &str, prefix: &str) -> Option<u32> {
    entry.strip_prefix(prefix)?.parse().ok()
}

/// The driver, the PCI function's directory and address, and the device's
/// own name, through the interface's `device` link.
#[allow(clippy::type_complexity)]
fn read_device(
    ctx: &Ctx<'_>,
    base: &str,
) -> (Option<String>, Option<(String, String)>, Option<String>) {
    let f = |k: &str| format!("{base}/{k}");
    let driver = ctx.link_opt(f("device/driver"));
    let dev_name = ctx.resolved_name(f("device"));
    if dev_name.is_none() {
        ctx.note(f("device"), "link target does not exist");
    }
    let parent = ctx.resolved_name(f("device/.."));
    let pci_dir = match (&dev_name, &parent) {
        (Some(d), _) if is_pci_address(d) => Some((f("device"), d.clone())),
        (_, Some(p)) if is_pci_address(p) => Some((f("device/.."), p.clone())),
        _ => None,
    };
    (driver, pci_dir, dev_name)
}

/// One interface, and the queues its IRQs serve (applied to the IRQs by the caller).
fn read_interface(
    ctx: &Ctx<'_>,
    name: &str,
    all_names: &[String],
    irqs: &[Irq],
    eth: &dyn Ethtool,
) -> (Interface, Vec<MappedIrq>) {
    let base = format!("/sys/class/net/{name}");
    let f = |k: &str| format!("{base}/{k}");
    let has_device = ctx.link_opt(f("device")).is_some();
    let (driver, pci_dir, dev_name) = if has_device {
        read_device(ctx, &base)
    } else {
        (None, None, None)
    };
    let dev_file = |k: &str| -> Option<String> {
        if !has_device {
            return None;
        }
        if let Some(v) = ctx.opt(f(&format!("device/{k}"))) {
            return Some(v);
        }
        let (dir, _) = pci_dir.as_ref()?;
        if dir.ends_with("/device") {
            return None;
        }
        ctx.opt(format!("{dir}/{k}"))
    };
    let numa_node = dev_file("numa_node")
        .and_then(|s| ctx.parse_text(Path::new(&f("device/numa_node")), Some(s), parse_i32));
    let local_cpus = dev_file("local_cpulist").and_then(|s| {
        ctx.parse_text(
            Path::new(&f("device/local_cpulist")),
            Some(s),
            CpuSet::parse_list,
        )
    });

    // The PCI function's own ids (a virtio device's `device` file holds a
    // virtio id, so read them from the PCI directory, not from `device/`).
    let pci_id = pci_dir.as_ref().and_then(|(dir, _)| {
        let id = |k: &str| ctx.opt_parse(format!("{dir}/{k}"), parse_pci_hex);
        Some(model::snapshot::PciId {
            vendor: id("vendor")?,
            device: id("device")?,
        })
    });

    let (rx_queues, tx_queues) = read_queues(ctx, &base);
    let owned = owned_irqs(
        ctx,
        Owner {
            name,
            all_names,
            pci_dir: pci_dir.as_ref().map(|(d, _)| d.as_str()),
            dev_name: dev_name.as_deref(),
        },
        irqs,
    );
    let nqueues = rx_queues.len().max(tx_queues.len());
    let owned_named: Vec<OwnedIrq<'_>> = owned
        .iter()
        .filter_map(|(n, how)| {
            irqs.iter().find(|i| i.number == *n).map(|i| OwnedIrq {
                number: n.0,
                name: &i.name,
                msi: how.msi,
                legacy: how.legacy,
            })
        })
        .collect();
    let (mut mapped, irq_mapping) = if has_device {
        map_queues(&owned_named, driver.as_deref(), nqueues)
    } else {
        (Vec::new(), None)
    };
    // Vectors kept for channels `ethtool -L` removed serve no queue.
    retain_existing(&mut mapped, rx_queues.len(), tx_queues.len());

    let ethtool = eth.read(name);
    for m in ethtool.errors() {
        let path = if ctx.root.is_live() && m.starts_with("ethtool -S") {
            format!("ethtool -S ({name})")
        } else if ctx.root.is_live() {
            format!("ethtool netlink ({name})")
        } else {
            ethtool::fixture_path(name)
        };
        ctx.note(path, m);
    }
    let mac = ctx.opt(f("address"));
    let stat = |k: &str| ctx.opt_parse(f(&format!("statistics/{k}")), parse_u64);
    let iface = Interface {
        name: name.to_string(),
        ifindex: ctx.opt_parse(f("ifindex"), parse_u32),
        driver,
        pci_address: pci_dir.map(|(_, a)| a),
        pci_id,
        perm_mac: ethtool.perm_mac.clone().or_else(|| mac.clone()),
        mac,
        numa_node,
        local_cpus,
        speed_mbps: ctx
            .opt(f("speed"))
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|v| *v >= 0 && *v != i64::from(u32::MAX))
            .map(|v| v as u64),
        mtu: ctx.req_parse(f("mtu"), parse_u32),
        operstate: ctx.opt(f("operstate")),
        tx_queue_len: ctx.opt_parse(f("tx_queue_len"), parse_u32),
        gro_flush_timeout: ctx.opt_parse(f("gro_flush_timeout"), parse_u64),
        napi_defer_hard_irqs: ctx.opt_parse(f("napi_defer_hard_irqs"), parse_u32),
        threaded: ctx.opt_parse(f("threaded"), parse_u32),
        rx_queues,
        tx_queues,
        irqs: owned.keys().copied().collect(),
        irq_mapping,
        ethtool,
        stats: IfaceStats {
            rx_packets: stat("rx_packets"),
            tx_packets: stat("tx_packets"),
            rx_dropped: stat("rx_dropped"),
            tx_dropped: stat("tx_dropped"),
            rx_missed_errors: stat("rx_missed_errors"),
            rx_fifo_errors: stat("rx_fifo_errors"),
        },
    };
    (iface, mapped)
}

/// RX and TX queues of an interface with their RPS/RFS/XPS settings, by index.
fn read_queues(ctx: &Ctx<'_>, base: &str) -> (Vec<RxQueue>, Vec<TxQueue>) {
    let f = |k: &str| format!("{base}/{k}");
    let mut rx_queues = Vec::new();
    let mut tx_queues = Vec::new();
    for e in ctx.list_req(f("queues")).unwrap_or_default() {
        if let Some(index) = queue_index(&e, "rx-") {
            let q = f(&format!("queues/{e}"));
            rx_queues.push(RxQueue {
                index,
                rps_cpus: ctx.opt_parse(format!("{q}/rps_cpus"), CpuSet::parse_mask),
                rps_flow_cnt: ctx.opt_parse(format!("{q}/rps_flow_cnt"), parse_u64),
            });
        } else if let Some(index) = queue_index(&e, "tx-") {
            let q = f(&format!("queues/{e}"));
            tx_queues.push(TxQueue {
                index,
                xps_cpus: ctx.opt_parse(format!("{q}/xps_cpus"), CpuSet::parse_mask),
                xps_rxqs: ctx.opt_parse(format!("{q}/xps_rxqs"), CpuSet::parse_mask),
            });
        }
    }
    rx_queues.sort_by_key(|q| q.index);
    tx_queues.sort_by_key(|q| q.index);
    (rx_queues, tx_queues)
}

/// Who is asking for IRQs: the interface and where its device sits.
struct Owner<'a> {
    name: &'a str,
    all_names: &'a [String],
    pci_dir: Option<&'a str>,
    dev_name: Option<&'a str>,
}

/// How an IRQ came to be owned.
#[derive(Debug, Clone, Copy, Default)]
struct HowOwned {
    /// One of the PCI function's `msi_irqs`.
    msi: bool,
    /// The function's `device/irq` (legacy INTx), read when it has no MSI vectors.
    legacy: bool,
}

/// Most IRQs one device is taken to own; a PCI function has at most 2048
/// MSI-X vectors.
const MAX_OWNED: usize = 2048;

/// The IRQs an interface owns: its PCI function's MSI vectors (less those
/// whose name names another interface, as on a two-port mlx4 function), its
/// legacy `device/irq` line when it has no MSI vectors and the line's name
/// names it, and IRQs whose action name names the interface or its device.
fn owned_irqs(ctx: &Ctx<'_>, who: Owner<'_>, irqs: &[Irq]) -> BTreeMap<IrqNumber, HowOwned> {
    let mut owned: BTreeMap<IrqNumber, HowOwned> = BTreeMap::new();
    let names_other = |irq: &Irq| {
        parse_irq_name(&irq.name).device.is_some_and(|d| {
            d != who.name && Some(d.as_str()) != who.dev_name && who.all_names.contains(&d)
        })
    };
    let names_me = |irq: &Irq| irq.name.split(", ").any(|a| a.trim() == who.name);
    if let Some(dir) = who.pci_dir {
        let msi = ctx.list_opt(format!("{dir}/msi_irqs")).unwrap_or_default();
        let msi: BTreeSet<u32> = msi
            .iter()
            .filter_map(|e| e.parse().ok())
            .take(MAX_OWNED)
            .collect();
        for n in &msi {
            ctx.touch(format!("{dir}/msi_irqs/{n}"));
        }
        for irq in irqs {
            if msi.contains(&irq.number.0) && !names_other(irq) {
                owned.entry(irq.number).or_default().msi = true;
            }
        }
        if msi.is_empty() {
            let line = ctx.opt_parse(format!("{dir}/irq"), parse_u32);
            if let Some(irq) = line.and_then(|n| irqs.iter().find(|i| i.number.0 == n && n != 0)) {
                if names_me(irq) {
                    owned.entry(irq.number).or_default().legacy = true;
                }
            }
        }
    }
    for irq in irqs {
        let dev = parse_irq_name(&irq.name).device;
        if dev.as_deref() == Some(who.name) || (dev.is_some() && dev.as_deref() == who.dev_name) {
            owned.entry(irq.number).or_default();
        }
    }
    owned
}

fn fold_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn read_sysctls(ctx: &Ctx<'_>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for name in SYSCTLS {
        if let Some(v) = ctx.req(sysctl_path(name)) {
            out.insert(name.to_string(), fold_ws(&v));
        }
    }
    for name in OPTIONAL_SYSCTLS {
        if let Some(v) = ctx.opt(sysctl_path(name)) {
            out.insert(name.to_string(), fold_ws(&v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bench_facts_carry_mtu_offloads_and_interrupt_moderation() {
        // Synthesized after an unpublished field test of EC2 C4 instances (ixgbevf, 2016).
        let root = Root::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/c4-8xlarge"
        ));
        let f = read_bench_facts(&root);
        let eth0 = f.interfaces.iter().find(|i| i.name == "eth0").unwrap();
        assert_eq!(eth0.mtu, Some(9001));
        assert_eq!(eth0.coalesce.get("rx-usecs"), Some(&1));
        assert_eq!(eth0.coalesce.get("tx-usecs"), Some(&1));
        assert!(
            eth0.offloads_on.iter().any(|o| o == "rx-checksum"),
            "{eth0:?}"
        );
        let j = serde_json::to_value(&f).unwrap();
        assert!(j["interfaces"][0]["coalesce"].is_object(), "{j}");
        assert!(f.interfaces.iter().all(|i| i.name != "lo"), "{f:?}");
        assert!(j.get("path_interface").is_none(), "{j}");
    }

    /// `bench` over 127.0.0.1 printed eth0's facts as the path's: the path
    /// interface is listed with its facts, lo included.
    #[test]
    fn bench_facts_list_the_path_interface_even_lo() {
        let root = Root::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/c4-8xlarge"
        ));
        let lo: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let f = read_bench_facts_on(&root, Some((lo, lo)));
        assert_eq!(f.path_interface.as_deref(), Some("lo"));
        let path = f.path().unwrap();
        assert_eq!((path.name.as_str(), path.driver.as_deref()), ("lo", None));
        assert_eq!(path.mtu, Some(65536));
        assert!(f.interfaces.iter().any(|i| i.name == "eth0"), "{f:?}");
    }
}
