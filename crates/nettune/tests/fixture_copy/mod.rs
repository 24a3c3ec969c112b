//! Shared by the apply tests: the binary, temp copies of fixtures with a
//! state dir beside them, and a tree snapshot (bytes, modes, link targets)
//! to prove a rollback left the copy byte-identical.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nettune"))
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// A temp dir holding `root/` (a copy of a fixture) and `state/`.
pub struct Copy {
    pub t: tempfile::TempDir,
    pub root: PathBuf,
    pub state: PathBuf,
}

impl Copy {
    /// A path next to the root (outside it).
    pub fn outside(&self, name: &str) -> PathBuf {
        self.t.path().join(name)
    }
}

pub fn copy(name: &str) -> Copy {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let st = Command::new("cp")
        .arg("-a")
        .arg(fixture(name))
        .arg(&root)
        .status()
        .unwrap();
    assert!(st.success());
    let state = t.path().join("state");
    Copy { t, root, state }
}

#[derive(Debug, PartialEq)]
pub enum Entry {
    File { mode: u32, bytes: Vec<u8> },
    Dir { mode: u32 },
    Link(PathBuf),
}

/// Every entry under `dir` (not following symlinks): bytes and mode of regular
/// files, mode of directories, targets of links; FIFOs and devices are skipped.
pub fn tree(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(base).unwrap().to_path_buf();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode();
            if m.file_type().is_symlink() {
                out.insert(rel, Entry::Link(std::fs::read_link(&p).unwrap()));
            } else if m.is_dir() {
                out.insert(rel, Entry::Dir { mode });
                walk(base, &p, out);
            } else if m.is_file() {
                let bytes = std::fs::read(&p).unwrap();
                out.insert(rel, Entry::File { mode, bytes });
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

pub fn assert_same(before: &BTreeMap<PathBuf, Entry>, after: &BTreeMap<PathBuf, Entry>) {
    let mut diffs = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => diffs.push(format!("missing {}", k.display())),
            Some(w) if w != v => diffs.push(format!("changed {}", k.display())),
            _ => {}
        }
    }
    for k in after.keys() {
        if !before.contains_key(k) {
            diffs.push(format!("added {}", k.display()));
        }
    }
    assert!(diffs.is_empty(), "tree differs:\n{}", diffs.join("\n"));
}

pub fn nettune(c: &Copy, args: &[&str]) -> Output {
    bin()
        .args(args)
        .arg("--root")
        .arg(&c.root)
        .arg("--state-dir")
        .arg(&c.state)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn ok(c: &Copy, args: &[&str]) -> String {
    let o = nettune(c, args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Rename interface `from` to `to` in a fixture tree: every path component,
/// symlink target and file holding `from` (JSON-escaped in `.json` files),
/// as if the kernel had named the NIC `to`.
pub fn rename_iface(dir: &Path, from: &str, to: &str) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let ty = e.file_type().unwrap();
        if ty.is_symlink() {
            let t = std::fs::read_link(&p).unwrap();
            let t = t.to_str().unwrap();
            if t.contains(from) {
                std::fs::remove_file(&p).unwrap();
                std::os::unix::fs::symlink(t.replace(from, to), &p).unwrap();
            }
        } else if ty.is_dir() {
            rename_iface(&p, from, to);
        } else {
            let s = std::fs::read_to_string(&p).unwrap();
            if s.contains(from) {
                let with = if p.extension().is_some_and(|x| x == "json") {
                    let q = serde_json::to_string(to).unwrap();
                    q[1..q.len() - 1].to_string()
                } else {
                    to.to_string()
                };
                std::fs::write(&p, s.replace(from, &with)).unwrap();
            }
        }
        let name = e.file_name().into_string().unwrap();
        if name.contains(from) {
            std::fs::rename(&p, dir.join(name.replace(from, to))).unwrap();
        }
    }
}
