//! The hosts of a fleet run: the inventory, `--limit`, and each host's
//! `--root` and `--state-dir` (templates or labels), its remote program
//! (the `nettune` label).

use super::Common;
use fleet::ops::Job;
use model::inventory::Host;
use std::path::PathBuf;

/// The selected hosts of `c.inventory`, in its order.
pub fn jobs(c: &Common) -> anyhow::Result<Vec<Job>> {
    let inv = model::inventory::load(&c.inventory).map_err(|e| anyhow::anyhow!("fleet: {e}"))?;
    let hosts: Vec<&Host> = match &c.limit {
        Some(p) => model::inventory::select(&inv, p).map_err(|e| anyhow::anyhow!("fleet: {e}"))?,
        None => inv.hosts.iter().collect(),
    };
    if hosts.is_empty() {
        anyhow::bail!("fleet: {}: no host", c.inventory.display());
    }
    hosts
        .into_iter()
        .map(|h| {
            job(
                h,
                c.root_template.as_deref(),
                c.state_dir_template.as_deref(),
            )
        })
        .collect()
}

/// The job of host `h`: its `--root` and `--state-dir` from the templates
/// (`{host}` replaced) or its labels, its remote program.
pub(crate) fn job(
    h: &Host,
    root_template: Option<&str>,
    state_dir_template: Option<&str>,
) -> anyhow::Result<Job> {
    Ok(Job {
        host: h.name.as_str().to_string(),
        transport: h.transport.clone(),
        root: path(h, root_template, "root")?,
        state_dir: path(h, state_dir_template, "state_dir")?,
        remote_exe: h.labels.get("nettune").cloned(),
    })
}

/// `template` with `{host}` replaced, else the host's `label`.
fn path(h: &Host, template: Option<&str>, label: &str) -> anyhow::Result<Option<PathBuf>> {
    let name = h.name.as_str();
    match template {
        Some(t) => {
            if t.contains("{host}") && (name.contains('/') || name == "." || name == "..") {
                anyhow::bail!(
                    "fleet: host {name:?}: a name with '/' (or . or ..) cannot fill a path template"
                );
            }
            Ok(Some(PathBuf::from(t.replace("{host}", name))))
        }
        None => Ok(h.labels.get(label).map(PathBuf::from)),
    }
}
