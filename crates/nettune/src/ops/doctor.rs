//! `doctor` on a host: the typed request `nettune doctor` parses its flags
//! into and the agent its request, and the one function both run.

use host::sampler::Sampler;
use host::Root;
use model::plan::Bdp;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Default sampling window, seconds.
pub const DEFAULT_SAMPLE_S: f64 = 3.0;
/// Longest window: an hour.
pub const MAX_SAMPLE_S: f64 = 3600.0;
/// Shortest window: two clock ticks of `/proc/stat` (USER_HZ 100).
pub const MIN_SAMPLE_S: f64 = 0.02;

/// What doctor reads and with which intent.
#[derive(Debug, Clone, Default)]
pub struct DoctorRequest {
    /// A capture or fixture standing for `/`; `None` is the live host.
    pub root: Option<PathBuf>,
    /// The live window ([`DEFAULT_SAMPLE_S`] when `None`); never with `root`.
    pub sample: Option<Duration>,
    /// The intent as given (a name or a path) and as loaded.
    pub profile: Option<(String, tune::Profile)>,
    /// The bandwidth-delay product the buffers must hold.
    pub bdp: Option<Bdp>,
    /// The cloud instance's allowances.
    pub allowance: doctor::Allowance,
}

impl DoctorRequest {
    /// The request from flag values as given (`--profile`, `--bdp`,
    /// `--allowance`), each checked, the error naming the flag.
    pub fn parse(
        root: Option<PathBuf>,
        sample: Option<Duration>,
        profile: Option<&str>,
        bdp: Option<&str>,
        allowance: Option<&str>,
    ) -> anyhow::Result<DoctorRequest> {
        if root.is_some() && sample.is_some() {
            anyhow::bail!("--sample: not with --root (a capture's own samples are used)");
        }
        let profile = profile
            .map(|p| super::profile::load(p).map(|l| (p.to_string(), l)))
            .transpose()
            .map_err(|e| anyhow::anyhow!("--profile: {e}"))?;
        let bdp = bdp
            .map(Bdp::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--bdp: {e}"))?;
        let allowance = allowance
            .map(parse_allowance)
            .transpose()?
            .unwrap_or_default();
        Ok(DoctorRequest {
            root,
            sample,
            profile,
            bdp,
            allowance,
        })
    }
}

/// A report with what it was made from.
#[derive(Debug)]
pub struct Diagnosis {
    /// What `doctor --json` prints.
    pub report: doctor::Report,
    /// The input the rules ran on (the human header reads the host's name).
    pub input: doctor::Input,
    /// The live window sampled; `None` for a capture.
    pub sampled: Option<Duration>,
}

/// `--sample S` checked: more than 0, at most an hour.
pub fn parse_sample(s: &str) -> anyhow::Result<Duration> {
    let v = match model::units::parse_seconds(s) {
        Ok(v) => v,
        Err(model::units::UnitError::Negative(_)) => f64::NAN,
        Err(_) => anyhow::bail!("--sample `{s}`: not a number of seconds (or 500ms, 2s, 1m)"),
    };
    sample_seconds(v).map_err(|why| anyhow::anyhow!("--sample `{s}`: {why:#}"))
}

/// A sampling window of `v` seconds checked: more than 0, at least
/// [`MIN_SAMPLE_S`], at most [`MAX_SAMPLE_S`]; the error says which.
pub fn sample_seconds(v: f64) -> anyhow::Result<Duration> {
    if !v.is_finite() || v <= 0.0 {
        anyhow::bail!("must be more than 0 seconds");
    }
    if v < MIN_SAMPLE_S {
        anyhow::bail!("below the {MIN_SAMPLE_S} s minimum");
    }
    if v > MAX_SAMPLE_S {
        anyhow::bail!("above the {MAX_SAMPLE_S} s maximum");
    }
    Ok(Duration::from_secs_f64(v))
}

/// `--allowance RATE,PPS`: the bandwidth allowance (`5gbit`) and the
/// packets-per-second allowance (`400k`, `1M`, 1 to 10^9).
pub fn parse_allowance(s: &str) -> anyhow::Result<doctor::Allowance> {
    let Some((rate, pps)) = s.split_once(',') else {
        anyhow::bail!("--allowance `{s}`: want RATE,PPS, e.g. 5gbit,400k");
    };
    let bandwidth = model::units::parse_rate(rate)
        .map_err(|e| anyhow::anyhow!("--allowance: `{rate}`: {e}"))?;
    if !(1e3..=4e11).contains(&bandwidth) {
        anyhow::bail!("--allowance: `{rate}`: must be 1kbit to 400gbit");
    }
    let p = model::units::parse_si(pps.trim().to_ascii_lowercase().as_str())
        .map_err(|e| anyhow::anyhow!("--allowance `{pps}`: {e}"))?;
    if !(1.0..=1e9).contains(&p) {
        anyhow::bail!("--allowance `{pps}`: the pps allowance must be 1 to 10^9");
    }
    Ok(doctor::Allowance {
        bandwidth_bps: Some(bandwidth as u64),
        pps: Some(p as u64),
    })
}

/// Read the host (sampling it live for the request's window unless it
/// names a capture) and diagnose it: what `nettune doctor` and the agent's
/// `doctor` print.
pub fn diagnose(req: &DoctorRequest) -> anyhow::Result<Diagnosis> {
    let args = req;
    let sample = match &args.root {
        Some(_) => None,
        None => Some(
            args.sample
                .unwrap_or(Duration::from_secs_f64(DEFAULT_SAMPLE_S)),
        ),
    };
    let root = match &args.root {
        Some(dir) => super::plan::open_root(dir)?,
        None => Root::live(),
    };
    // Sample first: the host's facts (sockstat in particular) are read at
    // the end of the window, as `bench --doctor` reads them.
    // Drops by reason over the same window, when the tracepoint opens.
    let mut watcher = host::drops::DropWatcher::open(&root, host::drops::Sampling::Adaptive);
    let first = watcher.as_mut().ok().map(|w| w.counts());
    let samples = sample
        .map(|span| sample_live_draining(&root, span, watcher.as_mut().ok()))
        .transpose()?;
    let mut input = crate::diagnose::read_host(&root).into_input();
    input.profile = args.profile.as_ref().map(|(_, p)| p.clone());
    input.profile_arg = args.profile.as_ref().map(|(a, _)| a.clone());
    input.bdp = args.bdp;
    input.allowance = args.allowance;
    input.root_arg = args.root.as_ref().map(|d| d.display().to_string());
    match samples {
        Some(s) => input.samples = s,
        // A capture's samples are streamed into the window: doctor holds the
        // first and the latest sample and a summary per interval, not every
        // parsed sample.
        None => {
            let mut window = doctor::input::WindowBuilder::new();
            match host::capture::for_each_sample(&root, |s| {
                window.push(s);
                Ok(())
            }) {
                Ok(0) => input.no_samples = doctor::input::NO_SAMPLES_IN_CAPTURE.to_string(),
                // One sample leaves the rate rules skipped with "one sample only".
                Ok(1) => input.no_samples = doctor::input::ONE_SAMPLE.to_string(),
                Ok(_) => match window.finish() {
                    Some(w) => input.window = Some(w),
                    None => {
                        input.no_samples =
                            "no time between the first and the last sample".to_string()
                    }
                },
                // A corrupt index: the rate rules skip naming the file, the others run.
                Err(e) => input.no_samples = format!("samples in the capture: {e}"),
            }
        }
    }
    input.drops = match (watcher, first, sample) {
        (Ok(mut w), Some(first), Some(span)) => Ok(model::drops::DropInterval::between(
            &first,
            &w.counts(),
            span.as_secs_f64(),
        )),
        (Err(model::drops::Unavailable::NotCaptured), ..) => host::drops::captured_window(&root),
        (Err(why), ..) => Err(why),
        _ => Err(model::drops::Unavailable::NotRead),
    };
    if input.window.is_none() && input.samples.len() < 2 {
        input.since_boot = since_boot(&root);
    }
    let report = doctor::diagnose(&input);
    Ok(Diagnosis {
        report,
        input,
        sampled: sample,
    })
}

/// One reading of the root's counters (totals since boot) and its uptime,
/// for the rate rules when there is no window; `None` when the counters
/// cannot be read (a fixture without `/proc/stat`).
fn since_boot(root: &Root) -> Option<doctor::input::SinceBoot> {
    let sample = Sampler::new(root.clone()).sample().ok()?;
    let uptime_s = root
        .read_trim("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok());
    Some(doctor::input::SinceBoot { sample, uptime_s })
}

/// Samples a second apart (or `span` apart when shorter) over `span`, each
/// with the driver counters of every interface but `lo`.
pub fn sample_live(root: &Root, span: Duration) -> anyhow::Result<Vec<host::sampler::Sample>> {
    sample_live_draining(root, span, None)
}

/// [`sample_live`], draining the drop watcher's rings while it waits.
fn sample_live_draining(
    root: &Root,
    span: Duration,
    mut drops: Option<&mut host::drops::DropWatcher>,
) -> anyhow::Result<Vec<host::sampler::Sample>> {
    // Driver counters (`ethtool -S`) of every interface too, so nic-drops and
    // cloud-allowance see their growth over the window, as in a capture.
    let mut sampler = Sampler::new(root.clone()).with_nic_stats(&[]);
    let steps = span.as_secs_f64().ceil().max(1.0) as u32;
    let step = span / steps;
    let start = Instant::now();
    let mut out = Vec::with_capacity(steps as usize + 1);
    out.push(sampler.sample()?);
    for i in 1..=steps {
        let due = start + step * i;
        while let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait.min(host::drops::DRAIN_EVERY));
            if let Some(w) = drops.as_deref_mut() {
                w.drain();
            }
        }
        out.push(sampler.sample()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_checked_the_same_from_a_flag_and_from_seconds() {
        assert!(sample_seconds(0.0).is_err());
        assert!(sample_seconds(f64::NAN).is_err());
        assert!(sample_seconds(MIN_SAMPLE_S / 2.0).is_err());
        assert!(sample_seconds(MAX_SAMPLE_S + 1.0).is_err());
        assert_eq!(sample_seconds(2.0).unwrap(), Duration::from_secs(2));
        assert_eq!(parse_sample("2s").unwrap(), Duration::from_secs(2));
        let e = parse_sample("0").unwrap_err().to_string();
        assert_eq!(e, "--sample `0`: must be more than 0 seconds");
    }

    #[test]
    fn a_request_refuses_a_window_on_a_capture_and_names_each_bad_value() {
        let e = DoctorRequest::parse(
            Some("/tmp".into()),
            Some(Duration::from_secs(1)),
            None,
            None,
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("--sample: not with --root"),
            "{e}"
        );
        for (p, b, a, flag) in [
            (Some("no-such-profile"), None, None, "--profile"),
            (None, Some("fast"), None, "--bdp"),
            (None, None, Some("5gbit"), "--allowance"),
            (None, None, Some("5xbit,400k"), "--allowance"),
            (None, None, Some("5gbit,0"), "--allowance"),
        ] {
            let e = DoctorRequest::parse(None, None, p, b, a).unwrap_err();
            assert!(e.to_string().starts_with(flag), "{flag}: {e}");
        }
        let ok = DoctorRequest::parse(
            None,
            None,
            Some("latency"),
            Some("100mbit,100ms"),
            Some("5gbit,400k"),
        )
        .unwrap();
        assert_eq!(
            ok.profile.as_ref().map(|(a, _)| a.as_str()),
            Some("latency")
        );
        assert_eq!(ok.allowance.pps, Some(400_000));
        assert_eq!(ok.allowance.bandwidth_bps, Some(5_000_000_000));
        assert!(ok.bdp.is_some());
    }
}
