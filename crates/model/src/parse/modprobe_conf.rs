//! `modprobe.d(5)` files: the `options MODULE name=value ...` lines that set
//! driver parameters at load time (`options ixgbe InterruptThrottleRate=1,1`).
//! A trailing `\` continues a line; `#` starts a comment line. Other
//! commands (`install`, `blacklist`, `alias`, `softdep`) are skipped.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};

/// One `options` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleOptions {
    /// Module name, `-` folded to `_` as the kernel does (`ixgbe`).
    pub module: String,
    /// `name=value` pairs in order; a bare `name` has an empty value.
    pub params: Vec<(String, String)>,
    /// 1-based line number where the command starts.
    pub line: usize,
}

/// Most `options` lines kept from one file.
const MAX_LINES: usize = 16_384;

/// Parse one modprobe.d file.
pub fn parse_modprobe_conf(text: &str) -> Result<Vec<ModuleOptions>, ParseError> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut start = 0usize;
    for (i, raw) in text.lines().enumerate() {
        if pending.is_empty() {
            start = i + 1;
            if raw.trim_start().starts_with('#') {
                continue;
            }
        }
        if let Some(head) = raw.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(raw);
        let line = std::mem::take(&mut pending);
        let mut toks = line.split_whitespace();
        if toks.next() != Some("options") {
            continue;
        }
        let Some(module) = toks.next() else {
            return Err(ParseError::format(start, "`options` without a module name"));
        };
        if out.len() == MAX_LINES {
            return Err(ParseError::format(start, "more than 16384 options lines"));
        }
        let params = toks
            .map(|t| match t.split_once('=') {
                Some((k, v)) => (k.to_string(), v.trim_matches('"').to_string()),
                None => (t.to_string(), String::new()),
            })
            .collect();
        out.push(ModuleOptions {
            module: module.replace('-', "_"),
            params,
            line: start,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // As in the yuuk.io ixgbevf study (EC2, Amazon Linux, blog.yuuk.io 2014) and Intel's e1000 README.
    const IXGBE: &str = "\
# interrupt throttling, see the yuuk.io study
options ixgbevf InterruptThrottleRate=1
options e1000 InterruptThrottleRate=0,0 \\
    RxDescriptors=4096
blacklist pcspkr
install foo /bin/true
options mlx4-core log_num_mgm_entry_size=-1
";

    #[test]
    fn parses_options() {
        let o = parse_modprobe_conf(IXGBE).unwrap();
        assert_eq!(o.len(), 3);
        assert_eq!(o[0].module, "ixgbevf");
        assert_eq!(o[0].params, [("InterruptThrottleRate".into(), "1".into())]);
        assert_eq!(o[0].line, 2);
        assert_eq!(o[1].line, 3);
        assert_eq!(o[1].params[1], ("RxDescriptors".into(), "4096".into()));
        assert_eq!(o[2].module, "mlx4_core");
    }

    #[test]
    fn bad_input() {
        assert!(parse_modprobe_conf("options\n").is_err());
        assert_eq!(parse_modprobe_conf("").unwrap(), vec![]);
        assert_eq!(parse_modprobe_conf("options x \\").unwrap().len(), 0);
    }

    proptest! {
        #[test]
        fn never_panics(s in "[a-z=# \\\\\\n0-9]{0,300}") {
            let _ = parse_modprobe_conf(&s);
        }
    }
}
