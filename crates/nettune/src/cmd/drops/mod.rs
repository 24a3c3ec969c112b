//! `nettune drops`: drops per second by the kernel's own reason, location
//! and protocol (the `skb:kfree_skb` tracepoint, read by `host::drops`),
//! named by the model's catalogue; totals at the end. NDJSON with
//! `--json` (docs/schema/drops.json).

use anyhow::Context;
use host::drops::{Counting, DropSource, Interval, Sampling};
use host::Root;
use model::drops::{DropCounts, DropInterval, DROPS_SCHEMA_VERSION};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

mod render;

pub use render::render;

const EXAMPLES: &str = "\
Examples:
  nettune drops                         one report a second until Ctrl-C, then the totals
  nettune drops -i 5 -c 3               three 5-second reports, then the totals
  nettune drops --json -c 10            NDJSON: one line per interval, then a totals line
  nettune drops --iface eth0            plus eth0's own rx/tx drop counters
  nettune drops --every                 sample every drop (exact by reason while the rings hold)
  nettune drops --reason NO_SOCKET      count one reason exactly (a filter in the kernel)
  nettune drops --counting perf         count with perf events even where BPF is allowed
  nettune drops --root DIR              what `nettune capture --samples N` recorded (as root)

Reads the skb:kfree_skb tracepoint (Linux 5.17 and later give a reason; before, only the
kernel location). Where the kernel allows BPF (root or CAP_BPF+CAP_PERFMON, 5.17+), a BPF
program on the raw tracepoint counts every drop by reason (exact, a few ns a drop), and perf
events sample records for the locations and protocols (all drops up to about 10 000 a
second, then in windows: those rows are shares of the total, marked `estimated`). Otherwise,
and with --every or --reason, one perf event per CPU counts every drop exactly and samples
records (every drop up to 1000 per second per CPU, then one in N: rows are then the sampled
shares of the exact total). Each line says which counted (`counting: bpf` or `perf`). Each reason is named by nettune's catalogue:
what it means, the doctor finding it confirms, and the fix or `not a tuning matter`.
Needs root (or CAP_PERFMON; tracefs is mounted at /sys/kernel/tracing when absent). The
tracepoint carries no device or namespace: counts are the whole machine's. More in
/usr/share/doc/nettune/docs/drops.md.";

/// Flags of `nettune drops`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Seconds between reports (fractions allowed, e.g. 0.5).
    #[arg(long, short = 'i', default_value = "1", value_parser = super::stat::parse_interval)]
    pub interval: Duration,
    /// Number of reports, then the totals; without it, run until Ctrl-C.
    #[arg(long, short = 'c', value_parser = super::stat::parse_count)]
    pub count: Option<u64>,
    /// One JSON object per interval and line (NDJSON), then a totals line.
    #[arg(long)]
    pub json: bool,
    /// Also this interface's own drop counters (/proc/net/dev): the
    /// tracepoint names no device.
    #[arg(long, value_name = "IF")]
    pub iface: Option<String>,
    /// Sample every drop (one record per drop): exact counts by reason at
    /// any rate the ring buffers hold, at a higher cost at high rates.
    #[arg(long)]
    pub every: bool,
    /// Count only these reasons (comma-separated, as the kernel names them:
    /// NO_SOCKET,SOCKET_RCVBUFF): a tracepoint filter, so the total is
    /// their exact count whatever else the machine drops. Live host only.
    #[arg(long, value_delimiter = ',', value_name = "REASON")]
    pub reason: Vec<String>,
    /// How to count: `bpf` where the kernel allows it, else perf (the
    /// default); `perf` always with perf events.
    #[arg(long, value_enum, default_value = "bpf", value_name = "HOW")]
    pub counting: CountingArg,
    /// Directory standing for `/` (a capture with samples); default the live host.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
}

/// `--counting`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CountingArg {
    /// BPF where the kernel allows it, else perf.
    Bpf,
    /// perf events only.
    Perf,
}

/// Said once when the kernel hid its symbols' addresses.
pub const KALLSYMS_HIDDEN: &str = "locations are kernel addresses, not symbols: /proc/kallsyms hides them (kptr_restrict, or not root)";

/// What kind of line a `--json` line is.
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LineKind {
    /// One interval.
    Interval,
    /// The whole run.
    Totals,
}

/// The interface's own counters over a line's time.
#[derive(Debug, serde::Serialize)]
pub struct IfaceDrops<'a> {
    /// Its name.
    pub name: &'a str,
    /// Receive drops (/proc/net/dev).
    pub rx_dropped: u64,
    /// Transmit drops.
    pub tx_dropped: u64,
}

/// One `--json` line.
#[derive(Debug, serde::Serialize)]
pub struct JsonLine<'a> {
    /// [`DROPS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `interval` or `totals`.
    pub kind: LineKind,
    /// Wall-clock end, RFC 3339 UTC; absent when replaying a capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<&'a str>,
    /// The drops.
    #[serde(flatten)]
    pub drops: &'a DropInterval,
    /// `--iface`'s counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iface: Option<IfaceDrops<'a>>,
}

/// One printed line (human block or JSON) of `kind`.
pub fn line(
    args: &Args,
    kind: LineKind,
    d: &DropInterval,
    iface: Option<(u64, u64)>,
    time: Option<&str>,
) -> anyhow::Result<String> {
    let iface = args
        .iface
        .as_deref()
        .zip(iface)
        .map(|(name, (rx, tx))| IfaceDrops {
            name,
            rx_dropped: rx,
            tx_dropped: tx,
        });
    if args.json {
        let mut s = serde_json::to_string(&JsonLine {
            schema_version: DROPS_SCHEMA_VERSION,
            kind,
            time,
            drops: d,
            iface,
        })?;
        s.push('\n');
        return Ok(s);
    }
    let head = match (kind, time) {
        (LineKind::Totals, _) => "totals".to_string(),
        (LineKind::Interval, Some(t)) => t.to_string(),
        (LineKind::Interval, None) => "recorded interval".to_string(),
    };
    let iface = iface.map(|i| (i.name, i.rx_dropped, i.tx_dropped));
    Ok(model::text::printable_lines(&render(&head, d, iface)).into_owned())
}

/// Run `nettune drops`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let root = Root::new(&args.root);
    if let Some(i) = &args.iface {
        host::iface::check_iface(i).map_err(|e| anyhow::anyhow!("--iface: {e}"))?;
    }
    let sampling = if args.every {
        Sampling::Every
    } else {
        Sampling::Adaptive
    };
    if !args.reason.is_empty() && !root.is_live() {
        anyhow::bail!("--reason selects in the kernel: live host only, not with --root");
    }
    let prefer = match args.counting {
        CountingArg::Bpf => Counting::Bpf,
        CountingArg::Perf => Counting::Perf,
    };
    let mut source = DropSource::open_counting(&root, sampling, &args.reason, prefer)?;
    if let Some(why) = source.watcher().and_then(|w| w.bpf_refused()) {
        eprintln!("nettune: drops: counting with perf events: the BPF counter was refused ({why})");
    }
    let cancel = engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?;
    let first: DropCounts = source.first().unwrap_or_default();
    let mut last = first.clone();
    let mut iface_sum: Option<(u64, u64)> = None;
    let mut recorded_secs = 0.0;
    let mut seq = 0u64;
    while args.count.is_none_or(|n| seq < n) && !cancel.load(Ordering::Relaxed) {
        let stop = || cancel.load(Ordering::Relaxed);
        let Some((Interval { drops, iface }, cur)) =
            source.next(args.interval, args.iface.as_deref(), &stop)
        else {
            break;
        };
        seq += 1;
        recorded_secs += drops.seconds;
        last = cur;
        if let Some((rx, tx)) = iface {
            let (a, b) = iface_sum.unwrap_or((0, 0));
            iface_sum = Some((a.saturating_add(rx), b.saturating_add(tx)));
        }
        let time = root
            .is_live()
            .then(|| model::time::rfc3339_utc(std::time::SystemTime::now()));
        if !super::stat::write_stdout(&line(
            &args,
            LineKind::Interval,
            &drops,
            iface,
            time.as_deref(),
        )?)? {
            return Ok(ExitCode::SUCCESS);
        }
    }
    if source.locations_hidden() == Some(true) {
        eprintln!("nettune: drops: {KALLSYMS_HIDDEN}");
    }
    let totals = DropInterval::between(&first, &last, recorded_secs);
    super::stat::write_stdout(&line(&args, LineKind::Totals, &totals, iface_sum, None)?)?;
    Ok(ExitCode::SUCCESS)
}
