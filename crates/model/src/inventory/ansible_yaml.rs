//! Ansible YAML inventories: top-level groups (usually `all`), each a mapping
//! of `hosts` (host pattern -> variables or nothing), `vars` and `children`
//! (group name -> group). YAML aliases are refused (no expansion bombs);
//! nesting is capped at [`MAX_DEPTH`].

use super::ansible::{Model, Vars};
use super::{short, Inventory, MAX_DEPTH, MAX_HOSTS};
use crate::error::ParseError;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// Most YAML nodes read (scalars, mappings, sequences).
const MAX_NODES: usize = 1_000_000;

#[derive(Debug)]
enum Value {
    Null,
    Scalar(String),
    Map(Vec<(String, usize, Node)>),
    Seq(Vec<Node>),
}

#[derive(Debug)]
struct Node {
    line: usize,
    value: Value,
}

/// Read the first YAML document into a tree of nodes with their lines.
fn tree(text: &str) -> Result<Option<Node>, ParseError> {
    let mut parser = Parser::new_from_str(text);
    // open containers: the node, and for a mapping the key awaiting its value
    let mut stack: Vec<(Node, Option<(String, usize)>)> = Vec::new();
    let mut nodes = 0usize;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| {
            ParseError::format(e.marker().line().max(1), format!("YAML: {}", e.info()))
        })?;
        let line = mark.line().max(1);
        let done = match event {
            Event::StreamEnd | Event::DocumentEnd => return Ok(None),
            Event::Alias(_) => {
                return Err(ParseError::format(
                    line,
                    "YAML aliases (*name) are not supported",
                ))
            }
            Event::Scalar(s, style, _, _) => {
                let null = style == TScalarStyle::Plain
                    && matches!(s.as_str(), "" | "~" | "null" | "Null" | "NULL");
                Some(Node {
                    line,
                    value: if null { Value::Null } else { Value::Scalar(s) },
                })
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(ParseError::format(
                        line,
                        format!("YAML nested deeper than {MAX_DEPTH}"),
                    ));
                }
                let value = if matches!(event, Event::MappingStart(..)) {
                    Value::Map(Vec::new())
                } else {
                    Value::Seq(Vec::new())
                };
                stack.push((Node { line, value }, None));
                None
            }
            Event::MappingEnd | Event::SequenceEnd => stack.pop().map(|(n, _)| n),
            _ => None,
        };
        let Some(node) = done else { continue };
        nodes = nodes.saturating_add(1);
        if nodes > MAX_NODES {
            return Err(ParseError::format(
                line,
                format!("more than {MAX_NODES} YAML nodes"),
            ));
        }
        let Some((parent, key)) = stack.last_mut() else {
            return Ok(Some(node));
        };
        match &mut parent.value {
            Value::Seq(items) => items.push(node),
            Value::Map(entries) => match key.take() {
                Some((k, at)) => entries.push((k, at, node)),
                None => match node.value {
                    Value::Scalar(s) => *key = Some((s, node.line)),
                    Value::Null => *key = Some((String::new(), node.line)),
                    _ => {
                        return Err(ParseError::format(
                            node.line,
                            "YAML mapping keys must be plain values",
                        ))
                    }
                },
            },
            _ => {}
        }
    }
}

/// Parse an Ansible YAML inventory.
pub(super) fn parse(text: &str) -> Result<Inventory, ParseError> {
    let mut model = Model::default();
    model.group("all", 1)?;
    model.group("ungrouped", 1)?;
    model.child("all", "ungrouped", 1)?;
    match tree(text)? {
        None => {}
        Some(Node {
            value: Value::Map(groups),
            ..
        }) => {
            for (name, at, node) in &groups {
                if name != "all" {
                    model.child("all", name, *at)?;
                }
                group(&mut model, name, *at, node, 0)?;
            }
        }
        Some(Node {
            value: Value::Null, ..
        }) => {}
        Some(n) => {
            return Err(ParseError::format(
                n.line,
                "an Ansible YAML inventory is a mapping of groups",
            ))
        }
    }
    model.resolve()
}

fn group(
    model: &mut Model,
    name: &str,
    at: usize,
    node: &Node,
    depth: usize,
) -> Result<(), ParseError> {
    if depth > MAX_DEPTH {
        return Err(ParseError::format(
            at,
            format!("groups nested deeper than {MAX_DEPTH}"),
        ));
    }
    model.group(name, at)?;
    let entries = match &node.value {
        Value::Null => return Ok(()),
        Value::Map(e) => e,
        _ => {
            return Err(ParseError::format(
                node.line,
                format!("group {name}: expected a mapping of hosts, vars and children"),
            ))
        }
    };
    for (key, key_at, n) in entries {
        match key.as_str() {
            "vars" => model.group_vars(name, vars(n, &format!("group {name} vars"))?, *key_at)?,
            "hosts" => match &n.value {
                Value::Null => {}
                Value::Map(hosts) => {
                    for (pattern, at, h) in hosts {
                        let v = vars(h, &format!("host {}", short(pattern)))?;
                        model.hosts(pattern, name, &v, *at)?;
                    }
                }
                _ => {
                    return Err(ParseError::format(
                        n.line,
                        format!("group {name}: hosts must be a mapping"),
                    ))
                }
            },
            "children" => match &n.value {
                Value::Null => {}
                Value::Map(children) => {
                    for (child, at, c) in children {
                        model.child(name, child, *at)?;
                        group(model, child, *at, c, depth.saturating_add(1))?;
                    }
                }
                _ => {
                    return Err(ParseError::format(
                        n.line,
                        format!("group {name}: children must be a mapping"),
                    ))
                }
            },
            other => {
                return Err(ParseError::format(
                    *key_at,
                    format!(
                        "group {name}: unknown key {:?} (hosts, vars or children)",
                        short(other)
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// A variables mapping; values that are lists or mappings are skipped
/// (nettune reads only scalar variables), except for `ansible_*` ones.
fn vars(node: &Node, what: &str) -> Result<Vars, ParseError> {
    let mut out = Vars::new();
    match &node.value {
        Value::Null => {}
        Value::Map(entries) => {
            for (k, _, v) in entries {
                match &v.value {
                    Value::Scalar(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    Value::Null => {
                        out.insert(k.clone(), String::new());
                    }
                    _ if k.starts_with("ansible_") => {
                        return Err(ParseError::format(
                            v.line,
                            format!("{what}: {} must be a single value", short(k)),
                        ))
                    }
                    _ => {}
                }
                if out.len() > MAX_HOSTS {
                    return Err(ParseError::format(
                        v.line,
                        format!("{what}: more than {MAX_HOSTS} variables"),
                    ));
                }
            }
        }
        _ => {
            return Err(ParseError::format(
                node.line,
                format!("{what}: expected a mapping of variables"),
            ))
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_bad_shapes_are_refused_with_lines() {
        let e = parse("all:\n  vars: &v\n    a: 1\n  children:\n    web:\n      vars: *v\n").err();
        assert_eq!(
            e.map(|e| e.to_string()),
            Some("line 6: YAML aliases (*name) are not supported".into())
        );
        assert!(parse("- a\n- b\n").is_err());
        assert!(parse("all:\n  hostz: {}\n").is_err());
        assert!(parse("all: [\n").is_err());
        let deep = "[".repeat(100);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn empty_documents_are_empty_inventories() {
        assert_eq!(parse("").map(|i| i.hosts.len()), Ok(0));
        assert_eq!(parse("all:\n").map(|i| i.hosts.len()), Ok(0));
    }
}
