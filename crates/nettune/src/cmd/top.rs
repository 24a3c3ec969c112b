//! `nettune top`: the live terminal view. Parses flags, checks the terminal,
//! and runs a thin loop: sample, feed the [`App`], draw its screen, handle
//! keys. The model, drawing and key handling live in `crate::top`.

use crate::top::draw::draw;
use crate::top::findings::DoctorFindings;
use crate::top::{Action, App};
use anyhow::{bail, Context};
use host::sampler::Sampler;
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

Keys: q/Esc/Ctrl-C quit, s cycles the sort (id, softirq, busy), tab or 1-9 picks the NIC,
f or space freezes the screen, ? shows help. Needs a terminal of at least 80x20; for a pipe,
a log or a script use `nettune stat` (and `nettune stat --json`). Screen layout: docs/top.md.";

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
    /// Do not run `ethtool -S` each interval: per-queue packets/s stay
    /// unknown and the heat map goes by interrupts/s (saves a fork per NIC
    /// with queues per interval).
    #[arg(long)]
    pub no_queue_stats: bool,
    /// Directory standing for `/`; top reads the live host only (`/`), so a
    /// capture is refused with a pointer to `nettune stat --root`.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
}

fn parse_interval(s: &str) -> anyhow::Result<Duration> {
    let Ok(v) = s.trim().parse::<f64>() else {
        bail!("`{s}` is not a number of seconds");
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
    if !root.is_live() {
        bail!(
            "`nettune top` shows the live host only; for the counters of {} use `nettune stat --root {}`",
            args.root.display(),
            args.root.display()
        );
    }
    if !std::io::stdout().is_terminal() {
        bail!(NOT_A_TERMINAL);
    }
    let snapshot = host::read_snapshot(&root);
    let mut sampler = Sampler::new(root.clone());
    // Per-queue packets come from the driver counters of the NICs with queue
    // IRQs (the ones with a queue table), one `ethtool -S` each per interval.
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
    for want in &args.iface {
        let in_netdev = first.netdev.as_ref().is_some_and(|n| n.get(want).is_some());
        if snapshot.interface(want).is_none() && !in_netdev {
            let have: Vec<&str> = snapshot
                .interfaces
                .iter()
                .map(|i| i.name.as_str())
                .collect();
            bail!("no interface `{want}` (have: {})", have.join(", "));
        }
    }
    let mut app = App::new(
        first.at,
        snapshot,
        args.iface.clone(),
        Box::new(DoctorFindings::new(root.clone())),
    );
    let mut terminal = ratatui::try_init().context("setting up the terminal")?;
    app.sample(first);
    let res = event_loop(&mut terminal, &mut app, &mut sampler, &args, &root);
    ratatui::restore();
    res
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    sampler: &mut Sampler,
    args: &Args,
    root: &Root,
) -> anyhow::Result<ExitCode> {
    let mut due = Instant::now() + args.interval;
    let mut last_snapshot = Instant::now();
    loop {
        terminal
            .draw(|f| draw(f, &app.screen()))
            .context("drawing")?;
        let wait = due.saturating_duration_since(Instant::now());
        if event::poll(wait).context("waiting for a key")? {
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
        app.sample(sampler.sample()?);
        if last_snapshot.elapsed() >= SNAPSHOT_EVERY {
            app.set_snapshot(host::read_snapshot(root));
            last_snapshot = Instant::now();
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
        for bad in ["0", "0.1", "-1", "61", "nan", "inf", "x", ""] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
