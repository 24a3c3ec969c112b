//! A system service (irqbalance): `running` or `stopped`. Not managed under
//! a fixture root.

use super::Knob;
use crate::apply::backend::{Backend, ServiceState};
use crate::error::HostError;

/// One service.
pub(crate) struct ServiceKnob<'a> {
    backend: &'a dyn Backend,
    name: &'a str,
}

impl<'a> ServiceKnob<'a> {
    pub(crate) fn new(backend: &'a dyn Backend, name: &'a str) -> Self {
        ServiceKnob { backend, name }
    }
}

impl Knob for ServiceKnob<'_> {
    fn describe(&self) -> String {
        format!("service {}", self.name)
    }

    fn read_raw(&self) -> Result<Option<String>, HostError> {
        Ok(self
            .backend
            .services()
            .state(self.name)?
            .map(|s| s.name().to_string()))
    }

    fn write(&self, value: &str) -> Result<(), HostError> {
        let state = ServiceState::parse(value.trim()).ok_or_else(|| HostError::Refused {
            path: self.describe().into(),
            why: "a service state is running or stopped",
        })?;
        self.backend.services().set(self.name, state)
    }

    fn unmanaged(&self) -> Option<&'static str> {
        (!self.backend.services().managed()).then_some("fixture root: services are not managed")
    }
}
