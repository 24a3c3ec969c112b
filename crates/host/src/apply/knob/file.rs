//! A sysfs or procfs file (`/proc/sys/...`, `rps_cpus`...), written like
//! `echo VALUE > PATH`.

use super::Knob;
use crate::apply::backend::Backend;
use crate::error::HostError;
use model::plan::ValueFormat;

/// A kernel file.
pub(crate) struct FileKnob<'a> {
    backend: &'a dyn Backend,
    path: &'a str,
    format: ValueFormat,
}

impl<'a> FileKnob<'a> {
    pub(crate) fn new(backend: &'a dyn Backend, path: &'a str, format: ValueFormat) -> Self {
        FileKnob {
            backend,
            path,
            format,
        }
    }
}

/// `Ok(None)` for an absent file.
pub(crate) fn optional(r: Result<String, HostError>) -> Result<Option<String>, HostError> {
    match r {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

impl Knob for FileKnob<'_> {
    fn describe(&self) -> String {
        self.path.to_string()
    }
    fn read_raw(&self) -> Result<Option<String>, HostError> {
        optional(self.backend.root().read(self.path))
    }
    fn write(&self, value: &str) -> Result<(), HostError> {
        self.backend.root().write(self.path, value)
    }
    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        match original {
            Some(raw) => self.backend.restore_file(self.path, raw),
            None => Err(HostError::NotFound {
                path: self.path.into(),
            }),
        }
    }
    fn same(&self, current: &str, intended: &str) -> bool {
        self.format.same(current, intended)
    }
}
