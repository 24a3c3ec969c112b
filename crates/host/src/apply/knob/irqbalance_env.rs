//! irqbalance's environment file (`/etc/default/irqbalance`,
//! `/etc/sysconfig/irqbalance`): the plan's value is the whole file, the
//! original with `--banirq=N` added to `IRQBALANCE_ARGS`. Written through
//! [`Root::resolve_confined`](crate::root::Root::resolve_confined) like the
//! files of `apply --persist`; after a write or a restore irqbalance is
//! restarted so it rereads the file (not under a fixture root, where there
//! is no service manager: the file is written and the restart left out).

use super::Knob;
use crate::apply::backend::Backend;
use crate::apply::files;
use crate::error::HostError;
use model::irqbalance_env;
use model::plan::CreatedKind;

/// The environment file of irqbalance.
pub(crate) struct IrqbalanceEnvKnob<'a> {
    backend: &'a dyn Backend,
    path: &'a str,
}

impl<'a> IrqbalanceEnvKnob<'a> {
    pub(crate) fn new(backend: &'a dyn Backend, path: &'a str) -> Self {
        IrqbalanceEnvKnob { backend, path }
    }

    fn put(&self, content: &str) -> Result<(), HostError> {
        files::write_created(self.backend.root(), self.path, CreatedKind::File, content)?;
        let services = self.backend.services();
        if services.managed() {
            services.restart("irqbalance")?;
        }
        Ok(())
    }
}

impl Knob for IrqbalanceEnvKnob<'_> {
    fn describe(&self) -> String {
        self.path.to_string()
    }

    fn read_raw(&self) -> Result<Option<String>, HostError> {
        files::read_created(self.backend.root(), self.path, CreatedKind::File)
    }

    /// The content as it is (not trimmed).
    fn read(&self) -> Result<Option<String>, HostError> {
        self.read_raw()
    }

    /// Only `--banirq=N` may be added: the value must be the current file
    /// with the bans it names added, every other byte the same.
    fn write(&self, value: &str) -> Result<(), HostError> {
        let current = self.read_raw()?.ok_or_else(|| HostError::NotFound {
            path: self.path.into(),
        })?;
        let wanted = irqbalance_env::banned_irqs(value);
        let expect =
            irqbalance_env::with_bans(&current, &wanted).map_err(|why| HostError::Refused {
                path: self.path.into(),
                why,
            })?;
        if expect != value {
            return Err(HostError::Refused {
                path: self.path.into(),
                why: "the new content is not the current file with only --banirq=N added to IRQBALANCE_ARGS",
            });
        }
        self.put(value)
    }

    /// The journaled original, byte for byte.
    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        match original {
            Some(raw) => self.put(raw),
            None => Err(HostError::NotFound {
                path: self.path.into(),
            }),
        }
    }

    fn same(&self, current: &str, intended: &str) -> bool {
        current == intended
    }
}
