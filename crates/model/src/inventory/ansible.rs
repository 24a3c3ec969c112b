//! What the Ansible INI and YAML readers share: groups with variables and
//! children, host patterns (`web[01:03].example.com:2222`), and the resolution
//! of each host's variables (all < parent group < child group < host, groups
//! of equal depth by name, as Ansible) into a [`Host`].

use super::{split_words, Host, HostName, Inventory, Role, Transport, MAX_DEPTH, MAX_HOSTS};
use crate::error::ParseError;
use std::collections::{BTreeMap, BTreeSet};

/// Variables of a group or host, values as text.
pub(super) type Vars = BTreeMap<String, String>;

#[derive(Debug, Default)]
struct Group {
    line: usize,
    vars: Vars,
    parents: BTreeSet<String>,
}

#[derive(Debug)]
struct HostDef {
    name: String,
    line: usize,
    vars: Vars,
    groups: BTreeSet<String>,
}

/// Groups and hosts as read, before resolution.
#[derive(Debug, Default)]
pub(super) struct Model {
    groups: BTreeMap<String, Group>,
    hosts: Vec<HostDef>,
    index: BTreeMap<String, usize>,
}

impl Model {
    /// Declare `name` (at `line`) if new.
    pub(super) fn group(&mut self, name: &str, line: usize) -> Result<(), ParseError> {
        if self.groups.contains_key(name) {
            return Ok(());
        }
        if Role::new(name).is_none() {
            return Err(ParseError::invalid(line, "group name", name));
        }
        if self.groups.len() >= MAX_HOSTS {
            return Err(ParseError::format(
                line,
                format!("more than {MAX_HOSTS} groups"),
            ));
        }
        self.groups.insert(
            name.to_owned(),
            Group {
                line,
                ..Group::default()
            },
        );
        Ok(())
    }

    /// Set group variables (later settings win).
    pub(super) fn group_vars(
        &mut self,
        name: &str,
        vars: Vars,
        line: usize,
    ) -> Result<(), ParseError> {
        self.group(name, line)?;
        if let Some(g) = self.groups.get_mut(name) {
            g.vars.extend(vars);
        }
        Ok(())
    }

    /// Make `child` a child group of `parent`.
    pub(super) fn child(
        &mut self,
        parent: &str,
        child: &str,
        line: usize,
    ) -> Result<(), ParseError> {
        self.group(parent, line)?;
        self.group(child, line)?;
        if child == "all" || parent == child {
            return Err(ParseError::format(
                line,
                format!("group {child:?} cannot be a child of {parent:?}"),
            ));
        }
        if let Some(g) = self.groups.get_mut(child) {
            g.parents.insert(parent.to_owned());
        }
        Ok(())
    }

    /// Add every host of `pattern` to `group` with `vars` (merged over earlier ones).
    pub(super) fn hosts(
        &mut self,
        pattern: &str,
        group: &str,
        vars: &Vars,
        line: usize,
    ) -> Result<(), ParseError> {
        self.group(group, line)?;
        for (name, port) in expand(pattern, line)? {
            let i = match self.index.get(&name) {
                Some(&i) => i,
                None => {
                    if HostName::new(&name).is_none() {
                        return Err(ParseError::invalid(line, "host name", &name));
                    }
                    if self.hosts.len() >= MAX_HOSTS {
                        return Err(ParseError::format(
                            line,
                            format!("more than {MAX_HOSTS} hosts"),
                        ));
                    }
                    self.index.insert(name.clone(), self.hosts.len());
                    self.hosts.push(HostDef {
                        name,
                        line,
                        vars: Vars::new(),
                        groups: BTreeSet::new(),
                    });
                    self.hosts.len() - 1
                }
            };
            let Some(h) = self.hosts.get_mut(i) else {
                continue;
            };
            h.vars
                .extend(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
            if let Some(p) = port {
                h.vars.insert("ansible_port".into(), p.to_string());
            }
            if group != "all" && group != "ungrouped" {
                h.groups.insert(group.to_owned());
            }
        }
        Ok(())
    }

    /// Depth of `name` below `all` (all = 0, top-level groups = 1).
    fn depth(
        &self,
        name: &str,
        memo: &mut BTreeMap<String, usize>,
        level: usize,
    ) -> Result<usize, ParseError> {
        if name == "all" {
            return Ok(0);
        }
        if let Some(&d) = memo.get(name) {
            return Ok(d);
        }
        let g = self.groups.get(name);
        let line = g.map_or(1, |g| g.line);
        if level > MAX_DEPTH {
            return Err(ParseError::format(
                line,
                format!("group {name:?} is nested deeper than {MAX_DEPTH} (a cycle of children?)"),
            ));
        }
        let mut d = 1;
        for p in g.map(|g| &g.parents).into_iter().flatten() {
            d = d.max(
                self.depth(p, memo, level.saturating_add(1))?
                    .saturating_add(1),
            );
        }
        memo.insert(name.to_owned(), d);
        Ok(d)
    }

    /// Resolve every host, in the order first seen.
    pub(super) fn resolve(self) -> Result<Inventory, ParseError> {
        let mut memo = BTreeMap::new();
        for name in self.groups.keys() {
            self.depth(name, &mut memo, 0)?;
        }
        let mut hosts = Vec::with_capacity(self.hosts.len());
        for h in &self.hosts {
            // the host's groups and all their ancestors
            let mut groups: BTreeSet<String> = BTreeSet::new();
            let mut todo: Vec<&String> = h.groups.iter().collect();
            while let Some(g) = todo.pop() {
                if groups.insert(g.clone()) {
                    todo.extend(self.groups.get(g).map(|g| &g.parents).into_iter().flatten());
                }
            }
            let mut order: Vec<(usize, &String)> = groups
                .iter()
                .map(|g| (memo.get(g).copied().unwrap_or(1), g))
                .collect();
            order.sort();
            let mut vars = self
                .groups
                .get("all")
                .map(|g| g.vars.clone())
                .unwrap_or_default();
            for (_, g) in &order {
                if let Some(g) = self.groups.get(*g) {
                    vars.extend(g.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
            vars.extend(h.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
            let roles = groups
                .iter()
                .filter(|g| *g != "all" && *g != "ungrouped")
                .filter_map(|g| Role::new(g))
                .collect();
            let name = HostName::new(&h.name)
                .ok_or_else(|| ParseError::invalid(h.line, "host name", &h.name))?;
            let transport = transport(&h.name, &vars, h.line)?;
            let labels = vars
                .into_iter()
                .filter(|(k, _)| !k.starts_with("ansible_"))
                .collect();
            hosts.push(Host {
                name,
                transport,
                roles,
                labels,
            });
        }
        Ok(Inventory { hosts })
    }
}

fn first(vars: &Vars, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| vars.get(*k))
        .filter(|v| !v.is_empty())
        .cloned()
}

/// The transport named by a host's resolved variables.
fn transport(name: &str, vars: &Vars, line: usize) -> Result<Transport, ParseError> {
    let conn = first(vars, &["ansible_connection"]);
    match conn.as_deref() {
        Some("local" | "ansible.builtin.local") => Ok(Transport::Local),
        Some("kubectl" | "kubernetes.core.kubectl" | "community.kubernetes.kubectl") => Ok(Transport::Kubectl {
            pod: first(vars, &["ansible_kubectl_pod", "ansible_host"]).unwrap_or_else(|| name.to_owned()),
            namespace: first(vars, &["ansible_kubectl_namespace"]),
            container: first(vars, &["ansible_kubectl_container"]),
            context: first(vars, &["ansible_kubectl_context"]),
        }),
        None | Some("ssh" | "smart" | "paramiko" | "paramiko_ssh" | "ansible.builtin.ssh") => {
            let port = match first(vars, &["ansible_port", "ansible_ssh_port"]) {
                None => None,
                Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| {
                    ParseError::format(line, format!("host {name}: ansible_port {p:?} is not a port number"))
                })?),
            };
            let mut ssh_args = Vec::new();
            for key in ["ansible_ssh_common_args", "ansible_ssh_extra_args"] {
                if let Some(v) = vars.get(key) {
                    let words = split_words(v, false)
                        .map_err(|e| ParseError::format(line, format!("host {name}: {key}: {e}")))?;
                    ssh_args.extend(words);
                }
            }
            let jump = take_jump(&mut ssh_args);
            Ok(Transport::Ssh {
                address: first(vars, &["ansible_host", "ansible_ssh_host"]).unwrap_or_else(|| name.to_owned()),
                user: first(vars, &["ansible_user", "ansible_ssh_user"]),
                port,
                jump,
                identity_file: first(vars, &["ansible_ssh_private_key_file", "ansible_private_key_file"]),
                ssh_args,
            })
        }
        Some(other) => Err(ParseError::format(
            line,
            format!("host {name}: ansible_connection={other} is not a transport nettune has (ssh, local, kubectl)"),
        )),
    }
}

/// Remove `-J HOST` or `-o ProxyJump=HOST` from ssh arguments; the jump host.
fn take_jump(args: &mut Vec<String>) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = args.get(i).map(String::as_str).unwrap_or_default();
        let next = args.get(i.saturating_add(1)).cloned();
        let proxy = |s: &str| {
            s.split_once('=')
                .filter(|(k, _)| k.trim().eq_ignore_ascii_case("proxyjump"))
                .map(|(_, v)| v.trim().to_owned())
        };
        let (jump, n) = match a {
            "-J" => (next, 2),
            "-o" => (next.as_deref().and_then(proxy), 2),
            _ if a.starts_with("-J") => (a.get(2..).map(str::to_owned), 1),
            _ if a.starts_with("-o") => (a.get(2..).and_then(proxy), 1),
            _ => (None, 1),
        };
        if let Some(j) = jump.filter(|j| !j.is_empty()) {
            args.drain(i..i.saturating_add(n).min(args.len()));
            return Some(j);
        }
        i = i.saturating_add(n);
    }
    None
}

/// Hosts of a pattern with their optional `:port`: `web[01:03].x:2222` is
/// web01.x, web02.x, web03.x on port 2222. Ranges are `[beg:end]` or
/// `[beg:end:step]`, numeric (zero-padded if `beg` is) or single letters.
pub(super) fn expand(pattern: &str, line: usize) -> Result<Vec<(String, Option<u16>)>, ParseError> {
    let bad = |msg: &str| ParseError::format(line, format!("host pattern {pattern:?}: {msg}"));
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
    let mut names = vec![String::new()];
    let mut rest = body;
    while let Some(open) = rest.find('[') {
        let close = rest
            .get(open..)
            .and_then(|r| r.find(']'))
            .map(|c| c.saturating_add(open))
            .ok_or_else(|| bad("unclosed ["))?;
        let prefix = rest.get(..open).unwrap_or("");
        let items = range(rest.get(open.saturating_add(1)..close).unwrap_or(""))
            .ok_or_else(|| bad("not a range [beg:end] or [beg:end:step]"))?;
        let total = names
            .len()
            .checked_mul(items.len())
            .filter(|&n| n <= MAX_HOSTS);
        if total.is_none() {
            return Err(bad(&format!("expands to more than {MAX_HOSTS} hosts")));
        }
        names = names
            .iter()
            .flat_map(|n| items.iter().map(move |i| format!("{n}{prefix}{i}")))
            .collect();
        rest = rest.get(close.saturating_add(1)..).unwrap_or("");
    }
    if rest.contains(']') {
        return Err(bad("] without ["));
    }
    Ok(names
        .into_iter()
        .map(|n| (format!("{n}{rest}"), port))
        .collect())
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

    #[test]
    fn jump_is_taken_out_of_ssh_args() {
        let mut a: Vec<String> = ["-o", "ProxyJump=ops@bastion", "-C"]
            .map(String::from)
            .into();
        assert_eq!(take_jump(&mut a).as_deref(), Some("ops@bastion"));
        assert_eq!(a, ["-C"]);
        let mut a: Vec<String> = ["-o", "StrictHostKeyChecking=no", "-Jb2"]
            .map(String::from)
            .into();
        assert_eq!(take_jump(&mut a).as_deref(), Some("b2"));
        assert_eq!(a, ["-o", "StrictHostKeyChecking=no"]);
        let mut a: Vec<String> = ["-J"].map(String::from).into();
        assert_eq!(take_jump(&mut a), None);
    }
}
