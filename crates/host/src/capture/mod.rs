//! Record a live host into a fixture tree (`sys/`, `proc/`, `etc/`,
//! `ethtool/<iface>.json`, `LABEL`) that `--root DIR` reads back.
//!
//! Only the files the snapshot reader touched are copied (plus the counter
//! files the sampler reads), and every symlink followed on the way is
//! recreated as the same relative link, so the tree resolves like `/` does.
//!
//! [`capture_samples`] also records N sets of the sampler's counters under
//! `samples/`, and [`read_samples`] gives them back as the sampler's
//! [`Sample`](crate::sampler::Sample)s, so rate-based rules run on a capture as they do live.

use crate::ethtool::Ethtool;
use crate::files::OutDir;
use crate::snapshot::{read_snapshot_recorded, Access};
use crate::{HostError, Root};
use model::snapshot::HostSnapshot;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

mod samples;
#[cfg(test)]
mod tests;

pub use samples::{
    capture_samples, capture_samples_with, check_sampling, for_each_sample, parse_index,
    read_index, read_samples, SampleEntry, SampleHook, SamplesIndex, SamplesReport, SamplingError,
    HOOK_TICK, MAX_SAMPLES, MAX_SAMPLE_INTERVAL, MAX_SAMPLING, MIN_SAMPLE_INTERVAL, SAMPLES_DIR,
    SAMPLES_SCHEMA_VERSION,
};

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
    out: &'a OutDir,
    files: usize,
    links: usize,
    skipped: Vec<(PathBuf, String)>,
}

impl Copier<'_> {
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
                self.out.subdir(&rel)?;
            } else if meta.file_type().is_symlink() && (follow_last || !pending.is_empty()) {
                hops += 1;
                if hops > 40 {
                    return Ok(None);
                }
                let target = fs::read_link(&live).map_err(|e| HostError::io(path, e))?;
                self.make_link(&rel, &target)?;
                stack.pop();
                if target.is_absolute() {
                    stack.clear();
                }
                let mut t = crate::root::components(&target);
                t.reverse();
                pending.extend(t);
            } else if meta.is_dir() {
                self.out.subdir(&rel)?;
            }
        }
        Ok(Some(stack.iter().collect()))
    }

    fn make_link(&mut self, rel: &Path, target: &Path) -> Result<(), HostError> {
        if self.out.symlink(rel, target)? {
            self.links += 1;
        }
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
                self.out.write(&rel, &bytes)?;
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
    let out = &OutDir::create(out)?;
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
    let eth_dir = out.subdir(Path::new("ethtool"))?;
    for i in &snapshot.interfaces {
        let mut text = serde_json::to_string_pretty(&i.ethtool).unwrap_or_default();
        text.push('\n');
        eth_dir.write(Path::new(&format!("{}.json", i.name)), text.as_bytes())?;
    }
    let label = format!(
        "Captured live by `nettune capture` from host {} (kernel {}).\n",
        snapshot.source.hostname.as_deref().unwrap_or("?"),
        snapshot.source.kernel.as_deref().unwrap_or("?"),
    );
    // A LABEL the user wrote (a regular file) is kept; anything else there,
    // a planted link included, is replaced, never written through.
    let kept = fs::symlink_metadata(out.path().join("LABEL")).is_ok_and(|m| m.is_file());
    if !kept {
        out.write(Path::new("LABEL"), label.as_bytes())?;
    }
    Ok(CaptureReport {
        snapshot,
        files: c.files,
        links: c.links,
        skipped: c.skipped,
    })
}
