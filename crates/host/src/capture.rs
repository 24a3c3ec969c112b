//! Record a live host into a fixture tree (`sys/`, `proc/`, `etc/`,
//! `ethtool/<iface>.json`, `LABEL`) that `--root DIR` reads back.
//!
//! Only the files the snapshot reader touched are copied (plus the counter
//! files the sampler reads), and every symlink followed on the way is
//! recreated as the same relative link, so the tree resolves like `/` does.
//!
//! [`capture_samples`] also records N sets of the sampler's counters under
//! `samples/`, and [`read_samples`] gives them back as the sampler's
//! [`Sample`]s, so rate-based rules run on a capture as they do live.

use crate::ethtool::Ethtool;
use crate::sampler::{monotonic_now, Sample, Sampler, SAMPLER_FILES};
use crate::snapshot::{read_snapshot_recorded, Access};
use crate::{HostError, Root};
use model::snapshot::{EthtoolState, HostSnapshot, Probe};
use model::Nanos;
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Counter files copied besides what the snapshot reads, so that doctor-like
/// consumers of a capture see softnet, softirq and protocol counters.
pub const EXTRA_FILES: &[&str] = &[
    "/proc/stat",
    "/proc/softirqs",
    "/proc/meminfo",
    "/proc/net/dev",
    "/proc/net/softnet_stat",
    "/proc/net/snmp",
    "/proc/net/netstat",
    // TIME_WAIT, orphan and TCP memory counts (doctor's timewait-exhaustion
    // and tcp-memory-pressure).
    "/proc/net/sockstat",
    // The span of the since-boot totals doctor reports without samples.
    "/proc/uptime",
];

/// What a capture wrote.
#[derive(Debug)]
pub struct CaptureReport {
    /// The snapshot read while capturing.
    pub snapshot: HostSnapshot,
    /// Files copied.
    pub files: usize,
    /// Symlinks recreated.
    pub links: usize,
    /// Paths that could not be copied, with the reason (they read as absent).
    pub skipped: Vec<(PathBuf, String)>,
}

struct Copier<'a> {
    src: &'a Path,
    out: &'a Path,
    files: usize,
    links: usize,
    skipped: Vec<(PathBuf, String)>,
}

impl Copier<'_> {
    fn io(&self, path: &Path, e: std::io::Error) -> HostError {
        HostError::io(path, e)
    }

    /// Walk `path` like the kernel resolves it, recreating directories and
    /// symlinks under `out`; returns the resolved path (relative to `/`)
    /// or `None` if some component does not exist. The last component is
    /// followed when it is a link unless `follow_last` is false.
    fn walk(&mut self, path: &Path, follow_last: bool) -> Result<Option<PathBuf>, HostError> {
        let mut stack: Vec<OsString> = Vec::new();
        let mut pending = crate::root::components(path);
        pending.reverse();
        let mut hops = 0;
        while let Some(c) = pending.pop() {
            if c == ".." {
                stack.pop();
                continue;
            }
            stack.push(c);
            let rel: PathBuf = stack.iter().collect();
            let live = self.src.join(&rel);
            let meta = match fs::symlink_metadata(&live) {
                Ok(m) => m,
                Err(_) => return Ok(None),
            };
            // `/proc/net` links to `self/net`: keep it a plain directory so
            // the capture does not record the capturing process's PID.
            let proc_net = rel == Path::new("proc/net");
            if proc_net {
                let d = self.out.join(&rel);
                fs::create_dir_all(&d).map_err(|e| self.io(&d, e))?;
            } else if meta.file_type().is_symlink() && (follow_last || !pending.is_empty()) {
                hops += 1;
                if hops > 40 {
                    return Ok(None);
                }
                let target = fs::read_link(&live).map_err(|e| self.io(path, e))?;
                self.make_link(&rel, &target)?;
                stack.pop();
                if target.is_absolute() {
                    stack.clear();
                }
                let mut t = crate::root::components(&target);
                t.reverse();
                pending.extend(t);
            } else if meta.is_dir() {
                let d = self.out.join(&rel);
                fs::create_dir_all(&d).map_err(|e| self.io(&d, e))?;
            }
        }
        Ok(Some(stack.iter().collect()))
    }

    fn make_link(&mut self, rel: &Path, target: &Path) -> Result<(), HostError> {
        let at = self.out.join(rel);
        if fs::symlink_metadata(&at).is_ok() {
            return Ok(());
        }
        if let Some(p) = at.parent() {
            fs::create_dir_all(p).map_err(|e| self.io(p, e))?;
        }
        std::os::unix::fs::symlink(target, &at).map_err(|e| self.io(&at, e))?;
        self.links += 1;
        Ok(())
    }

    fn file(&mut self, path: &Path) -> Result<(), HostError> {
        let Some(rel) = self.walk(path, true)? else {
            return Ok(());
        };
        let live = self.src.join(&rel);
        // Only regular files, capped: a FIFO or device node is skipped with
        // the reason instead of blocking or streaming.
        match crate::root::read_regular(&live, path, crate::root::MAX_READ) {
            Ok(bytes) => {
                let dst = self.out.join(&rel);
                if dst.is_dir() {
                    return Ok(());
                }
                if let Some(p) = dst.parent() {
                    fs::create_dir_all(p).map_err(|e| self.io(p, e))?;
                }
                fs::write(&dst, bytes).map_err(|e| self.io(&dst, e))?;
                self.files += 1;
            }
            Err(e) => {
                let full = e.to_string();
                let prefix = format!("{}: ", path.display());
                let why = full.strip_prefix(&prefix).unwrap_or(&full).to_string();
                self.skipped.push((path.to_path_buf(), why));
            }
        }
        Ok(())
    }

    fn link(&mut self, path: &Path) -> Result<(), HostError> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(());
        };
        let Some(rel) = self.walk(parent, true)? else {
            return Ok(());
        };
        let rel = rel.join(name);
        if let Ok(target) = fs::read_link(self.src.join(&rel)) {
            self.make_link(&rel, &target)?;
        }
        Ok(())
    }
}

/// Capture the host at `/` into `out` (created if missing; existing files
/// are overwritten), reading ethtool state from `eth`.
pub fn capture(out: &Path, eth: &dyn Ethtool) -> Result<CaptureReport, HostError> {
    capture_from(&Root::live(), out, eth)
}

/// Capture the tree at `src` (normally the live `/`) into `out`.
pub fn capture_from(src: &Root, out: &Path, eth: &dyn Ethtool) -> Result<CaptureReport, HostError> {
    fs::create_dir_all(out).map_err(|e| HostError::io(out, e))?;
    let (snapshot, accesses) = read_snapshot_recorded(src, eth);
    // doctor's facts: the files they read, and their netlink parts as JSON.
    let (facts, doctor_reads) = crate::doctor_facts::read_doctor_facts_recorded(src, &snapshot);
    let src_dir = if src.is_live() {
        PathBuf::from("/")
    } else {
        src.dir().to_path_buf()
    };
    let mut c = Copier {
        src: &src_dir,
        out,
        files: 0,
        links: 0,
        skipped: Vec::new(),
    };
    let extra = EXTRA_FILES.iter().map(|p| Access::File(PathBuf::from(p)));
    for a in accesses.into_iter().chain(doctor_reads).chain(extra) {
        match a {
            Access::File(p) => c.file(&p)?,
            Access::Dir(p) => {
                c.walk(&p, true)?;
            }
            Access::Link(p) => c.link(&p)?,
        }
    }
    crate::doctor_facts::write_netlink_fixtures(out, &facts)?;
    let eth_dir = out.join("ethtool");
    fs::create_dir_all(&eth_dir).map_err(|e| HostError::io(&eth_dir, e))?;
    for i in &snapshot.interfaces {
        let p = eth_dir.join(format!("{}.json", i.name));
        let mut text = serde_json::to_string_pretty(&i.ethtool).unwrap_or_default();
        text.push('\n');
        fs::write(&p, text).map_err(|e| HostError::io(&p, e))?;
    }
    let label = format!(
        "Captured live by `nettune capture` from host {} (kernel {}).\n",
        snapshot.source.hostname.as_deref().unwrap_or("?"),
        snapshot.source.kernel.as_deref().unwrap_or("?"),
    );
    let lp = out.join("LABEL");
    if !lp.exists() {
        fs::write(&lp, label).map_err(|e| HostError::io(&lp, e))?;
    }
    Ok(CaptureReport {
        snapshot,
        files: c.files,
        links: c.links,
        skipped: c.skipped,
    })
}

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

/// Check a sample count and interval the way `nettune capture` takes them:
/// 1 to [`MAX_SAMPLES`] samples, [`MIN_SAMPLE_INTERVAL`] to
/// [`MAX_SAMPLE_INTERVAL`] apart, at most [`MAX_SAMPLING`] in all.
pub fn check_sampling(n: u32, interval: Duration) -> Result<(), String> {
    if n == 0 {
        return Err("--samples must be at least 1".into());
    }
    if n > MAX_SAMPLES {
        return Err(format!(
            "--samples {n} is above the maximum of {MAX_SAMPLES}"
        ));
    }
    if interval < MIN_SAMPLE_INTERVAL || interval > MAX_SAMPLE_INTERVAL {
        return Err(format!(
            "--interval must be {} to {} seconds, got {}",
            MIN_SAMPLE_INTERVAL.as_secs_f64(),
            MAX_SAMPLE_INTERVAL.as_secs(),
            interval.as_secs_f64()
        ));
    }
    let total = interval.saturating_mul(n.saturating_sub(1));
    if total > MAX_SAMPLING {
        return Err(format!(
            "--samples {n} x --interval {} s lasts {:.0} s, more than {} s",
            interval.as_secs_f64(),
            total.as_secs_f64(),
            MAX_SAMPLING.as_secs()
        ));
    }
    Ok(())
}

fn write_file(path: &Path, text: &[u8]) -> Result<(), HostError> {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).map_err(|e| HostError::io(p, e))?;
    }
    fs::write(path, text).map_err(|e| HostError::io(path, e))
}

/// Record one sample of `src` into `dir`: the files the sampler reads, as
/// they are, and the driver counters of `ifaces` as `ethtool/IF.json`.
/// Returns its monotonic time and the interfaces whose counters were written.
fn record_sample(
    src: &Root,
    dir: &Path,
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
        write_file(&dir.join(path.trim_start_matches('/')), text.as_bytes())?;
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
        write_file(
            &dir.join(crate::ethtool::fixture_path(iface)),
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
    check_sampling(n, interval).map_err(|why| HostError::Io {
        path: out.join(SAMPLES_DIR),
        error: std::io::Error::other(why),
    })?;
    let base = out.join(SAMPLES_DIR);
    fs::create_dir_all(&base).map_err(|e| HostError::io(&base, e))?;
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
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let name = format!("{k:04}");
        let (at, written) = record_sample(src, &base.join(&name), eth, &ifaces)?;
        if k == 0 {
            first_ifaces = written;
        }
        index.samples.push(SampleEntry { dir: name, at });
    }
    let mut text = serde_json::to_string_pretty(&index).unwrap_or_default();
    text.push('\n');
    write_file(&base.join("index.json"), text.as_bytes())?;
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
            .filter(|i| crate::apply::targets::check_iface(i).is_ok())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethtool::FixtureEthtool;

    fn testdata(set: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/sampler/testdata/kvm-6.18-iperf3")
            .join(set)
    }

    /// A source root: a recorded counter set, one NIC `ens5` with a
    /// `device` link and 1 RX queue, and its driver counters.
    fn source(set: &str, pps_exceeded: u64) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for f in SAMPLER_FILES {
            let from = testdata(set).join(f.trim_start_matches('/'));
            if from.exists() {
                let to = r.join(f.trim_start_matches('/'));
                fs::create_dir_all(to.parent().unwrap()).unwrap();
                fs::copy(from, to).unwrap();
            }
        }
        let dev = r.join("sys/devices/pci0000:00/0000:00:05.0");
        fs::create_dir_all(dev.join("net/ens5/queues/rx-0")).unwrap();
        fs::create_dir_all(r.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:05.0/net/ens5",
            r.join("sys/class/net/ens5"),
        )
        .unwrap();
        std::os::unix::fs::symlink("../../../0000:00:05.0", dev.join("net/ens5/device")).unwrap();
        fs::create_dir_all(r.join("ethtool")).unwrap();
        fs::write(
            r.join("ethtool/ens5.json"),
            format!(
                r#"{{"stats": {{"status": "ok", "value": {{"driver": {{"pps_allowance_exceeded": {pps_exceeded}, "queue_0_rx_cnt": 10}}}}}}}}"#
            ),
        )
        .unwrap();
        t
    }

    #[test]
    fn samples_read_back_as_the_sampler_reads_them() {
        let src = source("a", 5);
        let root = Root::new(src.path());
        let out = tempfile::tempdir().unwrap();
        let eth = FixtureEthtool::new(&root);
        let rep =
            capture_samples(&root, out.path(), &eth, 3, Duration::from_millis(100), true).unwrap();
        assert_eq!(
            (rep.samples, rep.nic_ifaces.as_slice()),
            (3, &["ens5".to_string()][..])
        );
        // Replaying needs the capture's sys/ for the device map: copy it.
        capture_from(&root, out.path(), &eth).unwrap();
        let got = read_samples(&Root::new(out.path())).unwrap();
        assert_eq!(got.len(), 3);
        let live = Sampler::new(root.clone())
            .with_nic_stats(&[])
            .sample()
            .unwrap();
        for s in &got {
            assert_eq!(s.stat, live.stat);
            assert_eq!(s.softirqs, live.softirqs);
            assert_eq!(s.interrupts, live.interrupts);
            assert_eq!(s.netdev, live.netdev);
            assert_eq!(s.softnet, live.softnet);
            assert_eq!(s.counters, live.counters);
            assert_eq!(s.missing, live.missing);
            assert_eq!(s.nic, live.nic);
            assert_eq!(s.devices, live.devices);
            assert_eq!(s.rx_queue_counts, live.rx_queue_counts);
        }
        assert_eq!(
            got[0].devices.get("0000:00:05.0").map(String::as_str),
            Some("ens5")
        );
        // Recorded times, about 100 ms apart.
        let gap = got[1].at.0 - got[0].at.0;
        assert!((80_000_000..2_000_000_000).contains(&gap), "{gap}");
    }

    #[test]
    fn rates_from_recorded_samples() {
        // Two samples recorded from two states of a host: the interval's
        // deltas come out of the capture as they would live.
        let (a, b) = (source("a", 5), source("b", 905));
        let out = tempfile::tempdir().unwrap();
        let base = out.path().join(SAMPLES_DIR);
        let ifaces = ["ens5".to_string()];
        let mut entries = Vec::new();
        for (k, src) in [&a, &b].into_iter().enumerate() {
            let root = Root::new(src.path());
            let (at, _) = record_sample(
                &root,
                &base.join(format!("{k:04}")),
                &FixtureEthtool::new(&root),
                &ifaces,
            )
            .unwrap();
            entries.push(SampleEntry {
                dir: format!("{k:04}"),
                at,
            });
        }
        // Exactly two seconds apart, so the rates are exact.
        entries[1].at = entries[0].at + 2_000_000_000;
        let index = SamplesIndex {
            schema_version: 1,
            interval_ns: 2_000_000_000,
            samples: entries,
        };
        fs::write(
            base.join("index.json"),
            serde_json::to_string(&index).unwrap(),
        )
        .unwrap();
        let s = read_samples(&Root::new(out.path())).unwrap();
        let d = s[1].delta(&s[0]);
        assert_eq!(d.nic_counters["ens5"]["pps_allowance_exceeded"], 900);
        let want = Sampler::new(Root::new(testdata("b")))
            .sample()
            .unwrap()
            .delta(&Sampler::new(Root::new(testdata("a"))).sample().unwrap());
        assert_eq!(d.ifaces, {
            let mut w = want.ifaces.clone();
            for i in &mut w {
                // want's elapsed differs: compare counts, recompute rates.
                i.rx_pps = i.rx_packets.0 as f64 / 2.0;
                i.tx_pps = i.tx_packets.0 as f64 / 2.0;
                i.rx_bps = i.rx_bytes.to_bits().0 as f64 / 2.0;
                i.tx_bps = i.tx_bytes.to_bits().0 as f64 / 2.0;
                i.rx_drop_per_s = i.rx_drop as f64 / 2.0;
                i.tx_drop_per_s = i.tx_drop as f64 / 2.0;
            }
            w
        });
        assert_eq!(d.counters, want.counters);
    }

    #[test]
    fn bad_sampling_and_bad_indexes_are_one_line_errors() {
        for (n, ms) in [
            (0, 1000),
            (MAX_SAMPLES + 1, 1000),
            (2, 0),
            (2, 50),
            (2, 601_000),
            (3600, 10_000),
        ] {
            let e = check_sampling(n, Duration::from_millis(ms)).unwrap_err();
            assert!(!e.contains('\n') && e.starts_with("--"), "{e}");
        }
        assert!(check_sampling(5, Duration::from_secs(1)).is_ok());
        let out = tempfile::tempdir().unwrap();
        let root = Root::new(out.path());
        assert!(read_samples(&root).unwrap().is_empty());
        fs::create_dir_all(out.path().join(SAMPLES_DIR)).unwrap();
        let idx = out.path().join(SAMPLES_DIR).join("index.json");
        for bad in [
            "{",
            r#"{"schema_version": 9, "interval_ns": 1, "samples": []}"#,
            r#"{"schema_version": 1, "interval_ns": 1, "samples": [{"dir": "../x", "at": 1}]}"#,
            r#"{"schema_version": 1, "interval_ns": 1, "samples": [{"dir": "a", "at": 5}, {"dir": "b", "at": 1}]}"#,
            r#"{"schema_version": 1, "interval_ns": 1, "samples": [{"dir": "0000", "at": 1}]}"#,
        ] {
            fs::write(&idx, bad).unwrap();
            let e = read_samples(&root).unwrap_err().to_string();
            assert!(e.starts_with("samples/"), "{bad}: {e}");
        }
    }

    #[test]
    fn one_sample_listed_3600_times_is_read_once() {
        let src = source("a", 5);
        let root = Root::new(src.path());
        let out = tempfile::tempdir().unwrap();
        let eth = FixtureEthtool::new(&root);
        capture_samples(&root, out.path(), &eth, 1, Duration::from_secs(1), false).unwrap();
        let entries: Vec<SampleEntry> = (0..MAX_SAMPLES)
            .map(|k| SampleEntry {
                dir: "0000".into(),
                at: u64::from(k),
            })
            .collect();
        let index = SamplesIndex {
            schema_version: 1,
            interval_ns: 1,
            samples: entries,
        };
        fs::write(
            out.path().join(SAMPLES_DIR).join("index.json"),
            serde_json::to_string(&index).unwrap(),
        )
        .unwrap();
        let capture = Root::new(out.path());
        assert_eq!(read_samples(&capture).unwrap().len(), 1);
        // Streaming: the consumer is called once per distinct sample.
        let mut calls = 0;
        let n = for_each_sample(&capture, |_| {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((n, calls), (1, 1));
    }

    mod fuzz {
        use super::super::*;
        use proptest::prelude::*;

        fn entry() -> impl Strategy<Value = (String, u64)> {
            (
                prop_oneof![
                    Just("0000".to_string()),
                    Just("0001".to_string()),
                    Just("0002".to_string()),
                    "[a-z0-9_./-]{0,20}",
                ],
                prop_oneof![0u64..10, any::<u64>()],
            )
        }

        fn index_json(entries: &[(String, u64)], schema: u32) -> Vec<u8> {
            serde_json::to_vec(&serde_json::json!({
                "schema_version": schema,
                "interval_ns": 1_000_000_000u64,
                "samples": entries
                    .iter()
                    .map(|(d, a)| serde_json::json!({"dir": d, "at": a}))
                    .collect::<Vec<_>>(),
            }))
            .unwrap()
        }

        fn check(bytes: &[u8]) {
            let shown = Path::new("samples/index.json");
            if let Ok(ix) = parse_index(bytes, shown) {
                assert!(ix.samples.len() <= MAX_SAMPLES as usize);
                let mut dirs: Vec<&str> = ix.samples.iter().map(|e| e.dir.as_str()).collect();
                dirs.sort_unstable();
                let before = dirs.len();
                dirs.dedup();
                assert_eq!(dirs.len(), before, "duplicates kept");
                assert!(ix.samples.windows(2).all(|w| w[0].at <= w[1].at));
                assert!(ix
                    .samples
                    .iter()
                    .all(|e| !e.dir.contains('/') && e.dir != ".."));
            } else if let Err(e) = parse_index(bytes, shown) {
                assert!(e.to_string().starts_with("samples/index.json"), "{e}");
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
                check(&bytes);
            }

            #[test]
            fn mutated_indexes_are_bounded_and_deduplicated(
                entries in proptest::collection::vec(entry(), 0..40),
                schema in prop_oneof![Just(1u32), any::<u32>()],
                flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
                cut in proptest::option::of(any::<usize>()),
            ) {
                let mut bytes = index_json(&entries, schema);
                check(&bytes);
                for (at, b) in flips {
                    let n = bytes.len();
                    if n > 0 {
                        bytes[at % n] = b;
                    }
                }
                if let Some(c) = cut {
                    let n = bytes.len().max(1);
                    bytes.truncate(c % n);
                }
                check(&bytes);
            }

            #[test]
            fn duplicates_collapse_to_the_first(n in 1usize..=MAX_SAMPLES as usize, k in 1usize..4) {
                let entries: Vec<(String, u64)> = (0..n)
                    .map(|i| (format!("{:04}", i % k), i as u64))
                    .collect();
                let ix = parse_index(&index_json(&entries, 1), Path::new("i")).unwrap();
                prop_assert_eq!(ix.samples.len(), n.min(k));
                prop_assert!(ix.samples.iter().enumerate().all(|(i, e)| e.at == i as u64));
            }

            #[test]
            fn too_many_entries_are_refused(extra in 1usize..50) {
                let entries: Vec<(String, u64)> = (0..MAX_SAMPLES as usize + extra)
                    .map(|i| ("0000".to_string(), i as u64))
                    .collect();
                prop_assert!(parse_index(&index_json(&entries, 1), Path::new("i")).is_err());
            }
        }
    }
}
