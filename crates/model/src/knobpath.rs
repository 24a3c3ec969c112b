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
    }
}

/// An attribute as ethtool(8) takes it on the command line. Snapshots and
/// fixtures name ring attributes like the kernel's struct fields (`rx_mini`,
/// `rx_jumbo`); `ethtool --help` lists `rx-mini`, `rx-jumbo`, `rx-usecs`:
/// always `-`.
pub fn ethtool_cli_attr(attr: &str) -> String {
    attr.replace('_', "-")
}

/// Attributes ethtool(8) takes as `on|off` rather than a number
/// (`ethtool --help`: `-C ... adaptive-rx on|off`, `cqe-mode-rx on|off`;
/// `-G ... tx-push on|off`), in command-line spelling.
pub const ETHTOOL_SWITCHES: [&str; 6] = [
    "adaptive-rx",
    "adaptive-tx",
    "cqe-mode-rx",
    "cqe-mode-tx",
    "tx-push",
    "rx-push",
];

/// Whether `attr` (either spelling) is an `on|off` switch.
pub fn ethtool_is_switch(attr: &str) -> bool {
    ETHTOOL_SWITCHES.contains(&ethtool_cli_attr(attr).as_str())
}

/// A value as ethtool(8) takes it: switches are `off` for `0` and `on`
/// otherwise (plans and snapshots store them as 0/1); numbers as they are.
pub fn ethtool_cli_value<'a>(attr: &str, value: &'a str) -> &'a str {
    if ethtool_is_switch(attr) {
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
        ethtool_cli_attr(attr),
        ethtool_cli_value(attr, value).to_string(),
    ]
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
            ethtool_set_args("eth0", EthtoolGroup::Channels, "combined", "4"),
            ["-L", "eth0", "combined", "4"]
        );
        assert_eq!(
            ethtool_set_args("eth0", EthtoolGroup::Coalesce, "adaptive-rx", "0"),
            ["-C", "eth0", "adaptive-rx", "off"]
        );
        assert_eq!(ethtool_cli_value("adaptive-tx", "1"), "on");
        assert_eq!(ethtool_cli_value("cqe_mode_rx", "0"), "off");
        assert_eq!(ethtool_cli_value("rx-usecs", "0"), "0");
    }
}
