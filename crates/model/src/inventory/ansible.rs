//! What the Ansible INI and YAML readers share: groups with variables and
//! children, hosts added by pattern ([`expand`]), and the resolution
//! of each host's variables (all < parent group < child group < host, groups
//! of equal depth by name, as Ansible) into a [`Host`].

use super::hostpattern::expand;
use super::{short, split_words, Host, HostName, Inventory, Role, Transport, MAX_DEPTH, MAX_HOSTS};
use crate::error::ParseError;
use std::collections::{BTreeMap, BTreeSet};

/// Most group memberships plus variables resolved over all hosts.
const MAX_RESOLVED: usize = 1_000_000;

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
    /// Host entries and their variables written so far (see [`MAX_RESOLVED`]).
    written: usize,
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
        let names = expand(pattern, line)?;
        // one range line repeated, or with many variables, must not cost more than the budget
        self.written = names
            .len()
            .checked_mul(vars.len().saturating_add(1))
            .and_then(|n| self.written.checked_add(n))
            .filter(|&n| n <= MAX_RESOLVED)
            .ok_or_else(|| {
                ParseError::format(
                    line,
                    format!("more than {MAX_RESOLVED} host entries and variables"),
                )
            })?;
        for (name, port) in names {
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
                    let i = self.hosts.len();
                    self.index.insert(name.clone(), i);
                    self.hosts.push(HostDef {
                        name,
                        line,
                        vars: Vars::new(),
                        groups: BTreeSet::new(),
                    });
                    i
                }
            };
            let Some(h) = self.hosts.get_mut(i) else {
                continue;
            };
            // as Ansible: the pattern's port first, an explicit ansible_port over it
            if let Some(p) = port {
                h.vars.insert("ansible_port".into(), p.to_string());
            }
            h.vars
                .extend(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
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
        let mut walks = 0;
        self.resolve_counted(&mut walks)
    }

    /// [`Model::resolve`], counting the walks of the group graph in
    /// `walks`: one per distinct set of groups hosts are written in, not
    /// one per host (a dense 30-layer graph cost 0.09 s per host).
    fn resolve_counted(self, walks: &mut usize) -> Result<Inventory, ParseError> {
        let mut memo = BTreeMap::new();
        for name in self.groups.keys() {
            self.depth(name, &mut memo, 0)?;
        }
        let mut hosts = Vec::with_capacity(self.hosts.len());
        // memberships and variables written, over all hosts: a small file of
        // many groups or variables shared by many hosts must not blow up
        let mut budget = MAX_RESOLVED;
        let mut spend = |n: usize, line: usize| {
            budget = budget.checked_sub(n).ok_or_else(|| {
                ParseError::format(
                    line,
                    format!(
                        "more than {MAX_RESOLVED} group memberships and variables over all hosts"
                    ),
                )
            })?;
            Ok::<(), ParseError>(())
        };
        // The ordered ancestors of each distinct set of direct groups.
        let mut walked: BTreeMap<&BTreeSet<String>, Vec<(usize, String)>> = BTreeMap::new();
        for h in &self.hosts {
            if !walked.contains_key(&h.groups) {
                *walks = walks.saturating_add(1);
                // the groups and all their ancestors
                let mut groups: BTreeSet<String> = BTreeSet::new();
                let mut todo: Vec<&String> = h.groups.iter().collect();
                while let Some(g) = todo.pop() {
                    if groups.insert(g.clone()) {
                        todo.extend(self.groups.get(g).map(|g| &g.parents).into_iter().flatten());
                    }
                }
                let mut order: Vec<(usize, String)> = groups
                    .into_iter()
                    .map(|g| (memo.get(&g).copied().unwrap_or(1), g))
                    .collect();
                order.sort();
                walked.insert(&h.groups, order);
            }
            let Some(order) = walked.get(&h.groups) else {
                continue;
            };
            // Memberships count against the budget for every host.
            spend(order.len(), h.line)?;
            let mut vars = Vars::new();
            let all = self.groups.get("all");
            let layers = all
                .into_iter()
                .chain(
                    order
                        .iter()
                        .filter(|(_, g)| g.as_str() != "all")
                        .filter_map(|(_, g)| self.groups.get(g.as_str())),
                )
                .map(|g| &g.vars)
                .chain([&h.vars]);
            for layer in layers {
                spend(layer.len(), h.line)?;
                vars.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            // By name, as the groups were listed before.
            let mut names: Vec<&String> = order.iter().map(|(_, g)| g).collect();
            names.sort();
            let roles = names
                .into_iter()
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

/// The ssh and kubectl connection variables nettune implements; any other
/// `ansible_ssh_*` or `ansible_kubectl_*` (and a password) is refused, so
/// a kubeconfig or ssh arguments are never silently dropped.
const IMPLEMENTED: [&str; 10] = [
    "ansible_ssh_host",
    "ansible_ssh_port",
    "ansible_ssh_user",
    "ansible_ssh_private_key_file",
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
    "ansible_kubectl_pod",
    "ansible_kubectl_namespace",
    "ansible_kubectl_container",
    "ansible_kubectl_context",
];

/// Refuse connection variables nettune does not implement, and Jinja
/// `{{ }}` in any `ansible_*` value (nettune does not template: the text
/// would be taken literally as a host, user or path).
fn check_connection_vars(name: &str, vars: &Vars, line: usize) -> Result<(), ParseError> {
    for (k, v) in vars {
        if !k.starts_with("ansible_") {
            continue;
        }
        let unimplemented = (k.starts_with("ansible_ssh_") || k.starts_with("ansible_kubectl_"))
            && !IMPLEMENTED.contains(&k.as_str())
            || matches!(k.as_str(), "ansible_password" | "ansible_ssh_pass");
        if unimplemented {
            return Err(ParseError::format(
                line,
                format!(
                    "host {name}: {} is a connection variable nettune does not implement (it would be ignored); remove it or set the connection up in ssh_config or the kubectl context",
                    short(k)
                ),
            ));
        }
        if v.contains("{{") || v.contains("{%") {
            return Err(ParseError::format(
                line,
                format!(
                    "host {name}: {} is a Jinja template ({:?}); nettune does not expand templates, write the value itself",
                    short(k),
                    short(v)
                ),
            ));
        }
    }
    Ok(())
}

/// The transport named by a host's resolved variables.
fn transport(name: &str, vars: &Vars, line: usize) -> Result<Transport, ParseError> {
    check_connection_vars(name, vars, line)?;
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
                    ParseError::format(line, format!("host {name}: ansible_port {:?} is not a port number", short(&p)))
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
            format!(
                "host {name}: ansible_connection={} is not a transport nettune has (ssh, local, kubectl)",
                short(other)
            ),
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Issue 35: a dense 30-layer group graph (every group a child of every
    /// group of the layer above) and 1000 hosts in one bottom group: the
    /// graph is walked once, not once per host.
    #[test]
    fn a_dense_group_graph_is_walked_once_per_group_set() {
        let mut m = Model::default();
        m.group("all", 1).unwrap();
        let name = |l: usize, k: usize| format!("l{l}g{k}");
        for k in 0..10 {
            m.child("all", &name(0, k), 1).unwrap();
        }
        for l in 0..29 {
            for a in 0..10 {
                for b in 0..10 {
                    m.child(&name(l, a), &name(l + 1, b), 1).unwrap();
                }
            }
        }
        m.hosts("h[1:1000]", &name(29, 0), &Vars::new(), 2).unwrap();
        m.hosts("x[1:10]", &name(29, 1), &Vars::new(), 3).unwrap();
        let mut walks = 0;
        let inv = m.resolve_counted(&mut walks).unwrap();
        assert_eq!(inv.hosts.len(), 1010);
        assert_eq!(walks, 2);
        // Every layer above is an ancestor of a bottom host.
        assert_eq!(inv.hosts[0].roles.len(), 29 * 10 + 1);
    }
}
