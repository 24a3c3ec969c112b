//! `nettune inspect [--root DIR] [--json] [--iface IF...]`: the host's
//! topology, NICs, queue → IRQ → CPU → node picture, key sysctls, foreign
//! owners and findings.

mod ethtool;
mod nic;
mod table;

use doctor::snapshot::findings;
pub use ethtool::is_trouble;
use model::findings::Severity;
use model::snapshot::HostSnapshot;
use model::text::{printable, printable_lines, Printable};
use model::CpuSet;
use nic::interface;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use table::{list_or, opt, Table};

const EXAMPLES: &str = "\
Examples:
  nettune inspect                                 this host
  nettune inspect --iface eth0 --iface eth1       two NICs only
  nettune inspect --json | jq '.interfaces[].irqs'
  nettune inspect --root host-a                   a host recorded by `nettune capture --out host-a`

Shows NUMA nodes, cores and SMT siblings; per NIC its driver, PCI address, node, ethtool
channels, rings, coalescing and features, and a queue -> IRQ -> affinity -> node -> RPS/XPS ->
interrupts table (a queue mapping inferred from MSI order or a legacy IRQ is marked); the
driver's own counters (ethtool -S) per queue, and its drop/error counters that are not zero;
key sysctls; irqbalance and tuned; and findings. The --json shape is in
/usr/share/doc/nettune/docs/snapshot.md.";

/// Flags of `nettune inspect`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory standing for `/` (a fixture or a `nettune capture`).
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Print the full snapshot as JSON (shape: /usr/share/doc/nettune/docs/snapshot.md).
    #[arg(long)]
    pub json: bool,
    /// Only these interfaces (repeatable).
    #[arg(long = "iface", value_name = "IF", num_args = 1..)]
    pub iface: Vec<String>,
}

/// Run `nettune inspect`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let snap = snapshot(&args.root, &args.iface)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&snap)?);
    } else {
        print!("{}", printable_lines(&render(&snap)));
    }
    Ok(ExitCode::SUCCESS)
}

pub use crate::ops::plan::{filter, snapshot};

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
