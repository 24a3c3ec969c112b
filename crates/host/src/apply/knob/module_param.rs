//! A module parameter, written as a modprobe.d snippet in the state
//! directory for the user to review (`STATE/modprobe.d/nettune-M-P.conf`);
//! nettune never loads it. Module and parameter are checked names, so the
//! file name is one plain component of that directory.

use super::Knob;
use crate::apply::files;
use crate::error::HostError;
use std::path::Path;

/// One parameter of one module.
pub(crate) struct ModuleParamKnob<'a> {
    dir: &'a Path,
    module: &'a str,
    param: &'a str,
}

impl<'a> ModuleParamKnob<'a> {
    pub(crate) fn new(dir: &'a Path, module: &'a str, param: &'a str) -> Self {
        ModuleParamKnob { dir, module, param }
    }

    fn file_name(&self) -> String {
        format!("nettune-{}-{}.conf", self.module, self.param)
    }
}

impl Knob for ModuleParamKnob<'_> {
    fn describe(&self) -> String {
        format!("module {} {}", self.module, self.param)
    }

    fn read_raw(&self) -> Result<Option<String>, HostError> {
        files::read_snippet(self.dir, &self.file_name())
    }

    /// A value becomes an `options` line under a comment; a snippet's text
    /// (a journaled original) is written as it is.
    fn write(&self, value: &str) -> Result<(), HostError> {
        let (module, param) = (self.module, self.param);
        let text = if value.starts_with("options ") || value.starts_with('#') {
            value.to_string()
        } else {
            format!(
                "# Written by nettune for review; copy to /etc/modprobe.d/ and reload {module} to use.\noptions {module} {param}={value}\n"
            )
        };
        files::write_snippet(self.dir, &self.file_name(), &text)
    }

    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        match original {
            Some(v) => self.write(v.trim()),
            None => files::remove_snippet(self.dir, &self.file_name()),
        }
    }

    fn same(&self, current: &str, intended: &str) -> bool {
        current.contains(&format!("={intended}"))
    }

    fn creates(&self) -> bool {
        true
    }
}
