//! A file, symlink or directory `apply --persist` creates (the boot unit,
//! its plan and its link); rollback removes it.

use super::Knob;
use crate::apply::files;
use crate::error::HostError;
use crate::root::Root;
use model::plan::CreatedKind;

/// One created path.
pub(crate) struct CreatedKnob<'a> {
    root: &'a Root,
    path: &'a str,
    what: CreatedKind,
}

impl<'a> CreatedKnob<'a> {
    pub(crate) fn new(root: &'a Root, path: &'a str, what: CreatedKind) -> Self {
        CreatedKnob { root, path, what }
    }
}

impl Knob for CreatedKnob<'_> {
    fn describe(&self) -> String {
        self.path.to_string()
    }

    fn read_raw(&self) -> Result<Option<String>, HostError> {
        files::read_created(self.root, self.path, self.what)
    }

    /// The content or link target as it is (not trimmed).
    fn read(&self) -> Result<Option<String>, HostError> {
        self.read_raw()
    }

    fn write(&self, value: &str) -> Result<(), HostError> {
        files::write_created(self.root, self.path, self.what, value)
    }

    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        match (original, self.what) {
            (None, what) => files::remove_created(self.root, self.path, what),
            (Some(_), CreatedKind::Dir) => Ok(()),
            (Some(v), what) => files::write_created(self.root, self.path, what, v),
        }
    }

    /// Whatever it holds now, nettune wrote it.
    fn same(&self, _current: &str, _intended: &str) -> bool {
        true
    }

    fn creates(&self) -> bool {
        true
    }
}
