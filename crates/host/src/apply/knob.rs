//! [`Knob`]: read, write, restore and check one target, with one
//! implementation per kind of [`Target`] in `knob/`. [`Knobs`] holds the
//! host's [`Backend`] and makes the knob for a target: the only `match` on
//! the target's kind.

pub(crate) mod created;
pub(crate) mod ethtool;
pub(crate) mod file;
pub(crate) mod irq;
pub(crate) mod irqbalance_env;
pub(crate) mod module_param;
pub(crate) mod service;

use super::backend::{Backend, FixtureHost, FollowUp, LiveHost};
use super::targets;
use crate::error::HostError;
use crate::journal::StateDir;
use crate::root::Root;
use model::plan::{Target, ValueFormat};
use module_param::{FixtureLoader, Modprobe, ModuleLoader};
use rustix::io::Errno;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A write that did not hold when read back.
#[derive(Debug, Error)]
pub enum CheckError {
    /// The knob is gone.
    #[error("vanished after the write")]
    Vanished,
    /// Reading it back failed.
    #[error("read back failed: {0}")]
    Read(HostError),
    /// It holds something else.
    #[error("wrote {wrote}, read back {read}")]
    Mismatch {
        /// The value written.
        wrote: String,
        /// The value read back.
        read: String,
    },
}

/// One thing apply can change.
pub trait Knob {
    /// The target as messages name it (`/proc/irq/5/smp_affinity_list`).
    fn describe(&self) -> String;

    /// The exact current text, journaled as the original; `None` when the
    /// knob does not exist.
    fn read_raw(&self) -> Result<Option<String>, HostError>;

    /// The current value in the plan's notation (trimmed text by default).
    fn read(&self) -> Result<Option<String>, HostError> {
        Ok(self.read_raw()?.map(|s| s.trim().to_string()))
    }

    /// Write a value given in the plan's notation.
    fn write(&self, value: &str) -> Result<(), HostError>;

    /// Put back a journaled original (`None`: the knob did not exist). By
    /// default the original is written like a planned value, and an absent
    /// original cannot be restored.
    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        match original {
            Some(v) => self.write(v.trim()),
            None => Err(HostError::NotFound {
                path: self.describe().into(),
            }),
        }
    }

    /// Whether the value read means `intended`.
    fn same(&self, current: &str, intended: &str) -> bool {
        ValueFormat::Text.same(current, intended)
    }

    /// Read back after a write.
    fn check(&self, intended: &str) -> Result<(), CheckError> {
        let cur = match self.read() {
            Ok(Some(v)) => v,
            Ok(None) => return Err(CheckError::Vanished),
            Err(e) => return Err(CheckError::Read(e)),
        };
        if self.same(&cur, intended) {
            Ok(())
        } else {
            Err(CheckError::Mismatch {
                wrote: intended.to_string(),
                read: cur,
            })
        }
    }

    /// Whether the write creates it (an absent original is expected, and it
    /// is written even when it already holds the value).
    fn creates(&self) -> bool {
        false
    }

    /// Whether a write error means the kernel will never take a value here
    /// (a managed IRQ): recorded as unchangeable, not a failure.
    fn unchangeable(&self, _error: &HostError) -> bool {
        false
    }

    /// Why this host does not manage the knob (services under a fixture).
    fn unmanaged(&self) -> Option<&'static str> {
        None
    }

    /// Writes that follow from this one (see [`Backend::effective_affinity`]).
    fn follow_ups(&self, _intended: &str) -> Result<Vec<FollowUp>, HostError> {
        Ok(Vec::new())
    }

    /// A remark once the write held (an IRQ whose `effective_affinity` has
    /// not moved yet).
    fn note(&self, _intended: &str) -> Option<String> {
        None
    }
}

/// Every knob of one host: its [`Backend`], where module parameter
/// snippets go and what reloads a module (when a plan allows it).
pub struct Knobs {
    backend: Box<dyn Backend>,
    snippet_dir: PathBuf,
    loader: Box<dyn ModuleLoader>,
}

impl std::fmt::Debug for Knobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Knobs")
            .field("root", self.backend.root())
            .field("snippet_dir", &self.snippet_dir)
            .field("loader", &self.loader)
            .finish()
    }
}

impl Knobs {
    /// The knobs of `root` with the journal in `state`: the live host when
    /// the root is `/`, else a fixture tree. The one place that choice is made.
    pub fn open(root: &Root, state: &StateDir) -> Knobs {
        let snippets = state.path().join("modprobe.d");
        if root.is_live() {
            Knobs::new(Box::new(LiveHost::new(root)), snippets)
        } else {
            Knobs::fixture(root, snippets)
        }
    }

    /// A fixture tree at `root`, snippets in `snippet_dir`.
    pub fn fixture(root: &Root, snippet_dir: impl Into<PathBuf>) -> Knobs {
        Knobs::new(Box::new(FixtureHost::new(root)), snippet_dir)
    }

    /// Any backend (tests use fakes). Modules are reloaded by `modprobe` on
    /// the live root, recorded in the tree under a fixture root.
    pub fn new(backend: Box<dyn Backend>, snippet_dir: impl Into<PathBuf>) -> Knobs {
        let loader: Box<dyn ModuleLoader> = if backend.root().is_live() {
            Box::new(Modprobe)
        } else {
            Box::new(FixtureLoader::new(backend.root()))
        };
        Knobs {
            backend,
            snippet_dir: snippet_dir.into(),
            loader,
        }
    }

    /// The same knobs with another module loader (tests).
    pub fn with_loader(mut self, loader: Box<dyn ModuleLoader>) -> Knobs {
        self.loader = loader;
        self
    }

    /// Reload `module` with the parameters of nettune's snippets for it, so
    /// they take effect; then, where the kernel shows a parameter
    /// (`/sys/module/M/parameters/P`), check it holds the snippet's value.
    pub fn reload_module(&self, module: &str) -> Result<(), HostError> {
        // Only a driver nettune's tables know is ever unloaded or loaded.
        targets::check_name("module", module)?;
        targets::check_module(module)?;
        let params = module_param::snippet_params(&self.snippet_dir, module)?;
        self.loader.reload(module, &params)?;
        for (p, v) in &params {
            let path = format!("/sys/module/{module}/parameters/{p}");
            let Ok(Some(now)) = self.root().read_opt(&path) else {
                continue;
            };
            let now = now.trim();
            // An array parameter shows one value per port.
            if now != v && !now.starts_with(&format!("{v},")) {
                return Err(HostError::Io {
                    path: path.into(),
                    error: std::io::Error::other(format!(
                        "{module} reloaded, but the kernel shows {p}={now}, not {v}"
                    )),
                });
            }
        }
        Ok(())
    }

    /// The root.
    pub fn root(&self) -> &Root {
        self.backend.root()
    }

    /// Where modprobe.d snippets are written (`STATE/modprobe.d`).
    pub fn snippet_dir(&self) -> &Path {
        &self.snippet_dir
    }

    /// The knob behind `t`. A target a plan or journal may not name is
    /// refused here (see [`targets`]), and every value written or restored
    /// through the knob is checked against it.
    pub fn knob<'a>(&'a self, t: &'a Target) -> Result<Box<dyn Knob + 'a>, HostError> {
        targets::check_target(t)?;
        let b = self.backend.as_ref();
        let inner: Box<dyn Knob + 'a> =
            match t {
                Target::File { path, .. } if targets::is_irqbalance_env(path) => {
                    Box::new(irqbalance_env::IrqbalanceEnvKnob::new(b, path))
                }
                Target::File { path, format } => Box::new(file::FileKnob::new(b, path, *format)),
                Target::IrqAffinity { irq, .. } => Box::new(irq::IrqKnob::new(b, *irq)),
                Target::Ethtool { iface, group, attr } => {
                    Box::new(ethtool::EthtoolKnob::new(b, iface, *group, attr)?)
                }
                Target::Service { name } => Box::new(service::ServiceKnob::new(b, name)),
                Target::ModuleParam { module, param } => Box::new(
                    module_param::ModuleParamKnob::new(&self.snippet_dir, module, param),
                ),
                Target::Created { path, what } => {
                    Box::new(created::CreatedKnob::new(b.root(), path, *what))
                }
            };
        Ok(Box::new(Checked { target: t, inner }))
    }

    /// The current raw value of `t`; `Ok(None)` when it does not exist.
    pub fn read_raw(&self, t: &Target) -> Result<Option<String>, HostError> {
        self.knob(t)?.read_raw()
    }

    /// The current value of `t` in the plan's notation.
    pub fn read_value(&self, t: &Target) -> Result<Option<String>, HostError> {
        self.knob(t)?.read()
    }

    /// Write `value` (the plan's notation) to `t`.
    pub fn write(&self, t: &Target, value: &str) -> Result<(), HostError> {
        self.knob(t)?.write(value)
    }

    /// Put back a journaled original of `t` (`None` = remove).
    pub fn restore(&self, t: &Target, original: Option<&str>) -> Result<(), HostError> {
        self.knob(t)?.restore(original)
    }

    /// Read `t` back and compare with `intended`.
    pub fn check(&self, t: &Target, intended: &str) -> Result<(), CheckError> {
        self.knob(t).map_err(CheckError::Read)?.check(intended)
    }
}

/// A knob whose values are checked against its target before they are
/// written or restored.
struct Checked<'a> {
    target: &'a Target,
    inner: Box<dyn Knob + 'a>,
}

impl Knob for Checked<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn read_raw(&self) -> Result<Option<String>, HostError> {
        self.inner.read_raw()
    }
    fn read(&self) -> Result<Option<String>, HostError> {
        self.inner.read()
    }
    fn write(&self, value: &str) -> Result<(), HostError> {
        targets::check_value(self.target, value)?;
        self.inner.write(value)
    }
    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        if let Some(v) = original {
            targets::check_value(self.target, v)?;
        }
        self.inner.restore(original)
    }
    fn same(&self, current: &str, intended: &str) -> bool {
        self.inner.same(current, intended)
    }
    fn check(&self, intended: &str) -> Result<(), CheckError> {
        self.inner.check(intended)
    }
    fn creates(&self) -> bool {
        self.inner.creates()
    }
    fn unchangeable(&self, error: &HostError) -> bool {
        self.inner.unchangeable(error)
    }
    fn unmanaged(&self) -> Option<&'static str> {
        self.inner.unmanaged()
    }
    fn follow_ups(&self, intended: &str) -> Result<Vec<FollowUp>, HostError> {
        self.inner.follow_ups(intended)
    }
    fn note(&self, intended: &str) -> Option<String> {
        self.inner.note(intended)
    }
}

/// Whether an error is worth another try: `EAGAIN`, `EBUSY`.
pub(crate) fn is_retryable(e: &HostError) -> bool {
    matches!(e.errno(), Some(Errno::AGAIN | Errno::BUSY))
}

/// Run `f`, retrying a retryable error up to 5 times with backoff
/// (40, 80, 160, 320, 640 ms).
pub(crate) fn retry<T>(mut f: impl FnMut() -> Result<T, HostError>) -> Result<T, HostError> {
    let mut tries = 0;
    loop {
        match f() {
            Err(e) if is_retryable(&e) && tries < 5 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20 << tries));
            }
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(errno: Errno) -> HostError {
        HostError::Io {
            path: "/proc/irq/5/smp_affinity_list".into(),
            error: std::io::Error::from_raw_os_error(errno.raw_os_error()),
        }
    }

    #[test]
    fn busy_and_again_are_retried() {
        assert!(is_retryable(&os(Errno::BUSY)) && is_retryable(&os(Errno::AGAIN)));
        assert!(!is_retryable(&os(Errno::IO)) && !is_retryable(&os(Errno::INVAL)));
        let mut n = 0;
        let r: Result<(), HostError> = retry(|| {
            n += 1;
            if n < 3 {
                Err(os(Errno::AGAIN))
            } else {
                Ok(())
            }
        });
        assert!(r.is_ok() && n == 3);
    }
}
