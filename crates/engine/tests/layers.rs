//! The engine's module layering (its lib.rs doc lists it): each module uses
//! only modules listed before it, so the modules form no import cycle.

use std::path::{Path, PathBuf};

/// The modules in layer order (lib.rs's doc, one line per layer, flattened).
/// `config` and `report` are the model's bench types re-exported
/// (`model::bench`), below every module here and using none of them.
const ORDER: &[&str] = &[
    "diagnosis",
    "proto",
    "error",
    "auth",
    "agg",
    "sys",
    "sock",
    "cpu",
    "plan",
    "probe",
    "worker",
    "work",
    "side",
    "session",
    "client",
    "server",
    "render",
    "interrupt",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Whether `code` names `crate::m` (as a path or inside `use crate::{..}`).
fn names(code: &str, m: &str) -> bool {
    let direct = format!("crate::{m}");
    code.match_indices(&direct).any(|(i, _)| {
        !code[i + direct.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn module_layers_have_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut seen = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for p in &all {
        let rel = p.strip_prefix(&src).unwrap_or(p);
        let top = rel
            .components()
            .next()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .unwrap_or_default();
        if top == "lib" {
            continue;
        }
        let Some(at) = ORDER.iter().position(|m| *m == top) else {
            wrong.push(format!("{}: module `{top}` is not in ORDER", rel.display()));
            continue;
        };
        seen.insert(top.clone());
        let text = std::fs::read_to_string(p).unwrap_or_default();
        // Production code only: tests may reach anywhere.
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            !code.contains("use crate::{"),
            "{}: grouped crate import",
            rel.display()
        );
        for (j, m) in ORDER.iter().enumerate() {
            if j > at && names(&code, m) {
                wrong.push(format!(
                    "{} (layer of `{top}`) uses the later `{m}`",
                    rel.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(
        seen.len(),
        ORDER.len(),
        "every listed module exists: {seen:?}"
    );
}
