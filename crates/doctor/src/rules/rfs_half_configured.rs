use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{At, Scope};

/// Only one of the two RFS settings is non-zero.
#[derive(Debug)]
pub struct RfsHalfConfigured;

impl DoctorRule for RfsHalfConfigured {
    fn id(&self) -> FindingId {
        FindingId::RfsHalfConfigured
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "only one of the two RFS settings set"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Interface)
    }
    fn rationale(&self) -> &'static str {
        "RFS needs both the global rps_sock_flow_entries and a per-queue rps_flow_cnt; either alone does nothing"
    }
    fn source(&self) -> &'static str {
        "Documentation/networking/scaling.rst (RFS configuration)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Interface(cx) = at else { return };
        let sysctls = &cx.host.s.sysctls;
        let flow_cnt: u64 = cx
            .iface
            .rx_queues
            .iter()
            .filter_map(|q| q.rps_flow_cnt)
            .fold(0, u64::saturating_add);
        let entries: u64 = sysctls
            .get("net.core.rps_sock_flow_entries")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let name = cx.name();
        let msg = if entries > 0 && flow_cnt == 0 {
            format!("{name}: net.core.rps_sock_flow_entries is {entries} but rps_flow_cnt is 0 on every queue, so RFS is off")
        } else if entries == 0
            && flow_cnt > 0
            && sysctls.contains_key("net.core.rps_sock_flow_entries")
        {
            format!("{name}: rps_flow_cnt is set but net.core.rps_sock_flow_entries is 0, so RFS is off")
        } else {
            return;
        };
        out.push(Finding::new(self.id(), Severity::Warning, name, msg));
    }
}
