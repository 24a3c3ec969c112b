//! tuned profiles (`tuned.conf`, an INI file): the `[main]` `include=` and
//! the `[sysctl]` settings a profile applies, so doctor can tell which
//! knobs tuned rewrites (`/usr/lib/tuned/NAME/tuned.conf`,
//! `/etc/tuned/NAME/tuned.conf`).

use crate::error::ParseError;
use serde::{Deserialize, Serialize};

/// One `key = value` of a section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TunedEntry {
    /// Key as written (`net.core.rmem_max`, `governor`).
    pub key: String,
    /// Value, trimmed.
    pub value: String,
    /// 1-based line number.
    pub line: usize,
}

/// A parsed `tuned.conf`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TunedConf {
    /// Profiles named by `[main] include=` (comma separated), in order.
    pub include: Vec<String>,
    /// Sections in file order, with their entries.
    pub sections: Vec<(String, Vec<TunedEntry>)>,
}

impl TunedConf {
    /// Entries of section `name` (empty when absent).
    pub fn section(&self, name: &str) -> &[TunedEntry] {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.as_slice())
            .unwrap_or_default()
    }
}

/// Most entries kept.
const MAX_ENTRIES: usize = 16_384;

/// Parse a `tuned.conf`.
pub fn parse_tuned_conf(text: &str) -> Result<TunedConf, ParseError> {
    let mut out = TunedConf::default();
    let mut n = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if let Some(name) = l.strip_prefix('[') {
            let name = name
                .strip_suffix(']')
                .ok_or_else(|| ParseError::invalid(ln, "section header", l))?;
            out.sections.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            return Err(ParseError::invalid(ln, "key=value line", l));
        };
        let Some((section, entries)) = out.sections.last_mut() else {
            return Err(ParseError::format(ln, "setting before any [section]"));
        };
        n += 1;
        if n > MAX_ENTRIES {
            return Err(ParseError::format(ln, "more than 16384 entries"));
        }
        let (k, v) = (k.trim(), v.trim());
        if section == "main" && k == "include" {
            out.include.extend(
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
        }
        entries.push(TunedEntry {
            key: k.to_string(),
            value: v.to_string(),
            line: ln,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // /usr/lib/tuned/network-latency/tuned.conf from tuned 2.21 (RHEL 9).
    const NETWORK_LATENCY: &str = "\
#
# tuned configuration
#

[main]
summary=Optimize for deterministic performance at the cost of increased power consumption, focused on low latency network performance
include=latency-performance

[vm]
transparent_hugepages=never

[sysctl]
net.core.busy_read=50
net.core.busy_poll=50
net.ipv4.tcp_fastopen=3
kernel.numa_balancing=0
kernel.hung_task_timeout_secs = 600
kernel.nmi_watchdog = 0
vm.stat_interval = 10
kernel.timer_migration = 0

[bootloader]
cmdline_network_latency=skew_tick=1 tsc=reliable rcupdate.rcu_normal_after_boot=1
";

    #[test]
    fn parses_network_latency() {
        let c = parse_tuned_conf(NETWORK_LATENCY).unwrap();
        assert_eq!(c.include, ["latency-performance"]);
        let s = c.section("sysctl");
        assert_eq!(s.len(), 8);
        assert_eq!(s[0].key, "net.core.busy_read");
        assert_eq!(s[0].value, "50");
        assert_eq!(s[0].line, 13);
        assert_eq!(s[4].value, "600");
        assert!(c.section("nope").is_empty());
        assert_eq!(
            c.section("bootloader")[0].value,
            "skew_tick=1 tsc=reliable rcupdate.rcu_normal_after_boot=1"
        );
    }

    #[test]
    fn bad_input() {
        assert!(parse_tuned_conf("a=b\n").is_err());
        assert!(parse_tuned_conf("[main\n").is_err());
        assert!(parse_tuned_conf("[main]\njunk\n").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "[\\[\\]a-z=#,\\n .]{0,300}") {
            let _ = parse_tuned_conf(&s);
        }
    }
}
