//! Building an [`Input`] from facts the caller already read through `host`:
//! the one place that turns a host's snapshot, extras, sockstat and applied
//! plan into doctor's input, shared by `nettune doctor` and `nettune bench
//! --doctor` (which adds the samples of its measured window).

use crate::input::Input;
use model::parse::sockstat::Sockstat;
use model::plan::{HostExtras, Plan};
use model::snapshot::HostSnapshot;

/// What the caller read from one host, before any decision.
#[derive(Debug, Clone)]
pub struct HostRead {
    /// `host::read_snapshot`.
    pub snapshot: HostSnapshot,
    /// `host::extras::read_extras`.
    pub extras: HostExtras,
    /// `/proc/net/sockstat` (`host::sockstat::read_sockstat`); `None` when
    /// absent or unreadable (then say why in `unreadable`).
    pub sockstat: Option<Sockstat>,
    /// The plan of the newest finished generation in force in the journal.
    pub applied: Option<Plan>,
    /// Files that could not be read or parsed: (path, reason).
    pub unreadable: Vec<(String, String)>,
    /// `host::doctor_facts::read_doctor_facts`: power, processes, qdiscs,
    /// boot-time configuration, conntrack, TCP memory and sockets, DMI.
    pub facts: model::doctor_facts::DoctorFacts,
}

impl HostRead {
    /// The doctor input of these facts: no samples, no intent, no `--bdp`;
    /// the caller sets those it has.
    pub fn into_input(self) -> Input {
        let mut input = Input::new(self.snapshot);
        input.extras = self.extras;
        input.sockstat = self.sockstat;
        input.applied = self.applied;
        input.unreadable = self.unreadable;
        input.facts = self.facts;
        input
    }
}
