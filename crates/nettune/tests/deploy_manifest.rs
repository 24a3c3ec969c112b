//! The Kubernetes manifests under deploy/kubernetes: every YAML document parses
//! and names its kind, version and name; the DaemonSet shares the node's network
//! and PID namespaces and keeps a container named `nettune` running for
//! `kubectl exec`; the read-only manifest is not privileged and drops every
//! capability, the apply one is privileged; docs/fleet.md gives the commands and
//! the inventories it shows parse.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use model::inventory::{self, Format, Transport};
use yaml_rust2::{Yaml, YamlLoader};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn docs(file: &str) -> Vec<Yaml> {
    let path = repo().join("deploy/kubernetes").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn str_at<'a>(y: &'a Yaml, path: &[&str]) -> Option<&'a str> {
    path.iter().fold(y, |y, k| &y[*k]).as_str()
}

/// Every document has apiVersion, kind and metadata.name; returns the DaemonSet.
fn daemonset(file: &str) -> Yaml {
    let docs = docs(file);
    let mut kinds = Vec::new();
    for d in &docs {
        let kind =
            str_at(d, &["kind"]).unwrap_or_else(|| panic!("{file}: a document without kind"));
        assert!(
            str_at(d, &["apiVersion"]).is_some(),
            "{file}: {kind} without apiVersion"
        );
        let name = str_at(d, &["metadata", "name"]);
        assert!(
            name.is_some_and(|n| !n.is_empty()),
            "{file}: {kind} without metadata.name"
        );
        if kind != "Namespace" {
            assert_eq!(
                str_at(d, &["metadata", "namespace"]),
                Some("nettune"),
                "{file}: {kind}"
            );
        }
        kinds.push(kind.to_string());
    }
    assert_eq!(
        kinds,
        ["Namespace", "ServiceAccount", "DaemonSet"],
        "{file}"
    );
    let ds = docs.into_iter().nth(2).unwrap();
    assert_eq!(str_at(&ds, &["apiVersion"]), Some("apps/v1"));
    ds
}

/// The pod spec's checks both manifests share; returns the `nettune` container.
fn pod_checks(file: &str, ds: &Yaml) -> Yaml {
    let spec = &ds["spec"]["template"]["spec"];
    assert_eq!(
        spec["hostNetwork"].as_bool(),
        Some(true),
        "{file}: hostNetwork"
    );
    assert_eq!(spec["hostPID"].as_bool(), Some(true), "{file}: hostPID");
    assert_eq!(
        spec["dnsPolicy"].as_str(),
        Some("ClusterFirstWithHostNet"),
        "{file}"
    );
    assert_eq!(
        spec["serviceAccountName"].as_str(),
        Some("nettune"),
        "{file}"
    );
    // Selector and template labels agree (the API server refuses the DaemonSet otherwise).
    let sel = &ds["spec"]["selector"]["matchLabels"];
    let labels = &ds["spec"]["template"]["metadata"]["labels"];
    for (k, v) in sel.as_hash().unwrap() {
        assert_eq!(
            &labels[k.as_str().unwrap()],
            v,
            "{file}: selector label {k:?}"
        );
    }
    // Tolerates every taint: one agent per node.
    let tol = spec["tolerations"].as_vec().unwrap();
    assert!(
        tol.iter()
            .any(|t| t["operator"].as_str() == Some("Exists") && t["key"].is_badvalue()),
        "{file}: tolerations"
    );
    let containers = spec["containers"].as_vec().unwrap();
    let c = containers
        .iter()
        .find(|c| c["name"].as_str() == Some("nettune"))
        .unwrap_or_else(|| panic!("{file}: no container named nettune"))
        .clone();
    assert!(
        c["image"].as_str().is_some_and(|i| !i.is_empty()),
        "{file}: image"
    );
    // A command that keeps the container running for `kubectl exec`.
    let cmd: Vec<&str> = c["command"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(cmd, ["sleep", "infinity"], "{file}");
    // The node's journal, configuration and modules.
    let mounts: Vec<(&str, bool)> = c["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["mountPath"].as_str().unwrap(),
                m["readOnly"].as_bool() == Some(true),
            )
        })
        .collect();
    let vols = spec["volumes"].as_vec().unwrap();
    for path in ["/var/lib/nettune", "/etc/nettune", "/lib/modules"] {
        assert!(
            mounts.iter().any(|(p, _)| *p == path),
            "{file}: no mount at {path}"
        );
        assert!(
            vols.iter()
                .any(|v| v["hostPath"]["path"].as_str() == Some(path)),
            "{file}: no hostPath {path}"
        );
    }
    assert!(
        mounts.contains(&("/lib/modules", true)),
        "{file}: /lib/modules read-only"
    );
    c
}

#[test]
fn the_read_only_daemonset_is_not_privileged() {
    let file = "nettune-daemonset.yaml";
    let ds = daemonset(file);
    let c = pod_checks(file, &ds);
    let sc = &c["securityContext"];
    assert_eq!(sc["privileged"].as_bool(), Some(false));
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    let drop: Vec<&str> = sc["capabilities"]["drop"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(drop, ["ALL"]);
    assert!(
        sc["capabilities"]["add"].is_badvalue(),
        "no capability added"
    );
    // Every host path read-only.
    for m in c["volumeMounts"].as_vec().unwrap() {
        assert_eq!(m["readOnly"].as_bool(), Some(true), "{:?}", m["mountPath"]);
    }
}

#[test]
fn the_apply_daemonset_is_privileged_and_says_why() {
    let file = "nettune-daemonset-apply.yaml";
    let ds = daemonset(file);
    let c = pod_checks(file, &ds);
    assert_eq!(c["securityContext"]["privileged"].as_bool(), Some(true));
    let writable: Vec<&str> = c["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .filter(|m| m["readOnly"].as_bool() != Some(true))
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    assert_eq!(writable, ["/var/lib/nettune", "/etc/nettune"]);
    let text = std::fs::read_to_string(repo().join("deploy/kubernetes").join(file)).unwrap();
    for why in [
        "/proc/sys",
        "/sys",
        "/proc/irq",
        "ethtool",
        "CAP_SYS_MODULE",
    ] {
        assert!(text.contains(why), "{file} does not say why: {why}");
    }
    // Apart from privilege and writable state, the same objects as the read-only one.
    let ro = daemonset("nettune-daemonset.yaml");
    assert_eq!(ds["metadata"], ro["metadata"]);
    assert_eq!(ds["spec"]["selector"], ro["spec"]["selector"]);
    assert_eq!(
        ds["spec"]["template"]["spec"]["volumes"],
        ro["spec"]["template"]["spec"]["volumes"]
    );
}

fn kubectl_hosts(inv: &inventory::Inventory) -> Vec<(String, String)> {
    inv.hosts
        .iter()
        .map(|h| match &h.transport {
            Transport::Kubectl {
                pod,
                namespace,
                container,
                context: None,
            } => {
                assert_eq!(namespace.as_deref(), Some("nettune"), "{}", h.name);
                assert!(matches!(container.as_deref(), None | Some("nettune")));
                (h.name.to_string(), pod.clone())
            }
            other => panic!("{}: not kubectl: {other:?}", h.name),
        })
        .collect()
}

#[test]
fn the_example_inventory_reaches_the_pods_through_kubectl() {
    let inv = inventory::load(&repo().join("deploy/kubernetes/inventory.yml")).unwrap();
    let hosts = kubectl_hosts(&inv);
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    assert!(hosts.iter().all(|(_, pod)| pod.starts_with("nettune-")));
    let roles = |role: &str| {
        inventory::select(&inv, role)
            .unwrap()
            .iter()
            .map(|h| h.name.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(roles("server"), ["node-a"]);
    assert_eq!(roles("clients"), ["node-b", "node-c"]);
}

#[test]
fn docs_give_the_commands_and_the_listed_inventory_parses() {
    let doc = std::fs::read_to_string(repo().join("docs/fleet.md")).unwrap();
    for cmd in [
        "kubectl apply -f deploy/kubernetes/nettune-daemonset.yaml",
        "kubectl apply -f deploy/kubernetes/nettune-daemonset-apply.yaml",
        "nettune fleet doctor --inventory deploy/kubernetes/inventory.yml",
        "nettune fleet apply --inventory deploy/kubernetes/inventory.yml --profile latency",
        "nettune fleet rollback --inventory deploy/kubernetes/inventory.yml",
        "docker build -f deploy/Dockerfile",
    ] {
        assert!(doc.contains(cmd), "docs/fleet.md lacks `{cmd}`");
    }
    // What the documented `kubectl get pods -o jsonpath=...` pipeline writes, for
    // two nodes: it parses as the kubectl hosts it stands for.
    assert!(doc.contains("{.spec.nodeName} ansible_kubectl_pod={.metadata.name}"));
    assert!(doc.contains(
        r"printf '[nodes:vars]\nansible_connection=kubectl\nansible_kubectl_namespace=nettune\n'"
    ));
    let listed = "[nodes]\nnode-a ansible_kubectl_pod=nettune-7xk2p\nnode-b ansible_kubectl_pod=nettune-9qrvd\n[nodes:vars]\nansible_connection=kubectl\nansible_kubectl_namespace=nettune\n";
    let inv = inventory::parse(listed, Format::AnsibleIni).unwrap();
    assert_eq!(
        kubectl_hosts(&inv),
        [
            ("node-a".to_string(), "nettune-7xk2p".to_string()),
            ("node-b".to_string(), "nettune-9qrvd".to_string())
        ]
    );
}

#[test]
fn the_dockerfile_installs_what_nettune_runs() {
    let text = std::fs::read_to_string(repo().join("deploy/Dockerfile")).unwrap();
    assert!(text.contains("FROM debian:"), "Debian base");
    for pkg in ["iproute2", "ethtool"] {
        assert!(text.contains(pkg), "Dockerfile lacks {pkg}");
    }
}
