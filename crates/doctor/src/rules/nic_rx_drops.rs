use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{At, Scope};

/// The NIC counted missed or FIFO-overrun packets since boot.
#[derive(Debug)]
pub struct NicRxDrops;

impl DoctorRule for NicRxDrops {
    fn id(&self) -> FindingId {
        FindingId::NicRxDrops
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "NIC missed or overran packets since boot"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Interface)
    }
    fn rationale(&self) -> &'static str {
        "rx_missed and rx_fifo errors mean the NIC had no free descriptor or buffer: the ring or the CPU serving it fell behind"
    }
    fn source(&self) -> &'static str {
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html) (RX descriptors up to 4096); Documentation/networking/statistics.rst"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Interface(cx) = at else { return };
        let name = cx.name();
        let st = &cx.iface.stats;
        for (label, v) in [
            ("rx_missed_errors", st.rx_missed_errors),
            ("rx_fifo_errors", st.rx_fifo_errors),
        ] {
            if let Some(v) = v.filter(|v| *v > 0) {
                out.push(Finding::new(
                    self.id(),
                    Severity::Info,
                    name,
                    format!("{name}: {label} is {v} since boot: the NIC ran out of RX descriptors or buffer"),
                ));
            }
        }
    }
}
