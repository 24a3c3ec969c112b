//! A module parameter, written as a modprobe.d snippet in the state
//! directory for the user to review (`STATE/modprobe.d/nettune-M-P.conf`).
//! Module and parameter are checked names, so the file name is one plain
//! component of that directory.
//!
//! The snippet alone changes nothing until the module loads again. Only a
//! plan with `options.reload_modules` (`apply --allow-reload`, an experiment
//! factor's `reload = true`) reloads it, through a [`ModuleLoader`]: after
//! the write, and after rollback restored the snippet. The live loader runs
//! `modprobe`; under a fixture root the reload is recorded in the tree.

use super::Knob;
use crate::apply::backend::run_tool;
use crate::apply::files;
use crate::error::HostError;
use crate::root::Root;
use model::experiment::{is_module_name, is_param_name, is_param_value};
use model::plan::CreatedKind;
use std::fmt::Debug;
use std::fs;
use std::path::Path;

/// Reloads a kernel module so its parameters take effect.
pub trait ModuleLoader: Debug + Send + Sync {
    /// Unload `module` and load it again with `params` (the values of
    /// nettune's snippets for it, checked names and values) on modprobe's
    /// command line, after the system's own modprobe.d options.
    fn reload(&self, module: &str, params: &[(String, String)]) -> Result<(), HostError>;
}

/// The live host: `modprobe -r M`, then `modprobe M P=V...`. A load that
/// fails with the parameters is retried without them, so a bad value does
/// not leave the NIC without its driver; the error is returned either way.
/// The interfaces of the module that were up before come up again after
/// (`ip link set dev IF up`): a driver's new interfaces start down, and a
/// reload must not leave the host's link down (found on the real e1000 in a
/// QEMU guest, docs/guests.md).
#[derive(Debug, Default)]
pub struct Modprobe;

/// The interfaces bound to `module` whose administrative state is up
/// (`/sys/class/net/IF/flags` has IFF_UP), by name.
fn up_interfaces_of(module: &str) -> Vec<String> {
    let Ok(rd) = fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    let mut out: Vec<String> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let dir = e.path();
            let m = fs::read_link(dir.join("device/driver/module")).ok()?;
            let bound = m.file_name().is_some_and(|n| n == module);
            let flags = fs::read_to_string(dir.join("flags")).ok()?;
            let flags = u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16).ok()?;
            let sane = !name.is_empty() && !name.starts_with('-') && name.len() <= 15;
            (bound && sane && flags & 1 == 1).then_some(name)
        })
        .collect();
    out.sort();
    out
}

/// `ip link set dev IF up`, its stderr as the error.
fn link_up(iface: &str) -> Result<(), HostError> {
    run_tool("ip", &["link", "set", "dev", iface, "up"])
}

/// `modprobe ARGS`, its stderr as the error.
fn modprobe(args: &[String]) -> Result<(), HostError> {
    run_tool("modprobe", args)
}

impl ModuleLoader for Modprobe {
    fn reload(&self, module: &str, params: &[(String, String)]) -> Result<(), HostError> {
        let up = up_interfaces_of(module);
        modprobe(&["-r".into(), "--".into(), module.into()])?;
        let mut args = vec!["--".to_string(), module.to_string()];
        args.extend(params.iter().map(|(p, v)| format!("{p}={v}")));
        let loaded = match modprobe(&args) {
            Ok(()) => Ok(()),
            Err(e) if !params.is_empty() => {
                // Reload the driver at least; the parameters' error stands.
                let _ = modprobe(&["--".to_string(), module.to_string()]);
                Err(e)
            }
            Err(e) => Err(e),
        };
        // The driver registers its interfaces in probe, before modprobe
        // returns: bring back up those that were.
        let relinked = up.iter().try_for_each(|i| link_up(i));
        loaded.and(relinked)
    }
}

/// A fixture tree: a reload writes `sys/module/M/parameters/P` with each
/// value, as the kernel shows a loaded module's parameters, and appends a
/// line to `sys/module/M/nettune-reloads` (`reload P=V ...`) so tests see
/// every reload. A fixture knows no module defaults: a parameter reloaded
/// without a value keeps its file.
#[derive(Debug)]
pub struct FixtureLoader {
    root: Root,
}

impl FixtureLoader {
    /// Reloads recorded under `root`.
    pub fn new(root: &Root) -> Self {
        FixtureLoader { root: root.clone() }
    }
}

impl ModuleLoader for FixtureLoader {
    fn reload(&self, module: &str, params: &[(String, String)]) -> Result<(), HostError> {
        if !is_module_name(module) {
            return Err(HostError::BadName {
                what: "module",
                name: module.into(),
                rule: "a-z 0-9 _",
            });
        }
        let dir = format!("/sys/module/{module}/parameters");
        let real = self.root.resolve_confined(&dir, true)?;
        fs::create_dir_all(&real).map_err(|e| HostError::io(&dir, e))?;
        let mut line = String::from("reload");
        for (p, v) in params {
            let path = format!("{dir}/{p}");
            files::write_created(&self.root, &path, CreatedKind::File, &format!("{v}\n"))?;
            line.push_str(&format!(" {p}={v}"));
        }
        line.push('\n');
        let log = format!("/sys/module/{module}/nettune-reloads");
        let before = files::read_created(&self.root, &log, CreatedKind::File)?.unwrap_or_default();
        files::write_created(&self.root, &log, CreatedKind::File, &(before + &line))
    }
}

/// The `P=V` of every `options MODULE P=V` line of nettune's snippets in
/// `dir` (`nettune-*.conf`), checked names and values only, sorted.
pub(crate) fn snippet_params(dir: &Path, module: &str) -> Result<Vec<(String, String)>, HostError> {
    let mut out = Vec::new();
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(HostError::io(dir, e)),
    };
    for entry in rd {
        let entry = entry.map_err(|e| HostError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("nettune-") && name.ends_with(".conf")) {
            continue;
        }
        let Some(text) = files::read_snippet(dir, &name)? else {
            continue;
        };
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if words.next() != Some("options") || words.next() != Some(module) {
                continue;
            }
            for w in words {
                if let Some((p, v)) = w.split_once('=') {
                    if is_param_name(p) && is_param_value(v) {
                        out.push((p.to_string(), v.to_string()));
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// One parameter of one module.
pub(crate) struct ModuleParamKnob<'a> {
    dir: &'a Path,
    module: &'a str,
    param: &'a str,
}

impl<'a> ModuleParamKnob<'a> {
    pub(crate) fn new(dir: &'a Path, module: &'a str, param: &'a str) -> Self {
        ModuleParamKnob { dir, module, param }
    }

    fn file_name(&self) -> String {
        format!("nettune-{}-{}.conf", self.module, self.param)
    }
}

impl Knob for ModuleParamKnob<'_> {
    fn describe(&self) -> String {
        format!("module {} {}", self.module, self.param)
    }

    fn read_raw(&self) -> Result<Option<String>, HostError> {
        files::read_snippet(self.dir, &self.file_name())
    }

    /// A value becomes an `options` line under a comment; a snippet's text
    /// (a journaled original) is written as it is.
    fn write(&self, value: &str) -> Result<(), HostError> {
        let (module, param) = (self.module, self.param);
        let text = if value.starts_with("options ") || value.starts_with('#') {
            value.to_string()
        } else {
            format!(
                "# Written by nettune for review; copy to /etc/modprobe.d/ and reload {module} to use.\noptions {module} {param}={value}\n"
            )
        };
        files::write_snippet(self.dir, &self.file_name(), &text)
    }

    fn restore(&self, original: Option<&str>) -> Result<(), HostError> {
        match original {
            Some(v) => self.write(v.trim()),
            None => files::remove_snippet(self.dir, &self.file_name()),
        }
    }

    fn same(&self, current: &str, intended: &str) -> bool {
        current.contains(&format!("={intended}"))
    }

    fn creates(&self) -> bool {
        true
    }
}
