//! Profiles: which rules run and with which settings.
//!
//! The built-ins (`latency`, `throughput`, `balanced`) are TOML files under
//! `crates/tune/profiles/`, parsed like user profiles. A user profile names a
//! built-in in `inherit`, then overrides settings or enables/disables rules:
//!
//! ```toml
//! name = "web"
//! inherit = "throughput"
//! [rules]
//! rings = { enabled = false }
//! [settings]
//! rfs_entries = 65536
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use thiserror::Error;
use toml::Spanned;

/// A rule of the planner: what it does, why, and where that comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    /// Id used in profiles and plans.
    pub id: &'static str,
    /// Rationale, one sentence.
    pub rationale: &'static str,
    /// A seed or a kernel document.
    pub source: &'static str,
}

/// Every rule, in phase order.
pub const RULES: &[RuleInfo] = &[
    RuleInfo {
        id: "irqbalance",
        rationale: "irqbalance rewrites IRQ affinity every 10 s, undoing hand placement; stop it when nettune places IRQs",
        source: "seed 004 (irqbalance vs manual affinity); irqbalance(1)",
    },
    RuleInfo {
        id: "channels",
        rationale: "one RX/TX channel per usable physical core of the NIC's node lets RSS spread flows in hardware",
        source: "Documentation/networking/scaling.rst (RSS); ethtool(8) -L",
    },
    RuleInfo {
        id: "irq-affinity",
        rationale: "one queue IRQ per physical core of the NIC's NUMA node; SMT siblings share a core and gain nothing for interrupts",
        source: "seed 000 (eth0-TxRx-0 on CPU0, eth0-TxRx-1 on CPU9); Documentation/core-api/irq/irq-affinity.rst",
    },
    RuleInfo {
        id: "rps",
        rationale: "with fewer RX queues than cores, RPS spreads protocol processing over the other physical cores of the IRQ's node",
        source: "seed 000 (rps_cpus 000001fe / 0003fc00); Documentation/networking/scaling.rst (RPS)",
    },
    RuleInfo {
        id: "rfs",
        rationale: "RFS steers each flow to the CPU where its socket is read; rps_flow_cnt = rps_sock_flow_entries / queues",
        source: "Documentation/networking/scaling.rst (RFS)",
    },
    RuleInfo {
        id: "xps",
        rationale: "XPS mirrors the IRQ placement so a CPU transmits on the queue whose completions it handles",
        source: "Documentation/networking/scaling.rst (XPS)",
    },
    RuleInfo {
        id: "coalesce",
        rationale: "interrupt coalescing trades latency for CPU: off and low µs for latency, adaptive or higher µs for throughput",
        source: "seeds 001, 003 (InterruptThrottleRate); Documentation/networking/ethtool-netlink.rst (COALESCE_SET)",
    },
    RuleInfo {
        id: "rings",
        rationale: "drops at the NIC mean the RX ring overflowed between polls; larger rings absorb bursts",
        source: "seed 002 (RX descriptors up to 4096); ethtool(8) -G",
    },
    RuleInfo {
        id: "socket-buffers",
        rationale: "TCP needs buffers of about 1.33 x the bandwidth-delay product to fill a long fat pipe",
        source: "seed 004 (100 Mbit/s, 100 ms: 21 Mbit/s untuned, 95 Mbit/s with buffers at 1.33 x BDP)",
    },
    RuleInfo {
        id: "backlog",
        rationale: "softnet drops mean the per-CPU backlog overflowed; time_squeeze means the NAPI budget ran out with work left",
        source: "Documentation/admin-guide/sysctl/net.rst (netdev_max_backlog, netdev_budget)",
    },
    RuleInfo {
        id: "busy-poll",
        rationale: "busy polling the device queue from the socket call avoids the interrupt and wake-up on the latency path",
        source: "Documentation/admin-guide/sysctl/net.rst (busy_poll, busy_read)",
    },
    RuleInfo {
        id: "governor",
        rationale: "the performance governor keeps cores at full clock, as tuned's latency- and throughput-performance profiles do",
        source: "seed 004 (tuned profile table: CPU governor performance)",
    },
    RuleInfo {
        id: "pm-qos",
        rationale: "a per-CPU resume latency limit keeps cpuidle out of deep C-states whose exit costs tens of µs",
        source: "seed 004 (C-states, processor.max_cstate); Documentation/ABI/testing/sysfs-devices-power",
    },
    RuleInfo {
        id: "module-params",
        rationale: "InterruptThrottleRate is a module parameter: written as a modprobe.d snippet to review, effective on reload",
        source: "seeds 001, 003 (InterruptThrottleRate 0 off, 1 dynamic, 3 conservative, 100-100000/s)",
    },
];

/// The rule `id`, if it exists.
pub fn rule(id: &str) -> Option<&'static RuleInfo> {
    RULES.iter().find(|r| r.id == id)
}

/// Coalescing intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoalesceIntent {
    /// Adaptive off, low fixed µs.
    LowLatency,
    /// Adaptive on where the driver has it, else higher µs.
    Adaptive,
    /// Leave the driver's settings.
    Keep,
}

/// Resolved settings of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// RPS masks leave out the CPU that takes the queue's IRQ (seed 000).
    pub rps_exclude_irq_cpu: bool,
    /// `net.core.rps_sock_flow_entries`.
    pub rfs_entries: u32,
    /// Coalescing intent.
    pub coalesce: CoalesceIntent,
    /// µs for `rx-usecs`/`tx-usecs` (low under low-latency, floor under adaptive).
    pub coalesce_usecs: u32,
    /// Socket buffer size as a multiple of the BDP.
    pub buffer_factor: f64,
    /// RTT assumed with the link speed when `--bdp` is not given, in µs.
    pub default_rtt_us: u64,
    /// `net.core.netdev_max_backlog` when softnet drops are seen.
    pub netdev_max_backlog: u32,
    /// `net.core.netdev_budget` when time_squeeze is seen.
    pub netdev_budget: u32,
    /// `net.core.netdev_budget_usecs` when time_squeeze is seen.
    pub netdev_budget_usecs: u32,
    /// `net.core.busy_poll` and `busy_read`, µs.
    pub busy_poll_us: u32,
    /// CPU frequency governor.
    pub governor: String,
    /// `pm_qos_resume_latency_us` per CPU.
    pub pm_qos_resume_latency_us: u32,
    /// `InterruptThrottleRate` for e1000/e1000e.
    pub interrupt_throttle_rate: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rps_exclude_irq_cpu: false,
            rfs_entries: 32768,
            coalesce: CoalesceIntent::Keep,
            coalesce_usecs: 50,
            buffer_factor: 1.33,
            default_rtt_us: 10_000,
            netdev_max_backlog: 5000,
            netdev_budget: 600,
            netdev_budget_usecs: 8000,
            busy_poll_us: 50,
            governor: "performance".into(),
            pm_qos_resume_latency_us: 20,
            interrupt_throttle_rate: 3,
        }
    }
}

/// A resolved profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Name.
    pub name: String,
    /// One line.
    pub description: String,
    /// The built-in it inherits from (itself for built-ins).
    pub base: String,
    /// Enabled rule ids.
    pub rules: Vec<String>,
    /// Settings.
    pub settings: Settings,
    /// The user profile's TOML text (`None` for built-ins).
    #[serde(default)]
    pub toml: Option<String>,
}

impl Profile {
    /// Whether rule `id` runs.
    pub fn enabled(&self, id: &str) -> bool {
        self.rules.iter().any(|r| r == id)
    }
}

/// Names of the built-in profiles.
pub const BUILTINS: [&str; 3] = ["latency", "throughput", "balanced"];

fn builtin_text(name: &str) -> Option<&'static str> {
    match name {
        "latency" => Some(include_str!("../profiles/latency.toml")),
        "throughput" => Some(include_str!("../profiles/throughput.toml")),
        "balanced" => Some(include_str!("../profiles/balanced.toml")),
        _ => None,
    }
}

/// A profile that could not be loaded.
#[derive(Debug, Error)]
pub enum ProfileError {
    /// No built-in of that name.
    #[error("unknown profile `{0}` (built-ins: latency, throughput, balanced; or a path to a .toml file)")]
    Unknown(String),
    /// TOML syntax or shape error; the message names line and key.
    #[error("{file}: {message}")]
    Toml {
        /// File name.
        file: String,
        /// toml's message (line, column and key).
        message: String,
    },
    /// A key with a bad value, at a line.
    #[error("{file}:{line}: key `{key}`: {message}")]
    Key {
        /// File name.
        file: String,
        /// 1-based line.
        line: usize,
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The file could not be read.
    #[error("{file}: {message}")]
    Read {
        /// File name.
        file: String,
        /// OS message.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileToml {
    name: Option<String>,
    description: Option<String>,
    inherit: Option<Spanned<String>>,
    #[serde(default)]
    rules: BTreeMap<Spanned<String>, RuleToml>,
    #[serde(default)]
    settings: SettingsToml,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleToml {
    enabled: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsToml {
    rps_exclude_irq_cpu: Option<bool>,
    rfs_entries: Option<Spanned<u32>>,
    coalesce: Option<CoalesceIntent>,
    coalesce_usecs: Option<u32>,
    buffer_factor: Option<Spanned<f64>>,
    default_rtt_us: Option<Spanned<u64>>,
    netdev_max_backlog: Option<u32>,
    netdev_budget: Option<u32>,
    netdev_budget_usecs: Option<u32>,
    busy_poll_us: Option<u32>,
    governor: Option<String>,
    pm_qos_resume_latency_us: Option<u32>,
    interrupt_throttle_rate: Option<u32>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Load a built-in by name.
pub fn builtin(name: &str) -> Result<Profile, ProfileError> {
    let text = builtin_text(name).ok_or_else(|| ProfileError::Unknown(name.into()))?;
    let base = Profile {
        name: name.into(),
        description: String::new(),
        base: name.into(),
        rules: Vec::new(),
        settings: Settings::default(),
        toml: None,
    };
    apply_toml(base, text, &format!("<built-in {name}>"))
}

/// Parse a user profile (TOML text) that inherits from a built-in.
pub fn parse_user(text: &str, file: &str) -> Result<Profile, ProfileError> {
    let raw: ProfileToml = toml::from_str(text).map_err(|e| ProfileError::Toml {
        file: file.into(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let inherit = raw.inherit.as_ref().ok_or_else(|| ProfileError::Key {
        file: file.into(),
        line: 1,
        key: "inherit".into(),
        message: "missing: a user profile names the built-in it starts from (latency, throughput, balanced)".into(),
    })?;
    let base = match builtin(inherit.get_ref()) {
        Ok(p) => p,
        Err(_) => {
            return Err(ProfileError::Key {
                file: file.into(),
                line: line_of(text, inherit.span().start),
                key: "inherit".into(),
                message: format!(
                    "unknown built-in `{}` (latency, throughput, balanced)",
                    inherit.get_ref()
                ),
            })
        }
    };
    let name = raw.name.clone().unwrap_or_else(|| {
        std::path::Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "custom".into())
    });
    let mut p = apply_toml(base, text, file)?;
    p.name = name;
    p.toml = Some(text.to_string());
    Ok(p)
}

/// Load `name_or_path`: a built-in name, or a path to a TOML file.
pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
    if BUILTINS.contains(&name_or_path) {
        return builtin(name_or_path);
    }
    let path = std::path::Path::new(name_or_path);
    if path.extension().is_some_and(|e| e == "toml") || path.exists() {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Read {
            file: name_or_path.into(),
            message: e.to_string(),
        })?;
        return parse_user(&text, name_or_path);
    }
    Err(ProfileError::Unknown(name_or_path.into()))
}

fn apply_toml(mut p: Profile, text: &str, file: &str) -> Result<Profile, ProfileError> {
    let raw: ProfileToml = toml::from_str(text).map_err(|e| ProfileError::Toml {
        file: file.into(),
        message: e.to_string().trim_end().to_string(),
    })?;
    if let Some(d) = raw.description {
        p.description = d;
    }
    let key_err = |span: std::ops::Range<usize>, key: &str, message: String| ProfileError::Key {
        file: file.into(),
        line: line_of(text, span.start),
        key: key.into(),
        message,
    };
    for (id, r) in &raw.rules {
        if rule(id.get_ref()).is_none() {
            let known: Vec<&str> = RULES.iter().map(|r| r.id).collect();
            return Err(key_err(
                id.span(),
                &format!("rules.{}", id.get_ref()),
                format!("unknown rule (rules: {})", known.join(", ")),
            ));
        }
        p.rules.retain(|x| x != id.get_ref());
        if r.enabled {
            p.rules.push(id.get_ref().clone());
        }
    }
    p.rules
        .sort_by_key(|id| RULES.iter().position(|r| r.id == id).unwrap_or(usize::MAX));
    let s = raw.settings;
    let st = &mut p.settings;
    if let Some(v) = s.rps_exclude_irq_cpu {
        st.rps_exclude_irq_cpu = v;
    }
    if let Some(v) = s.rfs_entries {
        if *v.get_ref() == 0 || *v.get_ref() > (1 << 30) {
            return Err(key_err(
                v.span(),
                "settings.rfs_entries",
                "must be between 1 and 2^30".into(),
            ));
        }
        st.rfs_entries = *v.get_ref();
    }
    if let Some(v) = s.coalesce {
        st.coalesce = v;
    }
    if let Some(v) = s.coalesce_usecs {
        st.coalesce_usecs = v;
    }
    if let Some(v) = s.buffer_factor {
        let f = *v.get_ref();
        if !(0.5..=16.0).contains(&f) {
            return Err(key_err(
                v.span(),
                "settings.buffer_factor",
                format!("{f} is outside 0.5..16"),
            ));
        }
        st.buffer_factor = f;
    }
    if let Some(v) = s.default_rtt_us {
        if *v.get_ref() == 0 {
            return Err(key_err(
                v.span(),
                "settings.default_rtt_us",
                "must be above zero".into(),
            ));
        }
        st.default_rtt_us = *v.get_ref();
    }
    if let Some(v) = s.netdev_max_backlog {
        st.netdev_max_backlog = v;
    }
    if let Some(v) = s.netdev_budget {
        st.netdev_budget = v;
    }
    if let Some(v) = s.netdev_budget_usecs {
        st.netdev_budget_usecs = v;
    }
    if let Some(v) = s.busy_poll_us {
        st.busy_poll_us = v;
    }
    if let Some(v) = s.governor {
        st.governor = v;
    }
    if let Some(v) = s.pm_qos_resume_latency_us {
        st.pm_qos_resume_latency_us = v;
    }
    if let Some(v) = s.interrupt_throttle_rate {
        st.interrupt_throttle_rate = v;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_and_differ() {
        let l = builtin("latency").unwrap();
        let t = builtin("throughput").unwrap();
        let b = builtin("balanced").unwrap();
        assert!(l.enabled("busy-poll") && !l.enabled("rps"));
        assert!(t.enabled("rps") && t.settings.rps_exclude_irq_cpu);
        assert!(b.enabled("rps") && !b.settings.rps_exclude_irq_cpu);
        assert_eq!(t.settings.coalesce, CoalesceIntent::Adaptive);
        assert_eq!(l.settings.coalesce, CoalesceIntent::LowLatency);
    }

    #[test]
    fn user_profile_inherits_and_overrides() {
        let p = parse_user(
            "name = \"web\"\ninherit = \"throughput\"\n[rules]\nrings = { enabled = false }\nbusy-poll = { enabled = true }\n[settings]\nrfs_entries = 65536\n",
            "web.toml",
        )
        .unwrap();
        assert_eq!(p.name, "web");
        assert_eq!(p.base, "throughput");
        assert!(!p.enabled("rings") && p.enabled("busy-poll") && p.enabled("rps"));
        assert_eq!(p.settings.rfs_entries, 65536);
        assert!(p.settings.rps_exclude_irq_cpu);
    }

    #[test]
    fn malformed_profiles_name_line_and_key() {
        let e = parse_user(
            "inherit = \"throughput\"\n\n[settings]\nrfs_entrys = 5\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 4") && e.contains("rfs_entrys"), "{e}");
        let e = parse_user(
            "inherit = \"throughput\"\n[rules]\nrpss = { enabled = false }\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("x.toml:3") && e.contains("rules.rpss"), "{e}");
        let e = parse_user("inherit = \"fast\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml:1") && e.contains("inherit"), "{e}");
        let e = parse_user(
            "inherit = \"latency\"\n[settings]\nbuffer_factor = 99.0\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("x.toml:3") && e.contains("buffer_factor"), "{e}");
        let e = parse_user(
            "inherit = \"latency\"\n[settings]\ncoalesce_usecs = \"eight\"\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 3") && e.contains("coalesce_usecs"), "{e}");
        assert!(parse_user("[settings]\n", "x.toml")
            .unwrap_err()
            .to_string()
            .contains("inherit"));
    }
}
