//! Driver modules and their dependencies, from the kernel package's
//! `modules.dep` (depmod's format: `path: dep dep ...`, the dependencies of
//! a module in the order modprobe unloads them, so loaded last to first).

use crate::error::GuestError;
use std::collections::BTreeMap;
use std::path::Path;

/// Most lines of `modules.dep` read (the 6.1 amd64 package has about 4000).
const MAX_LINES: usize = 100_000;

/// `modules.dep` parsed: module name → (its path, its dependencies' paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModulesDep {
    by_name: BTreeMap<String, (String, Vec<String>)>,
}

/// A module's name from its path: `kernel/drivers/net/virtio_net.ko.xz` → `virtio_net`.
pub fn name_of(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split(".ko").next().unwrap_or(file)
}

impl ModulesDep {
    /// Parse `modules.dep` text; lines without a `:` are skipped.
    pub fn parse(text: &str) -> ModulesDep {
        let mut by_name = BTreeMap::new();
        for line in text.lines().take(MAX_LINES) {
            let Some((path, deps)) = line.split_once(':') else {
                continue;
            };
            let path = path.trim();
            if path.is_empty() || path.contains("..") || path.starts_with('/') {
                continue;
            }
            let deps = deps
                .split_whitespace()
                .filter(|d| !d.contains("..") && !d.starts_with('/'))
                .map(str::to_string)
                .collect();
            by_name.insert(name_of(path).to_string(), (path.to_string(), deps));
        }
        ModulesDep { by_name }
    }

    /// Read and parse the file.
    pub fn read(path: &Path) -> Result<ModulesDep, GuestError> {
        let text = std::fs::read_to_string(path).map_err(GuestError::io(path))?;
        Ok(ModulesDep::parse(&text))
    }

    /// The `modules.dep` lines of `paths` only (as [`ModulesDep::load_order`]
    /// gives them): what busybox's `modprobe` reads in the guest to unload
    /// and load those modules again, and nothing it could not find.
    pub fn lines_for(&self, paths: &[String]) -> String {
        let mut out = String::new();
        for p in paths {
            let Some((path, deps)) = self.by_name.get(name_of(p)) else {
                continue;
            };
            out.push_str(path);
            out.push(':');
            for d in deps {
                out.push(' ');
                out.push_str(d);
            }
            out.push('\n');
        }
        out
    }

    /// The paths (relative to `lib/modules/RELEASE/`) to load, in order, so
    /// that every module in `wanted` is loaded after its dependencies; each
    /// path once. A module not listed is [`GuestError::NoModule`].
    pub fn load_order(&self, wanted: &[&str], dep: &Path) -> Result<Vec<String>, GuestError> {
        let mut order: Vec<String> = Vec::new();
        for w in wanted {
            let Some((path, deps)) = self.by_name.get(*w) else {
                return Err(GuestError::NoModule {
                    module: (*w).to_string(),
                    dep: dep.to_path_buf(),
                });
            };
            for d in deps.iter().rev().chain(std::iter::once(path)) {
                if !order.contains(d) {
                    order.push(d.clone());
                }
            }
        }
        Ok(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "\
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko:
../evil.ko: x
";

    #[test]
    fn dependencies_load_first_and_once() {
        let m = ModulesDep::parse(DEP);
        let o = m
            .load_order(&["virtio_pci", "virtio_net", "e1000e"], Path::new("d"))
            .unwrap();
        let names: Vec<&str> = o.iter().map(|p| name_of(p)).collect();
        assert_eq!(
            names,
            [
                "virtio_ring",
                "virtio",
                "virtio_pci_modern_dev",
                "virtio_pci_legacy_dev",
                "virtio_pci",
                "failover",
                "net_failover",
                "virtio_net",
                "e1000e"
            ]
        );
    }

    #[test]
    fn the_guest_modules_dep_lists_the_loaded_modules_with_their_dependencies() {
        let m = ModulesDep::parse(DEP);
        let o = m.load_order(&["virtio", "e1000e"], Path::new("d")).unwrap();
        assert_eq!(
            m.lines_for(&o),
            "kernel/drivers/virtio/virtio_ring.ko:\n\
             kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n\
             kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko:\n"
        );
    }

    #[test]
    fn a_missing_module_is_named_and_paths_leaving_the_tree_are_dropped() {
        let m = ModulesDep::parse(DEP);
        let e = m
            .load_order(&["vmxnet3"], Path::new("/c/modules.dep"))
            .unwrap_err();
        assert!(e.to_string().contains("vmxnet3"), "{e}");
        assert!(m.load_order(&["evil"], Path::new("d")).is_err());
        assert_eq!(name_of("a/b/virtio_net.ko.xz"), "virtio_net");
    }
}
