//! The guest's initramfs: a newc cpio archive (the format the kernel
//! unpacks; uncompressed, so no compressor runs at boot) holding
//! busybox-static, the nettune binary, ethtool with its libraries, the
//! driver modules and an `/init` that loads them, brings the NICs up and
//! serves the agent on its virtio-serial port.

mod cpio;
pub mod init;
mod ldd;

pub use cpio::{Archive, Entry, Source};
pub use init::init_script;
pub use ldd::{parse_ldd, Ldd, SystemLdd};

use crate::error::GuestError;
use crate::kernel::Kernel;
use crate::modules::ModulesDep;
use std::path::{Path, PathBuf};

/// Where Debian's busybox-static puts its binary.
pub const BUSYBOX: &str = "/bin/busybox";
/// The modules every guest loads: the virtio-serial port of the agent.
pub const BASE_MODULES: [&str; 2] = ["virtio_pci", "virtio_console"];
/// The modules every guest loads once its interfaces are up (so that the
/// NICs' IRQ numbers and vectors stay those of the goldens): virtio-rng, the host's entropy
/// (`-device virtio-rng-pci`). Without it a TCG guest (no RDRAND in QEMU's
/// default CPU) had not initialised its CRNG 90 s after boot, and the
/// first blocking getrandom(2), a bench's nonce, could stall past the
/// handshake's deadline.
pub const LATE_MODULES: [&str; 1] = ["virtio-rng"];
/// The busybox applets linked in `/bin`. `setsid` starts the agent's
/// confirm-deadline watchdog (docs/fleet.md, "Confirm deadline").
const APPLETS: [&str; 24] = [
    "tar", "sh", "mount", "insmod", "ip", "cat", "ls", "sleep", "poweroff", "echo", "dd", "wc",
    "mkdir", "sync", "grep", "ps", "uname", "sysctl", "rmmod", "modprobe", "tail", "cp", "taskset",
    "setsid",
];

/// What goes into a guest's initramfs.
#[derive(Debug, Clone)]
pub struct Contents {
    /// busybox-static.
    pub busybox: PathBuf,
    /// The nettune binary run as the agent.
    pub nettune: PathBuf,
    /// ethtool (its libraries come along, found with `ldd`).
    pub ethtool: PathBuf,
    /// The kernel whose modules are loaded.
    pub kernel: Kernel,
    /// Driver modules to load besides [`BASE_MODULES`] (their dependencies come along).
    pub drivers: Vec<String>,
}

impl Contents {
    /// The archive: every program with its libraries, the modules in load
    /// order and the `/init` that loads them.
    pub fn archive(&self, ldd: &dyn Ldd) -> Result<Archive, GuestError> {
        if !self.busybox.is_file() {
            return Err(GuestError::NoBusybox {
                path: self.busybox.clone(),
            });
        }
        let mut a = Archive::default();
        a.file("bin/busybox", &self.busybox, 0o755);
        for app in APPLETS {
            a.symlink(&format!("bin/{app}"), "busybox");
        }
        a.symlink("sbin", "bin");
        a.file("bin/nettune", &self.nettune, 0o755);
        a.file("usr/sbin/ethtool", &self.ethtool, 0o755);
        for prog in [&self.nettune, &self.ethtool] {
            for lib in ldd.libraries(prog)? {
                let inside = lib.strip_prefix("/").unwrap_or(&lib).to_path_buf();
                a.file(&inside.to_string_lossy(), &lib, 0o755);
            }
        }
        let dep_path = self.kernel.modules_dep();
        let dep = ModulesDep::read(&dep_path)?;
        let mut wanted: Vec<&str> = BASE_MODULES.to_vec();
        wanted.extend(self.drivers.iter().map(String::as_str));
        let early = dep.load_order(&wanted, &dep_path)?;
        wanted.extend(LATE_MODULES);
        let order = dep.load_order(&wanted, &dep_path)?;
        let mdir = format!("lib/modules/{}", self.kernel.release);
        for m in &order {
            a.file(
                &format!("{mdir}/{m}"),
                &self.kernel.modules_dir().join(m),
                0o644,
            );
        }
        for d in ["dev", "proc", "sys", "tmp", "run", "var/lib/nettune", "etc"] {
            a.dir(d);
        }
        // busybox's modprobe (a module reload in the guest) reads it.
        a.bytes(
            &format!("{mdir}/modules.dep"),
            dep.lines_for(&order).into_bytes(),
            0o644,
        );
        let path = |m: &String| format!("/{mdir}/{m}");
        let loads: Vec<String> = early.iter().map(path).collect();
        let late: Vec<String> = order
            .iter()
            .filter(|m| !early.contains(m))
            .map(path)
            .collect();
        a.bytes("init", init_script(&loads, &late).into_bytes(), 0o755);
        Ok(a)
    }

    /// Write the archive to `path`.
    pub fn write(&self, ldd: &dyn Ldd, path: &Path) -> Result<(), GuestError> {
        let a = self.archive(ldd)?;
        let f = std::fs::File::create(path).map_err(GuestError::io(path))?;
        let mut w = std::io::BufWriter::new(f);
        a.write(&mut w)?;
        std::io::Write::flush(&mut w).map_err(GuestError::io(path))
    }
}

#[cfg(test)]
mod tests;
