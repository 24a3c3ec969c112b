//! `nettune inspect [--root DIR] [--json] [--iface IF...]`: the host's
//! topology, NICs, queue → IRQ → CPU → node picture, key sysctls, foreign
//! owners and findings.

use host::Root;
use model::findings::{findings, irq_cpus, nodes_of, Severity};
use model::snapshot::{HostSnapshot, Interface, Irq, IrqMapping, Probe, QueueKind};
use model::text::{printable, printable_lines, Printable};
use model::CpuSet;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune inspect                                 this host
  nettune inspect --iface eth0 --iface eth1       two NICs only
  nettune inspect --json | jq '.interfaces[].irqs'
  nettune inspect --root tests/fixtures/c4-8xlarge  a recorded or synthesized host

Shows NUMA nodes, cores and SMT siblings; per NIC its driver, PCI address, node, ethtool
channels, rings, coalescing and features, and a queue -> IRQ -> affinity -> node -> RPS/XPS ->
interrupts table (a queue mapping inferred from MSI order or a legacy IRQ is marked); the
driver's own counters (ethtool -S) per queue, and its drop/error counters that are not zero;
key sysctls; irqbalance and tuned; and findings. The --json shape is in docs/snapshot.md.";

/// Flags of `nettune inspect`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory standing for `/` (a fixture or a `nettune capture`).
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Print the full snapshot as JSON (shape: docs/snapshot.md).
    #[arg(long)]
    pub json: bool,
    /// Only these interfaces (repeatable).
    #[arg(long = "iface", value_name = "IF", num_args = 1..)]
    pub iface: Vec<String>,
}

/// Run `nettune inspect`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.root.is_dir() {
        anyhow::bail!("--root {}: not a directory", args.root.display());
    }
    let root = Root::new(&args.root);
    let snap = host::read_snapshot(&root);
    let snap = filter(snap, &args.iface)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&snap)?);
    } else {
        print!("{}", printable_lines(&render(&snap)));
    }
    Ok(ExitCode::SUCCESS)
}

/// Keep only the named interfaces (all when `names` is empty).
pub fn filter(mut snap: HostSnapshot, names: &[String]) -> anyhow::Result<HostSnapshot> {
    if names.is_empty() {
        return Ok(snap);
    }
    for n in names {
        if snap.interface(n).is_none() {
            let have: Vec<&str> = snap.interfaces.iter().map(|i| i.name.as_str()).collect();
            anyhow::bail!(
                "no interface {} (have: {})",
                Printable(n),
                printable(&have.join(", "))
            );
        }
    }
    snap.interfaces.retain(|i| names.contains(&i.name));
    Ok(snap)
}

fn list_or(s: &CpuSet, empty: &str) -> String {
    if s.is_empty() {
        empty.to_string()
    } else {
        s.to_list()
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or("?".to_string(), |v| v.to_string())
}

/// A left-aligned text table; the last column is not padded.
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }
    fn row(&mut self, r: Vec<String>) {
        self.rows.push(r);
    }
    fn render(&self, indent: &str) -> String {
        let n = self.rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut w = vec![0; n];
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in &self.rows {
            let mut line = indent.to_string();
            for (i, c) in r.iter().enumerate() {
                if i + 1 == r.len() {
                    line.push_str(c);
                } else {
                    let _ = write!(line, "{c:<width$}  ", width = w[i]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// The human view.
pub fn render(s: &HostSnapshot) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "host {}  kernel {}",
        printable(&opt(&s.source.hostname)),
        printable(&opt(&s.source.kernel))
    );
    if let Some(l) = &s.source.label {
        let _ = writeln!(o, "label: {}", Printable(l));
    }
    o.push('\n');
    topology(&mut o, s);
    for i in &s.interfaces {
        o.push('\n');
        interface(&mut o, s, i);
    }
    o.push('\n');
    sysctls(&mut o, s);
    o.push('\n');
    owners(&mut o, s);
    o.push('\n');
    let f = findings(s);
    if f.is_empty() {
        o.push_str("findings: none\n");
    } else {
        let _ = writeln!(o, "findings ({}):", f.len());
        for x in &f {
            let sev = match x.severity {
                Severity::Critical => "critical",
                Severity::Warning => "warn",
                Severity::Info => "info",
            };
            let _ = writeln!(o, "  [{sev}] {}: {}", x.id, Printable(&x.title));
        }
    }
    if !s.notes.is_empty() {
        let _ = writeln!(o, "\nnotes ({} fields could not be read):", s.notes.len());
        for n in &s.notes {
            let _ = writeln!(o, "  {}: {}", Printable(&n.path), Printable(&n.message));
        }
    }
    o
}

fn topology(o: &mut String, s: &HostSnapshot) {
    let online: Vec<_> = s.cpus.iter().filter(|c| c.online).collect();
    let cores: BTreeSet<(Option<u32>, Option<u32>)> =
        online.iter().map(|c| (c.package, c.core_id)).collect();
    let packages: BTreeSet<Option<u32>> = online.iter().map(|c| c.package).collect();
    let threads = online.iter().map(|c| c.siblings.len()).max().unwrap_or(1);
    let _ = writeln!(
        o,
        "cpus: {} online ({}) of {} possible; {} package(s), {} cores, {} thread(s) per core",
        s.cpu.online.len(),
        list_or(&s.cpu.online, "none"),
        s.cpu.possible.len(),
        packages.len(),
        cores.len(),
        threads
    );
    let _ = writeln!(
        o,
        "isolated: {}  nohz_full: {}  idle: {} ({})",
        list_or(&s.cpu.isolated, "none"),
        list_or(&s.cpu.nohz_full, "none"),
        s.cpu.idle_driver.as_deref().unwrap_or("n/a"),
        s.cpu.idle_governor.as_deref().unwrap_or("n/a")
    );
    let govs: BTreeSet<&str> = s
        .cpus
        .iter()
        .filter_map(|c| c.governor.as_deref())
        .collect();
    let _ = writeln!(
        o,
        "cpufreq governor: {}",
        if govs.is_empty() {
            "n/a".to_string()
        } else {
            govs.into_iter().collect::<Vec<_>>().join(", ")
        }
    );
    let _ = writeln!(o, "numa nodes: {}", s.nodes.len());
    let mut t = Table::new(&["NODE", "CPUS", "CORES", "SMT SIBLINGS", "MEMORY"]);
    for n in &s.nodes {
        let ncpus: Vec<_> = s.cpus.iter().filter(|c| n.cpus.contains(c.id.0)).collect();
        let ncores: BTreeSet<(Option<u32>, Option<u32>)> =
            ncpus.iter().map(|c| (c.package, c.core_id)).collect();
        let mut second = CpuSet::new();
        for c in &ncpus {
            if c.siblings.first() != Some(c.id.0) {
                second.insert(c.id.0);
            }
        }
        t.row(vec![
            n.id.0.to_string(),
            list_or(&n.cpus, "-"),
            ncores.len().to_string(),
            list_or(&second, "-"),
            n.mem_total_kib
                .map_or("?".into(), |k| format!("{} MiB", k / 1024)),
        ]);
    }
    o.push_str(&t.render("  "));
    if s.nodes.len() > 1 {
        let mut t = Table::new(
            &std::iter::once("distances".to_string())
                .chain(s.nodes.iter().map(|n| n.id.0.to_string()))
                .collect::<Vec<_>>()
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>(),
        );
        for n in &s.nodes {
            t.row(
                std::iter::once(format!("{}:", n.id.0))
                    .chain(n.distances.iter().map(|d| d.to_string()))
                    .collect(),
            );
        }
        o.push_str(&t.render("  "));
    }
}

fn probe_text<T>(p: &Probe<T>, f: impl Fn(&T) -> String) -> String {
    match p {
        Probe::Ok { value } => f(value),
        Probe::Unsupported { .. } => "unsupported".into(),
        Probe::Error { message } => format!("error ({message})"),
        Probe::Absent => "not read".into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shown,
    Unsupported,
    Absent,
}

fn kind<T>(p: &Probe<T>) -> Kind {
    match p {
        Probe::Ok { .. } | Probe::Error { .. } => Kind::Shown,
        Probe::Unsupported { .. } => Kind::Unsupported,
        Probe::Absent => Kind::Absent,
    }
}

fn cur_max(cur: Option<u32>, max: Option<u32>) -> Option<String> {
    match (cur, max) {
        (None, None) => None,
        (c, m) => Some(format!("{}/{}", opt(&c), opt(&m))),
    }
}

const KEY_FEATURES: &[&str] = &[
    "rx-checksum",
    "tx-scatter-gather",
    "tx-tcp-segmentation",
    "tx-generic-segmentation",
    "rx-gro",
    "rx-gro-hw",
    "rx-lro",
    "rx-hashing",
    "rx-ntuple-filter",
];

fn ethtool_lines(o: &mut String, i: &Interface) {
    let e = &i.ethtool;
    let channels = probe_text(&e.channels, |c| {
        let parts: Vec<String> = [
            ("combined", c.combined, c.combined_max),
            ("rx", c.rx, c.rx_max),
            ("tx", c.tx, c.tx_max),
            ("other", c.other, c.other_max),
        ]
        .iter()
        .filter_map(|(n, cur, max)| cur_max(*cur, *max).map(|v| format!("{n} {v}")))
        .collect();
        if parts.is_empty() {
            "none reported".into()
        } else {
            parts.join(", ")
        }
    });
    let rings = probe_text(&e.rings, |r| {
        let parts: Vec<String> = [("rx", r.rx, r.rx_max), ("tx", r.tx, r.tx_max)]
            .iter()
            .filter_map(|(n, cur, max)| cur_max(*cur, *max).map(|v| format!("{n} {v}")))
            .collect();
        parts.join(", ")
    });
    let coalesce = probe_text(&e.coalesce, |m| {
        if m.is_empty() {
            "none reported".into()
        } else {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    });
    let features = probe_text(&e.features, |m| {
        let on = m.values().filter(|f| f.active).count();
        let key: Vec<String> = KEY_FEATURES
            .iter()
            .filter_map(|k| {
                m.get(*k).map(|f| {
                    format!(
                        "{k} {}{}",
                        if f.active { "on" } else { "off" },
                        if f.fixed { " [fixed]" } else { "" }
                    )
                })
            })
            .collect();
        format!("{on} of {} on; {}", m.len(), key.join(", "))
    });
    let driver = probe_text(&e.driver, |d| {
        format!(
            "{} {}{}",
            d.driver.as_deref().unwrap_or("?"),
            d.version.as_deref().unwrap_or(""),
            d.firmware
                .as_deref()
                .filter(|f| !f.is_empty())
                .map(|f| format!(", firmware {f}"))
                .unwrap_or_default()
        )
        .trim()
        .to_string()
    });
    let parts: [(&str, String, Kind); 5] = [
        ("driver", driver, kind(&e.driver)),
        ("channels", channels, kind(&e.channels)),
        ("rings", rings, kind(&e.rings)),
        ("coalesce", coalesce, kind(&e.coalesce)),
        ("features", features, kind(&e.features)),
    ];
    let stats = probe_text(&e.stats, |s| {
        format!(
            "{} driver counters (ethtool -S), {} in standard groups",
            s.driver.len(),
            s.standard.len()
        )
    });
    for (label, text, k) in parts
        .iter()
        .chain(std::iter::once(&("stats", stats, kind(&e.stats))))
    {
        if *k == Kind::Shown {
            let _ = writeln!(o, "  {label}: {text}");
        }
    }
    // Statistics not read (fixtures recorded before them) are not listed.
    let stats_unsupported = kind(&e.stats) == Kind::Unsupported;
    for (k, word) in [
        (Kind::Unsupported, "unsupported"),
        (Kind::Absent, "not read"),
    ] {
        let mut names: Vec<&str> = parts.iter().filter(|p| p.2 == k).map(|p| p.0).collect();
        if k == Kind::Unsupported && stats_unsupported {
            names.push("stats");
        }
        if !names.is_empty() {
            let _ = writeln!(o, "  {word}: {}", names.join(", "));
        }
    }
}

/// Words in a driver counter's name that mark it as counting trouble.
pub const TROUBLE_WORDS: &[&str] = &[
    "drop",
    "miss",
    "err",
    "fail",
    "exceeded",
    "no_buf",
    "out_of_buffer",
    "timeout",
    "fifo",
    "discard",
    "overrun",
    "crc",
    "busy",
    "bad",
];

/// Whether a driver counter counts trouble (drops, errors, allowance hits).
pub fn is_trouble(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    TROUBLE_WORDS.iter().any(|w| n.contains(w))
}

/// Per-queue packets, bytes and drops from the driver's counters, and the
/// NIC-wide trouble counters that are not zero.
fn driver_stats_lines(o: &mut String, i: &Interface) {
    let Some(st) = i.ethtool.stats.value() else {
        return;
    };
    let qs = st.queues();
    if !qs.is_empty() {
        let mut t = Table::new(&["QUEUE", "PACKETS", "BYTES", "DROPS", "COUNTERS"]);
        for q in &qs {
            let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            t.row(vec![
                format!("{}-{}", q.dir.name(), q.index),
                n(q.packets),
                n(q.bytes),
                n(q.drops),
                q.raw.len().to_string(),
            ]);
        }
        let _ = writeln!(o, "  driver counters per queue (ethtool -S):");
        o.push_str(&t.render("    "));
    }
    let trouble: Vec<String> = st
        .driver
        .iter()
        .filter(|(k, v)| **v > 0 && is_trouble(k))
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if trouble.is_empty() {
        let _ = writeln!(o, "  driver drop/error counters: all 0");
    } else {
        let _ = writeln!(o, "  driver drop/error counters: {}", trouble.join(", "));
    }
}

fn mask_text(s: &Option<CpuSet>) -> String {
    match s {
        None => "n/a".into(),
        Some(s) if s.is_empty() => "-".into(),
        Some(s) => s.to_list(),
    }
}

fn queue_text(irq: &Irq) -> String {
    let mark = if irq.queue_source.is_some_and(|s| s.inferred()) {
        " (inferred)"
    } else {
        ""
    };
    let text = match irq.queue {
        Some(q) => match (q.kind, q.index) {
            (QueueKind::Combined, Some(i)) => format!("rx/tx-{i}"),
            (QueueKind::Rx, Some(i)) => format!("rx-{i}"),
            (QueueKind::Tx, Some(i)) => format!("tx-{i}"),
            _ => "other".into(),
        },
        None => "other".into(),
    };
    format!("{text}{mark}")
}

fn counts_text(irq: &Irq) -> String {
    let mut on = CpuSet::new();
    for (c, n) in irq.per_cpu.iter().enumerate() {
        if *n > 0 {
            on.insert(c as u32);
        }
    }
    if on.is_empty() {
        "0".into()
    } else {
        format!("{} on {}", irq.total(), on.to_list())
    }
}

fn interface(o: &mut String, s: &HostSnapshot, i: &Interface) {
    interface_header(o, i);
    // Said only when the names did not tell: inferred, none or ambiguous.
    if let Some(m) = i.irq_mapping.filter(|m| *m != IrqMapping::Name) {
        let _ = writeln!(o, "  queue IRQs: {}", m.describe());
    }
    ethtool_lines(o, i);
    if i.irqs.is_empty() {
        queue_table(o, i);
    } else {
        irq_table(o, s, i);
    }
    driver_stats_lines(o, i);
}

/// The three lines of driver, link and NAPI facts.
fn interface_header(o: &mut String, i: &Interface) {
    let numa = match i.numa_node {
        Some(-1) => "-1 (unknown)".to_string(),
        Some(n) => n.to_string(),
        None => "n/a".into(),
    };
    let speed = i
        .speed_mbps
        .map_or("unknown".into(), |v| format!("{v} Mb/s"));
    let _ = writeln!(
        o,
        "{}: driver {}  pci {}  numa_node {}  local_cpus {}",
        Printable(&i.name),
        Printable(i.driver.as_deref().unwrap_or("none (virtual)")),
        i.pci_address.as_deref().unwrap_or("-"),
        numa,
        i.local_cpus
            .as_ref()
            .map_or("n/a".into(), |c| list_or(c, "-")),
    );
    let _ = writeln!(
        o,
        "  {}  mtu {}  speed {}  mac {}  perm {}  txqueuelen {}",
        i.operstate.as_deref().unwrap_or("?"),
        opt(&i.mtu),
        speed,
        i.mac.as_deref().unwrap_or("?"),
        i.perm_mac.as_deref().unwrap_or("?"),
        opt(&i.tx_queue_len),
    );
    let _ = writeln!(
        o,
        "  gro_flush_timeout {}  napi_defer_hard_irqs {}  threaded {}  queues rx {} tx {}",
        i.gro_flush_timeout.map_or("n/a".into(), |v| v.to_string()),
        i.napi_defer_hard_irqs
            .map_or("n/a".into(), |v| v.to_string()),
        i.threaded.map_or("n/a".into(), |v| v.to_string()),
        i.rx_queues.len(),
        i.tx_queues.len()
    );
}

/// RPS/RFS/XPS per queue, for a NIC without IRQs of its own.
fn queue_table(o: &mut String, i: &Interface) {
    let mut t = Table::new(&["QUEUE", "RPS", "RFS FLOWS", "XPS"]);
    for q in &i.rx_queues {
        t.row(vec![
            format!("rx-{}", q.index),
            mask_text(&q.rps_cpus),
            q.rps_flow_cnt.map_or("n/a".into(), |v| v.to_string()),
            String::new(),
        ]);
    }
    for q in &i.tx_queues {
        t.row(vec![
            format!("tx-{}", q.index),
            String::new(),
            String::new(),
            mask_text(&q.xps_cpus),
        ]);
    }
    if t.rows.len() > 1 {
        o.push_str(&t.render("  "));
    }
}

/// Queue → IRQ → affinity → node → RPS/XPS → interrupts, then queues no IRQ serves.
fn irq_table(o: &mut String, s: &HostSnapshot, i: &Interface) {
    let mut t = Table::new(&[
        "QUEUE",
        "IRQ",
        "NAME",
        "AFFINITY",
        "EFFECTIVE",
        "NODE",
        "RPS",
        "XPS",
        "INTERRUPTS",
    ]);
    let mut rx_shown = BTreeSet::new();
    let mut tx_shown = BTreeSet::new();
    let mut irqs: Vec<&Irq> = i.irqs.iter().filter_map(|n| s.irq(*n)).collect();
    irqs.sort_by_key(|q| {
        (
            q.queue
                .map_or(u32::MAX, |r| r.index.unwrap_or(u32::MAX - 1)),
            q.queue.map(|r| r.kind as u8),
            q.number,
        )
    });
    for irq in irqs {
        let (rx, tx) = match irq.queue {
            Some(q) => match (q.kind, q.index) {
                (QueueKind::Combined, Some(i)) => (Some(i), Some(i)),
                (QueueKind::Rx, Some(i)) => (Some(i), None),
                (QueueKind::Tx, Some(i)) => (None, Some(i)),
                _ => (None, None),
            },
            None => (None, None),
        };
        let rps = rx
            .and_then(|x| i.rx_queues.iter().find(|q| q.index == x))
            .map_or(String::new(), |q| mask_text(&q.rps_cpus));
        let xps = tx
            .and_then(|x| i.tx_queues.iter().find(|q| q.index == x))
            .map_or(String::new(), |q| mask_text(&q.xps_cpus));
        rx_shown.extend(rx);
        tx_shown.extend(tx);
        let node = irq_cpus(irq)
            .map(|c| list_or(&nodes_of(s, c), "?"))
            .unwrap_or_else(|| "?".into());
        t.row(vec![
            queue_text(irq),
            irq.number.0.to_string(),
            printable(&irq.name).into_owned(),
            mask_text(&irq.smp_affinity),
            mask_text(&irq.effective_affinity),
            node,
            if rps.is_empty() { "".into() } else { rps },
            if xps.is_empty() { "".into() } else { xps },
            counts_text(irq),
        ]);
    }
    for q in &i.rx_queues {
        if !rx_shown.contains(&q.index) {
            t.row(vec![
                format!("rx-{}", q.index),
                "-".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                mask_text(&q.rps_cpus),
                String::new(),
                String::new(),
            ]);
        }
    }
    for q in &i.tx_queues {
        if !tx_shown.contains(&q.index) {
            t.row(vec![
                format!("tx-{}", q.index),
                "-".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                mask_text(&q.xps_cpus),
                String::new(),
            ]);
        }
    }
    if t.rows.len() > 1 {
        o.push_str(&t.render("  "));
    }
}

fn sysctls(o: &mut String, s: &HostSnapshot) {
    let _ = writeln!(o, "sysctls:");
    let w = s.sysctls.keys().map(|k| k.len()).max().unwrap_or(0);
    for (k, v) in &s.sysctls {
        let _ = writeln!(o, "  {k:<w$}  {}", Printable(v));
    }
}

fn owners(o: &mut String, s: &HostSnapshot) {
    match &s.owners.irqbalance {
        Some(p) => {
            let _ = writeln!(
                o,
                "irqbalance: running (pid {}: {})",
                p.pid,
                Printable(&p.cmdline)
            );
        }
        None => o.push_str("irqbalance: not running\n"),
    }
    match &s.owners.tuned {
        Some(t) => {
            let _ = writeln!(
                o,
                "tuned: {}, active profile {}",
                t.process
                    .as_ref()
                    .map_or("not running".to_string(), |p| format!(
                        "running (pid {})",
                        p.pid
                    )),
                Printable(t.active_profile.as_deref().unwrap_or("none"))
            );
        }
        None => o.push_str("tuned: not running\n"),
    }
}
