//! Ansible host patterns: a name or address, ranges `[beg:end]` or
//! `[beg:end:step]` (numeric, zero-padded if `beg` is, or single letters), and
//! an optional `:port`, as the INI and YAML inventories write them.

use super::{MAX_HOSTS, MAX_NAME_LEN};
use crate::error::ParseError;

/// Hosts of a pattern with their optional `:port`: `web[01:03].x:2222` is
/// web01.x, web02.x, web03.x on port 2222. Ranges are `[beg:end]` or
/// `[beg:end:step]`, numeric (zero-padded if `beg` is) or single letters.
pub(super) fn expand(pattern: &str, line: usize) -> Result<Vec<(String, Option<u16>)>, ParseError> {
    let shown = super::short(pattern);
    let bad = |msg: &str| ParseError::format(line, format!("host pattern {shown:?}: {msg}"));
    // a port is a `:digits` suffix outside brackets, when that is the only colon outside brackets
    let mut depth = 0usize;
    let mut colons = Vec::new();
    for (i, c) in pattern.char_indices() {
        match c {
            '[' => depth = depth.saturating_add(1),
            ']' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => colons.push(i),
            _ => {}
        }
    }
    let (body, port) = match colons.as_slice() {
        [i] => {
            let (b, p) = (
                pattern.get(..*i).unwrap_or(""),
                pattern.get(i.saturating_add(1)..).unwrap_or(""),
            );
            let port = p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad("port is not a number 1-65535"))?;
            (b, Some(port))
        }
        _ => (pattern, None),
    };
    let Sized {
        segments,
        tail,
        count,
        longest,
    } = sized(body).map_err(|m| bad(&m))?;
    let mut names = Vec::with_capacity(count);
    // An odometer over the ranges: each name is built once, at most
    // MAX_NAME_LEN bytes, so the work is at most count × MAX_NAME_LEN.
    let mut digits = vec![0usize; segments.len()];
    for _ in 0..count {
        let mut name = String::with_capacity(longest);
        for ((prefix, items), &d) in segments.iter().zip(&digits) {
            name.push_str(prefix);
            name.push_str(items.get(d).map_or("", String::as_str));
        }
        name.push_str(tail);
        names.push((name, port));
        for (d, (_, items)) in digits.iter_mut().zip(&segments).rev() {
            *d = d.saturating_add(1);
            if *d < items.len() {
                break;
            }
            *d = 0;
        }
    }
    Ok(names)
}

/// A pattern body split into literal-then-range segments and a literal
/// tail, with the number of names and the longest name's length.
struct Sized<'a> {
    segments: Vec<(&'a str, Vec<String>)>,
    tail: &'a str,
    count: usize,
    longest: usize,
}

/// Split and size a pattern body before any name is built: the host count
/// and the longest name are checked at every range, so a long literal after
/// a big range, or thousands of `[0:0]`, is refused here, within
/// [`MAX_NAME_LEN`] segments (each adds at least one character), instead of
/// costing memory or quadratic copying first.
fn sized(body: &str) -> Result<Sized<'_>, String> {
    let too_long = || format!("names would be longer than {MAX_NAME_LEN} characters");
    let mut segments = Vec::new();
    let (mut count, mut longest) = (1usize, 0usize);
    let mut rest = body;
    while let Some(open) = rest.find('[') {
        let close = rest
            .get(open..)
            .and_then(|r| r.find(']'))
            .map(|c| c.saturating_add(open))
            .ok_or("unclosed [")?;
        let prefix = rest.get(..open).unwrap_or("");
        longest = longest.saturating_add(prefix.len());
        if longest > MAX_NAME_LEN {
            return Err(too_long());
        }
        let items = range(rest.get(open.saturating_add(1)..close).unwrap_or(""))
            .ok_or("not a range [beg:end] or [beg:end:step]")?;
        count = count
            .checked_mul(items.len())
            .filter(|&n| n <= MAX_HOSTS)
            .ok_or_else(|| format!("expands to more than {MAX_HOSTS} hosts"))?;
        let widest = items.iter().map(String::len).max().unwrap_or(0);
        longest = longest.saturating_add(widest);
        if longest > MAX_NAME_LEN {
            return Err(too_long());
        }
        segments.push((prefix, items));
        rest = rest.get(close.saturating_add(1)..).unwrap_or("");
    }
    if rest.contains(']') {
        return Err("] without [".into());
    }
    longest = longest.saturating_add(rest.len());
    if longest > MAX_NAME_LEN {
        return Err(too_long());
    }
    Ok(Sized {
        segments,
        tail: rest,
        count,
        longest,
    })
}

/// The items of one range body `beg:end[:step]`, at most [`MAX_HOSTS`].
fn range(body: &str) -> Option<Vec<String>> {
    let mut parts = body.split(':');
    let (beg, end) = (parts.next()?, parts.next()?);
    let step: usize = match parts.next() {
        Some(s) => s.parse().ok().filter(|&s| s > 0)?,
        None => 1,
    };
    if parts.next().is_some() {
        return None;
    }
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if (beg.is_empty() || all_digits(beg)) && all_digits(end) {
        let width = if beg.len() > 1 && beg.starts_with('0') {
            beg.len()
        } else {
            0
        };
        if width > 0 && end.len() != width {
            return None;
        }
        let (b, e): (u64, u64) = (
            if beg.is_empty() { 0 } else { beg.parse().ok()? },
            end.parse().ok()?,
        );
        let count = e
            .checked_sub(b)?
            .checked_div(u64::try_from(step).ok()?)?
            .checked_add(1)?;
        if count > MAX_HOSTS as u64 {
            return None;
        }
        return Some(
            (b..=e)
                .step_by(step)
                .map(|n| format!("{n:0width$}"))
                .collect(),
        );
    }
    let letter = |s: &str| match s.as_bytes() {
        [c] if c.is_ascii_alphabetic() => Some(*c),
        _ => None,
    };
    let (b, e) = (letter(beg)?, letter(end)?);
    (b <= e).then(|| {
        (b..=e)
            .step_by(step)
            .map(|c| char::from(c).to_string())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &str) -> Vec<String> {
        expand(p, 1)
            .unwrap_or_default()
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    #[test]
    fn ranges_expand_as_ansible() {
        assert_eq!(
            names("web[01:03].example.com"),
            [
                "web01.example.com",
                "web02.example.com",
                "web03.example.com"
            ]
        );
        assert_eq!(names("db-[a:c]"), ["db-a", "db-b", "db-c"]);
        assert_eq!(names("n[0:6:3]"), ["n0", "n3", "n6"]);
        assert_eq!(names("r[1:2]c[1:2]"), ["r1c1", "r1c2", "r2c1", "r2c2"]);
        assert_eq!(names("[8:10]"), ["8", "9", "10"]);
        assert_eq!(
            expand("h[1:2]:2222", 1).unwrap_or_default(),
            [("h1".into(), Some(2222)), ("h2".into(), Some(2222))]
        );
        assert_eq!(
            expand("fe80::1", 1).unwrap_or_default(),
            [("fe80::1".to_owned(), None)]
        );
    }

    #[test]
    fn bad_ranges_are_errors() {
        for p in [
            "h[3:1]",
            "h[1:x]",
            "h[01:100]",
            "h[1:2",
            "h]",
            "h[0:99999999999]",
            "h[a:zz]",
            "h[1:2:0]",
            "h:0",
            "h:x",
        ] {
            assert!(expand(p, 7).is_err(), "{p}");
        }
        assert!(expand("a[0:99]b[0:99]c[0:99]", 1).is_err());
    }

    /// The attack inputs of issue 35: a big range followed by a long literal,
    /// and thousands of `[0:0]`. Both are refused by the sizing, before any
    /// name is built (the message is the sizing's, and `sized` stops at the
    /// first segment past the limit: it never reads the rest).
    #[test]
    fn long_names_are_refused_before_expansion() {
        let long_tail = format!("h[1:10000]{}", "a".repeat(300));
        let e = expand(&long_tail, 3).unwrap_err().to_string();
        assert!(e.contains("longer than 253"), "{e}");
        let zeros = "[0:0]".repeat(4000);
        let e = expand(&zeros, 3).unwrap_err().to_string();
        assert!(e.contains("longer than 253"), "{e}");
        // Past the limit the rest is not even parsed: garbage after it is
        // not reported, the length is.
        let e = expand(&format!("{zeros}[x:"), 3).unwrap_err().to_string();
        assert!(e.contains("longer than 253"), "{e}");
        // Exactly at the limit is fine, and each name is that long.
        let exact = format!("h[1:9]{}", "a".repeat(251));
        let n = names(&exact);
        assert_eq!(n.len(), 9);
        assert!(n.iter().all(|s| s.len() == 253));
        assert!(expand(&format!("h[1:9]{}", "a".repeat(252)), 1).is_err());
        // 253 single-item ranges build one 253-character name.
        assert_eq!(names(&"[0:0]".repeat(253)), ["0".repeat(253)]);
    }
}
