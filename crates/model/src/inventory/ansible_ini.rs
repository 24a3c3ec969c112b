//! Ansible INI inventories: `[group]` sections of host lines
//! (`web[01:03].example.com ansible_user=ops key="quoted value"`), `[group:vars]`
//! sections of `key=value` lines, `[parent:children]` sections of group names,
//! `#` and `;` comments. Hosts before the first section are ungrouped.

use super::ansible::{Model, Vars};
use super::{short, split_words, Inventory};
use crate::error::ParseError;

enum Section {
    Hosts(String),
    Vars(String),
    Children(String),
}

/// Parse an Ansible INI inventory.
pub(super) fn parse(text: &str) -> Result<Inventory, ParseError> {
    let mut model = Model::default();
    model.group("all", 1)?;
    model.group("ungrouped", 1)?;
    model.child("all", "ungrouped", 1)?;
    let mut section = Section::Hosts("ungrouped".to_owned());
    for (i, raw) in text.lines().enumerate() {
        let line = i.saturating_add(1);
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        if let Some(head) = t.strip_prefix('[') {
            let head = head
                .split_once(']')
                .filter(|(_, after)| {
                    after.trim().is_empty() || after.trim_start().starts_with(['#', ';'])
                })
                .map(|(h, _)| h.trim())
                .ok_or_else(|| ParseError::invalid(line, "section header", t))?;
            section = match head.rsplit_once(':') {
                None => Section::Hosts(head.to_owned()),
                Some((g, "vars")) => Section::Vars(g.to_owned()),
                Some((g, "children")) => Section::Children(g.to_owned()),
                Some((_, kind)) => {
                    return Err(ParseError::format(
                        line,
                        format!(
                            "section [{}]: unknown kind {:?} (vars or children)",
                            short(head),
                            short(kind)
                        ),
                    ))
                }
            };
            match &section {
                Section::Hosts(g) | Section::Vars(g) | Section::Children(g) => {
                    model.group(g, line)?;
                    if g != "all" && g != "ungrouped" {
                        model.child("all", g, line)?;
                    }
                }
            }
            continue;
        }
        match &section {
            Section::Hosts(g) => {
                let words = split_words(t, true).map_err(|e| ParseError::format(line, e))?;
                let mut words = words.into_iter();
                let Some(pattern) = words.next() else {
                    continue;
                };
                let mut vars = Vars::new();
                for w in words {
                    let (k, v) = w
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .ok_or_else(|| {
                            ParseError::invalid(line, "host variable (key=value)", &w)
                        })?;
                    vars.insert(k.to_owned(), v.to_owned());
                }
                model.hosts(&pattern, g, &vars, line)?;
            }
            Section::Vars(g) => {
                let (k, v) = t
                    .split_once('=')
                    .map(|(k, v)| (k.trim(), v.trim()))
                    .filter(|(k, _)| !k.is_empty() && !k.contains(char::is_whitespace))
                    .ok_or_else(|| ParseError::invalid(line, "group variable (key=value)", t))?;
                let mut vars = Vars::new();
                vars.insert(k.to_owned(), unquote(v));
                model.group_vars(g, vars, line)?;
            }
            Section::Children(g) => {
                let words = split_words(t, true).map_err(|e| ParseError::format(line, e))?;
                match words.as_slice() {
                    [] => {}
                    [child] => model.child(g, child, line)?,
                    _ => return Err(ParseError::invalid(line, "child group name", t)),
                }
            }
        }
    }
    model.resolve()
}

/// A `[group:vars]` value: one pair of matching outer quotes is removed (and
/// the value read as a shell word, so `"a \"b\""` is `a "b"`).
fn unquote(v: &str) -> String {
    let quoted = v.len() >= 2
        && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')));
    if quoted {
        if let Ok(w) = split_words(v, false) {
            if let [one] = w.as_slice() {
                return one.clone();
            }
        }
    }
    v.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::Transport;

    #[test]
    fn vars_values_are_unquoted_once() {
        assert_eq!(unquote("\"a b\""), "a b");
        assert_eq!(unquote("'x'"), "x");
        assert_eq!(unquote("plain # not a comment"), "plain # not a comment");
        assert_eq!(unquote("\"a\" \"b\""), "\"a\" \"b\"");
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("[web]\nweb1\nweb2 novalue\n").err();
        assert_eq!(
            e.map(|e| e.to_string()),
            Some("line 3: invalid host variable (key=value): \"novalue\"".into())
        );
        assert!(parse("[web:other]\n").is_err());
        assert!(parse("[web\n").is_err());
        assert!(parse("[a:children]\nb\n[b:children]\na\nhost\n").is_err());
    }

    #[test]
    fn ungrouped_hosts_and_local() {
        let inv = parse("h1 ansible_connection=local\n[x]\nh2:2200 ansible_user=ops\n")
            .unwrap_or_default();
        assert_eq!(inv.hosts.len(), 2);
        assert_eq!(
            inv.hosts.first().map(|h| &h.transport),
            Some(&Transport::Local)
        );
        assert!(inv.hosts.first().is_some_and(|h| h.roles.is_empty()));
        assert!(matches!(
            inv.hosts.get(1).map(|h| &h.transport),
            Some(Transport::Ssh {
                port: Some(2200),
                ..
            })
        ));
    }

    #[test]
    fn an_explicit_ansible_port_wins_over_the_patterns() {
        let inv = parse(
            "[x]
h:2200 ansible_port=2300
",
        )
        .unwrap_or_default();
        assert!(matches!(
            inv.hosts.first().map(|h| &h.transport),
            Some(Transport::Ssh {
                port: Some(2300),
                ..
            })
        ));
    }

    /// Issue 35: connection variables nettune does not implement, and
    /// templated values, are a one-line error naming them.
    #[test]
    fn unimplemented_connection_variables_are_refused() {
        for (line, named) in [
            (
                "h ansible_connection=kubectl ansible_kubectl_kubeconfig=/k",
                "ansible_kubectl_kubeconfig",
            ),
            ("h ansible_ssh_args=-oProxyCommand=x", "ansible_ssh_args"),
            ("h ansible_password=secret", "ansible_password"),
            ("h ansible_host={{host}}", "Jinja"),
            ("h ansible_user=\"{{ user }}\"", "Jinja"),
        ] {
            let e = parse(&format!("{line}\n")).unwrap_err().to_string();
            assert!(e.contains(named), "{line}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        // What nettune implements, and other Ansible variables, pass.
        assert!(parse(
            "h ansible_ssh_common_args='-o X=1' ansible_python_interpreter=/usr/bin/python3\n"
        )
        .is_ok());
    }
}
