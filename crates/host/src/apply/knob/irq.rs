//! An IRQ's affinity, `/proc/irq/N/smp_affinity_list` (or `smp_affinity`, a
//! mask, where the list file is missing). A managed IRQ refuses any value
//! (EIO before 6.12, EPERM after): that is *unchangeable*, not a failure.
//! After the write, `effective_affinity` (4.15+) tells whether the kernel
//! moved the interrupt yet.

use super::Knob;
use crate::apply::backend::{Backend, FollowUp};
use crate::error::HostError;
use crate::root::Root;
use model::plan::ValueFormat;
use model::CpuSet;
use rustix::io::Errno;

/// How often, and how long apart, `effective_affinity` is read after a
/// write before the move is reported as pending.
const SETTLE_TRIES: usize = 5;
const SETTLE_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

fn irq_dir(irq: u32) -> String {
    format!("/proc/irq/{irq}")
}

/// An IRQ's affinity.
pub(crate) struct IrqKnob<'a> {
    backend: &'a dyn Backend,
    irq: u32,
    /// `smp_affinity_list`, or `smp_affinity` when it is missing.
    path: String,
    is_list: bool,
}

impl<'a> IrqKnob<'a> {
    pub(crate) fn new(backend: &'a dyn Backend, irq: u32) -> Self {
        let list = format!("{}/smp_affinity_list", irq_dir(irq));
        let (path, is_list) = if backend.root().exists(&list) {
            (list, true)
        } else {
            (format!("{}/smp_affinity", irq_dir(irq)), false)
        };
        IrqKnob {
            backend,
            irq,
            path,
            is_list,
        }
    }

    fn root(&self) -> &Root {
        self.backend.root()
    }

    /// `Some(message)` when `effective_affinity` lies outside `intended`.
    fn effective_mismatch(&self, intended: &str) -> Option<String> {
        let want = CpuSet::parse_list(intended).ok()?;
        let (path, fmt) = effective_files(self.root(), self.irq).into_iter().next()?;
        let text = self.root().read_trim(&path).ok()?;
        let got = match fmt {
            ValueFormat::List => CpuSet::parse_list(&text).ok()?,
            _ => CpuSet::parse_mask(&text).ok()?,
        };
        (!got.is_empty() && !got.is_subset(&want)).then(|| {
            format!(
                "effective_affinity is still {} (outside {intended}; the move is pending until the IRQ fires)",
                got.to_list()
            )
        })
    }
}

/// The `effective_affinity` files of `irq` that exist, list first.
pub(crate) fn effective_files(root: &Root, irq: u32) -> Vec<(String, ValueFormat)> {
    [
        ("effective_affinity_list", ValueFormat::List),
        ("effective_affinity", ValueFormat::Mask),
    ]
    .into_iter()
    .map(|(f, fmt)| (format!("{}/{f}", irq_dir(irq)), fmt))
    .filter(|(p, _)| root.exists(p))
    .collect()
}

/// Whether an affinity write error means "managed IRQ".
pub(crate) fn is_managed_irq_error(e: &HostError) -> bool {
    matches!(e, HostError::PermissionDenied { .. })
        || matches!(e.errno(), Some(Errno::PERM | Errno::IO))
}

impl Knob for IrqKnob<'_> {
    fn describe(&self) -> String {
        model::plan::irq_affinity_path(self.irq)
    }

    fn read_raw(&self) -> Result<Option<String>, HostError> {
        super::file::optional(self.root().read(&self.path))
    }

    /// As a cpulist, whichever file holds it.
    fn read(&self) -> Result<Option<String>, HostError> {
        Ok(self.read_raw()?.map(|r| {
            if self.is_list {
                r.trim().to_string()
            } else {
                CpuSet::parse_mask(&r)
                    .map(|s| s.to_list())
                    .unwrap_or_else(|_| r.trim().to_string())
            }
        }))
    }

    fn write(&self, value: &str) -> Result<(), HostError> {
        if self.is_list {
            return self.root().write(&self.path, value);
        }
        let set = CpuSet::parse_list(value).map_err(|source| HostError::Parse {
            path: self.path.clone().into(),
            source,
        })?;
        let cur = self.root().read(&self.path).unwrap_or_default();
        let groups = u32::try_from(cur.trim().split(',').count()).unwrap_or(1);
        self.root().write(&self.path, &set.to_mask_groups(groups))
    }

    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        match original {
            Some(raw) => self.backend.restore_file(&self.path, raw),
            None => Err(HostError::NotFound {
                path: self.describe().into(),
            }),
        }
    }

    fn same(&self, current: &str, intended: &str) -> bool {
        ValueFormat::List.same(current, intended)
    }

    fn unchangeable(&self, error: &HostError) -> bool {
        is_managed_irq_error(error)
    }

    fn follow_ups(&self, intended: &str) -> Result<Vec<FollowUp>, HostError> {
        match CpuSet::parse_list(intended) {
            Ok(cpus) => self.backend.effective_affinity(self.irq, &cpus),
            Err(_) => Ok(Vec::new()),
        }
    }

    /// On a live host the move may be pending until the IRQ next fires, so
    /// a mismatch after about 100 ms is a note, not a failure.
    fn note(&self, intended: &str) -> Option<String> {
        let mut note = None;
        for _ in 0..SETTLE_TRIES {
            note = self.effective_mismatch(intended);
            if note.is_none() {
                break;
            }
            std::thread::sleep(SETTLE_PAUSE);
        }
        note
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::knob::is_retryable;

    #[test]
    fn eio_and_eperm_mean_a_managed_irq() {
        let os = |errno: Errno| HostError::Io {
            path: "/proc/irq/5/smp_affinity".into(),
            error: std::io::Error::from_raw_os_error(errno.raw_os_error()),
        };
        for e in [
            os(Errno::IO),
            os(Errno::PERM),
            HostError::PermissionDenied {
                path: "/proc/irq/5/smp_affinity".into(),
            },
        ] {
            assert!(is_managed_irq_error(&e) && !is_retryable(&e), "{e}");
        }
        let busy = os(Errno::BUSY);
        assert!(is_retryable(&busy) && !is_managed_irq_error(&busy));
        assert!(!is_managed_irq_error(&os(Errno::INVAL)));
    }
}
