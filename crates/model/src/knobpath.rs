//! Where kernel knobs live and how ethtool(8) spells them: the one place the
//! planner (its `--script` output) and apply take these from.
//!
//! Paths are as on a live host; callers resolve them under a root.

use crate::plan::EthtoolGroup;

/// `/proc/net/softnet_stat`: per-CPU backlog counters.
pub const SOFTNET_STAT: &str = "/proc/net/softnet_stat";

/// `/proc/sys/` plus the key with `.` turned into `/`
/// (`net.core.rmem_max` → `/proc/sys/net/core/rmem_max`).
pub fn sysctl_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// `rps_cpus` of RX queue `queue` of `iface`.
pub fn rps_cpus_path(iface: &str, queue: u32) -> String {
    format!("/sys/class/net/{iface}/queues/rx-{queue}/rps_cpus")
}

/// `rps_flow_cnt` of RX queue `queue` of `iface`.
pub fn rps_flow_cnt_path(iface: &str, queue: u32) -> String {
    format!("/sys/class/net/{iface}/queues/rx-{queue}/rps_flow_cnt")
}

/// `xps_cpus` of TX queue `queue` of `iface`.
pub fn xps_cpus_path(iface: &str, queue: u32) -> String {
    format!("/sys/class/net/{iface}/queues/tx-{queue}/xps_cpus")
}

/// The cpufreq governor of `cpu`.
pub fn scaling_governor_path(cpu: u32) -> String {
    format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")
}

/// The PM QoS resume latency limit of `cpu`.
pub fn pm_qos_resume_latency_path(cpu: u32) -> String {
    format!("/sys/devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us")
}

/// The ethtool(8) option that sets a group: `-L` (channels), `-G` (rings),
/// `-C` (coalescing).
pub fn ethtool_set_flag(group: EthtoolGroup) -> &'static str {
    match group {
        EthtoolGroup::Channels => "-L",
        EthtoolGroup::Rings => "-G",
        EthtoolGroup::Coalesce => "-C",
        EthtoolGroup::Features => "-K",
    }
}

/// The offloads nettune reads and may turn back on, by the kernel's feature
/// name (`ethtool -k`, `ETHTOOL_MSG_FEATURES_GET`) and the keyword
/// `ethtool -K` takes (ethtool(8)): receive checksum, GRO, TSO, GSO.
pub const ETHTOOL_FEATURES: [(&str, &str); 4] = [
    ("rx-checksum", "rx"),
    ("rx-gro", "gro"),
    ("tx-tcp-segmentation", "tso"),
    ("tx-generic-segmentation", "gso"),
];

/// An attribute of `group` as ethtool(8) takes it on the command line.
/// Snapshots and fixtures name ring attributes like the kernel's struct
/// fields (`rx_mini`, `rx_jumbo`); `ethtool --help` lists `rx-mini`,
/// `rx-jumbo`, `rx-usecs`: always `-`. An offload is `-K`'s keyword for its
/// feature name (`rx-checksum` is `rx`, [`ETHTOOL_FEATURES`]).
pub fn ethtool_cli_attr(group: EthtoolGroup, attr: &str) -> String {
    match ETHTOOL_FEATURES.iter().find(|(f, _)| *f == attr) {
        Some((_, kw)) if group == EthtoolGroup::Features => kw.to_string(),
        _ => attr.replace('_', "-"),
    }
}

/// Attributes ethtool(8) takes as `on|off` rather than a number
/// (`ethtool --help`: `-C ... adaptive-rx on|off`, `cqe-mode-rx on|off`;
/// `-G ... tx-push on|off`), in command-line spelling. Every offload
/// (`-K`) is one too.
pub const ETHTOOL_SWITCHES: [&str; 6] = [
    "adaptive-rx",
    "adaptive-tx",
    "cqe-mode-rx",
    "cqe-mode-tx",
    "tx-push",
    "rx-push",
];

/// Whether `attr` (either spelling) of `group` is an `on|off` switch.
pub fn ethtool_is_switch(group: EthtoolGroup, attr: &str) -> bool {
    group == EthtoolGroup::Features || ETHTOOL_SWITCHES.contains(&attr.replace('_', "-").as_str())
}

/// A value as ethtool(8) takes it: switches are `off` for `0` and `on`
/// otherwise (plans and snapshots store them as 0/1); numbers as they are.
pub fn ethtool_cli_value<'a>(group: EthtoolGroup, attr: &str, value: &'a str) -> &'a str {
    if ethtool_is_switch(group, attr) {
        if value == "0" {
            "off"
        } else {
            "on"
        }
    } else {
        value
    }
}

/// The arguments after `ethtool` that set one attribute:
/// `[flag, iface, attr, value]`, e.g. `["-C", "eth0", "rx-usecs", "50"]`.
pub fn ethtool_set_args(iface: &str, group: EthtoolGroup, attr: &str, value: &str) -> [String; 4] {
    [
        ethtool_set_flag(group).to_string(),
        iface.to_string(),
        ethtool_cli_attr(group, attr),
        ethtool_cli_value(group, attr, value).to_string(),
    ]
}

/// Interface files under `/sys/class/net/IF/` that nettune plans
/// (NAPI deferral and threading; the queue length).
pub const IFACE_FILES: [&str; 4] = [
    "gro_flush_timeout",
    "napi_defer_hard_irqs",
    "threaded",
    "tx_queue_len",
];

/// Per-queue files under `/sys/class/net/IF/queues/`: `rx-N/…` and `tx-N/…`.
pub const QUEUE_FILES: [(&str, &str); 3] = [
    ("rx-", "rps_cpus"),
    ("rx-", "rps_flow_cnt"),
    ("tx-", "xps_cpus"),
];

/// IRQ files under `/proc/irq/N/` that apply writes: the affinity the plan
/// sets and, under a fixture root, the effective affinity it mirrors.
pub const IRQ_FILES: [&str; 4] = [
    "smp_affinity_list",
    "smp_affinity",
    "effective_affinity_list",
    "effective_affinity",
];

/// Kernel modules whose parameters nettune plans and reloads: the drivers
/// of its `InterruptThrottleRate` table (`tune::drivers::ITR_DRIVERS`,
/// whose test checks that every driver there is here).
pub const KNOWN_MODULES: [&str; 4] = ["e1000", "e1000e", "ixgbe", "ixgbevf"];

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_iface(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 15
        && s != "."
        && s != ".."
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c != '/' && c != ':' && !c.is_whitespace() && !c.is_control())
}

/// Whether `path` is a kernel file nettune plans: a sysctl under
/// `/proc/sys/net/`, an interface or queue file under `/sys/class/net/`
/// ([`IFACE_FILES`], [`QUEUE_FILES`]), an IRQ's affinity ([`IRQ_FILES`]),
/// a CPU's cpufreq governor or its `pm_qos_resume_latency_us`. Nothing
/// else under `/proc/sys` or `/sys` (`kernel/core_pattern`,
/// `kernel/modprobe`, `uevent_helper`, `binfmt_misc` are code execution as
/// root) is.
pub fn is_planned_kernel_file(path: &str) -> bool {
    if let Some(rest) = path.strip_prefix("/proc/sys/net/") {
        return !rest.is_empty()
            && rest
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != "..");
    }
    if let Some(rest) = path.strip_prefix("/sys/class/net/") {
        let parts: Vec<&str> = rest.split('/').collect();
        return match parts.as_slice() {
            [iface, file] => is_iface(iface) && IFACE_FILES.contains(file),
            [iface, "queues", queue, file] => {
                is_iface(iface)
                    && QUEUE_FILES.iter().any(|(kind, f)| {
                        f == file && queue.strip_prefix(kind).is_some_and(is_number)
                    })
            }
            _ => false,
        };
    }
    if let Some(rest) = path.strip_prefix("/proc/irq/") {
        return match rest.split_once('/') {
            Some((irq, file)) => is_number(irq) && IRQ_FILES.contains(&file),
            None => false,
        };
    }
    if let Some(rest) = path.strip_prefix("/sys/devices/system/cpu/cpu") {
        return match rest.split_once('/') {
            Some((cpu, file)) => {
                is_number(cpu)
                    && matches!(
                        file,
                        "cpufreq/scaling_governor" | "power/pm_qos_resume_latency_us"
                    )
            }
            None => false,
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_become_proc_sys_paths() {
        assert_eq!(
            sysctl_path("net.core.rmem_max"),
            "/proc/sys/net/core/rmem_max"
        );
        assert_eq!(
            sysctl_path("net.ipv4.tcp_rmem"),
            "/proc/sys/net/ipv4/tcp_rmem"
        );
    }

    /// ethtool(8) spells every attribute with `-` (`ethtool --help`:
    /// `-G ... [ rx-mini N ] [ rx-jumbo N ]`, `-C ... [rx-usecs N]`).
    #[test]
    fn ethtool_args_use_the_cli_spelling() {
        assert_eq!(
            ethtool_set_args("eth0", EthtoolGroup::Rings, "rx_mini", "512"),
            ["-G", "eth0", "rx-mini", "512"]
        );
        assert_eq!(
            ethtool_set_args("eth0", EthtoolGroup::Coalesce, "rx-usecs", "50"),
            ["-C", "eth0", "rx-usecs", "50"]
        );
        assert_eq!(
            ethtool_set_args("eth0", EthtoolGroup::Features, "rx-checksum", "1"),
            ["-K", "eth0", "rx", "on"]
        );
        assert_eq!(
            ethtool_set_args(
                "eth0",
                EthtoolGroup::Features,
                "tx-generic-segmentation",
                "0"
            ),
            ["-K", "eth0", "gso", "off"]
        );
        assert_eq!(
            ethtool_set_args("eth0", EthtoolGroup::Channels, "combined", "4"),
            ["-L", "eth0", "combined", "4"]
        );
        assert_eq!(
            ethtool_set_args("eth0", EthtoolGroup::Coalesce, "adaptive-rx", "0"),
            ["-C", "eth0", "adaptive-rx", "off"]
        );
        assert_eq!(
            ethtool_cli_value(EthtoolGroup::Coalesce, "adaptive-tx", "1"),
            "on"
        );
        assert_eq!(
            ethtool_cli_value(EthtoolGroup::Coalesce, "cqe_mode_rx", "0"),
            "off"
        );
        assert_eq!(
            ethtool_cli_value(EthtoolGroup::Coalesce, "rx-usecs", "0"),
            "0"
        );
    }

    #[test]
    fn planned_kernel_files_and_nothing_else() {
        for ok in [
            sysctl_path("net.core.rmem_max"),
            sysctl_path("net.ipv4.tcp_rmem"),
            rps_cpus_path("eth0", 0),
            rps_flow_cnt_path("ens1f0", 31),
            xps_cpus_path("eth0.100", 7),
            scaling_governor_path(12),
            pm_qos_resume_latency_path(0),
            "/sys/class/net/eth0/gro_flush_timeout".into(),
            "/sys/class/net/eth0/threaded".into(),
            crate::plan::irq_affinity_path(45),
            "/proc/irq/45/effective_affinity".into(),
        ] {
            assert!(is_planned_kernel_file(&ok), "{ok}");
        }
        for bad in [
            "/proc/sys/kernel/core_pattern",
            "/proc/sys/kernel/modprobe",
            "/proc/sys/kernel/hotplug",
            "/proc/sys/fs/binfmt_misc/register",
            "/sys/kernel/uevent_helper",
            "/sys/fs/cgroup/release_agent",
            "/proc/sys/net/",
            "/proc/sys/net/../kernel/modprobe",
            "/sys/class/net/eth0/queues/rx-0/../../../../kernel/uevent_helper",
            "/sys/class/net/eth0/address",
            "/sys/class/net/eth0/queues/rx-x/rps_cpus",
            "/sys/class/net/eth0/queues/tx-0/rps_cpus",
            "/sys/class/net/eth0/device/remove",
            "/proc/irq/5/node",
            "/proc/irq/default_smp_affinity",
            "/sys/devices/system/cpu/cpu0/online",
            "/sys/devices/system/cpu/cpufreq/boost",
            "/sys/module/e1000e/parameters/InterruptThrottleRate",
        ] {
            assert!(!is_planned_kernel_file(bad), "{bad}");
        }
    }
}
