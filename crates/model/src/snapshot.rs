//! [`HostSnapshot`]: everything nettune knows about a host's network path at
//! one moment, read from a root directory by `host::snapshot`.
//!
//! This is the shape `nettune inspect --json` prints (see `docs/snapshot.md`).
//! Fields the host does not expose are `None` (JSON `null`) and the reason is
//! recorded in [`HostSnapshot::notes`]; nothing here is ever a guess.

use crate::cpuset::CpuSet;
use crate::units::{CpuId, IrqNumber, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the snapshot JSON shape; bump on incompatible changes.
pub const SNAPSHOT_SCHEMA_VERSION: u32 = 1;

/// A host's network-relevant state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSnapshot {
    /// [`SNAPSHOT_SCHEMA_VERSION`] at the time of writing.
    pub schema_version: u32,
    /// Where the snapshot came from.
    pub source: Source,
    /// CPU-wide facts.
    pub cpu: CpuSummary,
    /// One entry per present CPU, ascending.
    pub cpus: Vec<Cpu>,
    /// NUMA nodes, ascending. A host without `/sys/devices/system/node` gets one node 0.
    pub nodes: Vec<NumaNode>,
    /// Network interfaces, sorted by name.
    pub interfaces: Vec<Interface>,
    /// Device interrupts from `/proc/interrupts` (numbered lines only), ascending.
    pub irqs: Vec<Irq>,
    /// Network sysctls by dotted name (`net.core.rmem_max`), raw text with
    /// whitespace runs folded to one space. Missing knobs are absent (and noted).
    pub sysctls: BTreeMap<String, String>,
    /// Other software that writes the same knobs.
    pub owners: ForeignOwners,
    /// Fields that could not be read, with the path and the reason.
    pub notes: Vec<Note>,
}

/// Provenance of a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The root directory read (`/` for the live host).
    pub root: String,
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// Free-text label of a fixture (`tests/fixtures/<name>/LABEL`), if any.
    pub label: Option<String>,
}

/// CPU-wide facts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuSummary {
    /// `/sys/devices/system/cpu/possible`; its highest member + 1 is the
    /// kernel's `nr_cpu_ids`, the width of the masks it prints.
    pub possible: CpuSet,
    /// `/sys/devices/system/cpu/online`.
    pub online: CpuSet,
    /// `/sys/devices/system/cpu/isolated` (empty when the file is absent).
    pub isolated: CpuSet,
    /// `/sys/devices/system/cpu/nohz_full` (empty when absent or `(null)`).
    pub nohz_full: CpuSet,
    /// `/sys/devices/system/cpu/cpuidle/current_driver`.
    pub idle_driver: Option<String>,
    /// `/sys/devices/system/cpu/cpuidle/current_governor` (or `current_governor_ro`).
    pub idle_governor: Option<String>,
}

impl CpuSummary {
    /// Number of bits the kernel prints in CPU masks (`nr_cpu_ids`).
    pub fn mask_bits(&self) -> u32 {
        self.possible
            .last()
            .or(self.online.last())
            .map_or(1, |l| l + 1)
    }
}

/// One logical CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// Logical CPU number.
    pub id: CpuId,
    /// Whether the CPU is online.
    pub online: bool,
    /// `topology/core_id`.
    pub core_id: Option<u32>,
    /// `topology/physical_package_id`.
    pub package: Option<u32>,
    /// NUMA node (from the `nodeN` link or the node cpulists).
    pub node: Option<NodeId>,
    /// `topology/thread_siblings_list` (includes this CPU).
    pub siblings: CpuSet,
    /// `cpufreq/scaling_governor`, absent in most VMs.
    pub governor: Option<String>,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node number.
    pub id: NodeId,
    /// `nodeN/cpulist`.
    pub cpus: CpuSet,
    /// `nodeN/distance`, indexed by node order.
    pub distances: Vec<u32>,
    /// Total memory from `nodeN/meminfo`, in KiB.
    pub mem_total_kib: Option<u64>,
}

/// A network interface under `/sys/class/net`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interface {
    /// Interface name.
    pub name: String,
    /// `ifindex`.
    pub ifindex: Option<u32>,
    /// Driver name, the last component of the `device/driver` link; `None`
    /// for virtual devices (lo, veth, bridges) which have no `device`.
    pub driver: Option<String>,
    /// PCI address (`0000:00:03.0`) of the device or of its parent (virtio).
    pub pci_address: Option<String>,
    /// PCI vendor and device id of that function (its `vendor` and `device`
    /// files); `None` off PCI and in snapshots written before the field.
    /// Some drivers' limits depend on the controller (e1000's 82547).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_id: Option<PciId>,
    /// Permanent MAC from ethtool, else `address`.
    pub perm_mac: Option<String>,
    /// Current MAC (`address`).
    pub mac: Option<String>,
    /// `device/numa_node` as the kernel reports it; `-1` means unknown.
    pub numa_node: Option<i32>,
    /// `device/local_cpulist`.
    pub local_cpus: Option<CpuSet>,
    /// `speed` in Mbit/s; `None` when unknown (the kernel reports -1 or errors).
    pub speed_mbps: Option<u64>,
    /// `mtu`.
    pub mtu: Option<u32>,
    /// `operstate` (up, down, unknown, ...).
    pub operstate: Option<String>,
    /// `tx_queue_len`.
    pub tx_queue_len: Option<u32>,
    /// `gro_flush_timeout` in ns.
    pub gro_flush_timeout: Option<u64>,
    /// `napi_defer_hard_irqs`.
    pub napi_defer_hard_irqs: Option<u32>,
    /// `threaded` (NAPI threads), 0 or 1.
    pub threaded: Option<u32>,
    /// RX queues (`queues/rx-N`), ascending.
    pub rx_queues: Vec<RxQueue>,
    /// TX queues (`queues/tx-N`), ascending.
    pub tx_queues: Vec<TxQueue>,
    /// IRQs owned by this interface, ascending.
    pub irqs: Vec<IrqNumber>,
    /// How its IRQs were mapped to queues; `None` for a device without
    /// IRQs of its own that nettune can see as such (virtual devices) and in
    /// snapshots written before the field existed.
    #[serde(default)]
    pub irq_mapping: Option<IrqMapping>,
    /// Ethtool state (channels, rings, coalescing, features).
    pub ethtool: EthtoolState,
    /// Counters from `statistics/` at snapshot time.
    pub stats: IfaceStats,
}

impl Interface {
    /// Whether its `speed` is nominal: a virtual device (veth, tun, a
    /// bridge, a bond: no `device`, so no driver here) reports a figure
    /// (veth: 10000), not the rate of a wire; rules that compare with the
    /// link speed skip it.
    pub fn speed_is_nominal(&self) -> bool {
        self.driver.is_none()
    }
}

/// A PCI function's vendor and device id, as `lspci -nn` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciId {
    /// `vendor` (0x8086 is Intel).
    pub vendor: u16,
    /// `device`.
    pub device: u16,
}

impl std::fmt::Display for PciId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04x}:{:04x}", self.vendor, self.device)
    }
}

/// Selected `statistics/` counters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct IfaceStats {
    /// rx_packets.
    pub rx_packets: Option<u64>,
    /// tx_packets.
    pub tx_packets: Option<u64>,
    /// rx_dropped.
    pub rx_dropped: Option<u64>,
    /// tx_dropped.
    pub tx_dropped: Option<u64>,
    /// rx_missed_errors (NIC ran out of descriptors).
    pub rx_missed_errors: Option<u64>,
    /// rx_fifo_errors.
    pub rx_fifo_errors: Option<u64>,
}

/// `queues/rx-N`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RxQueue {
    /// Queue index N.
    pub index: u32,
    /// `rps_cpus` (empty set = RPS off). `None` when the file is absent.
    pub rps_cpus: Option<CpuSet>,
    /// `rps_flow_cnt` (RFS per-queue table size).
    pub rps_flow_cnt: Option<u64>,
}

/// `queues/tx-N`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TxQueue {
    /// Queue index N.
    pub index: u32,
    /// `xps_cpus`. `None` when absent (single-queue devices may lack it) or unreadable.
    pub xps_cpus: Option<CpuSet>,
    /// `xps_rxqs`: a bitmap of RX queue indices (not CPUs), reusing [`CpuSet`].
    pub xps_rxqs: Option<CpuSet>,
}

/// Kind of queue an IRQ serves, as told by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueKind {
    /// Combined RX+TX (`eth0-TxRx-3`, `ens5-Tx-Rx-0`, `mlx5_comp3`).
    Combined,
    /// RX only (`virtio0-input.0`, `eth0-rx-1`).
    Rx,
    /// TX only (`virtio0-output.0`, `eth0-tx-1`).
    Tx,
    /// Not a data queue (link, misc, async, event, config, mailbox,
    /// management vectors).
    Other,
}

/// The queue an IRQ serves, when its name tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueRef {
    /// What the queue carries.
    pub kind: QueueKind,
    /// Queue index, `None` for [`QueueKind::Other`].
    pub index: Option<u32>,
}

impl QueueRef {
    /// The queue as the stat and top screens name it (`rx-3`, `txrx-0`,
    /// `other`), `-` for none.
    pub fn label(q: Option<QueueRef>) -> String {
        match q {
            None => "-".into(),
            Some(QueueRef { kind, index }) => {
                let k = match kind {
                    QueueKind::Combined => "txrx",
                    QueueKind::Rx => "rx",
                    QueueKind::Tx => "tx",
                    QueueKind::Other => "other",
                };
                match index {
                    Some(i) => format!("{k}-{i}"),
                    None => k.into(),
                }
            }
        }
    }
}

/// How an IRQ's queue was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueSource {
    /// The IRQ's name tells the queue (`eth0-TxRx-3`, `eth1-3` on sfc).
    Name,
    /// Inferred: the names do not tell, so the device's MSI vectors
    /// (`device/msi_irqs`, ascending) less the non-queue ones serve queues
    /// 0, 1, ... in order.
    MsiOrder,
    /// Inferred: the device's single legacy INTx line (`device/irq`, or the
    /// only IRQ named after the interface outside `msi_irqs`) serves queue 0.
    LegacyIrq,
}

impl QueueSource {
    /// Whether the mapping is inferred rather than told by the name.
    pub fn inferred(self) -> bool {
        !matches!(self, QueueSource::Name)
    }

    /// A short phrase for humans.
    pub fn describe(self) -> &'static str {
        match self {
            QueueSource::Name => "by IRQ name",
            QueueSource::MsiOrder => "inferred from the order of device/msi_irqs",
            QueueSource::LegacyIrq => "inferred: the single legacy interrupt (device/irq)",
        }
    }
}

/// How an interface's IRQs were mapped to its queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqMapping {
    /// Every queue IRQ's name tells its queue.
    Name,
    /// Inferred from the order of `device/msi_irqs` (see [`QueueSource::MsiOrder`]).
    MsiOrder,
    /// Inferred: one legacy INTx line for queue 0 (see [`QueueSource::LegacyIrq`]).
    LegacyIrq,
    /// The device has a driver but no queue IRQs nettune can see (hv_netvsc
    /// delivers through VMBus channels; some drivers name no vector after a queue).
    NoQueueIrqs,
    /// More unnamed vectors than queues: which serve queues cannot be told,
    /// so none is taken for one.
    Ambiguous,
}

impl IrqMapping {
    /// Whether queue IRQs were inferred rather than told by their names.
    pub fn inferred(self) -> bool {
        matches!(self, IrqMapping::MsiOrder | IrqMapping::LegacyIrq)
    }

    /// A short phrase for humans.
    pub fn describe(self) -> &'static str {
        match self {
            IrqMapping::Name => "by IRQ name",
            IrqMapping::MsiOrder => {
                "inferred from the order of device/msi_irqs (the IRQ names do not tell the queue)"
            }
            IrqMapping::LegacyIrq => {
                "inferred: one legacy interrupt (device/irq) serves the single queue"
            }
            IrqMapping::NoQueueIrqs => "none: the device has no per-queue IRQs nettune can see",
            IrqMapping::Ambiguous => {
                "unknown: more unnamed vectors than queues, so none is taken for a queue"
            }
        }
    }
}

/// One device interrupt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Irq {
    /// IRQ number.
    pub number: IrqNumber,
    /// The name column of `/proc/interrupts` (last field: `eth0-TxRx-0`).
    pub name: String,
    /// The controller/type text between the counts and the name (`PCI-MSIX-0000:00:03.0 1-edge`).
    pub chip: String,
    /// Interrupt counts indexed by CPU number (the column headers of
    /// `/proc/interrupts`); CPUs without a column (offline) count 0.
    pub per_cpu: Vec<u64>,
    /// `/proc/irq/N/smp_affinity`.
    pub smp_affinity: Option<CpuSet>,
    /// `/proc/irq/N/effective_affinity` (kernel 4.15+; absent on some archs).
    pub effective_affinity: Option<CpuSet>,
    /// `/proc/irq/N/node`.
    pub node: Option<i32>,
    /// Owning interface, from `msi_irqs` or the name.
    pub interface: Option<String>,
    /// Queue served, when the name tells it or it could be inferred.
    pub queue: Option<QueueRef>,
    /// How [`Irq::queue`] was found; `None` when no queue is known.
    #[serde(default)]
    pub queue_source: Option<QueueSource>,
}

impl Irq {
    /// Total interrupts across CPUs.
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().sum()
    }
}

/// Result of probing one optional facility (e.g. ethtool rings).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Probe<T> {
    /// Read successfully.
    Ok {
        /// The value read.
        value: T,
    },
    /// The device or kernel does not support it (EOPNOTSUPP); not an error.
    Unsupported {
        /// Why, in words.
        reason: String,
    },
    /// Reading failed for another reason.
    Error {
        /// The error, naming what was read.
        message: String,
    },
    /// Not attempted (e.g. fixture without `ethtool/<iface>.json`).
    #[default]
    Absent,
}

impl<T> Probe<T> {
    /// Whether it was not attempted.
    pub fn is_absent(&self) -> bool {
        matches!(self, Probe::Absent)
    }

    /// The value, if read.
    pub fn value(&self) -> Option<&T> {
        match self {
            Probe::Ok { value } => Some(value),
            _ => None,
        }
    }
}

/// Ethtool state of one interface (also the shape of fixture `ethtool/<iface>.json`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EthtoolState {
    /// Driver info (driver, version, firmware, bus-info).
    #[serde(default)]
    pub driver: Probe<DriverInfo>,
    /// `ethtool -l`.
    #[serde(default)]
    pub channels: Probe<Channels>,
    /// `ethtool -g`.
    #[serde(default)]
    pub rings: Probe<Rings>,
    /// `ethtool -c`: only the attributes the driver reports, by ethtool's
    /// names (`rx-usecs`, `adaptive-rx`, ...). Booleans are 0/1.
    #[serde(default)]
    pub coalesce: Probe<BTreeMap<String, u64>>,
    /// `ethtool -k`, by feature name (`rx-gro`, `tx-tcp-segmentation`, ...).
    #[serde(default)]
    pub features: Probe<BTreeMap<String, Feature>>,
    /// Permanent MAC (`ethtool -P`).
    #[serde(default)]
    pub perm_mac: Option<String>,
    /// The driver's own counters (`ethtool -S`, and the standard groups of
    /// `ethtool -S --all-groups`); [`Probe::Absent`] in fixtures and
    /// snapshots written before the field existed (and then left out of the
    /// JSON, so older files keep their exact shape).
    #[serde(default, skip_serializing_if = "Probe::is_absent")]
    pub stats: Probe<NicStats>,
}

/// `ethtool -i`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DriverInfo {
    /// Driver name.
    pub driver: Option<String>,
    /// Driver version.
    pub version: Option<String>,
    /// Firmware version.
    pub firmware: Option<String>,
    /// Bus address.
    pub bus_info: Option<String>,
}

/// `ethtool -l`: maxima and current counts; `None` where the driver leaves it out.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Channels {
    /// Max RX-only channels.
    pub rx_max: Option<u32>,
    /// Max TX-only channels.
    pub tx_max: Option<u32>,
    /// Max other channels.
    pub other_max: Option<u32>,
    /// Max combined channels.
    pub combined_max: Option<u32>,
    /// Current RX-only channels.
    pub rx: Option<u32>,
    /// Current TX-only channels.
    pub tx: Option<u32>,
    /// Current other channels.
    pub other: Option<u32>,
    /// Current combined channels.
    pub combined: Option<u32>,
}

/// `ethtool -g`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Rings {
    /// Max RX ring.
    pub rx_max: Option<u32>,
    /// Max TX ring.
    pub tx_max: Option<u32>,
    /// Current RX ring.
    pub rx: Option<u32>,
    /// Current TX ring.
    pub tx: Option<u32>,
    /// Max RX mini ring.
    pub rx_mini_max: Option<u32>,
    /// Max RX jumbo ring.
    pub rx_jumbo_max: Option<u32>,
    /// Current RX mini ring.
    pub rx_mini: Option<u32>,
    /// Current RX jumbo ring.
    pub rx_jumbo: Option<u32>,
}

/// One offload feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Currently on.
    pub active: bool,
    /// Cannot be changed (`[fixed]`).
    pub fixed: bool,
}

/// Software that also writes IRQ affinity, sysctls or coalescing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ForeignOwners {
    /// A running irqbalance process.
    pub irqbalance: Option<Process>,
    /// tuned: running process and active profile.
    pub tuned: Option<Tuned>,
    /// irqbalance's environment file (`/etc/default/irqbalance` or
    /// `/etc/sysconfig/irqbalance`), when one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqbalance_env: Option<EnvFile>,
}

/// A service's environment file, as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvFile {
    /// Path as on a live host.
    pub path: String,
    /// Exact content.
    pub content: String,
}

/// A process found under `/proc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// PID.
    pub pid: u32,
    /// Command line, NULs replaced by spaces.
    pub cmdline: String,
}

/// tuned state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuned {
    /// The tuned daemon process, if running.
    pub process: Option<Process>,
    /// `/etc/tuned/active_profile`.
    pub active_profile: Option<String>,
}

/// A field that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The path (inside the root) or facility involved.
    pub path: String,
    /// What happened.
    pub message: String,
}

impl HostSnapshot {
    /// The interface named `name`.
    pub fn interface(&self, name: &str) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.name == name)
    }

    /// The IRQ numbered `n`.
    pub fn irq(&self, n: IrqNumber) -> Option<&Irq> {
        self.irqs.iter().find(|i| i.number == n)
    }

    /// The CPU numbered `id`.
    pub fn cpu(&self, id: u32) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id.0 == id)
    }

    /// A stable identity of the host's shape (CPUs, nodes, NICs with their
    /// drivers and permanent MACs), used to refuse plans made for another host.
    /// Counters, affinities and other tunables do not enter it.
    pub fn fingerprint(&self) -> String {
        let mut h = Fnv64::new();
        h.write(self.source.hostname.as_deref().unwrap_or("").as_bytes());
        h.write(self.cpu.possible.to_list().as_bytes());
        for c in &self.cpus {
            h.write(&c.id.0.to_le_bytes());
            h.write(&c.core_id.unwrap_or(u32::MAX).to_le_bytes());
            h.write(&c.package.unwrap_or(u32::MAX).to_le_bytes());
        }
        for n in &self.nodes {
            h.write(&n.id.0.to_le_bytes());
            h.write(n.cpus.to_list().as_bytes());
        }
        for i in &self.interfaces {
            h.write(i.name.as_bytes());
            h.write(i.driver.as_deref().unwrap_or("").as_bytes());
            h.write(i.perm_mac.as_deref().unwrap_or("").as_bytes());
            h.write(i.pci_address.as_deref().unwrap_or("").as_bytes());
        }
        format!("{:016x}", h.finish())
    }
}

/// FNV-1a, 64 bit: tiny, stable across Rust versions (unlike `DefaultHasher`).
#[derive(Debug)]
pub struct Fnv64(u64);

impl Fnv64 {
    /// A new hasher.
    pub fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
    /// Feed bytes, with a separator so that ("ab","c") != ("a","bc").
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes.iter().chain(std::iter::once(&0xffu8)) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    /// The hash.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv64 {
    fn default() -> Self {
        Self::new()
    }
}

/// A NIC driver's counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NicStats {
    /// Driver counters (`ethtool -S IF`, the `ETH_SS_STATS` set), by the
    /// driver's names: `rx_queue_0_packets`, `bw_in_allowance_exceeded`, ...
    #[serde(default)]
    pub driver: BTreeMap<String, u64>,
    /// Standard groups (`ethtool -S IF --all-groups`, 5.13+), by ethtool's
    /// names: `eth-mac-FramesReceivedOK`, `rmon-etherStatsUndersizePkts`...
    /// Empty when the kernel, the driver or ethtool(8) offers none.
    #[serde(default)]
    pub standard: BTreeMap<String, u64>,
}
