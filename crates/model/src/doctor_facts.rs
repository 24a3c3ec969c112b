//! [`DoctorFacts`]: what doctor's rules need beyond the [`HostSnapshot`]
//! (CPU power states, the busiest network processes, qdiscs and BQL,
//! boot-time configuration, conntrack, TCP memory, the RTTs of the host's
//! own TCP sockets, and the platform the host runs on).
//!
//! Read in one go by `host::doctor_facts::read_doctor_facts`. Nothing fails
//! as a whole: a part that cannot be read is [`Fact::Missing`] naming the
//! file, so a rule that needs it is skipped with that reason.
//!
//! [`HostSnapshot`]: crate::snapshot::HostSnapshot

use crate::cpuset::CpuSet;
use crate::parse::conntrack::ConntrackStat;
use crate::parse::sockstat::Sockstat;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// A fact, or the file that could not be read and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Fact<T> {
    /// Read.
    Ok {
        /// The value.
        value: T,
    },
    /// Not available: `path` (inside the root) could not be read.
    Missing {
        /// The file or facility.
        path: String,
        /// Why (`not found`, `permission denied`, a parse error...).
        reason: String,
    },
}

impl<T> Fact<T> {
    /// A missing fact.
    pub fn missing(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Fact::Missing {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The value, when read.
    pub fn value(&self) -> Option<&T> {
        match self {
            Fact::Ok { value } => Some(value),
            Fact::Missing { .. } => None,
        }
    }

    /// The value, or which file was missing and why (a rule's skip reason).
    pub fn get(&self) -> Result<&T, MissingFact> {
        match self {
            Fact::Ok { value } => Ok(value),
            Fact::Missing { path, reason } => Err(MissingFact {
                path: path.clone(),
                reason: reason.clone(),
            }),
        }
    }
}

/// A [`Fact`] that was not read: `path: reason`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct MissingFact {
    /// The file or facility.
    pub path: String,
    /// Why it could not be read.
    pub reason: String,
}

impl<T> Default for Fact<T> {
    fn default() -> Self {
        Fact::missing("(not read)", "not read")
    }
}

/// Everything doctor reads besides the snapshot and the sampler.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DoctorFacts {
    /// cpufreq governors and cpuidle states.
    pub power: Fact<CpuPower>,
    /// The busiest processes holding inet sockets.
    pub processes: Fact<Vec<NetProcess>>,
    /// Qdiscs of every interface (netlink `RTM_GETQDISC`).
    pub qdiscs: Fact<Vec<Qdisc>>,
    /// Byte queue limits of every TX queue that has them.
    pub bql: Vec<BqlQueue>,
    /// Qdisc kinds this kernel can create (built in, loaded or installed as modules).
    pub available_qdiscs: Fact<Vec<String>>,
    /// Boot-time configuration that sets knobs.
    pub boot: BootConfig,
    /// Connection tracking table and its drop counters.
    pub conntrack: Fact<Conntrack>,
    /// TCP memory and orphans against their limits.
    pub tcp_memory: Fact<TcpMemory>,
    /// Established TCP sockets with their RTTs (netlink `INET_DIAG`).
    pub tcp_sockets: Fact<Vec<TcpSocket>>,
    /// What the host runs on (DMI, hypervisor).
    pub platform: Platform,
}

/// CPU frequency and idle-state facts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuPower {
    /// `cpuN/cpufreq/scaling_governor` by CPU; empty when no CPU has cpufreq
    /// (most VMs).
    pub governors: BTreeMap<u32, String>,
    /// `cpuN/cpufreq/scaling_driver` of the first CPU that has one.
    pub scaling_driver: Option<String>,
    /// `cpuN/cpuidle/stateK` by CPU; empty when cpuidle is absent.
    pub idle_states: BTreeMap<u32, Vec<IdleState>>,
}

impl CpuPower {
    /// Idle states deeper than `max_latency_us` still allowed on some CPU,
    /// as (cpu, state).
    pub fn deep_states_allowed(&self, max_latency_us: u64) -> Vec<(u32, &IdleState)> {
        self.idle_states
            .iter()
            .flat_map(|(c, v)| v.iter().map(move |s| (*c, s)))
            .filter(|(_, s)| !s.disabled && s.latency_us > max_latency_us)
            .collect()
    }
}

/// One cpuidle state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleState {
    /// K of `stateK`.
    pub index: u32,
    /// `name` (`POLL`, `C1`, `C6`...).
    pub name: String,
    /// `latency`: exit latency in µs.
    pub latency_us: u64,
    /// `disable` is 1.
    pub disabled: bool,
}

/// A process holding inet sockets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetProcess {
    /// PID.
    pub pid: u32,
    /// `comm`.
    pub comm: String,
    /// utime + stime since it started, in clock ticks.
    pub cpu_ticks: u64,
    /// The CPU it last ran on.
    pub last_cpu: Option<u32>,
    /// `Cpus_allowed_list`.
    pub allowed: Option<CpuSet>,
    /// Inet (TCP/UDP, v4/v6) sockets among its fds.
    pub sockets: u32,
}

/// One qdisc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Qdisc {
    /// Interface name (from the snapshot's ifindex), or the index as text.
    pub interface: String,
    /// Kind (`pfifo_fast`, `fq_codel`, `mq`, `noqueue`...).
    pub kind: String,
    /// Handle `major:minor` as tc prints it (`8001:`).
    pub handle: String,
    /// Attached at the root (not under another qdisc's class).
    pub root: bool,
    /// The TX queue it serves, when it sits under an `mq`/`mqprio` root.
    pub tx_queue: Option<u32>,
    /// Packets queued now.
    pub qlen: Option<u32>,
    /// Bytes queued now.
    pub backlog: Option<u32>,
    /// Packets dropped since creation.
    pub drops: Option<u32>,
    /// Packet limit of fifo-like qdiscs (`limit`), when it tells one.
    pub limit: Option<u32>,
}

/// Byte queue limits of one TX queue (`queues/tx-N/byte_queue_limits`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BqlQueue {
    /// Interface name.
    pub interface: String,
    /// N of `tx-N`.
    pub queue: u32,
    /// `limit`: the current dynamic limit in bytes.
    pub limit: Option<u64>,
    /// `limit_max`.
    pub limit_max: Option<u64>,
    /// `inflight`: bytes handed to the NIC and not completed.
    pub inflight: Option<u64>,
}

/// Boot-time configuration that sets knobs nettune also sets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BootConfig {
    /// sysctl files in the order they are applied (`systemd-sysctl`, then
    /// `/etc/sysctl.conf` as `sysctl --system` reads it last), every assignment.
    pub sysctl: Vec<BootSetting>,
    /// `options` lines of `/etc/modprobe.d/*.conf` (and `/usr/lib/modprobe.d`).
    pub modprobe: Vec<BootModuleOptions>,
    /// udev rule lines that set network knobs.
    pub udev: Vec<BootUdevLine>,
    /// The active tuned profile and the sysctls it sets (includes resolved).
    pub tuned: Option<TunedProfile>,
    /// Files that exist but could not be read or parsed, with the reason.
    pub unreadable: Vec<(String, String)>,
}

impl BootConfig {
    /// The assignment of sysctl `key` that wins at boot (the last one,
    /// globs included), if any.
    pub fn sysctl_at_boot(&self, key: &str) -> Option<&BootSetting> {
        self.sysctl.iter().rev().find(|s| {
            s.key == key
                || (s.key.contains(['*', '?'])
                    && crate::parse::sysctl_conf::glob_matches(&s.key, key))
        })
    }
}

/// One boot-time `key = value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootSetting {
    /// Dotted sysctl key (may be a glob).
    pub key: String,
    /// Value, whitespace folded.
    pub value: String,
    /// File it came from.
    pub file: String,
    /// 1-based line.
    pub line: usize,
}

/// One `options` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootModuleOptions {
    /// Module (`ixgbe`).
    pub module: String,
    /// Parameters.
    pub params: Vec<(String, String)>,
    /// File.
    pub file: String,
    /// Line.
    pub line: usize,
}

/// A udev rule line that sets network knobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootUdevLine {
    /// Knob words (`rps_cpus`, `ethtool -G`).
    pub knobs: Vec<String>,
    /// Rule text.
    pub text: String,
    /// File.
    pub file: String,
    /// Line.
    pub line: usize,
}

/// The active tuned profile.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TunedProfile {
    /// `/etc/tuned/active_profile` (may name several, space separated).
    pub name: String,
    /// `[sysctl]` settings, included profiles first so later ones win.
    pub sysctl: Vec<BootSetting>,
    /// `[cpu] governor` / `force_latency` and similar entries, as (key, value, file).
    pub cpu: Vec<BootSetting>,
}

/// Connection tracking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conntrack {
    /// `nf_conntrack_count`.
    pub count: u64,
    /// `nf_conntrack_max`.
    pub max: u64,
    /// `/proc/net/stat/nf_conntrack`, when readable.
    pub stat: Option<ConntrackStat>,
}

/// TCP memory and orphans against their limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpMemory {
    /// `/proc/net/sockstat`.
    pub sockstat: Sockstat,
    /// `tcp_mem`: (low, pressure, high) in pages.
    pub tcp_mem: Option<[u64; 3]>,
    /// `tcp_max_orphans`.
    pub max_orphans: Option<u64>,
    /// Page size in bytes used for the arithmetic (4096 unless told).
    pub page_size: u64,
}

/// One established TCP socket as `INET_DIAG` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpSocket {
    /// Local address.
    pub local: IpAddr,
    /// Local port.
    pub local_port: u16,
    /// Remote address.
    pub remote: IpAddr,
    /// Remote port.
    pub remote_port: u16,
    /// Smoothed RTT in µs (`tcpi_rtt`).
    pub rtt_us: u32,
    /// RTT variance in µs.
    pub rttvar_us: u32,
    /// Congestion window in segments.
    pub snd_cwnd: u32,
    /// Sender MSS.
    pub snd_mss: u32,
    /// Bytes acked (`tcpi_bytes_acked`), when the kernel reports it.
    pub bytes_acked: Option<u64>,
    /// Bytes received, when reported.
    pub bytes_received: Option<u64>,
    /// Delivery rate in bytes/s (4.9+), when reported.
    pub delivery_rate: Option<u64>,
}

impl TcpSocket {
    /// Whether both ends are loopback addresses (the socket never crosses a NIC).
    pub fn is_loopback(&self) -> bool {
        self.remote.is_loopback() || self.local.is_loopback()
    }
}

/// What the host runs on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Platform {
    /// `/sys/class/dmi/id/sys_vendor`.
    pub sys_vendor: Option<String>,
    /// `/sys/class/dmi/id/product_name` (`c4.8xlarge`, `Google Compute Engine`).
    pub product_name: Option<String>,
    /// `/sys/class/dmi/id/product_version`.
    pub product_version: Option<String>,
    /// `/sys/class/dmi/id/bios_vendor`.
    pub bios_vendor: Option<String>,
    /// `/sys/class/dmi/id/bios_version` (`4.2.amazon` on Xen EC2).
    pub bios_version: Option<String>,
    /// `/sys/hypervisor/type` (`xen`).
    pub hypervisor: Option<String>,
}

/// A public cloud recognised from DMI and the hypervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cloud {
    /// Amazon EC2 (Xen or Nitro).
    Aws,
    /// Google Compute Engine.
    Gcp,
    /// Microsoft Azure (Hyper-V).
    Azure,
}

impl Platform {
    /// The cloud this host is a guest of, if DMI or the hypervisor tell.
    pub fn cloud(&self) -> Option<Cloud> {
        let has = |f: &Option<String>, w: &str| {
            f.as_deref()
                .is_some_and(|s| s.to_ascii_lowercase().contains(&w.to_ascii_lowercase()))
        };
        if has(&self.sys_vendor, "Amazon")
            || has(&self.bios_vendor, "Amazon")
            || has(&self.bios_version, "amazon")
            || has(&self.product_version, "amazon")
        {
            Some(Cloud::Aws)
        } else if has(&self.sys_vendor, "Google") || has(&self.product_name, "Google") {
            Some(Cloud::Gcp)
        } else if has(&self.sys_vendor, "Microsoft") && has(&self.product_name, "Virtual Machine") {
            Some(Cloud::Azure)
        } else {
            None
        }
    }

    /// Whether the host is a Xen guest (`/sys/hypervisor/type` or DMI).
    pub fn is_xen(&self) -> bool {
        self.hypervisor.as_deref() == Some("xen")
            || self.sys_vendor.as_deref() == Some("Xen")
            || self.product_name.as_deref() == Some("HVM domU")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clouds_from_dmi() {
        // c4.8xlarge (Xen HVM) as its DMI reads: Xen vendor, Amazon BIOS version.
        let p = Platform {
            sys_vendor: Some("Xen".into()),
            product_name: Some("HVM domU".into()),
            bios_vendor: Some("Xen".into()),
            bios_version: Some("4.2.amazon".into()),
            product_version: Some("4.2.amazon".into()),
            hypervisor: Some("xen".into()),
        };
        assert_eq!(p.cloud(), Some(Cloud::Aws));
        assert!(p.is_xen());
        let nitro = Platform {
            sys_vendor: Some("Amazon EC2".into()),
            product_name: Some("c5.large".into()),
            ..Default::default()
        };
        assert_eq!(nitro.cloud(), Some(Cloud::Aws));
        assert!(!nitro.is_xen());
        let gce = Platform {
            sys_vendor: Some("Google".into()),
            product_name: Some("Google Compute Engine".into()),
            ..Default::default()
        };
        assert_eq!(gce.cloud(), Some(Cloud::Gcp));
        let kvm = Platform {
            sys_vendor: Some("QEMU".into()),
            ..Default::default()
        };
        assert_eq!(kvm.cloud(), None);
        assert_eq!(Platform::default().cloud(), None);
    }

    #[test]
    fn boot_sysctl_last_wins_and_globs_match() {
        let s = |k: &str, v: &str, f: &str| BootSetting {
            key: k.into(),
            value: v.into(),
            file: f.into(),
            line: 1,
        };
        let b = BootConfig {
            sysctl: vec![
                s("net.core.rmem_max", "1", "/usr/lib/sysctl.d/a.conf"),
                s("net.core.rmem_max", "2", "/etc/sysctl.d/b.conf"),
                s("net.ipv4.conf.*.rp_filter", "2", "/etc/sysctl.conf"),
            ],
            ..Default::default()
        };
        assert_eq!(b.sysctl_at_boot("net.core.rmem_max").unwrap().value, "2");
        assert_eq!(
            b.sysctl_at_boot("net.ipv4.conf.eth0.rp_filter")
                .unwrap()
                .file,
            "/etc/sysctl.conf"
        );
        assert!(b.sysctl_at_boot("net.core.wmem_max").is_none());
    }

    #[test]
    fn fact_names_the_missing_file() {
        let f: Fact<u32> = Fact::missing("/proc/sys/net/netfilter/nf_conntrack_max", "not found");
        assert_eq!(
            f.get().unwrap_err().to_string(),
            "/proc/sys/net/netfilter/nf_conntrack_max: not found"
        );
        let j = serde_json::to_value(&f).unwrap();
        assert_eq!(j["status"], "missing");
        assert_eq!(Fact::Ok { value: 3u32 }.get(), Ok(&3));
    }

    #[test]
    fn deep_states() {
        let p = CpuPower {
            idle_states: BTreeMap::from([(
                0,
                vec![
                    IdleState {
                        index: 0,
                        name: "POLL".into(),
                        latency_us: 0,
                        disabled: false,
                    },
                    IdleState {
                        index: 1,
                        name: "C1".into(),
                        latency_us: 2,
                        disabled: false,
                    },
                    IdleState {
                        index: 2,
                        name: "C6".into(),
                        latency_us: 133,
                        disabled: false,
                    },
                    IdleState {
                        index: 3,
                        name: "C10".into(),
                        latency_us: 890,
                        disabled: true,
                    },
                ],
            )]),
            ..Default::default()
        };
        let d = p.deep_states_allowed(10);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].1.name, "C6");
    }
}
