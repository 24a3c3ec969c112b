//! An ethtool attribute (`ethtool -L/-G/-C`), through the backend's
//! [`Ethtool`](crate::ethtool::Ethtool).

use super::Knob;
use crate::apply::backend::Backend;
use crate::error::HostError;
use crate::ethtool::EthtoolAttr;
use model::plan::EthtoolGroup;

/// One attribute of one interface.
pub(crate) struct EthtoolKnob<'a> {
    backend: &'a dyn Backend,
    iface: &'a str,
    attr: EthtoolAttr,
}

impl<'a> EthtoolKnob<'a> {
    /// Fails when `attr` is not an attribute of `group`.
    pub(crate) fn new(
        backend: &'a dyn Backend,
        iface: &'a str,
        group: EthtoolGroup,
        attr: &str,
    ) -> Result<Self, HostError> {
        Ok(EthtoolKnob {
            backend,
            iface,
            attr: EthtoolAttr::parse(group, attr)?,
        })
    }
}

impl Knob for EthtoolKnob<'_> {
    fn describe(&self) -> String {
        self.attr.describe(self.iface)
    }

    fn read_raw(&self) -> Result<Option<String>, HostError> {
        Ok(self
            .backend
            .ethtool()
            .get(self.iface, self.attr)?
            .map(|v| v.to_string()))
    }

    fn write(&self, value: &str) -> Result<(), HostError> {
        let v: u64 = value.trim().parse().map_err(|_| HostError::Io {
            path: self.describe().into(),
            error: std::io::Error::other(format!("`{value}` is not a number")),
        })?;
        self.backend.ethtool().set(self.iface, self.attr, v)
    }
}
