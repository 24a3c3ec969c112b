//! `nettune top`: the live terminal view. Parses flags, checks the terminal,
//! and runs a thin loop: sample, feed the [`App`], draw its screen, handle
//! keys. The model, drawing and key handling live in `crate::top`.

use crate::top::draw::draw;
use crate::top::drops::DropsPane;
use crate::top::findings::DoctorFindings;
use crate::top::{Action, App};
use anyhow::{bail, Context};
use host::sampler::{Sample, Sampler};
use host::Root;
use ratatui::crossterm::event::{self, Event};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// How often the host snapshot (queues, IRQ affinities) is read again.
pub const SNAPSHOT_EVERY: Duration = Duration::from_secs(30);

const EXAMPLES: &str = "\
Examples:
  nettune top                       every CPU and the first NIC with queues, once a second
  nettune top --iface eth0          only eth0 in the NIC panel
  nettune top --interval 2          a refresh every 2 s
  nettune top --no-queue-stats      no `ethtool -S` per interval (heat by interrupts/s)
  nettune top --root DIR            replay a capture made with `nettune capture --samples N`

Keys: q/Esc/Ctrl-C quit, s cycles the sort (id, softirq, busy), tab or 1-9 picks the NIC,
f or space freezes the screen, ? shows help. Needs a terminal of at least 80x20; for a pipe,
a log or a script use `nettune stat` (and `nettune stat --json`). Screen layout:
/usr/share/doc/nettune/docs/top.md.";

/// Flags of `nettune top`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Seconds between refreshes (0.2 to 60, fractions allowed).
    #[arg(long, short = 'i', default_value = "1", value_parser = parse_interval)]
    pub interval: Duration,
    /// Only these interfaces in the NIC panel (repeat or comma-separate).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub iface: Vec<String>,
    /// Do not read the driver counters (`ethtool -S`'s) each interval:
    /// per-queue packets/s stay unknown and the heat map goes by
    /// interrupts/s (saves one ioctl per NIC with queues per interval).
    #[arg(long)]
    pub no_queue_stats: bool,
    /// Replay a capture made with `nettune capture --samples N`: its
    /// recorded intervals, one per `--interval`, then the last one stays.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
}

fn parse_interval(s: &str) -> anyhow::Result<Duration> {
    let v = match model::units::parse_seconds(s) {
        Ok(v) => v,
        Err(model::units::UnitError::Negative(_)) => f64::NAN,
        Err(_) => bail!("`{s}` is not a number of seconds (or 500ms, 2s, 1m)"),
    };
    if !v.is_finite() || !(0.2..=60.0).contains(&v) {
        bail!("interval must be between 0.2 and 60 seconds, got `{s}`");
    }
    Ok(Duration::from_secs_f64(v))
}

/// The refusal when stdout is not a terminal.
pub const NOT_A_TERMINAL: &str = "`nettune top` draws on a terminal and stdout is not one; \
for a pipe, a log or a script use `nettune stat` (or `nettune stat --json`)";

/// Run `nettune top`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let root = Root::new(&args.root);
    let replay = if root.is_live() {
        None
    } else {
        let samples = host::capture::read_samples(&root)
            .with_context(|| format!("reading the samples of {}", args.root.display()))?;
        if samples.len() < 2 {
            bail!(
                "{} holds no recorded intervals (record them with `nettune capture --samples N`); \
                 for its counters use `nettune stat --root {}`",
                args.root.display(),
                args.root.display()
            );
        }
        Some(samples)
    };
    if !std::io::stdout().is_terminal() {
        bail!(NOT_A_TERMINAL);
    }
    let snapshot = host::read_snapshot(&root);
    if let Some(samples) = replay {
        check_ifaces(&args.iface, &snapshot, &samples[0])?;
        let total = samples.len() - 1;
        let mut app = App::new(
            samples[0].at,
            snapshot,
            args.iface.clone(),
            Box::new(DoctorFindings::new(root.clone())),
        );
        app.replay = Some((0, total));
        app.set_drops(DropsPane::Off(REPLAY_DROPS.into()));
        let mut samples = samples.into_iter();
        if let Some(first) = samples.next() {
            app.sample(first);
        }
        let mut feed = Feed::Replay(samples);
        return with_terminal(|t| event_loop(t, &mut app, (&mut feed, &mut None), &args, &root));
    }
    let mut sampler = Sampler::new(root.clone());
    // Per-queue packets come from the driver counters of the NICs with queue
    // IRQs (the ones with a queue table), one SIOCETHTOOL ioctl each per
    // interval (`ethtool -S` only if the ioctl is refused).
    let queue_nics: Vec<String> = snapshot
        .interfaces
        .iter()
        .filter(|i| !i.irqs.is_empty())
        .filter(|i| args.iface.is_empty() || args.iface.contains(&i.name))
        .map(|i| i.name.clone())
        .collect();
    if !args.no_queue_stats && !queue_nics.is_empty() {
        sampler = sampler.with_nic_stats(&queue_nics);
    }
    let first = sampler
        .sample()
        .with_context(|| format!("reading counters under {}", args.root.display()))?;
    check_ifaces(&args.iface, &snapshot, &first)?;
    let mut app = App::new(
        first.at,
        snapshot,
        args.iface.clone(),
        Box::new(DoctorFindings::new(root.clone())),
    );
    app.sample(first);
    let mut drops = match host::drops::DropWatcher::open(&root, host::drops::Sampling::Adaptive) {
        Ok(mut w) => Some(LiveDrops {
            prev: w.counts(),
            watcher: Box::new(w),
            at: Instant::now(),
        }),
        Err(why) => {
            app.set_drops(DropsPane::Off(why.to_string()));
            None
        }
    };
    let mut feed = Feed::Live(sampler);
    with_terminal(|t| event_loop(t, &mut app, (&mut feed, &mut drops), &args, &root))
}

/// Every `--iface` names an interface of the snapshot or of `/proc/net/dev`.
fn check_ifaces(
    want: &[String],
    snapshot: &model::snapshot::HostSnapshot,
    first: &Sample,
) -> anyhow::Result<()> {
    for w in want {
        let in_netdev = first.netdev.as_ref().is_some_and(|n| n.get(w).is_some());
        if snapshot.interface(w).is_none() && !in_netdev {
            let have: Vec<&str> = snapshot
                .interfaces
                .iter()
                .map(|i| i.name.as_str())
                .collect();
            bail!(
                "no interface `{}` (have: {})",
                model::text::Printable(w),
                model::text::printable(&have.join(", "))
            );
        }
    }
    Ok(())
}

/// Set the terminal up, run `f`, and restore the terminal whatever `f` did.
fn with_terminal(
    f: impl FnOnce(&mut ratatui::DefaultTerminal) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    // Installed before raw mode: from here on SIGTERM, SIGHUP and SIGINT
    // only set STOP, the loop returns and the terminal is restored below.
    let stop = engine::interrupt::stop_signals().context("installing the signal handlers")?;
    if STOP.set(stop).is_err() {
        bail!("the terminal is already set up");
    }
    let mut terminal = ratatui::try_init().context("setting up the terminal")?;
    let res = f(&mut terminal);
    ratatui::restore();
    res
}

/// The signal that asked `top` to stop (0: none yet), set by
/// [`engine::interrupt::stop_signals`] in [`with_terminal`].
static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::OnceLock::new();

/// How often the wait for a key or the next sample looks at [`STOP`].
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// The exit status for a stop signal that arrived (128 + its number).
fn stopped_by_signal() -> Option<ExitCode> {
    let n = STOP.get()?.load(std::sync::atomic::Ordering::Relaxed);
    (n > 0).then(|| ExitCode::from(u8::try_from(n.saturating_add(128)).unwrap_or(u8::MAX)))
}

/// Where samples come from: the live sampler, or a capture's recorded ones.
enum Feed {
    Live(Sampler),
    Replay(std::vec::IntoIter<Sample>),
}

/// The live drop watcher and its counts at the last interval's end.
struct LiveDrops {
    watcher: Box<host::drops::DropWatcher>,
    prev: model::drops::DropCounts,
    at: Instant,
}

impl LiveDrops {
    /// The interval since the last one, as the pane shows it.
    fn interval(&mut self) -> DropsPane {
        let cur = self.watcher.counts();
        let now = Instant::now();
        let secs = now.duration_since(self.at).as_secs_f64();
        let i = model::drops::DropInterval::between(&self.prev, &cur, secs);
        self.prev = cur;
        self.at = now;
        DropsPane::of(&i)
    }
}

/// The drops pane of a replay: a capture's drops are read by `nettune drops --root`.
const REPLAY_DROPS: &str = "not shown in a replay; `nettune drops --root DIR` reads a capture's";

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    (feed, drops): (&mut Feed, &mut Option<LiveDrops>),
    args: &Args,
    root: &Root,
) -> anyhow::Result<ExitCode> {
    let mut due = Instant::now() + args.interval;
    let mut last_snapshot = Instant::now();
    loop {
        terminal
            .draw(|f| draw(f, &app.screen()))
            .context("drawing")?;
        // Wait for a key or the next sample, a slice at a time, so that a
        // SIGTERM or SIGHUP ends the loop and the terminal is restored.
        let key = loop {
            if let Some(code) = stopped_by_signal() {
                return Ok(code);
            }
            let wait = due.saturating_duration_since(Instant::now());
            if event::poll(wait.min(SIGNAL_CHECK)).context("waiting for a key")? {
                break true;
            }
            // the watcher's rings, drained while waiting so they do not fill
            if let Some(d) = drops.as_mut() {
                d.watcher.drain();
            }
            if wait <= SIGNAL_CHECK {
                break false;
            }
        };
        if key {
            if let Event::Key(k) = event::read().context("reading a key")? {
                if app.key(k) == Action::Quit {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            continue;
        }
        // The next sample an interval on; after a stall (a stopped process,
        // a busy host) start again from now rather than catch up in a burst.
        due += args.interval;
        let now = Instant::now();
        if due < now {
            due = now + args.interval;
        }
        match feed {
            Feed::Live(sampler) => {
                if let Some(d) = drops.as_mut() {
                    app.set_drops(d.interval());
                }
                app.sample(sampler.sample()?);
                if last_snapshot.elapsed() >= SNAPSHOT_EVERY {
                    app.set_snapshot(host::read_snapshot(root));
                    last_snapshot = Instant::now();
                }
            }
            // One recorded interval per tick; at the end the last one stays.
            Feed::Replay(samples) => {
                if let Some(s) = samples.next() {
                    app.sample(s);
                    if let Some((at, of)) = app.replay {
                        app.replay = Some((at + 1, of));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_bounds() {
        assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_interval("2s").unwrap(), Duration::from_secs(2));
        for bad in ["0", "0.1", "-1", "61", "nan", "inf", "x", ""] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
