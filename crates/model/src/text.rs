//! Text from the kernel, a peer or a file made safe for a terminal.
//!
//! Interface names, IRQ names, the hostname, the kernel release, knob values,
//! journal entries and a server's messages can hold any byte the kernel or
//! the peer accepted, ESC and BEL included. Every human output of nettune
//! passes such text through [`printable`] (or [`Printable`] in `format!`),
//! so it can neither move the cursor, retitle the window nor start a line.
//! JSON output needs none of this: serde escapes control characters.

use std::borrow::Cow;
use std::fmt;

/// Whether `c` must not reach a terminal raw: C0 and C1 control characters
/// (ESC, BEL, CR, newline, DEL…), zero-width characters and bidirectional
/// overrides and isolates (which reorder what is shown around them).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every [`is_unsafe`] character escaped: ASCII ones as `\xNN`
/// (ESC is `\x1b`, newline `\x0a`), others as `\u{NNNN}`. Borrowed when
/// nothing needed escaping.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(Printable(s).to_string())
}

/// A whole rendered report made safe at its sink: like [`printable`] but
/// newlines (the report's own layout) are kept. Values are escaped where
/// they are formatted; this is the guard for any that were not.
pub fn printable_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().saturating_add(8));
    for c in s.chars() {
        if c == '\n' {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// At most `max` characters of `s` (then `…`), escaped as by [`printable`]:
/// for a peer's message that must stay one short line.
pub fn printable_capped(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i >= max {
            out.push('…');
            break;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// [`printable`] as a `Display` value, for `format!("{}", Printable(name))`
/// without an intermediate `String`.
#[derive(Debug, Clone, Copy)]
pub struct Printable<'a>(pub &'a str);

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.chars().any(is_unsafe) {
            // Padding and alignment (`{:<8}`) apply to the plain text.
            return f.pad(self.0);
        }
        let mut out = String::with_capacity(self.0.len().saturating_add(8));
        for c in self.0.chars() {
            push_escaped(&mut out, c);
        }
        f.pad(&out)
    }
}

fn push_escaped(out: &mut String, c: char) {
    use fmt::Write;
    if !is_unsafe(c) {
        out.push(c);
    } else if u32::from(c) < 0x80 {
        let _ = write!(out, "\\x{:02x}", u32::from(c));
    } else {
        let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(printable("eth0 ∞ é"), Cow::Borrowed("eth0 ∞ é")));
        assert_eq!(printable("00000000,000001fe"), "00000000,000001fe");
    }

    #[test]
    fn control_bytes_are_escaped() {
        assert_eq!(printable("\x1b[2Jx\x07\n"), "\\x1b[2Jx\\x07\\x0a");
        assert_eq!(
            printable("a\u{202e}b\u{85}\u{7f}"),
            "a\\u{202e}b\\u{85}\\x7f"
        );
        assert_eq!(format!("[{:<6}]", Printable("a\x1b")), "[a\\x1b ]");
        assert_eq!(format!("[{:>4}]", Printable("ab")), "[  ab]");
    }

    #[test]
    fn lines_keep_newlines_only() {
        assert_eq!(
            printable_lines("a\n\x1b[2J\tb\r\n"),
            "a\n\\x1b[2J\\x09b\\x0d\n"
        );
        assert!(matches!(printable_lines("a\nb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn capped_counts_characters() {
        assert_eq!(printable_capped("abc", 2), "ab…");
        assert_eq!(printable_capped("\x1bc", 5), "\\x1bc");
        assert_eq!(printable_capped("", 0), "");
    }

    proptest::proptest! {
        #[test]
        fn never_a_control_character(s in ".*") {
            let p = printable(&s);
            proptest::prop_assert!(!p.chars().any(is_unsafe));
            proptest::prop_assert!(!printable_capped(&s, 10).chars().any(is_unsafe));
            proptest::prop_assert!(!printable_lines(&s).chars().any(|c| c != '\n' && is_unsafe(c)));
        }
    }
}
