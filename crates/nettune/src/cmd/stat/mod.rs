//! `nettune stat`: per-interval deltas of CPU, softirq, IRQ, softnet, NIC and
//! UDP/TCP counters, like `mpstat -P ALL` + `/proc/interrupts` + softnet_stat.
//! Human screen by default; `--json` prints one [`Delta`] per line (NDJSON,
//! shape in `docs/stat.md`).

use anyhow::{bail, Context};
use host::sampler::{Delta, Sampler, STAT_SCHEMA_VERSION};
use host::Root;
use model::text::{printable, printable_lines, Printable};
use model::CpuSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

mod render;

pub use render::{opt_per_sec, opt_pps, render, render_at};

/// How many IRQs the human screen lists per interval.
pub const TOP_IRQS: usize = 10;

/// Above this many queues, the human screen hides the quiet ones (no
/// packets, no drops, no interrupts in the interval).
pub const TOP_QUEUES: usize = 16;

const EXAMPLES: &str = "\
Examples:
  nettune stat                          one report a second until Ctrl-C
  nettune stat 1 5                      five reports a second apart (as mpstat takes them)
  nettune stat -i 0.5 --iface eth0      twice a second, one NIC
  nettune stat --cpus 0-3 --json        NDJSON, CPUs 0-3 only
  nettune stat --root DIR -c 1          a tree recorded by `nettune capture`; with samples
                                        recorded (capture --samples N), their N-1 intervals
  nettune stat --no-nic-stats           without the driver counters (no ethtool -S reads)

Per interval: per-CPU %usr/%sys/%irq/%soft/%steal/%idle and NET_RX/NET_TX softirqs/s;
softnet processed, dropped, time_squeeze and RPS per CPU; per NIC packets/s, bit/s and
drops; per queue packets/s and drops/s from the driver's counters (ethtool -S) with the
queue's IRQ and packets per interrupt; driver drop/error counters that moved; the busiest
IRQs with their queue; UDP/TCP error counters that moved. The --json shape is in
/usr/share/doc/nettune/docs/stat.md.";

/// Flags of `nettune stat`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Seconds between reports, as mpstat takes it (`nettune stat 1 5`).
    #[arg(value_name = "INTERVAL", value_parser = parse_interval, conflicts_with = "interval")]
    pub interval_pos: Option<Duration>,
    /// Number of reports, as mpstat takes it (`nettune stat 1 5`).
    #[arg(value_name = "COUNT", value_parser = parse_count, conflicts_with = "count")]
    pub count_pos: Option<u64>,
    /// Seconds between reports (fractions allowed, e.g. 0.5).
    #[arg(long, short = 'i', default_value = "1", value_parser = parse_interval)]
    pub interval: Duration,
    /// Number of reports, then exit; without it, run until Ctrl-C.
    #[arg(long, short = 'c', value_parser = parse_count)]
    pub count: Option<u64>,
    /// One JSON object per interval and line (NDJSON).
    #[arg(long)]
    pub json: bool,
    /// Directory standing for `/` (a captured tree); default the live host.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Only these interfaces in the NIC section (repeat or comma-separate).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub iface: Vec<String>,
    /// Only these CPUs in the CPU section, as a cpulist (`0-3,8`).
    #[arg(long, value_parser = parse_cpus)]
    pub cpus: Option<CpuSet>,
    /// Do not read the driver counters (`ethtool -S`'s, one ioctl per
    /// interface and interval): no per-queue section.
    #[arg(long)]
    pub no_nic_stats: bool,
}

/// One `--json` line: a [`Delta`] with the shape's version first.
#[derive(Debug, serde::Serialize)]
pub struct JsonLine<'a> {
    /// [`STAT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Wall-clock time of the interval's end, RFC 3339 UTC (`at` is
    /// monotonic); absent when replaying a capture, which has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<&'a str>,
    /// The interval.
    #[serde(flatten)]
    pub delta: &'a Delta,
}

/// The `--json` line of `d` (without the newline).
pub fn json_line(d: &Delta) -> serde_json::Result<String> {
    json_line_at(d, None)
}

/// The `--json` line of `d` ending at wall-clock `time` (RFC 3339).
pub fn json_line_at(d: &Delta, time: Option<&str>) -> serde_json::Result<String> {
    serde_json::to_string(&JsonLine {
        schema_version: STAT_SCHEMA_VERSION,
        time,
        delta: d,
    })
}

pub(crate) fn parse_interval(s: &str) -> anyhow::Result<Duration> {
    let v = match model::units::parse_seconds(s) {
        Ok(v) => v,
        Err(model::units::UnitError::Negative(_)) => f64::NAN,
        Err(_) => anyhow::bail!("`{s}` is not a number of seconds (or 500ms, 2s, 1m)"),
    };
    if !v.is_finite() || v <= 0.0 {
        anyhow::bail!("interval must be more than 0 seconds, got `{s}`");
    }
    if v < 0.01 {
        anyhow::bail!("interval `{s}` is below the 0.01 s minimum");
    }
    if v > 86_400.0 {
        anyhow::bail!("interval `{s}` is above one day");
    }
    Ok(Duration::from_secs_f64(v))
}

pub(crate) fn parse_count(s: &str) -> anyhow::Result<u64> {
    match s.trim().parse::<u64>() {
        Ok(0) => anyhow::bail!("count must be at least 1 (omit --count to run until Ctrl-C)"),
        Ok(n) => Ok(n),
        Err(_) => anyhow::bail!("`{s}` is not a whole number of reports"),
    }
}

fn parse_cpus(s: &str) -> anyhow::Result<CpuSet> {
    let set = match CpuSet::parse_arg(s) {
        Ok(set) => set,
        Err(e) => anyhow::bail!("bad cpulist `{s}`: {}", e.problem),
    };
    if set.is_empty() {
        anyhow::bail!("cpulist `{s}` selects no CPU");
    }
    Ok(set)
}

/// Keep only the selected interfaces and CPUs.
pub fn filter(d: &mut Delta, ifaces: &[String], cpus: Option<&CpuSet>) {
    if !ifaces.is_empty() {
        d.ifaces.retain(|i| ifaces.contains(&i.name));
        d.queues.retain(|q| ifaces.contains(&q.iface));
        d.nic_counters.retain(|i, _| ifaces.contains(i));
    }
    if let Some(set) = cpus {
        d.cpus.retain(|c| set.contains(c.cpu.0));
    }
}

/// Run `nettune stat`.
pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    if let Some(i) = args.interval_pos {
        args.interval = i;
    }
    if args.count_pos.is_some() {
        args.count = args.count_pos;
    }
    let root = Root::new(&args.root);
    if !root.is_live() {
        let recorded = host::capture::read_samples(&root).with_context(|| {
            format!("reading the samples recorded under {}", args.root.display())
        })?;
        if !recorded.is_empty() {
            return replay(&args, &recorded);
        }
        // A recorded tree (a capture, a fixture, another tool's /proc and
        // /sys copy) without samples never changes: sampling it would print
        // zero rows for ever. Only a live procfs mounted under the root
        // (a container's view of its host) moves.
        if root.exists("/LABEL") {
            bail!(
                "{} is a capture without samples: its counters never change, so there is no interval to show (record some with `nettune capture --out DIR --samples N`)",
                args.root.display()
            );
        }
        if !proc_mounted_under(&args.root) {
            bail!(
                "{} holds no recorded samples and its /proc/stat is no live procfs: its counters never change, so there is no interval to show; rates need samples recorded with `nettune capture --samples N --out DIR` (then `nettune stat --root DIR`)",
                args.root.display()
            );
        }
    }
    let mut sampler = Sampler::new(root);
    if !args.no_nic_stats {
        sampler = sampler.with_nic_stats(&args.iface);
    }
    let mut prev = sampler
        .sample()
        .with_context(|| format!("reading counters under {}", args.root.display()))?;
    if let Some(nd) = &prev.netdev {
        for want in &args.iface {
            if nd.get(want).is_none() {
                let have: Vec<&str> = nd.ifaces.iter().map(|i| i.name.as_str()).collect();
                bail!(
                    "no interface `{}` in /proc/net/dev (have: {})",
                    Printable(want),
                    printable(&have.join(", "))
                );
            }
        }
    } else if !args.iface.is_empty() {
        bail!(
            "--iface given but /proc/net/dev is missing under {}",
            args.root.display()
        );
    }
    if let Some(set) = &args.cpus {
        if !prev.stat.cpus.iter().any(|(c, _)| set.contains(c.0)) {
            bail!("--cpus {} matches no online CPU", set.to_list());
        }
    }
    let start = Instant::now();
    let mut seq = 0u64;
    while args.count.is_none_or(|n| seq < n) {
        seq += 1;
        let due = start
            + args
                .interval
                .saturating_mul(u32::try_from(seq).unwrap_or(u32::MAX));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let now = sampler.sample()?;
        let time = model::time::rfc3339_utc(std::time::SystemTime::now());
        let d = now.delta(&prev);
        prev = now;
        if !emit(&args, d, seq, Some(&time))? {
            return Ok(ExitCode::SUCCESS);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Filter and print one interval; `false` when stdout is gone.
fn emit(args: &Args, mut d: Delta, seq: u64, time: Option<&str>) -> anyhow::Result<bool> {
    filter(&mut d, &args.iface, args.cpus.as_ref());
    let text = if args.json {
        let mut line = json_line_at(&d, time)?;
        line.push('\n');
        line
    } else {
        printable_lines(&render_at(&d, seq, time)).into_owned()
    };
    write_stdout(&text)
}

/// Write `text` to stdout and flush; `false` when the reader is gone.
pub(crate) fn write_stdout(text: &str) -> anyhow::Result<bool> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e).context("writing to stdout"),
    }
}

/// Whether `root/proc` is a mounted procfs (this process's mountinfo says
/// so), rather than files that never change.
fn proc_mounted_under(root: &std::path::Path) -> bool {
    let Ok(proc_dir) = root.join("proc").canonicalize() else {
        return false;
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    info.lines().any(|l| {
        let mut f = l.split(' ');
        let point = f.nth(4);
        let fstype = l.split(" - ").nth(1).and_then(|r| r.split(' ').next());
        fstype == Some("proc") && point.is_some_and(|p| std::path::Path::new(p) == proc_dir)
    })
}

/// The intervals between samples recorded by `nettune capture --samples`,
/// at most `--count`, printed at once (the interval is the recorded one).
fn replay(args: &Args, samples: &[host::sampler::Sample]) -> anyhow::Result<ExitCode> {
    if samples.len() < 2 {
        bail!(
            "{} holds one recorded sample: an interval needs two (capture --samples 2 or more)",
            args.root.display()
        );
    }
    if let Some(nd) = &samples[0].netdev {
        if let Some(want) = args.iface.iter().find(|w| nd.get(w).is_none()) {
            bail!(
                "no interface `{}` in the recorded /proc/net/dev",
                Printable(want)
            );
        }
    }
    for (k, w) in samples.windows(2).enumerate() {
        let seq = k as u64 + 1;
        if args.count.is_some_and(|n| seq > n) {
            break;
        }
        if !emit(args, w[1].delta(&w[0]), seq, None)? {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_validation() {
        assert_eq!(parse_interval("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_interval("2").unwrap(), Duration::from_secs(2));
        // The shared duration parser (model::units::parse_seconds).
        assert_eq!(parse_interval("500ms").unwrap(), Duration::from_millis(500));
        for bad in ["0", "-1", "nan", "inf", "x", "", "0.001", "100000"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpus_validation() {
        assert!(parse_cpus("0-1").is_ok());
        assert!(parse_cpus("a").is_err());
        assert_eq!(parse_count("3").unwrap(), 3);
        assert!(parse_count("0").is_err());
        assert!(parse_count("-2").is_err());
    }
}
