//! `--limit PATTERN` as Ansible reads it: terms separated by `,` (or by `:`
//! when there is no comma); a plain term adds hosts, `&term` keeps only hosts
//! it matches, `!term` removes them (unions first, then intersections, then
//! exclusions, whatever the order written; only `&`/`!` terms start from all
//! hosts). A term is `all` or `*`, a host name, a role (group) name, or a glob
//! with `*` and `?` over host and role names.

use super::{Host, Inventory};
use thiserror::Error;

/// A `--limit` pattern that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LimitError {
    /// The pattern has no term.
    #[error("--limit: empty pattern")]
    Empty,
    /// A term matches no host and no role of the inventory (a typo?).
    #[error("--limit: {term:?} matches no host or role of the inventory")]
    NoMatch {
        /// The term as written (without `&`/`!`).
        term: String,
    },
    /// A term uses Ansible syntax nettune does not read.
    #[error("--limit: {term:?}: {why}")]
    Unsupported {
        /// The term as written.
        term: String,
        /// What is not supported.
        why: &'static str,
    },
    /// Every term matched something, but together they select no host.
    #[error("--limit {pattern:?} selects no host")]
    Nothing {
        /// The whole pattern.
        pattern: String,
    },
}

/// The hosts of `inv` that `pattern` selects, in inventory order.
pub fn select<'a>(inv: &'a Inventory, pattern: &str) -> Result<Vec<&'a Host>, LimitError> {
    let sep = if pattern.contains(',') { ',' } else { ':' };
    let terms: Vec<&str> = pattern
        .split(sep)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    if terms.is_empty() {
        return Err(LimitError::Empty);
    }
    let (mut unions, mut ands, mut nots) = (Vec::new(), Vec::new(), Vec::new());
    for t in terms {
        if let Some(x) = t.strip_prefix('!') {
            nots.push(x);
        } else if let Some(x) = t.strip_prefix('&') {
            ands.push(x);
        } else {
            unions.push(t);
        }
    }
    if unions.is_empty() {
        unions.push("all");
    }
    let mut chosen = vec![false; inv.hosts.len()];
    for t in unions {
        for (c, m) in chosen.iter_mut().zip(matches(inv, t)?) {
            *c |= m;
        }
    }
    for t in ands {
        for (c, m) in chosen.iter_mut().zip(matches(inv, t)?) {
            *c &= m;
        }
    }
    for t in nots {
        for (c, m) in chosen.iter_mut().zip(matches(inv, t)?) {
            *c &= !m;
        }
    }
    let out: Vec<&Host> = inv
        .hosts
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .map(|(h, _)| h)
        .collect();
    if out.is_empty() {
        return Err(LimitError::Nothing {
            pattern: pattern.to_owned(),
        });
    }
    Ok(out)
}

/// Which hosts one term matches; an error if none.
fn matches(inv: &Inventory, term: &str) -> Result<Vec<bool>, LimitError> {
    let unsupported = |why| LimitError::Unsupported {
        term: term.to_owned(),
        why,
    };
    if term.is_empty() || term.starts_with(['!', '&']) {
        return Err(unsupported("an operator must be followed by a name"));
    }
    if term.starts_with('~') {
        return Err(unsupported(
            "regular expressions are not supported; use * and ? globs",
        ));
    }
    if term.starts_with('@') {
        return Err(unsupported("@file retry lists are not supported"));
    }
    if term.contains(['[', ']']) {
        return Err(unsupported(
            "subscripts and ranges are not supported in --limit",
        ));
    }
    let m: Vec<bool> = if term == "all" || term == "*" {
        vec![true; inv.hosts.len()]
    } else if term.contains(['*', '?']) {
        inv.hosts
            .iter()
            .map(|h| glob(term, h.name.as_str()) || h.roles.iter().any(|r| glob(term, r.as_str())))
            .collect()
    } else {
        inv.hosts
            .iter()
            .map(|h| h.name.as_str() == term || h.roles.iter().any(|r| r.as_str() == term))
            .collect()
    };
    if !m.contains(&true) {
        return Err(LimitError::NoMatch {
            term: term.to_owned(),
        });
    }
    Ok(m)
}

/// `*` (any run) and `?` (one character) glob match, linear backtracking.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi = pi.saturating_add(1);
            }
            Some(&c) if c == '?' || Some(&c) == t.get(ti) => {
                pi = pi.saturating_add(1);
                ti = ti.saturating_add(1);
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp.saturating_add(1);
                    ti = st.saturating_add(1);
                    star = Some((sp, ti));
                }
                None => return false,
            },
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|&c| c == '*'))
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs() {
        assert!(glob("web*", "web1"));
        assert!(glob("*", ""));
        assert!(glob("w?b*.x", "web01.x"));
        assert!(glob("*a*b*", "xxaxxbxx"));
        assert!(!glob("web?", "web10"));
        assert!(!glob("db*", "web1"));
        assert!(!glob(&"*a".repeat(50), &"a".repeat(40)));
    }
}
