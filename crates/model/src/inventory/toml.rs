//! nettune's own inventory format:
//!
//! ```toml
//! [defaults]                 # optional; any host key but name
//! user = "ops"
//! jump = "bastion.example.com"
//!
//! [[host]]
//! name = "web1"              # required, unique
//! transport = "ssh"          # ssh (default) | kubectl | netns | local
//! address = "10.0.0.5"       # ssh; default: the name
//! port = 22                  # ssh
//! identity_file = "~/.ssh/fleet"
//! ssh_args = ["-o", "StrictHostKeyChecking=accept-new"]
//! roles = ["server"]
//! labels = { rack = "a1" }
//!
//! [[host]]
//! name = "pod-a"
//! transport = "kubectl"
//! pod = "nettune-agent-0"    # default: the name
//! namespace = "perf"
//! container = "agent"
//! context = "lab"
//!
//! [[host]]
//! name = "ns1"
//! transport = "netns"
//! netns = "blue"             # default: the name
//!
//! [[host]]
//! name = "e1000e-a"
//! transport = "guest"        # a QEMU guest's agent port
//! socket = "/run/nettune-guest/e1000e-a/agent.sock"   # required
//! ```
//!
//! A host's key overrides the same key of `[defaults]`, except `roles` (the
//! union) and `labels` (merged key by key, the host's winning). Unknown keys are
//! errors, and so are keys of another transport (`pod` on an ssh host).

use super::{Host, HostName, Inventory, Role, Transport, MAX_HOSTS};
use crate::error::ParseError;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    name: Option<Spanned<String>>,
    transport: Option<String>,
    address: Option<String>,
    user: Option<String>,
    port: Option<u16>,
    jump: Option<String>,
    identity_file: Option<String>,
    ssh_args: Option<Vec<String>>,
    pod: Option<String>,
    namespace: Option<String>,
    container: Option<String>,
    context: Option<String>,
    netns: Option<String>,
    socket: Option<String>,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: Fields,
    #[serde(default)]
    host: Vec<Fields>,
}

/// Parse a nettune TOML inventory.
pub fn parse(text: &str) -> Result<Inventory, ParseError> {
    let file: File = ::toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |s| super::line_of(text, s.start));
        ParseError::format(line, e.message().to_owned())
    })?;
    if file.host.len() > MAX_HOSTS {
        return Err(ParseError::format(
            1,
            format!("more than {MAX_HOSTS} hosts"),
        ));
    }
    if let Some(n) = &file.defaults.name {
        let line = super::line_of(text, n.span().start);
        return Err(ParseError::format(line, "[defaults] cannot have a name"));
    }
    let mut seen = BTreeSet::new();
    let mut hosts = Vec::with_capacity(file.host.len());
    for (i, raw) in file.host.iter().enumerate() {
        let Some(n) = &raw.name else {
            let line = text
                .lines()
                .enumerate()
                .filter(|(_, l)| l.trim_start().starts_with("[[host]]"))
                .nth(i)
                .map_or(1, |(n, _)| n.saturating_add(1));
            return Err(ParseError::format(line, "[[host]] has no name"));
        };
        let line = super::line_of(text, n.span().start);
        let name = HostName::new(n.get_ref())
            .ok_or_else(|| ParseError::invalid(line, "host name", n.get_ref()))?;
        if !seen.insert(name.clone()) {
            return Err(ParseError::format(
                line,
                format!("host {name} is listed twice"),
            ));
        }
        hosts.push(host(name, raw, &file.defaults, line)?);
    }
    Ok(Inventory { hosts })
}

fn host(name: HostName, h: &Fields, d: &Fields, line: usize) -> Result<Host, ParseError> {
    let pick = |a: &Option<String>, b: &Option<String>| a.clone().or_else(|| b.clone());
    let transport = pick(&h.transport, &d.transport).unwrap_or_else(|| "ssh".to_owned());
    let err = |msg: String| ParseError::format(line, format!("host {name}: {msg}"));
    // keys a transport does not use, set on the host itself, are mistakes
    let foreign = |keys: &[(&str, bool)]| -> Result<(), ParseError> {
        match keys.iter().find(|(_, set)| *set) {
            Some((k, _)) => Err(err(format!("{k} does not apply to transport {transport}"))),
            None => Ok(()),
        }
    };
    let ssh_keys = [
        ("address", h.address.is_some()),
        ("user", h.user.is_some()),
        ("port", h.port.is_some()),
        ("jump", h.jump.is_some()),
        ("identity_file", h.identity_file.is_some()),
        ("ssh_args", h.ssh_args.is_some()),
    ];
    let kube_keys = [
        ("pod", h.pod.is_some()),
        ("namespace", h.namespace.is_some()),
        ("container", h.container.is_some()),
        ("context", h.context.is_some()),
    ];
    let netns_key = [("netns", h.netns.is_some())];
    let guest_key = [("socket", h.socket.is_some())];
    let transport = match transport.as_str() {
        "ssh" => {
            foreign(&kube_keys)?;
            foreign(&netns_key)?;
            foreign(&guest_key)?;
            if h.port.or(d.port) == Some(0) {
                return Err(err("port 0 is not a port".to_owned()));
            }
            Transport::Ssh {
                address: pick(&h.address, &d.address).unwrap_or_else(|| name.as_str().to_owned()),
                user: pick(&h.user, &d.user),
                port: h.port.or(d.port),
                jump: pick(&h.jump, &d.jump),
                identity_file: pick(&h.identity_file, &d.identity_file),
                ssh_args: h
                    .ssh_args
                    .clone()
                    .or_else(|| d.ssh_args.clone())
                    .unwrap_or_default(),
            }
        }
        "kubectl" => {
            foreign(&ssh_keys)?;
            foreign(&netns_key)?;
            foreign(&guest_key)?;
            Transport::Kubectl {
                pod: pick(&h.pod, &d.pod).unwrap_or_else(|| name.as_str().to_owned()),
                namespace: pick(&h.namespace, &d.namespace),
                container: pick(&h.container, &d.container),
                context: pick(&h.context, &d.context),
            }
        }
        "netns" => {
            foreign(&ssh_keys)?;
            foreign(&kube_keys)?;
            foreign(&guest_key)?;
            Transport::Netns {
                name: pick(&h.netns, &d.netns).unwrap_or_else(|| name.as_str().to_owned()),
            }
        }
        "local" => {
            foreign(&ssh_keys)?;
            foreign(&kube_keys)?;
            foreign(&netns_key)?;
            foreign(&guest_key)?;
            Transport::Local
        }
        "guest" => {
            foreign(&ssh_keys)?;
            foreign(&kube_keys)?;
            foreign(&netns_key)?;
            let socket = pick(&h.socket, &d.socket).ok_or_else(|| {
                err("transport guest needs socket (its agent's unix socket)".to_owned())
            })?;
            if socket.is_empty() || socket.chars().any(char::is_control) {
                return Err(err(format!(
                    "socket {socket:?}: empty or with a control character"
                )));
            }
            Transport::Guest { socket }
        }
        other => {
            return Err(err(format!(
                "unknown transport {other:?} (ssh, kubectl, netns, local or guest)"
            )))
        }
    };
    let mut roles = BTreeSet::new();
    for r in d.roles.iter().chain(&h.roles) {
        roles.insert(Role::new(r).ok_or_else(|| ParseError::invalid(line, "role", r))?);
    }
    let mut labels = d.labels.clone();
    labels.extend(h.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(Host {
        name,
        transport,
        roles,
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_and_hosts_override() {
        let inv = parse(
            "[defaults]\nuser = \"ops\"\nroles = [\"fleet\"]\nlabels = { dc = \"x\", rack = \"0\" }\n\
             [[host]]\nname = \"a\"\nuser = \"root\"\nroles = [\"server\"]\nlabels = { rack = \"a1\" }\n\
             [[host]]\nname = \"b\"\n",
        )
        .unwrap_or_default();
        let a = inv.hosts.first();
        assert!(
            matches!(a.map(|h| &h.transport), Some(Transport::Ssh { user: Some(u), address, .. }) if u == "root" && address == "a")
        );
        assert_eq!(a.map(|h| h.roles.len()), Some(2));
        assert_eq!(
            a.and_then(|h| h.labels.get("rack")).map(String::as_str),
            Some("a1")
        );
        assert_eq!(
            a.and_then(|h| h.labels.get("dc")).map(String::as_str),
            Some("x")
        );
        assert!(
            matches!(inv.hosts.get(1).map(|h| &h.transport), Some(Transport::Ssh { user: Some(u), .. }) if u == "ops")
        );
    }

    #[test]
    fn mistakes_name_the_line() {
        let e = |t: &str| parse(t).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            e("[[host]]\nname = \"a\"\n[[host]]\nname = \"a\"\n"),
            "line 4: host a is listed twice"
        );
        assert!(
            e("[[host]]\nname = \"a\"\ntransport = \"kubectl\"\nport = 22\n")
                .contains("port does not apply to transport kubectl")
        );
        assert!(e("[[host]]\nname = \"a\"\ntransport = \"telnet\"\n")
            .starts_with("line 2: host a: unknown transport"));
        assert!(e("[[host]]\nname = \"a\"\nprot = 22\n").starts_with("line "));
        assert!(e("[[host]]\nname = \"a b\"\n").starts_with("line 2: invalid host name"));
        assert!(e("[[host]]\nname = \"a\"\nport = 70000\n").starts_with("line 3"));
        assert_eq!(
            e("[[host]]\nname = \"a\"\nport = 0\n"),
            "line 2: host a: port 0 is not a port"
        );
    }
}
