//! `busy-poll`: poll the device queue from the socket call.

use super::{Rule, RuleId};
use crate::context::Ctx;
use model::plan::Phase;
use model::snapshot::Interface;

/// Sets `net.core.busy_poll` and `busy_read`.
#[derive(Debug)]
pub struct BusyPoll;

impl Rule for BusyPoll {
    fn id(&self) -> RuleId {
        RuleId::BusyPoll
    }

    fn rationale(&self) -> &'static str {
        "busy polling the device queue from the socket call avoids the interrupt and wake-up on the latency path"
    }

    fn source(&self) -> &'static str {
        "Documentation/admin-guide/sysctl/net.rst (busy_poll, busy_read)"
    }

    fn plan_host(&self, cx: &mut Ctx<'_>, _ifaces: &[&Interface]) {
        let us = cx.profile.settings.busy_poll_us;
        for key in ["net.core.busy_poll", "net.core.busy_read"] {
            cx.sysctl(
                Phase::Sysctls,
                self.id(),
                key,
                us.to_string(),
                format!("poll the device queue up to {us} µs before sleeping"),
            );
        }
    }
}
