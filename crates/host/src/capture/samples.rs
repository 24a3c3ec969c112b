//! `capture --samples N`: N sets of the sampler's counters recorded under
//! `samples/` with an index, and read back as the sampler's [`Sample`]s.

use crate::ethtool::Ethtool;
use crate::files::OutDir;
use crate::sampler::{monotonic_now, Sample, Sampler, SAMPLER_FILES};
use crate::{HostError, Root};
use model::snapshot::{EthtoolState, Probe};
use model::Nanos;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Most samples one capture records.
pub const MAX_SAMPLES: u32 = 3600;

/// Shortest interval between recorded samples.
pub const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// Longest interval between recorded samples.
pub const MAX_SAMPLE_INTERVAL: Duration = Duration::from_secs(600);

/// Longest a whole sample recording may last (samples × interval).
pub const MAX_SAMPLING: Duration = Duration::from_secs(3600);

/// Version of `samples/index.json`.
pub const SAMPLES_SCHEMA_VERSION: u32 = 1;

/// Where the recorded samples live inside a capture.
pub const SAMPLES_DIR: &str = "samples";

/// `samples/index.json`: the recorded samples in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplesIndex {
    /// [`SAMPLES_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The interval asked for, ns.
    pub interval_ns: u64,
    /// One entry per sample, in time order.
    pub samples: Vec<SampleEntry>,
}

/// One recorded sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleEntry {
    /// Its directory under `samples/` (`0000`, `0001`, ...).
    pub dir: String,
    /// `CLOCK_MONOTONIC` ns when `/proc/stat` was read (what `Sample::at` holds).
    pub at: u64,
}

/// What [`capture_samples`] wrote.
#[derive(Debug)]
pub struct SamplesReport {
    /// Samples recorded.
    pub samples: usize,
    /// Interfaces whose driver counters were recorded in the first sample.
    pub nic_ifaces: Vec<String>,
}

/// Why a sample count or interval is refused (the flags `nettune capture`
/// takes them as).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SamplingError {
    /// No sample asked for.
    #[error("--samples must be at least 1")]
    NoSamples,
    /// More than [`MAX_SAMPLES`].
    #[error("--samples {n} is above the maximum of {MAX_SAMPLES}")]
    TooMany {
        /// The count asked for.
        n: u32,
    },
    /// Outside [`MIN_SAMPLE_INTERVAL`]..=[`MAX_SAMPLE_INTERVAL`].
    #[error(
        "--interval must be {} to {} seconds, got {}",
        MIN_SAMPLE_INTERVAL.as_secs_f64(),
        MAX_SAMPLE_INTERVAL.as_secs(),
        .interval.as_secs_f64()
    )]
    Interval {
        /// The interval asked for.
        interval: Duration,
    },
    /// Lasting more than [`MAX_SAMPLING`] in all.
    #[error(
        "--samples {n} x --interval {} s lasts {:.0} s, more than {} s",
        .interval.as_secs_f64(),
        .total.as_secs_f64(),
        MAX_SAMPLING.as_secs()
    )]
    TooLong {
        /// The count asked for.
        n: u32,
        /// The interval asked for.
        interval: Duration,
        /// How long the sampling would last.
        total: Duration,
    },
}

/// Check a sample count and interval the way `nettune capture` takes them:
/// 1 to [`MAX_SAMPLES`] samples, [`MIN_SAMPLE_INTERVAL`] to
/// [`MAX_SAMPLE_INTERVAL`] apart, at most [`MAX_SAMPLING`] in all.
pub fn check_sampling(n: u32, interval: Duration) -> Result<(), SamplingError> {
    if n == 0 {
        return Err(SamplingError::NoSamples);
    }
    if n > MAX_SAMPLES {
        return Err(SamplingError::TooMany { n });
    }
    if interval < MIN_SAMPLE_INTERVAL || interval > MAX_SAMPLE_INTERVAL {
        return Err(SamplingError::Interval { interval });
    }
    let total = interval.saturating_mul(n.saturating_sub(1));
    if total > MAX_SAMPLING {
        return Err(SamplingError::TooLong { n, interval, total });
    }
    Ok(())
}

/// Record one sample of `src` into `dir`: the files the sampler reads, as
/// they are, and the driver counters of `ifaces` as `ethtool/IF.json`.
/// Returns its monotonic time and the interfaces whose counters were written.
pub(super) fn record_sample(
    src: &Root,
    dir: &OutDir,
    eth: &dyn Ethtool,
    ifaces: &[String],
) -> Result<(u64, Vec<String>), HostError> {
    let mut at = None;
    for path in SAMPLER_FILES {
        let text = match src.read(path) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        };
        // The sampler's time: just after reading /proc/stat.
        if at.is_none() {
            at = Some(monotonic_now().0);
        }
        dir.write(Path::new(path.trim_start_matches('/')), text.as_bytes())?;
    }
    let mut written = Vec::new();
    for iface in ifaces {
        let stats = eth.driver_stats(iface);
        if !matches!(stats, Probe::Ok { .. }) {
            continue;
        }
        let st = EthtoolState {
            stats,
            ..EthtoolState::default()
        };
        let mut text = serde_json::to_string_pretty(&st).unwrap_or_default();
        text.push('\n');
        dir.write(
            Path::new(&crate::ethtool::fixture_path(iface)),
            text.as_bytes(),
        )?;
        written.push(iface.clone());
    }
    Ok((at.unwrap_or(0), written))
}

/// Record `n` samples of `src`, `interval` apart, under `out/samples/`
/// (see `docs/snapshot.md`, "Recorded samples"), with the driver counters
/// of every interface but `lo` (at most 64) from `eth` when `nic_stats`.
/// Checked by [`check_sampling`] first.
pub fn capture_samples(
    src: &Root,
    out: &Path,
    eth: &dyn Ethtool,
    n: u32,
    interval: Duration,
    nic_stats: bool,
) -> Result<SamplesReport, HostError> {
    capture_samples_with(src, out, eth, n, interval, nic_stats, None)
}

/// Something recorded beside each sample (the drops by reason of
/// `host::drops`): `tick` at least every [`HOOK_TICK`] while waiting,
/// `record` into each sample's directory after its counters.
pub trait SampleHook {
    /// Between samples.
    fn tick(&mut self);
    /// Into the sample's directory.
    fn record(&mut self, dir: &OutDir) -> Result<(), HostError>;
}

/// How often a [`SampleHook`] ticks while waiting for the next sample.
pub const HOOK_TICK: Duration = Duration::from_millis(100);

/// [`capture_samples`] with a hook recording more beside each sample.
#[allow(clippy::too_many_arguments)]
pub fn capture_samples_with(
    src: &Root,
    out: &Path,
    eth: &dyn Ethtool,
    n: u32,
    interval: Duration,
    nic_stats: bool,
    mut hook: Option<&mut dyn SampleHook>,
) -> Result<SamplesReport, HostError> {
    check_sampling(n, interval).map_err(|why| HostError::Io {
        path: out.join(SAMPLES_DIR),
        error: std::io::Error::other(why),
    })?;
    let base = OutDir::create(out)?.subdir(Path::new(SAMPLES_DIR))?;
    let ifaces: Vec<String> = if nic_stats {
        let mut v: Vec<String> = src
            .list_interfaces()
            .unwrap_or_default()
            .into_iter()
            .filter(|i| i != "lo")
            .collect();
        v.truncate(crate::sampler::MAX_NIC_STATS_IFACES);
        v
    } else {
        Vec::new()
    };
    let start = Instant::now();
    let mut index = SamplesIndex {
        schema_version: SAMPLES_SCHEMA_VERSION,
        interval_ns: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
        samples: Vec::new(),
    };
    let mut first_ifaces = Vec::new();
    for k in 0..n {
        let due = start + interval.saturating_mul(k);
        while let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait.min(HOOK_TICK));
            if let Some(h) = hook.as_mut() {
                h.tick();
            }
        }
        let name = format!("{k:04}");
        let dir = base.subdir(Path::new(&name))?;
        let (at, written) = record_sample(src, &dir, eth, &ifaces)?;
        if let Some(h) = hook.as_mut() {
            h.record(&dir)?;
        }
        if k == 0 {
            first_ifaces = written;
        }
        index.samples.push(SampleEntry { dir: name, at });
    }
    let mut text = serde_json::to_string_pretty(&index).unwrap_or_default();
    text.push('\n');
    base.write(Path::new("index.json"), text.as_bytes())?;
    Ok(SamplesReport {
        samples: index.samples.len(),
        nic_ifaces: first_ifaces,
    })
}

fn bad_index(path: &Path, why: String) -> HostError {
    HostError::Io {
        path: path.to_path_buf(),
        error: std::io::Error::other(why),
    }
}

/// Check the bytes of a `samples/index.json` (`shown` names it in errors):
/// schema 1, at most [`MAX_SAMPLES`] entries, plain directory names, times
/// in order. A directory listed again is dropped (the first entry of a
/// directory wins), so an index naming one sample 3600 times reads it once.
/// Never panics, whatever the bytes.
pub fn parse_index(bytes: &[u8], shown: &Path) -> Result<SamplesIndex, HostError> {
    let mut index: SamplesIndex = serde_json::from_slice(bytes)
        .map_err(|e| bad_index(shown, format!("not a samples index: {e}")))?;
    if index.schema_version != SAMPLES_SCHEMA_VERSION {
        return Err(bad_index(
            shown,
            format!(
                "schema_version {} (this nettune reads {SAMPLES_SCHEMA_VERSION})",
                index.schema_version
            ),
        ));
    }
    if index.samples.len() > MAX_SAMPLES as usize {
        return Err(bad_index(
            shown,
            format!("{} samples, more than {MAX_SAMPLES}", index.samples.len()),
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(index.samples.len());
    index.samples.retain(|e| seen.insert(e.dir.clone()));
    let mut last = 0u64;
    for e in &index.samples {
        let plain = !e.dir.is_empty()
            && e.dir.len() <= 16
            && e.dir
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !plain {
            return Err(bad_index(
                shown,
                format!("sample directory {:?} is not a plain name", e.dir),
            ));
        }
        if e.at < last {
            return Err(bad_index(
                shown,
                format!("sample {} goes back in time", e.dir),
            ));
        }
        last = e.at;
    }
    Ok(index)
}

/// The checked index of the capture at `root` ([`parse_index`]); `None`
/// when the capture has no `samples/` (or `root` is the live host).
pub fn read_index(root: &Root) -> Result<Option<SamplesIndex>, HostError> {
    if root.is_live() {
        return Ok(None);
    }
    let shown = PathBuf::from(SAMPLES_DIR).join("index.json");
    let path = root.dir().join(&shown);
    let bytes = match crate::root::read_regular(&path, &shown, crate::root::MAX_READ) {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    parse_index(&bytes, &shown).map(Some)
}

/// The samples recorded in the capture at `root` (by `nettune capture
/// --samples N`), as the sampler read them, one at a time: `f` gets each
/// [`Sample`] in time order and may drop it, so a consumer that keeps only
/// what its deltas need (first, previous, last) holds a few samples
/// whatever the capture's length. Each sample is what
/// `Sampler::new(..).with_nic_stats(..).sample()` gives on the recorded
/// files, with its recorded time, and the device and queue maps of the
/// capture's `sys/`. Returns how many samples `f` got (0 when the capture
/// has no `samples/`). A corrupt index (see [`parse_index`]) or a sample
/// without `/proc/stat` is an error naming the file.
pub fn for_each_sample(
    root: &Root,
    mut f: impl FnMut(Sample) -> Result<(), HostError>,
) -> Result<usize, HostError> {
    let Some(index) = read_index(root)? else {
        return Ok(0);
    };
    let mut meta = Sampler::new(root.clone());
    let devices = meta.devices();
    let queues = meta.rx_queue_counts();
    for e in &index.samples {
        let dir = root.dir().join(SAMPLES_DIR).join(&e.dir);
        // The interfaces whose driver counters this sample recorded.
        let ifaces: Vec<String> = Root::new(&dir)
            .list("/ethtool")
            .unwrap_or_default()
            .into_iter()
            .filter_map(|f| f.strip_suffix(".json").map(str::to_string))
            .filter(|i| crate::iface::check_iface(i).is_ok())
            .take(crate::sampler::MAX_NIC_STATS_IFACES)
            .collect();
        let mut sampler = Sampler::new(Root::new(&dir));
        // with_nic_stats(&[]) would mean every interface of its own sys/.
        if !ifaces.is_empty() {
            sampler = sampler.with_nic_stats(&ifaces);
        }
        let mut s = sampler
            .sample()
            .map_err(|err| bad_index(&PathBuf::from(SAMPLES_DIR).join(&e.dir), err.to_string()))?;
        s.at = Nanos(e.at);
        s.devices = devices.clone();
        s.rx_queue_counts = queues.clone();
        f(s)?;
    }
    Ok(index.samples.len())
}

/// All the samples of the capture at `root` ([`for_each_sample`]), kept in
/// memory: at most [`MAX_SAMPLES`] distinct ones. Consumers that only need
/// deltas should stream with [`for_each_sample`] instead.
pub fn read_samples(root: &Root) -> Result<Vec<Sample>, HostError> {
    let mut out = Vec::new();
    for_each_sample(root, |s| {
        out.push(s);
        Ok(())
    })?;
    Ok(out)
}
