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
//!
//! (Over 700 lines: the last 213 are the loader's unit tests; the loader
//! itself is about 535.)

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use thiserror::Error;
use toml::Spanned;

pub use crate::rules::{AsRuleId, Rule, RuleId, CATALOGUE as RULES};

/// The rule spelled `id`, if it exists.
pub fn rule(id: &str) -> Option<&'static dyn Rule> {
    RuleId::parse(id).and_then(crate::rules::find)
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

/// What the plan does about a running irqbalance when it places IRQs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IrqbalanceMode {
    /// Keep it running and ban exactly the placed IRQs (`--banirq=N` in
    /// `IRQBALANCE_ARGS` of its environment file), then restart it.
    #[default]
    Ban,
    /// Stop it.
    Stop,
}

/// Resolved settings of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// RPS masks leave out the CPU that takes the queue's IRQ (as the 2016 EC2 C4 field test placed them).
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
    /// Ban the placed IRQs from irqbalance (default) or stop it.
    #[serde(default)]
    pub irqbalance: IrqbalanceMode,
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
            irqbalance: IrqbalanceMode::Ban,
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
    /// Enabled rules, in catalogue order.
    pub rules: Vec<RuleId>,
    /// Settings.
    pub settings: Settings,
    /// The user profile's TOML text (`None` for built-ins).
    #[serde(default)]
    pub toml: Option<String>,
    /// Exact levels of `[levels]` (experiment factor names and level
    /// syntax), planned after the rules through [`crate::levels::cell_plan`]:
    /// what `nettune autotune` writes as DIR/profile.toml. Not serialized:
    /// the TOML text (`toml`) carries them.
    #[serde(skip)]
    pub levels: Vec<(model::experiment::Knob, model::experiment::Level)>,
}

impl Profile {
    /// Whether rule `id` (a [`RuleId`] or its spelling) runs.
    pub fn enabled(&self, id: impl AsRuleId) -> bool {
        id.rule_id().is_some_and(|id| self.rules.contains(&id))
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

/// The accepted range of a numeric setting (inclusive), with the reason.
/// `docs/tune.md` lists the same ranges; a test checks that they agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingRange {
    /// Key under `[settings]`.
    pub key: &'static str,
    /// Smallest value.
    pub min: i64,
    /// Largest value.
    pub max: i64,
    /// Why the bounds are where they are.
    pub why: &'static str,
}

/// `INT_MAX`: the most an int sysctl takes.
const INT_MAX: i64 = i32::MAX as i64;

/// Ranges of the integer settings. `buffer_factor` (0.5 to 16),
/// `interrupt_throttle_rate` (0, 1, 3 or 100 to 100000) and `governor` have
/// their own checks.
pub const SETTING_RANGES: &[SettingRange] = &[
    SettingRange {
        key: "rfs_entries",
        min: 1,
        max: 1 << 29,
        why: "the kernel refuses more than 2^29 (EINVAL)",
    },
    SettingRange {
        key: "coalesce_usecs",
        min: 0,
        max: 10_000,
        why: "10 ms is far beyond any useful coalescing delay",
    },
    SettingRange {
        key: "default_rtt_us",
        min: 1,
        max: model::plan::MAX_RTT_US as i64,
        why: "10 s, the same bound as --bdp",
    },
    SettingRange {
        key: "netdev_max_backlog",
        min: 1,
        max: INT_MAX,
        why: "an int sysctl; 0 would drop every packet queued to the backlog",
    },
    SettingRange {
        key: "netdev_budget",
        min: 1,
        max: INT_MAX,
        why: "an int sysctl; 0 would let NAPI poll nothing",
    },
    SettingRange {
        key: "netdev_budget_usecs",
        min: 1,
        max: 1_000_000,
        why: "a time in µs; 1 s catches unit mistakes",
    },
    SettingRange {
        key: "busy_poll_us",
        min: 0,
        max: 1_000_000,
        why: "a time in µs; 1 s catches unit mistakes",
    },
    SettingRange {
        key: "pm_qos_resume_latency_us",
        min: 0,
        max: 1_000_000,
        why: "a time in µs (0 = no constraint); 1 s catches unit mistakes",
    },
];

/// The range of integer setting `key`.
pub fn setting_range(key: &str) -> Option<&'static SettingRange> {
    SETTING_RANGES.iter().find(|r| r.key == key)
}

/// Largest profile file read (a profile is a few hundred bytes).
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileToml {
    name: Option<Spanned<String>>,
    description: Option<Spanned<String>>,
    inherit: Option<Spanned<String>>,
    #[serde(default)]
    rules: BTreeMap<Spanned<String>, RuleToml>,
    #[serde(default)]
    settings: SettingsToml,
    #[serde(default)]
    levels: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleToml {
    enabled: bool,
}

/// Integers are read as TOML's i64 so that a negative or huge value gets the
/// range message, not a type error.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsToml {
    rps_exclude_irq_cpu: Option<bool>,
    rfs_entries: Option<Spanned<i64>>,
    coalesce: Option<CoalesceIntent>,
    coalesce_usecs: Option<Spanned<i64>>,
    buffer_factor: Option<Spanned<f64>>,
    default_rtt_us: Option<Spanned<i64>>,
    netdev_max_backlog: Option<Spanned<i64>>,
    netdev_budget: Option<Spanned<i64>>,
    netdev_budget_usecs: Option<Spanned<i64>>,
    busy_poll_us: Option<Spanned<i64>>,
    governor: Option<Spanned<String>>,
    pm_qos_resume_latency_us: Option<Spanned<i64>>,
    interrupt_throttle_rate: Option<Spanned<i64>>,
    irqbalance: Option<IrqbalanceMode>,
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
        levels: Vec::new(),
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
    let name = raw
        .name
        .as_ref()
        .map(|n| n.get_ref().clone())
        .unwrap_or_else(|| {
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

/// Whether `name_or_path` names a built-in profile; anything else is a
/// TOML file that the caller reads (this crate does no I/O: the CLI reads
/// it through `host::files`) and passes to [`parse_user`].
pub fn is_builtin(name_or_path: &str) -> bool {
    BUILTINS.contains(&name_or_path)
}

/// Enable or disable the rules a profile names; the result is in catalogue order.
fn apply_rules(
    rules: &mut Vec<RuleId>,
    named: &BTreeMap<Spanned<String>, RuleToml>,
    key_err: &dyn Fn(std::ops::Range<usize>, &str, String) -> ProfileError,
) -> Result<(), ProfileError> {
    for (name, r) in named {
        let Some(id) = RuleId::parse(name.get_ref()) else {
            let known: Vec<&str> = RULES.iter().map(|r| r.id().as_str()).collect();
            return Err(key_err(
                name.span(),
                &format!("rules.{}", name.get_ref()),
                format!("unknown rule (rules: {})", known.join(", ")),
            ));
        };
        rules.retain(|x| *x != id);
        if r.enabled {
            rules.push(id);
        }
    }
    rules.sort_by_key(|id| crate::rules::position(*id));
    Ok(())
}

// About 120 lines: one short block per key of [`Settings`], in its order.
fn apply_toml(mut p: Profile, text: &str, file: &str) -> Result<Profile, ProfileError> {
    let raw: ProfileToml = toml::from_str(text).map_err(|e| ProfileError::Toml {
        file: file.into(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let key_err = |span: std::ops::Range<usize>, key: &str, message: String| ProfileError::Key {
        file: file.into(),
        line: line_of(text, span.start),
        key: key.into(),
        message,
    };
    if let Some(d) = &raw.description {
        if let Some(bad) = d.get_ref().chars().find(|c| c.is_control()) {
            return Err(key_err(
                d.span(),
                "description",
                format!("holds the control character {bad:?}"),
            ));
        }
        p.description = d.get_ref().clone();
    }
    if let Some(n) = &raw.name {
        let v = n.get_ref();
        if v.is_empty() || v.chars().count() > 64 || v.chars().any(|c| c.is_control()) {
            return Err(key_err(
                n.span(),
                "name",
                "must be 1 to 64 characters without control characters".into(),
            ));
        }
    }
    apply_rules(&mut p.rules, &raw.rules, &key_err)?;
    for (name, v) in &raw.levels {
        let key = format!("levels.{}", name.get_ref());
        let Some(knob) = model::experiment::Knob::from_name(name.get_ref()) else {
            let known: Vec<&str> = model::experiment::Knob::ALL
                .iter()
                .map(|k| k.name())
                .collect();
            return Err(key_err(
                name.span(),
                &key,
                format!("unknown knob (knobs: {})", known.join(", ")),
            ));
        };
        let Some(level) = knob.level_of(v.get_ref()) else {
            return Err(key_err(
                v.span(),
                &key,
                format!("{} is not {}", v.get_ref(), knob.accepts()),
            ));
        };
        p.levels.push((knob, level));
    }
    let s = raw.settings;
    let st = &mut p.settings;
    // An integer setting within its range (see SETTING_RANGES).
    let int = |v: &Spanned<i64>, key: &str| -> Result<i64, ProfileError> {
        let x = *v.get_ref();
        match setting_range(key) {
            Some(r) if (r.min..=r.max).contains(&x) => Ok(x),
            Some(r) => Err(key_err(
                v.span(),
                &format!("settings.{key}"),
                format!("{x} is outside {} to {} ({})", r.min, r.max, r.why),
            )),
            None => Err(key_err(
                v.span(),
                &format!("settings.{key}"),
                "no range known for this key".into(),
            )),
        }
    };
    // Every ranged value fits in u32/u64: the ranges' maxima are at most INT_MAX.
    let as_u32 = |x: i64| u32::try_from(x).unwrap_or(u32::MAX);
    if let Some(v) = s.rps_exclude_irq_cpu {
        st.rps_exclude_irq_cpu = v;
    }
    if let Some(v) = &s.rfs_entries {
        st.rfs_entries = as_u32(int(v, "rfs_entries")?);
    }
    if let Some(v) = s.irqbalance {
        st.irqbalance = v;
    }
    if let Some(v) = s.coalesce {
        st.coalesce = v;
    }
    if let Some(v) = &s.coalesce_usecs {
        st.coalesce_usecs = as_u32(int(v, "coalesce_usecs")?);
    }
    if let Some(v) = s.buffer_factor {
        let f = *v.get_ref();
        if !(0.5..=16.0).contains(&f) {
            return Err(key_err(
                v.span(),
                "settings.buffer_factor",
                format!("{f} is outside 0.5 to 16"),
            ));
        }
        st.buffer_factor = f;
    }
    if let Some(v) = &s.default_rtt_us {
        st.default_rtt_us = u64::try_from(int(v, "default_rtt_us")?).unwrap_or(1);
    }
    if let Some(v) = &s.netdev_max_backlog {
        st.netdev_max_backlog = as_u32(int(v, "netdev_max_backlog")?);
    }
    if let Some(v) = &s.netdev_budget {
        st.netdev_budget = as_u32(int(v, "netdev_budget")?);
    }
    if let Some(v) = &s.netdev_budget_usecs {
        st.netdev_budget_usecs = as_u32(int(v, "netdev_budget_usecs")?);
    }
    if let Some(v) = &s.busy_poll_us {
        st.busy_poll_us = as_u32(int(v, "busy_poll_us")?);
    }
    if let Some(v) = &s.governor {
        let g = v.get_ref();
        let ok = (1..=15).contains(&g.len())
            && g.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !ok {
            return Err(key_err(
                v.span(),
                "settings.governor",
                "must be a cpufreq governor name: 1 to 15 of a-z, 0-9, _ and - (performance, schedutil...)".into(),
            ));
        }
        st.governor = g.clone();
    }
    if let Some(v) = &s.pm_qos_resume_latency_us {
        st.pm_qos_resume_latency_us = as_u32(int(v, "pm_qos_resume_latency_us")?);
    }
    if let Some(v) = &s.interrupt_throttle_rate {
        let x = *v.get_ref();
        if !(matches!(x, 0 | 1 | 3) || (100..=100_000).contains(&x)) {
            return Err(key_err(
                v.span(),
                "settings.interrupt_throttle_rate",
                format!("{x} is not 0 (off), 1 (dynamic), 3 (conservative) or 100 to 100000 (interrupts/s), the values e1000 and e1000e take"),
            ));
        }
        st.interrupt_throttle_rate = as_u32(x);
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
    fn levels_are_exact_knob_levels_and_errors_name_the_key() {
        use model::experiment::{Knob, Level};
        let p = parse_user(
            "inherit = \"balanced\"\n[levels]\ntcp_tw_reuse = 1\nip_local_port_range = [1024, 65535]\nrps_cpus = \"0,1\"\n",
            "at.toml",
        )
        .unwrap();
        assert_eq!(
            p.levels,
            [
                (Knob::IpLocalPortRange, Level::Range([1024, 65535])),
                (Knob::RpsCpus, Level::Cpus(vec![0, 1])),
                (Knob::TcpTwReuse, Level::Int(1)),
            ]
        );
        // Built-ins have none.
        assert!(builtin("throughput").unwrap().levels.is_empty());
        let err = |t: &str| {
            parse_user(
                &format!("inherit = \"balanced\"\n[levels]\n{t}\n"),
                "at.toml",
            )
            .unwrap_err()
            .to_string()
        };
        assert!(
            err("tcp_tw_reuse = 9").starts_with("at.toml:3: key `levels.tcp_tw_reuse`: 9 is not"),
            "{}",
            err("tcp_tw_reuse = 9")
        );
        assert!(err("tw = 1").contains("key `levels.tw`: unknown knob"));
    }

    fn user(settings: &str) -> Result<Profile, ProfileError> {
        parse_user(
            &format!("inherit = \"throughput\"\n[settings]\n{settings}\n"),
            "x.toml",
        )
    }

    fn refused(settings: &str, key: &str) {
        let e = user(settings).expect_err(settings).to_string();
        assert!(
            e.contains("x.toml:3") && e.contains(&format!("settings.{key}")),
            "{settings}: {e}"
        );
    }

    /// An absurd RTT planned terabyte buffers; 2^30 RFS entries are refused
    /// by the kernel; both are errors naming the file, the line and the key.
    #[test]
    fn out_of_range_settings_name_file_line_and_key() {
        refused("default_rtt_us = 1000000000", "default_rtt_us");
        refused("default_rtt_us = 0", "default_rtt_us");
        refused("rfs_entries = 1073741824", "rfs_entries");
        refused("netdev_budget = -1", "netdev_budget");
        refused("netdev_max_backlog = 3000000000", "netdev_max_backlog");
        refused("busy_poll_us = 5000000", "busy_poll_us");
        refused("coalesce_usecs = 99999999", "coalesce_usecs");
        refused("interrupt_throttle_rate = 2", "interrupt_throttle_rate");
        refused("interrupt_throttle_rate = 99", "interrupt_throttle_rate");
        refused(
            "interrupt_throttle_rate = 100001",
            "interrupt_throttle_rate",
        );
        refused("governor = \"performance; reboot\"", "governor");
        refused("governor = \"\"", "governor");
        refused("buffer_factor = 0.1", "buffer_factor");
        for ok in [
            "interrupt_throttle_rate = 1",
            "interrupt_throttle_rate = 100000",
            "governor = \"schedutil\"",
            "default_rtt_us = 10000000",
        ] {
            assert!(user(ok).is_ok(), "{ok}");
        }
        let e = parse_user("name = \"a\\u001b[2Jb\"\ninherit = \"latency\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml:1") && e.contains("name"), "{e}");
    }

    /// The integer ranges documented in docs/tune.md: each is in SETTING_RANGES,
    /// each of SETTING_RANGES is documented, and the loader takes both ends and
    /// refuses one past either.
    #[test]
    fn every_documented_range_is_enforced() {
        let doc = include_str!("../../../docs/tune.md");
        let mut documented = Vec::new();
        for line in doc.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let key = cells[1].trim_matches('`');
            let Some((lo, hi)) = cells[2].split_once(" to ") else {
                continue;
            };
            let (Ok(lo), Ok(hi)) = (lo.parse::<i64>(), hi.parse::<i64>()) else {
                continue;
            };
            documented.push((key.to_string(), lo, hi));
        }
        assert!(documented.len() >= SETTING_RANGES.len(), "{documented:?}");
        for r in SETTING_RANGES {
            assert!(
                documented.contains(&(r.key.to_string(), r.min, r.max)),
                "{} {}..{} is not in docs/tune.md",
                r.key,
                r.min,
                r.max
            );
        }
        for (key, lo, hi) in &documented {
            assert!(
                setting_range(key).is_some(),
                "{key} documented, not enforced"
            );
            assert!(user(&format!("{key} = {lo}")).is_ok(), "{key} = {lo}");
            assert!(user(&format!("{key} = {hi}")).is_ok(), "{key} = {hi}");
            refused(&format!("{key} = {}", lo - 1), key);
            refused(&format!("{key} = {}", hi + 1), key);
        }
        assert!(doc.contains("| `buffer_factor` | 0.5 to 16 |"));
        assert!(doc.contains("| `interrupt_throttle_rate` | 0, 1, 3 or 100 to 100000 |"));
        assert!(user("buffer_factor = 0.5").is_ok() && user("buffer_factor = 16.0").is_ok());
        refused("buffer_factor = 16.01", "buffer_factor");
    }

    #[test]
    fn built_in_profiles_are_within_the_ranges() {
        for name in BUILTINS {
            let p = builtin(name).unwrap();
            let s = &p.settings;
            for (key, v) in [
                ("rfs_entries", i64::from(s.rfs_entries)),
                ("coalesce_usecs", i64::from(s.coalesce_usecs)),
                ("default_rtt_us", s.default_rtt_us as i64),
                ("netdev_max_backlog", i64::from(s.netdev_max_backlog)),
                ("netdev_budget", i64::from(s.netdev_budget)),
                ("netdev_budget_usecs", i64::from(s.netdev_budget_usecs)),
                ("busy_poll_us", i64::from(s.busy_poll_us)),
                (
                    "pm_qos_resume_latency_us",
                    i64::from(s.pm_qos_resume_latency_us),
                ),
            ] {
                let r = setting_range(key).unwrap();
                assert!((r.min..=r.max).contains(&v), "{name}: {key} = {v}");
            }
        }
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
