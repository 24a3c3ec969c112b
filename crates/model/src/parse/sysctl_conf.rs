//! Boot-time sysctl files (`sysctl.d(5)`): `key = value` lines, and the order
//! in which `systemd-sysctl` applies the files (later assignments win).
//!
//! * Lines starting with `#` or `;` are comments; blank lines are skipped.
//! * A leading `-` on the key means "ignore failures" and is dropped.
//! * A key whose first separator is `/` uses slashes (`net/core/rmem_max`):
//!   slashes and dots are swapped, as `systemd-sysctl` does.
//! * Keys may be globs (`net.ipv4.conf.*.rp_filter`, systemd 246+); they are
//!   kept as written and flagged.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};

/// One `key = value` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SysctlAssignment {
    /// Dotted key (`net.core.rmem_max`).
    pub key: String,
    /// Value with whitespace runs folded to one space (`4096 87380 6291456`).
    pub value: String,
    /// 1-based line number.
    pub line: usize,
    /// The key holds `*`, `?` or `[` (a glob over several knobs).
    pub glob: bool,
}

/// Most assignments kept from one file.
const MAX_ASSIGNMENTS: usize = 65_536;

/// Parse one sysctl.d file. Lines without `=` are skipped (systemd-sysctl
/// warns and goes on), as are lines with an empty key.
pub fn parse_sysctl_conf(text: &str) -> Result<Vec<SysctlAssignment>, ParseError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let k = k.trim();
        let k = k.strip_prefix('-').unwrap_or(k).trim();
        if k.is_empty() {
            continue;
        }
        if out.len() == MAX_ASSIGNMENTS {
            return Err(ParseError::format(i + 1, "more than 65536 assignments"));
        }
        let key = normalize_key(k);
        out.push(SysctlAssignment {
            glob: key.contains(['*', '?', '[']),
            key,
            value: v.split_whitespace().collect::<Vec<_>>().join(" "),
            line: i + 1,
        });
    }
    Ok(out)
}

/// `net/core/rmem_max` -> `net.core.rmem_max`; a dotted key is unchanged.
/// Where the first separator is `/`, dots and slashes swap (so
/// `net/ipv4/conf/eth0.100/rp_filter` -> `net.ipv4.conf.eth0/100.rp_filter`).
pub fn normalize_key(k: &str) -> String {
    match k.find(['/', '.']) {
        Some(p) if k.as_bytes().get(p) == Some(&b'/') => k
            .chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                c => c,
            })
            .collect(),
        _ => k.to_string(),
    }
}

/// The directories `systemd-sysctl` reads, highest priority first: a file
/// name in an earlier directory masks the same name in later ones.
pub const SYSCTL_DIRS: &[&str] = &[
    "/etc/sysctl.d",
    "/run/sysctl.d",
    "/usr/local/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/sysctl.d",
];

/// The files `systemd-sysctl` applies, in order: every `*.conf` name found
/// in `listing` (`(directory, entry names)`, directories as in
/// [`SYSCTL_DIRS`]), the first directory holding a name winning, sorted by
/// file name. Later files override earlier ones.
pub fn order_sysctl_files(listing: &[(&str, Vec<String>)]) -> Vec<String> {
    order_config_files(listing, ".conf")
}

/// The systemd drop-in order for any configuration directory set
/// (sysctl.d, modprobe.d, udev rules.d): names ending in `suffix`, the
/// first directory holding a name masking the others, sorted by file name.
pub fn order_config_files(listing: &[(&str, Vec<String>)], suffix: &str) -> Vec<String> {
    let mut chosen: std::collections::BTreeMap<&str, String> = std::collections::BTreeMap::new();
    for (dir, names) in listing {
        for n in names {
            if n.ends_with(suffix) && !n.starts_with('.') {
                chosen
                    .entry(n.as_str())
                    .or_insert_with(|| format!("{}/{n}", dir.trim_end_matches('/')));
            }
        }
    }
    chosen.into_values().collect()
}

/// Whether `pattern` (a sysctl key glob with `*` and `?`) matches `key`.
pub fn glob_matches(pattern: &str, key: &str) -> bool {
    fn go(p: &[u8], k: &[u8], budget: &mut u32) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        match (p.first(), k.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], k, budget) || (!k.is_empty() && go(p, &k[1..], budget)),
            (Some(b'?'), Some(_)) => go(&p[1..], &k[1..], budget),
            (Some(a), Some(b)) if a == b => go(&p[1..], &k[1..], budget),
            _ => false,
        }
    }
    let mut budget = 100_000;
    go(pattern.as_bytes(), key.as_bytes(), &mut budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // /usr/lib/sysctl.d/50-pid-max.conf as shipped by systemd on this
    // project's machine (Debian, kernel 6.18).
    const PID_MAX_6_18: &str = "\
#  This file is part of systemd.
# See sysctl.d(5) and core(5) for documentation.

# Bump the numeric PID range to make PID collisions less likely.
kernel.pid_max = 4194304
";

    // A tuning file as operators write it (RHEL 8 style).
    const NET_TUNING: &str = "\
; tuned by hand
net.core.rmem_max=16777216
 net/core/wmem_max = 16777216
-net.ipv4.tcp_rmem = 4096\t87380   16777216
net.ipv4.conf.*.rp_filter = 2
garbage line without equals
= novalue
";

    #[test]
    fn parses_systemd_file() {
        let a = parse_sysctl_conf(PID_MAX_6_18).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].key, "kernel.pid_max");
        assert_eq!(a[0].value, "4194304");
        assert_eq!(a[0].line, 5);
    }

    #[test]
    fn parses_operator_file() {
        let a = parse_sysctl_conf(NET_TUNING).unwrap();
        let keys: Vec<&str> = a.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "net.core.rmem_max",
                "net.core.wmem_max",
                "net.ipv4.tcp_rmem",
                "net.ipv4.conf.*.rp_filter"
            ]
        );
        assert_eq!(a[2].value, "4096 87380 16777216");
        assert!(a[3].glob && !a[0].glob);
        assert_eq!(a[1].line, 3);
    }

    #[test]
    fn slashes_swap_with_dots() {
        assert_eq!(
            normalize_key("net/ipv4/conf/eth0.100/rp_filter"),
            "net.ipv4.conf.eth0/100.rp_filter"
        );
        assert_eq!(
            normalize_key("net.ipv4.conf.eth0/100.rp_filter"),
            "net.ipv4.conf.eth0/100.rp_filter"
        );
    }

    #[test]
    fn etc_masks_usr_lib_and_names_sort() {
        let l = vec![
            (
                "/etc/sysctl.d",
                vec![
                    "99-sysctl.conf".into(),
                    "50-pid-max.conf".into(),
                    "README".into(),
                ],
            ),
            ("/run/sysctl.d", vec![]),
            (
                "/usr/lib/sysctl.d",
                vec!["50-pid-max.conf".into(), "10-default.conf".into()],
            ),
        ];
        assert_eq!(
            order_sysctl_files(&l),
            [
                "/usr/lib/sysctl.d/10-default.conf",
                "/etc/sysctl.d/50-pid-max.conf",
                "/etc/sysctl.d/99-sysctl.conf"
            ]
        );
    }

    #[test]
    fn globs() {
        assert!(glob_matches(
            "net.ipv4.conf.*.rp_filter",
            "net.ipv4.conf.eth0.rp_filter"
        ));
        assert!(!glob_matches(
            "net.ipv4.conf.*.rp_filter",
            "net.ipv4.conf.eth0.arp"
        ));
        assert!(glob_matches("net.core.?mem_max", "net.core.rmem_max"));
        // A pathological pattern ends within the step budget (no exponential blow-up).
        assert!(!glob_matches(
            &"*a".repeat(40),
            &format!("{}b", "a".repeat(60))
        ));
    }

    proptest! {
        #[test]
        fn never_panics(s in "[a-z.=/ *\\-#;\\n0-9]{0,300}") {
            let _ = parse_sysctl_conf(&s);
        }

        #[test]
        fn glob_never_panics(p in "[a*?.]{0,30}", k in "[a.]{0,30}") {
            let _ = glob_matches(&p, &k);
        }
    }
}
