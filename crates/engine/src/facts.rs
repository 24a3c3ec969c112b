//! Host facts reported with every result: kernel, CPUs, congestion control,
//! interfaces with their queues and IRQ affinities. Read through a [`Root`].

use host::Root;
use serde::{Deserialize, Serialize};

/// One IRQ of an interface and the CPUs that serve it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqAffinity {
    /// IRQ number.
    pub irq: u32,
    /// `effective_affinity_list` (or `smp_affinity_list`).
    pub cpus: String,
}

/// One network interface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaceFacts {
    /// Name.
    pub name: String,
    /// Driver (from the `device/driver` link), if any.
    pub driver: Option<String>,
    /// MTU.
    pub mtu: Option<u32>,
    /// operstate.
    pub operstate: Option<String>,
    /// RX queues.
    pub rx_queues: u32,
    /// TX queues.
    pub tx_queues: u32,
    /// MSI IRQs and their affinities.
    pub irqs: Vec<IrqAffinity>,
}

/// What the result carries about each host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Hostname.
    pub hostname: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Online CPUs (cpulist).
    pub cpus_online: Option<String>,
    /// Count of online CPUs.
    pub ncpus: u32,
    /// `net.ipv4.tcp_congestion_control` of the network namespace.
    pub congestion_control: Option<String>,
    /// Interfaces (loopback omitted).
    pub interfaces: Vec<IfaceFacts>,
}

/// Gather facts; missing files leave fields empty, never fail.
pub fn gather(root: &Root) -> HostFacts {
    let s = |p: &str| root.read_opt(p).ok().flatten();
    let cpus_online = s("/sys/devices/system/cpu/online");
    let ncpus = cpus_online
        .as_deref()
        .and_then(|l| model::CpuSet::parse_list(l).ok())
        .map(|c| c.len() as u32)
        .unwrap_or(0);
    let mut interfaces = Vec::new();
    for name in root.list("/sys/class/net").unwrap_or_default() {
        if name == "lo" {
            continue;
        }
        let base = format!("/sys/class/net/{name}");
        let queues = root.list(format!("{base}/queues")).unwrap_or_default();
        let mut irqs: Vec<IrqAffinity> = root
            .list(format!("{base}/device/msi_irqs"))
            .unwrap_or_default()
            .iter()
            .filter_map(|i| i.parse::<u32>().ok())
            .map(|irq| IrqAffinity {
                irq,
                cpus: s(&format!("/proc/irq/{irq}/effective_affinity_list"))
                    .or_else(|| s(&format!("/proc/irq/{irq}/smp_affinity_list")))
                    .unwrap_or_default(),
            })
            .collect();
        irqs.sort_by_key(|i| i.irq);
        interfaces.push(IfaceFacts {
            driver: root.link_name(format!("{base}/device/driver")).ok(),
            mtu: s(&format!("{base}/mtu")).and_then(|v| v.parse().ok()),
            operstate: s(&format!("{base}/operstate")),
            rx_queues: queues.iter().filter(|q| q.starts_with("rx-")).count() as u32,
            tx_queues: queues.iter().filter(|q| q.starts_with("tx-")).count() as u32,
            irqs,
            name,
        });
    }
    HostFacts {
        hostname: s("/proc/sys/kernel/hostname"),
        kernel: s("/proc/sys/kernel/osrelease"),
        cpus_online,
        ncpus,
        congestion_control: s("/proc/sys/net/ipv4/tcp_congestion_control"),
        interfaces,
    }
}
