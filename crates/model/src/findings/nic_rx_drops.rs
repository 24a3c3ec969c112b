use super::{At, Finding, FindingId, FindingRule, Scope, Severity};

/// The NIC counted missed or FIFO-overrun packets since boot.
#[derive(Debug)]
pub struct NicRxDrops;

impl FindingRule for NicRxDrops {
    fn id(&self) -> FindingId {
        FindingId::NicRxDrops
    }
    fn scope(&self) -> Scope {
        Scope::Interface
    }
    fn rationale(&self) -> &'static str {
        "rx_missed and rx_fifo errors mean the NIC had no free descriptor or buffer: the ring or the CPU serving it fell behind"
    }
    fn source(&self) -> &'static str {
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html) (RX descriptors up to 4096); Documentation/networking/statistics.rst"
    }
    fn check(&self, at: At<'_>, out: &mut Vec<Finding>) {
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
