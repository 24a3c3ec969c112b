//! udev rules (`/etc/udev/rules.d/*.rules`) that set network knobs at boot
//! or hot-plug, best effort: a rule line is kept when it names one of the
//! knobs nettune plans (an `ATTR{...}` assignment of a queue, IRQ or device
//! setting, or a `RUN` of `ethtool`). Its other conditions are not evaluated.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};

/// A rule line that touches network knobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdevKnobLine {
    /// 1-based line number where the rule starts.
    pub line: usize,
    /// The knob words it names (`rps_cpus`, `ethtool -G`, `tx_queue_len`).
    pub knobs: Vec<String>,
    /// The rule text (continuations joined, at most 512 characters).
    pub text: String,
}

/// Words that mark a rule as setting a knob nettune also writes.
const KNOBS: &[&str] = &[
    "rps_cpus",
    "rps_flow_cnt",
    "xps_cpus",
    "xps_rxqs",
    "smp_affinity",
    "tx_queue_len",
    "gro_flush_timeout",
    "napi_defer_hard_irqs",
    "threaded",
    "mtu",
    "byte_queue_limits",
    "ethtool",
];

/// Most lines kept from one file.
const MAX_LINES: usize = 16_384;

/// Parse one rules file, keeping the lines that set network knobs.
pub fn parse_udev_rules(text: &str) -> Result<Vec<UdevKnobLine>, ParseError> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut start = 0usize;
    for (i, raw) in text.lines().enumerate() {
        if pending.is_empty() {
            start = i + 1;
        }
        if let Some(head) = raw.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        pending.push_str(raw);
        let rule = std::mem::take(&mut pending);
        let t = rule.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let knobs = knob_words(t);
        if knobs.is_empty() {
            continue;
        }
        if out.len() == MAX_LINES {
            return Err(ParseError::format(start, "more than 16384 knob lines"));
        }
        out.push(UdevKnobLine {
            line: start,
            knobs,
            text: t.chars().take(512).collect(),
        });
    }
    Ok(out)
}

/// The knob words an assignment in `rule` names: `ATTR{...}=` keys (not
/// `==` matches) and `ethtool` in a `RUN`.
fn knob_words(rule: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in rule.split(',') {
        let p = part.trim();
        let b = p.as_bytes();
        let assign = p
            .find('=')
            .is_some_and(|e| e > 0 && b.get(e + 1) != Some(&b'=') && b.get(e - 1) != Some(&b'!'));
        if !assign {
            continue;
        }
        let (lhs, rhs) = p.split_once('=').unwrap_or((p, ""));
        let lhs = lhs.trim_end_matches(['+', ':']);
        if lhs.starts_with("RUN") {
            if let Some(pos) = rhs.find("ethtool") {
                let flag = rhs[pos..]
                    .split_whitespace()
                    .nth(1)
                    .filter(|f| f.starts_with('-'))
                    .unwrap_or("");
                let w = format!("ethtool {flag}").trim().to_string();
                if !out.contains(&w) {
                    out.push(w);
                }
            }
            continue;
        }
        if lhs.starts_with("ATTR") || lhs.starts_with("SYSCTL") {
            for k in KNOBS {
                if lhs.contains(k) && !out.iter().any(|o| o == k) {
                    out.push((*k).to_string());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Rules as operators write them (RHEL 8 / Ubuntu 22.04 style).
    const RULES: &str = "\
# steer receive work at boot
SUBSYSTEM==\"net\", ACTION==\"add\", KERNEL==\"eth*\", ATTR{queues/rx-0/rps_cpus}=\"fe\"
SUBSYSTEM==\"net\", ACTION==\"add\", ATTR{tx_queue_len}=\"10000\", \\
  RUN+=\"/sbin/ethtool -G $name rx 4096\"
SUBSYSTEM==\"net\", ATTR{mtu}==\"1500\", NAME=\"lan0\"
SUBSYSTEM==\"block\", ATTR{queue/scheduler}=\"none\"
";

    #[test]
    fn keeps_knob_lines() {
        let l = parse_udev_rules(RULES).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].line, 2);
        assert_eq!(l[0].knobs, ["rps_cpus"]);
        assert_eq!(l[1].line, 3);
        assert_eq!(l[1].knobs, ["tx_queue_len", "ethtool -G"]);
    }

    proptest! {
        #[test]
        fn never_panics(s in "[A-Z{}a-z=!+,\" \\\\\\n_]{0,300}") {
            let _ = parse_udev_rules(&s);
        }
    }
}
