//! Escaping of text taken from the results file, which is untrusted input:
//! names, labels, reasons and findings may hold markup.

/// Longest text cell kept from the file, in characters (the rest is cut with `…`).
pub(crate) const MAX_TEXT_CHARS: usize = 2000;

/// `s` cut to `max` characters, with `…` when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i >= max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

/// Text for HTML element content or a quoted attribute value: `& < > " '`
/// become entities and control characters (except newline and tab) are
/// dropped.
pub(crate) fn html(s: &str) -> String {
    html_upto(s, MAX_TEXT_CHARS)
}

/// [`html`] keeping up to `max` characters (host facts keep their 64 KiB).
pub(crate) fn html_upto(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)));
    for c in truncate(s, max).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Text for one Markdown table cell or line: one line, with markup
/// characters and every character a shell acts on (`; & | $ \` ( ) < > ' "`)
/// backslash-escaped. Markdown shows a backslash-escaped punctuation
/// character as itself (and `\<` is no HTML tag), while a shell takes it
/// literally: a line of report.md pasted into a shell runs nothing the
/// results file wrote.
pub(crate) fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_TEXT_CHARS * 4));
    let chars: Vec<char> = truncate(s, MAX_TEXT_CHARS).chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_alphanumeric())
        };
        match c {
            // An underscore inside a word (`rps_cpus`) is no emphasis.
            '_' if word(i.checked_sub(1)) && word(Some(i + 1)) => out.push('_'),
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '&' | '<' | '>' | ';' | '$' | '(' | ')'
            | '\'' | '"' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Text for a chart label (SVG text, escaped again by the SVG backend): one
/// line, at most `max` characters.
pub(crate) fn label(s: &str, max: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    truncate(one_line.trim(), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup() {
        assert_eq!(
            html("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(html("a\u{0}b\nc"), "ab\nc");
    }

    #[test]
    fn md_is_one_line_and_escaped() {
        assert_eq!(md("a|b\n<img src=x>"), "a\\|b \\<img src=x\\>");
        assert_eq!(
            md("*x* _y_ [z](u) rps_cpus"),
            "\\*x\\* \\_y\\_ \\[z\\]\\(u\\) rps_cpus"
        );
        assert_eq!(md("a; $(b) & 'c'"), "a\\; \\$\\(b\\) \\& \\'c\\'");
    }

    #[test]
    fn truncates_long_text() {
        let long = "x".repeat(MAX_TEXT_CHARS + 10);
        assert_eq!(html(&long).chars().count(), MAX_TEXT_CHARS + 1);
        assert_eq!(label("ab\ncd", 3), "ab …");
    }
}
