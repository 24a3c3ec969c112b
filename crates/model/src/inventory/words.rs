//! Splitting a line into words as a POSIX shell (and Python's `shlex`) does:
//! whitespace separates words, `'...'` is literal, `"..."` keeps whitespace and
//! honours `\"`, `\\`, `\$` and `` \` ``, a backslash outside quotes escapes the
//! next character. With `comments`, a `#` that starts a word ends the line.

/// Split `s` into words; `Err` names the unclosed quote or trailing backslash.
pub fn split_words(s: &str, comments: bool) -> Result<Vec<String>, &'static str> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' if comments && !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unclosed single quote"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unclosed double quote"),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unclosed double quote"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => cur.push(c),
                    None => return Err("backslash at the end"),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split_words;

    fn w(s: &str) -> Vec<String> {
        split_words(s, true).unwrap_or_default()
    }

    #[test]
    fn plain_and_quoted_words() {
        assert_eq!(w("a  b\tc"), ["a", "b", "c"]);
        assert_eq!(
            w("-o 'ProxyCommand=ssh -W %h:%p bastion'"),
            ["-o", "ProxyCommand=ssh -W %h:%p bastion"]
        );
        assert_eq!(w(r#"x="a b" y='c"d' z=e\ f"#), ["x=a b", "y=c\"d", "z=e f"]);
        assert_eq!(w(r#""a\"b\\c\n""#), [r#"a"b\c\n"#]);
        assert_eq!(w("''"), [""]);
        assert_eq!(w(""), Vec::<String>::new());
    }

    #[test]
    fn comments_only_at_a_word_start() {
        assert_eq!(w("web1 port=22 # the first"), ["web1", "port=22"]);
        assert_eq!(w("a#b"), ["a#b"]);
        assert_eq!(
            split_words("a # b", false).unwrap_or_default(),
            ["a", "#", "b"]
        );
    }

    #[test]
    fn unclosed_quotes_are_errors() {
        assert!(split_words("'abc", true).is_err());
        assert!(split_words("\"abc", true).is_err());
        assert!(split_words("abc\\", true).is_err());
    }
}
