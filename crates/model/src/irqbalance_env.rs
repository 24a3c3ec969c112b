//! irqbalance's environment file (`/etc/default/irqbalance` on Debian,
//! `/etc/sysconfig/irqbalance` on RHEL; see irqbalance's `misc/irqbalance.env`):
//! which IRQs its `IRQBALANCE_ARGS` ban (`--banirq=N`, irqbalance(1)), and the
//! same file with more bans added and every other byte kept.
//!
//! Only files of plain assignments are handled: blank lines, `#` comments and
//! `NAME=VALUE` lines whose value, bare or in one pair of `"` or `'`, holds no
//! shell expansion or escape (`$`, backquote, backslash, `;`...). A file that
//! would need more of the shell's quoting rules is refused rather than
//! rewritten.

use std::collections::BTreeSet;

/// The paths irqbalance's packages read its environment from.
pub const ENV_PATHS: [&str; 2] = ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"];

/// The variable holding irqbalance's command-line arguments.
pub const ARGS: &str = "IRQBALANCE_ARGS";

/// Longest environment file handled.
pub const MAX_LEN: usize = 64 * 1024;

/// Why a file is not handled.
pub const NOT_SIMPLE: &str = "not a file of plain NAME=VALUE lines (a value with $, backquote, backslash, ; or similar needs shell quoting rules nettune does not rewrite)";

fn value_byte_ok(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" _-=,.:/+@%".contains(&b)
}

/// An assignment line split as `(name, quote, inner value)`.
type Assignment<'a> = (&'a str, Option<u8>, &'a str);

/// One assignment line; `None` for a blank or comment line; `Err` for
/// anything else.
fn parse_line(line: &str) -> Result<Option<Assignment<'_>>, ()> {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with('#') {
        return if line.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            Err(())
        } else {
            Ok(None)
        };
    }
    let (name, value) = line.split_once('=').ok_or(())?;
    let name_ok = !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !name_ok {
        return Err(());
    }
    let (quote, inner) = match value.as_bytes().first() {
        Some(&q @ (b'"' | b'\'')) => {
            let inner = value
                .get(1..)
                .and_then(|v| v.strip_suffix(q as char))
                .ok_or(())?;
            (Some(q), inner)
        }
        _ => (None, value),
    };
    let ok = inner
        .bytes()
        .all(|b| value_byte_ok(b) && (quote.is_some() || b != b' '));
    if ok {
        Ok(Some((name, quote, inner)))
    } else {
        Err(())
    }
}

/// Whether `content` is a file this module handles (see the module doc).
pub fn is_simple(content: &str) -> bool {
    content.len() <= MAX_LEN && content.lines().all(|l| parse_line(l).is_ok())
}

/// The IRQs the file's (last) `IRQBALANCE_ARGS` bans: `--banirq=N`,
/// `--banirq N`, `-i N`, `-iN`.
pub fn banned_irqs(content: &str) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let Some(args) = content
        .lines()
        .filter_map(|l| parse_line(l).ok().flatten())
        .filter(|(n, _, _)| *n == ARGS)
        .map(|(_, _, v)| v)
        .next_back()
    else {
        return out;
    };
    let words: Vec<&str> = args.split_whitespace().collect();
    let mut i = 0;
    while let Some(w) = words.get(i) {
        let n = if let Some(n) = w.strip_prefix("--banirq=") {
            Some(n)
        } else if *w == "--banirq" || *w == "-i" {
            i = i.saturating_add(1);
            words.get(i).copied()
        } else {
            w.strip_prefix("-i").filter(|n| !n.is_empty())
        };
        if let Some(irq) = n.and_then(|n| n.parse().ok()) {
            out.insert(irq);
        }
        i = i.saturating_add(1);
    }
    out
}

/// `content` with one `--banirq=N` appended to `IRQBALANCE_ARGS` for every IRQ
/// of `irqs` not banned yet (a line is added when there is none); every
/// other byte is kept. `Err` names why a file is not rewritten.
pub fn with_bans(content: &str, irqs: &BTreeSet<u32>) -> Result<String, &'static str> {
    if !is_simple(content) {
        return Err(NOT_SIMPLE);
    }
    let have = banned_irqs(content);
    let add: Vec<String> = irqs
        .difference(&have)
        .map(|n| format!("--banirq={n}"))
        .collect();
    if add.is_empty() {
        return Ok(content.to_string());
    }
    let add = add.join(" ");
    // The last assignment wins in a shell and in systemd's EnvironmentFile.
    let last = content
        .split_inclusive('\n')
        .enumerate()
        .filter(|(_, l)| {
            matches!(parse_line(l.trim_end_matches('\n')), Ok(Some((n, _, _))) if n == ARGS)
        })
        .map(|(i, _)| i)
        .last();
    let mut out = String::with_capacity(content.len().saturating_add(add.len() + 32));
    for (i, l) in content.split_inclusive('\n').enumerate() {
        if Some(i) != last {
            out.push_str(l);
            continue;
        }
        let body = l.trim_end_matches('\n');
        let end = &l[body.len()..];
        let Ok(Some((_, quote, inner))) = parse_line(body) else {
            return Err(NOT_SIMPLE);
        };
        let q = quote.map_or('"', char::from);
        let sep = if inner.trim().is_empty() { "" } else { " " };
        out.push_str(&format!("{ARGS}={q}{inner}{sep}{add}{q}{end}"));
    }
    if last.is_none() {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("{ARGS}=\"{add}\"\n"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN: &str = "# irqbalance is a daemon process\n#IRQBALANCE_ONESHOT=\n#IRQBALANCE_BANNED_CPULIST=\n#IRQBALANCE_ARGS=\n";

    fn set(v: &[u32]) -> BTreeSet<u32> {
        v.iter().copied().collect()
    }

    #[test]
    fn adds_a_line_and_keeps_the_rest() {
        let out = with_bans(DEBIAN, &set(&[40, 41])).unwrap();
        assert_eq!(
            out,
            format!("{DEBIAN}IRQBALANCE_ARGS=\"--banirq=40 --banirq=41\"\n")
        );
        assert_eq!(banned_irqs(&out), set(&[40, 41]));
        assert_eq!(with_bans(&out, &set(&[40, 41])).unwrap(), out);
    }

    #[test]
    fn appends_to_existing_args() {
        let f = "A=1\nIRQBALANCE_ARGS='--banirq=7 --policyscript=/x'\nB=2";
        let out = with_bans(f, &set(&[7, 9])).unwrap();
        assert_eq!(
            out,
            "A=1\nIRQBALANCE_ARGS='--banirq=7 --policyscript=/x --banirq=9'\nB=2"
        );
        assert_eq!(
            banned_irqs("IRQBALANCE_ARGS=\"-i 3 -i4 --banirq 5\""),
            set(&[3, 4, 5])
        );
    }

    #[test]
    fn refuses_shell() {
        for f in [
            "IRQBALANCE_ARGS=\"$X\"\n",
            "IRQBALANCE_ARGS=`id`\n",
            "IRQBALANCE_ARGS=a b\n",
            "export IRQBALANCE_ARGS=x\n",
            "IRQBALANCE_ARGS=\"a\\\"b\"\n",
            "X=1; reboot\n",
        ] {
            assert!(!is_simple(f), "{f}");
            assert!(with_bans(f, &set(&[1])).is_err(), "{f}");
        }
    }
}
