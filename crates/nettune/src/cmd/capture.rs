//! `nettune capture --out DIR [--samples N --interval S]`: record this host
//! for `--root DIR`, optionally with N sets of the sampler's counters so
//! rates can be computed offline.

use host::capture::{check_sampling, MAX_SAMPLES};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  nettune capture --out host-a                    into ./host-a (created; not a shared /tmp name)
  nettune capture --out host-a --samples 5 --interval 1   plus 5 counter sets, 1 s apart
  nettune inspect --root host-a                   the same view, read from the capture
  nettune stat --root host-a                      the recorded intervals (with --samples)
  nettune drops --root host-a                     the recorded drops by reason (with --samples, as root)

Records every file `inspect` reads (plus the counters `stat` reads), the sysfs symlinks
between them and ethtool state (with the driver's counters, ethtool -S) as ethtool/IF.json,
so the tree can be sent and read back with --root. Nothing is written through a symlink
under DIR: a link at a file's name is replaced, one at a directory's name is refused.
With --samples N it also records N sets of the counters the sampler reads, --interval
seconds apart, under samples/, so that stat and doctor compute rates from the capture as
they do live, and (as root) the drops by reason of the skb:kfree_skb tracepoint in each
sample's drops.json (layout in /usr/share/doc/nettune/docs/snapshot.md).";

/// Flags of `nettune capture`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory to write (`sys/`, `proc/`, `etc/`, `ethtool/`, `LABEL`, `samples/`).
    #[arg(long)]
    pub out: PathBuf,
    /// Also record this many sets of the sampler's counters (1 to 3600).
    #[arg(long, value_name = "N", value_parser = parse_samples)]
    pub samples: Option<u32>,
    /// Seconds between recorded samples (0.1 to 600; default 1). Needs --samples.
    #[arg(long, value_name = "S", value_parser = parse_interval, requires = "samples")]
    pub interval: Option<Duration>,
    /// Do not record the driver counters (ethtool -S) in each sample.
    #[arg(long)]
    pub no_nic_stats: bool,
}

fn parse_samples(s: &str) -> anyhow::Result<u32> {
    match s.trim().parse::<u32>() {
        Ok(0) => anyhow::bail!("--samples must be at least 1"),
        Ok(n) if n > MAX_SAMPLES => {
            anyhow::bail!("--samples {n} is above the maximum of {MAX_SAMPLES}")
        }
        Ok(n) => Ok(n),
        Err(_) => anyhow::bail!("`{s}` is not a whole number of samples"),
    }
}

fn parse_interval(s: &str) -> anyhow::Result<Duration> {
    let v = match model::units::parse_seconds(s) {
        Ok(v) => v,
        Err(model::units::UnitError::Negative(_)) => f64::NAN,
        Err(_) => anyhow::bail!("`{s}` is not a number of seconds (or 500ms, 2s, 1m)"),
    };
    if !v.is_finite() || !(0.1..=600.0).contains(&v) {
        anyhow::bail!("--interval must be 0.1 to 600 seconds, got `{s}`");
    }
    Ok(Duration::from_secs_f64(v))
}

/// Run `nettune capture`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let interval = args.interval.unwrap_or(Duration::from_secs(1));
    if let Some(n) = args.samples {
        check_sampling(n, interval)?;
    }
    let live = host::Root::live();
    let eth = host::ethtool::default_source(&live);
    let r = host::capture::capture(&args.out, eth.as_ref())?;
    println!(
        "captured {} files and {} symlinks into {} ({} interfaces, {} IRQs, {} notes)",
        r.files,
        r.links,
        args.out.display(),
        r.snapshot.interfaces.len(),
        r.snapshot.irqs.len(),
        r.snapshot.notes.len()
    );
    if !r.skipped.is_empty() {
        println!(
            "{} files exist but could not be read (often the kernel saying unset or unknown); they read back as absent:",
            r.skipped.len()
        );
        for (p, why) in &r.skipped {
            println!(
                "  {}: {}",
                model::text::printable(&p.display().to_string()),
                model::text::printable(&why.to_string())
            );
        }
    }
    if let Some(n) = args.samples {
        // Drops by reason beside the counters, when the tracepoint opens
        // (the live host, as root).
        let mut drops = host::drops::DropWatcher::open(&live, host::drops::Sampling::Adaptive);
        let hook = drops
            .as_mut()
            .ok()
            .map(|w| w as &mut dyn host::capture::SampleHook);
        let s = host::capture::capture_samples_with(
            &live,
            &args.out,
            eth.as_ref(),
            n,
            interval,
            !args.no_nic_stats,
            hook,
        )?;
        println!(
            "recorded {} samples {} s apart into {} (driver counters of: {})",
            s.samples,
            interval.as_secs_f64(),
            args.out.join("samples").display(),
            if s.nic_ifaces.is_empty() {
                "none".to_string()
            } else {
                model::text::printable(&s.nic_ifaces.join(", ")).into_owned()
            }
        );
        match &drops {
            Ok(_) => println!("recorded drops by reason in each sample (nettune drops --root)"),
            Err(why) => println!("{why}"),
        }
    }
    println!(
        "check it with: nettune inspect --root {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked() {
        assert_eq!(parse_samples("5").unwrap(), 5);
        for bad in ["0", "-1", "x", "3601", "99999999999"] {
            assert!(parse_samples(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_interval("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_interval("1m").unwrap(), Duration::from_secs(60));
        for bad in ["0", "0.01", "-1", "nan", "inf", "601", "x"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }
}
