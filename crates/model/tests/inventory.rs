//! Fleet inventories read from `tests/fixtures/inventory/`: the Ansible INI and
//! YAML forms of one fleet resolve to the same hosts with Ansible's variable
//! precedence; nettune's TOML gives every transport; `--limit` patterns select
//! as Ansible's do; hostile text never panics.
#![allow(clippy::unwrap_used)]

use nettune_model::inventory::{
    load, parse, select, Format, Host, Inventory, InventoryError, LimitError, Transport,
    MAX_FILE_BYTES,
};
use proptest::prelude::*;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/inventory")
        .join(name)
}

fn host<'a>(inv: &'a Inventory, name: &str) -> &'a Host {
    inv.hosts.iter().find(|h| h.name.as_str() == name).unwrap()
}

fn roles(h: &Host) -> Vec<&str> {
    h.roles.iter().map(|r| r.as_str()).collect()
}

fn label<'a>(h: &'a Host, k: &str) -> Option<&'a str> {
    h.labels.get(k).map(String::as_str)
}

fn ssh(
    address: &str,
    user: &str,
    port: Option<u16>,
    jump: Option<&str>,
    key: Option<&str>,
    args: &[&str],
) -> Transport {
    Transport::Ssh {
        address: address.into(),
        user: Some(user.into()),
        port,
        jump: jump.map(Into::into),
        identity_file: key.map(Into::into),
        ssh_args: args.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn ini_and_yaml_resolve_to_the_same_hosts() {
    let ini = load(&fixture("fleet.ini")).unwrap();
    let yaml = load(&fixture("fleet.yml")).unwrap();
    assert_eq!(ini, yaml);
    let names: Vec<&str> = ini.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "web01.example.com",
            "web02.example.com",
            "web03.example.com",
            "db-a.example.com",
            "db-b.example.com",
            "loadgen"
        ]
    );
}

#[test]
fn ansible_precedence_host_over_child_over_parent_over_all() {
    let inv = load(&fixture("fleet.ini")).unwrap();
    let bastion = Some("ops@bastion.example.com");
    let accept = ["-o", "StrictHostKeyChecking=accept-new"];

    let web01 = host(&inv, "web01.example.com");
    // child group web (tier) over parent servers (user) over all (dc)
    assert_eq!(
        web01.transport,
        ssh("web01.example.com", "ops", None, bastion, None, &accept)
    );
    assert_eq!(roles(web01), ["servers", "web"]);
    assert_eq!(label(web01, "tier"), Some("frontend"));
    assert_eq!(label(web01, "http_port"), Some("80"));
    assert_eq!(label(web01, "dc"), Some("eu-1"));
    assert!(!web01.labels.keys().any(|k| k.starts_with("ansible_")));

    // host variables win over every group
    let web03 = host(&inv, "web03.example.com");
    assert_eq!(
        web03.transport,
        ssh("10.0.1.13", "ops", Some(2222), bastion, None, &accept)
    );
    assert_eq!(label(web03, "tier"), Some("front end"));

    let db = host(&inv, "db-b.example.com");
    assert_eq!(
        db.transport,
        ssh(
            "db-b.example.com",
            "ops",
            None,
            bastion,
            Some("~/.ssh/db_ed25519"),
            &accept
        )
    );
    assert_eq!(roles(db), ["db", "servers"]);
    assert_eq!(label(db, "tier"), Some("backend"));

    // only all:vars reach a host outside servers
    let lg = host(&inv, "loadgen");
    assert_eq!(lg.transport, Transport::Local);
    assert_eq!(roles(lg), ["client"]);
    assert_eq!(label(lg, "tier"), Some("none"));
}

#[test]
fn equal_depth_groups_apply_by_name_and_host_lines_merge() {
    let inv = parse(
        "[b]\nh x=1\n[a]\nh y=2\n[a:vars]\nv=a\nw=a\n[b:vars]\nv=b\n[p:children]\na\n[p:vars]\nw=p\nz=p\n",
        Format::AnsibleIni,
    )
    .unwrap();
    let h = host(&inv, "h");
    // a is p's child (depth 2): its v and w win over b's and p's (depth 1)
    assert_eq!(label(h, "v"), Some("a"));
    assert_eq!(label(h, "w"), Some("a"));
    assert_eq!(label(h, "z"), Some("p"));
    assert_eq!((label(h, "x"), label(h, "y")), (Some("1"), Some("2")));
    assert_eq!(roles(h), ["a", "b", "p"]);
    let flat = parse(
        "[b]\nh\n[a]\nh\n[a:vars]\nv=a\n[b:vars]\nv=b\n",
        Format::AnsibleIni,
    )
    .unwrap();
    assert_eq!(
        label(host(&flat, "h"), "v"),
        Some("b"),
        "same depth: later name wins"
    );
}

#[test]
fn toml_inventory_has_every_transport() {
    let inv = load(&fixture("fleet.toml")).unwrap();
    let srv = host(&inv, "srv1");
    assert_eq!(
        srv.transport,
        ssh(
            "10.0.0.5",
            "ops",
            Some(2222),
            Some("ops@bastion.example.com"),
            Some("~/.ssh/fleet_ed25519"),
            &["-o", "StrictHostKeyChecking=accept-new"]
        )
    );
    assert_eq!(
        (label(srv, "rack"), label(srv, "dc")),
        (Some("a1"), Some("eu-1"))
    );
    assert_eq!(
        host(&inv, "cli1").transport,
        ssh(
            "10.0.0.6",
            "ops",
            None,
            Some("ops@bastion.example.com"),
            None,
            &[]
        )
    );
    assert_eq!(
        host(&inv, "pod-a").transport,
        Transport::Kubectl {
            pod: "nettune-agent-0".into(),
            namespace: Some("perf".into()),
            container: Some("agent".into()),
            context: Some("lab-cluster".into()),
        }
    );
    assert_eq!(
        host(&inv, "ns-blue").transport,
        Transport::Netns {
            name: "nt-blue".into()
        }
    );
    assert_eq!(host(&inv, "here").transport, Transport::Local);
}

#[test]
fn ranges_in_ini_expand_and_are_bounded() {
    let inv = parse(
        "[r]\nn[08:10] ansible_user=u\nx-[a:c:2]\n",
        Format::AnsibleIni,
    )
    .unwrap();
    let names: Vec<&str> = inv.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["n08", "n09", "n10", "x-a", "x-c"]);
    let e = parse("[r]\nok\nn[0:99999]\n", Format::AnsibleIni)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("line 3: host pattern"), "{e}");
    let e = parse("[r]\na[0:5000]\nb[0:5000]\n", Format::AnsibleIni)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "line 3: more than 10000 hosts");
}

#[test]
fn many_hosts_sharing_many_variables_are_refused_not_expanded() {
    let mut text = String::from("[r]\nh[0:9999]\n[all:vars]\n");
    for i in 0..200 {
        text.push_str(&format!("v{i}=x\n"));
    }
    let e = parse(&text, Format::AnsibleIni).unwrap_err().to_string();
    assert!(
        e.contains("more than 1000000 group memberships and variables"),
        "{e}"
    );
    // the same range line again and again
    let text = "[r]\nh[0:9999]\n".repeat(200);
    let e = parse(&text, Format::AnsibleIni).unwrap_err().to_string();
    assert_eq!(e, "line 202: more than 1000000 host entries and variables");
    // 10 000 hosts with a few shared variables are fine
    let inv = parse(
        "[r]\nh[0:9999]\n[all:vars]\nansible_user=ops\ndc=x\n",
        Format::AnsibleIni,
    )
    .unwrap();
    assert_eq!(inv.hosts.len(), 10_000);
}

fn limit(inv: &Inventory, p: &str) -> Result<Vec<String>, LimitError> {
    select(inv, p).map(|hs| hs.iter().map(|h| h.name.to_string()).collect())
}

#[test]
fn limit_patterns_as_ansible() {
    let inv = load(&fixture("fleet.ini")).unwrap();
    let all = limit(&inv, "all").unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(limit(&inv, "*").unwrap(), all);
    assert_eq!(limit(&inv, "loadgen").unwrap(), ["loadgen"]);
    assert_eq!(
        limit(&inv, "db").unwrap(),
        ["db-a.example.com", "db-b.example.com"]
    );
    assert_eq!(
        limit(&inv, "web0*").unwrap(),
        [
            "web01.example.com",
            "web02.example.com",
            "web03.example.com"
        ]
    );
    // union keeps inventory order whatever the order written
    assert_eq!(
        limit(&inv, "loadgen,db-a.example.com").unwrap(),
        ["db-a.example.com", "loadgen"]
    );
    assert_eq!(
        limit(&inv, "client:db").unwrap(),
        ["db-a.example.com", "db-b.example.com", "loadgen"]
    );
    assert_eq!(
        limit(&inv, "servers:!web").unwrap(),
        ["db-a.example.com", "db-b.example.com"]
    );
    assert_eq!(
        limit(&inv, "servers:&web0?.example.com:!web02*").unwrap(),
        ["web01.example.com", "web03.example.com"]
    );
    // exclusion written first still applies after the union
    assert_eq!(limit(&inv, "!servers,all").unwrap(), ["loadgen"]);
    assert_eq!(limit(&inv, "!servers").unwrap(), ["loadgen"]);
    assert_eq!(limit(&inv, "&client").unwrap(), ["loadgen"]);

    assert_eq!(
        limit(&inv, "webb"),
        Err(LimitError::NoMatch {
            term: "webb".into()
        })
    );
    assert_eq!(
        limit(&inv, "all:!nosuch"),
        Err(LimitError::NoMatch {
            term: "nosuch".into()
        })
    );
    assert_eq!(
        limit(&inv, "web:&db"),
        Err(LimitError::Nothing {
            pattern: "web:&db".into()
        })
    );
    assert_eq!(limit(&inv, " , "), Err(LimitError::Empty));
    assert!(matches!(
        limit(&inv, "~web.*"),
        Err(LimitError::Unsupported { .. })
    ));
    assert!(matches!(
        limit(&inv, "web[0]"),
        Err(LimitError::Unsupported { .. })
    ));
    assert!(matches!(
        limit(&inv, "all:!"),
        Err(LimitError::Unsupported { .. })
    ));
    assert_eq!(
        limit(&inv, "webb").unwrap_err().to_string(),
        "--limit: \"webb\" matches no host or role of the inventory"
    );
}

#[test]
fn load_errors_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("nettune-inventory-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("hosts");
    std::fs::write(&bad, "[web]\nweb1\nweb2 ansible_port=ssh\n").unwrap();
    let e = load(&bad).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: line 3: host web2: ansible_port \"ssh\" is not a port number",
            bad.display()
        )
    );

    let yml = dir.join("hosts.yaml");
    std::fs::write(
        &yml,
        "all:\n  hosts:\n    h1:\n      ansible_connection: winrm\n",
    )
    .unwrap();
    let e = load(&yml).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}: line 3: host h1: ansible_connection=winrm",
            yml.display()
        )),
        "{e}"
    );

    let json = dir.join("hosts.json");
    std::fs::write(&json, "{}").unwrap();
    assert!(matches!(
        load(&json),
        Err(InventoryError::UnknownFormat { .. })
    ));

    let big = dir.join("big.toml");
    std::fs::write(
        &big,
        vec![b'#'; usize::try_from(MAX_FILE_BYTES).unwrap() + 1],
    )
    .unwrap();
    assert!(matches!(load(&big), Err(InventoryError::TooLarge { .. })));

    let missing = dir.join("missing.ini");
    let e = load(&missing).unwrap_err().to_string();
    assert!(e.starts_with(&missing.display().to_string()), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn format_follows_the_extension() {
    let f = |p: &str| Format::from_path(std::path::Path::new(p));
    assert_eq!(f("inv.toml"), Some(Format::Toml));
    assert_eq!(f("hosts"), Some(Format::AnsibleIni));
    assert_eq!(f("ansible.cfg"), Some(Format::AnsibleIni));
    assert_eq!(f("inv.INI"), Some(Format::AnsibleIni));
    assert_eq!(f("inv.yml"), Some(Format::AnsibleYaml));
    assert_eq!(f("inv.yaml"), Some(Format::AnsibleYaml));
    assert_eq!(f("inv.json"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn ini_parser_never_panics(text in "(\\PC|\n|\\[|\\]|:|=|\"|'|#){0,400}") {
        let _ = parse(&text, Format::AnsibleIni);
    }

    #[test]
    fn ini_shaped_text_never_panics(lines in proptest::collection::vec(
        "(\\[[a-z:]{0,12}\\]|[a-z]{1,4}(\\[[0-9a-z:]{0,7}\\])?[a-z.]{0,4}(:[0-9]{0,6})?( [a-z_]{1,20}=[a-z0-9'\" -]{0,10}){0,3}|[a-z_]{1,8}=.{0,8})",
        0..30,
    )) {
        let _ = parse(&lines.join("\n"), Format::AnsibleIni);
    }

    #[test]
    fn yaml_and_toml_parsers_never_panic(text in "(\\PC|\n| |:|-|\\[|\\]|\\{|\\}|&|\\*){0,300}") {
        let _ = parse(&text, Format::AnsibleYaml);
        let _ = parse(&text, Format::Toml);
    }

    #[test]
    fn limit_never_panics(p in "[a-z*?!&:,~@\\[\\] ]{0,30}") {
        let inv = parse("[web]\nweb[1:3]\n[db]\ndb1\n", Format::AnsibleIni).unwrap();
        if let Ok(hs) = select(&inv, &p) {
            prop_assert!(!hs.is_empty());
        }
    }
}

#[test]
fn the_toml_example_in_docs_fleet_md_parses() {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/fleet.md"),
    )
    .unwrap();
    let block = doc
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    let inv = parse(block, Format::Toml).unwrap();
    let names: Vec<&str> = inv.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["srv1", "pod-a", "ns-blue", "e1000e-a"]);
    assert!(
        matches!(&inv.hosts[3].transport, Transport::Guest { socket } if !socket.is_empty()),
        "{:?}",
        inv.hosts[3].transport
    );
}

#[test]
fn ansible_kubectl_hosts_become_kubectl_transports() {
    let inv = parse(
        "[pods]\nagent-0 ansible_connection=kubectl ansible_kubectl_namespace=perf\n\
         agent-1 ansible_connection=kubernetes.core.kubectl ansible_kubectl_pod=p1 ansible_kubectl_container=c ansible_kubectl_context=lab\n",
        Format::AnsibleIni,
    )
    .unwrap();
    assert_eq!(
        host(&inv, "agent-0").transport,
        Transport::Kubectl {
            pod: "agent-0".into(),
            namespace: Some("perf".into()),
            container: None,
            context: None
        }
    );
    assert_eq!(
        host(&inv, "agent-1").transport,
        Transport::Kubectl {
            pod: "p1".into(),
            namespace: None,
            container: Some("c".into()),
            context: Some("lab".into())
        }
    );
    let e = parse("[w]\nwin1 ansible_connection=winrm\n", Format::AnsibleIni)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "line 2: host win1: ansible_connection=winrm is not a transport nettune has (ssh, local, kubectl)");
}

#[test]
fn a_guest_host_names_its_agent_socket_and_takes_no_other_transports_keys() {
    let inv = parse(
        "[[host]]\nname = \"e1000e-a\"\ntransport = \"guest\"\nsocket = \"/run/g/agent.sock\"\n",
        Format::Toml,
    )
    .unwrap();
    assert_eq!(
        host(&inv, "e1000e-a").transport,
        Transport::Guest {
            socket: "/run/g/agent.sock".into()
        }
    );
    let e = parse(
        "[[host]]\nname = \"g\"\ntransport = \"guest\"\n",
        Format::Toml,
    )
    .unwrap_err();
    assert!(e.to_string().contains("needs socket"), "{e}");
    let e = parse(
        "[[host]]\nname = \"g\"\ntransport = \"guest\"\nsocket = \"/s\"\npod = \"p\"\n",
        Format::Toml,
    )
    .unwrap_err();
    assert!(e.to_string().contains("pod does not apply"), "{e}");
    let e = parse("[[host]]\nname = \"g\"\nsocket = \"/s\"\n", Format::Toml).unwrap_err();
    assert!(e.to_string().contains("socket does not apply"), "{e}");
}
