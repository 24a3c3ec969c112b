//! A running guest: QEMU started, the guest's `/init` awaited under a total
//! deadline (QEMU killed at it, the error carrying the end of the console),
//! and a clean power-off through the control port.

use crate::error::GuestError;
use crate::initramfs::init::{CAPTURE_LINE, READY};
use crate::machine::{GuestName, Machine};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The QEMU program.
pub const QEMU: &str = "qemu-system-x86_64";
/// Bytes of the console's end quoted in errors.
const TAIL_BYTES: u64 = 4096;
/// How often the console is read while booting.
const POLL: Duration = Duration::from_millis(100);

/// The path of [`QEMU`] on `PATH`, or [`GuestError::NoQemu`].
pub fn find_qemu() -> Result<PathBuf, GuestError> {
    find_qemu_in(&std::env::var_os("PATH").unwrap_or_default())
}

/// The path of [`QEMU`] in the directories of `path` (`PATH`'s syntax).
pub fn find_qemu_in(path: &std::ffi::OsStr) -> Result<PathBuf, GuestError> {
    std::env::split_paths(path)
        .map(|d| d.join(QEMU))
        .find(|p| p.is_file())
        .ok_or_else(|| GuestError::NoQemu {
            program: QEMU.to_string(),
        })
}

/// How a guest ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// The guest powered itself off when asked.
    Clean,
    /// It did not within the deadline and QEMU was killed.
    Killed,
}

/// How QEMU is started besides its machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootOptions {
    /// Run QEMU in this network namespace (`ip netns exec NS`), made by
    /// the caller: where a [`crate::Netdev::Tap`]'s device is created.
    pub netns: Option<String>,
    /// `NAME=VALUE` words after the kernel's command line, which the kernel
    /// hands to `/init` (and so to the agent) as environment
    /// ([`Machine::args_with`]).
    pub append: Vec<String>,
}

/// A network namespace's name as `ip netns` takes it: 1 to 64 of
/// `[A-Za-z0-9_-]`, not starting with `-`.
fn netns_ok(ns: &str) -> bool {
    (1..=64).contains(&ns.len())
        && !ns.starts_with('-')
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A booted guest. Dropping it kills QEMU.
#[derive(Debug)]
pub struct Guest {
    name: GuestName,
    machine: Machine,
    child: Option<Child>,
}

impl Guest {
    /// Start QEMU (`qemu`, the program) for `machine` and wait until its
    /// `/init` says it is ready, at most `deadline` in all.
    pub fn boot(qemu: &Path, machine: Machine, deadline: Duration) -> Result<Guest, GuestError> {
        Guest::boot_with(qemu, machine, deadline, &BootOptions::default())
    }

    /// [`Guest::boot`], with QEMU started as `opts` says.
    pub fn boot_with(
        qemu: &Path,
        machine: Machine,
        deadline: Duration,
        opts: &BootOptions,
    ) -> Result<Guest, GuestError> {
        let start = Instant::now();
        let name = machine.name.clone();
        let args = machine.args_with(&opts.append)?;
        for p in [machine.agent_socket(), machine.control_socket()] {
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(GuestError::Io { path: p, source: e })
                }
                _ => {}
            }
        }
        let qemu_log = machine.run_dir.join("qemu.log");
        let log = std::fs::File::create(&qemu_log).map_err(GuestError::io(&qemu_log))?;
        std::fs::File::create(machine.console_log())
            .map_err(GuestError::io(machine.console_log()))?;
        let mut cmd = match &opts.netns {
            Some(ns) if !netns_ok(ns) => {
                return Err(GuestError::BadMachine {
                    guest: name.to_string(),
                    why: format!("network namespace {ns:?}: 1 to 64 of A-Z a-z 0-9 _ -"),
                })
            }
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns.as_str()]).arg(qemu);
                c
            }
            None => Command::new(qemu),
        };
        let child = cmd
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|source| GuestError::Spawn {
                guest: name.to_string(),
                program: qemu.display().to_string(),
                source,
            })?;
        let mut g = Guest {
            name,
            machine,
            child: Some(child),
        };
        loop {
            if console_has(&g.machine.console_log(), READY) {
                return Ok(g);
            }
            if let Some(c) = g.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    g.child = None;
                    return Err(GuestError::Exited {
                        guest: g.name.to_string(),
                        status: status.to_string(),
                        console: g.tail(),
                    });
                }
            }
            if start.elapsed() >= deadline {
                g.kill();
                return Err(GuestError::BootTimeout {
                    guest: g.name.to_string(),
                    after: deadline,
                    console: g.tail(),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// Its name.
    pub fn name(&self) -> &GuestName {
        &self.name
    }
    /// Its machine.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }
    /// The unix socket of its agent (the fleet's `guest` transport).
    pub fn agent_socket(&self) -> PathBuf {
        self.machine.agent_socket()
    }

    /// The tar of the boot-time capture ([`Machine::capture`]), once all
    /// of it has arrived (the guest prints its size on the console before
    /// sending it), waiting at most `deadline`.
    pub fn capture_tar(&self, deadline: Duration) -> Result<PathBuf, GuestError> {
        let start = Instant::now();
        let path = self.machine.capture_tar();
        loop {
            let want = std::fs::read(self.machine.console_log())
                .ok()
                .and_then(|b| capture_size(&String::from_utf8_lossy(&b)));
            let have = std::fs::metadata(&path).map(|m| m.len()).ok();
            if want.is_some() && want == have {
                return Ok(path);
            }
            if start.elapsed() >= deadline {
                return Err(GuestError::BootTimeout {
                    guest: format!("{} (its capture: {have:?} of {want:?} bytes)", self.name),
                    after: deadline,
                    console: self.tail(),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// The end of the console log (and QEMU's own messages), for errors.
    pub fn tail(&self) -> String {
        let mut s = tail_of(&self.machine.console_log());
        let q = tail_of(&self.machine.run_dir.join("qemu.log"));
        if !q.trim().is_empty() {
            s.push_str("\n[qemu] ");
            s.push_str(q.trim());
        }
        s
    }

    /// Ask the guest to power off (a byte on its control port) and wait for
    /// QEMU to exit, killing it at `deadline`.
    pub fn shutdown(mut self, deadline: Duration) -> Shutdown {
        let start = Instant::now();
        let asked = UnixStream::connect(self.machine.control_socket())
            .and_then(|mut s| s.write_all(b"\n").map(|()| s));
        // Hold the connection open until the guest acted: closing it at
        // once could come before the guest's read.
        let _conn = asked.ok();
        while start.elapsed() < deadline {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(_)) = c.try_wait() {
                    self.child = None;
                    return Shutdown::Clean;
                }
            }
            std::thread::sleep(POLL);
        }
        self.kill();
        Shutdown::Killed
    }

    /// Kill QEMU at once, as a crash or a power cut would, and wait for it.
    pub fn kill_now(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The size in the console's `nettune-guest: capture N bytes` line.
fn capture_size(console: &str) -> Option<u64> {
    console.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(CAPTURE_LINE)?;
        rest.strip_suffix(" bytes")?.trim().parse().ok()
    })
}

fn console_has(path: &Path, marker: &str) -> bool {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).contains(marker))
        .unwrap_or(false)
}

/// The last [`TAIL_BYTES`] of a file, lossily as text.
fn tail_of(path: &Path) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)));
    let mut b = Vec::new();
    let _ = f.take(TAIL_BYTES).read_to_end(&mut b);
    String::from_utf8_lossy(&b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Accel;

    fn machine(dir: &Path) -> Machine {
        Machine {
            name: GuestName::new("hang").unwrap(),
            kernel: "/k".into(),
            initrd: "/i".into(),
            run_dir: dir.to_path_buf(),
            accel: Accel::Tcg,
            mem_mib: 256,
            nics: vec![],
            capture: false,
        }
    }

    /// An executable script written by a child process, so that no
    /// descriptor of this process ever has it open for writing: another
    /// test thread's fork would inherit such a descriptor until its exec,
    /// and running the script meanwhile fails with ETXTBSY (seen once).
    fn write_fake(path: &Path, text: &str) {
        use std::io::Write;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
            .arg(path)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
    }

    /// A "QEMU" that writes a console and hangs: killed at the deadline,
    /// and the error names the guest and quotes the console.
    #[test]
    fn a_guest_that_never_gets_ready_is_killed_and_its_console_quoted() {
        let d = tempfile::tempdir().unwrap();
        let fake = d.path().join("fake-qemu");
        let console = d.path().join("console.log");
        write_fake(
            &fake,
            &format!(
                "#!/bin/sh\necho 'Kernel panic - not syncing: VFS' >> {}\nexec sleep 60\n",
                console.display()
            ),
        );
        let e = Guest::boot(&fake, machine(d.path()), Duration::from_millis(500))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("guest hang: not ready within"), "{e}");
        assert!(e.contains("Kernel panic"), "{e}");
    }

    #[test]
    fn no_qemu_is_one_line_naming_the_package() {
        let d = tempfile::tempdir().unwrap();
        let e = find_qemu_in(d.path().as_os_str()).unwrap_err().to_string();
        assert_eq!(
            e,
            "no QEMU: qemu-system-x86_64 not found; install the Debian package qemu-system-x86"
        );
    }

    #[test]
    fn the_capture_size_is_read_from_its_console_line() {
        assert_eq!(
            capture_size("x\nnettune-guest: capture 10240 bytes\r\n"),
            Some(10240)
        );
        assert_eq!(capture_size("nettune-guest: capture many bytes\n"), None);
    }

    #[test]
    fn a_qemu_that_exits_early_is_reported_with_its_messages() {
        let d = tempfile::tempdir().unwrap();
        let fake = d.path().join("fake-qemu");
        write_fake(&fake, "#!/bin/sh\necho 'no such device' >&2\nexit 1\n");
        let e = Guest::boot(&fake, machine(d.path()), Duration::from_secs(30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("QEMU exited"), "{e}");
        assert!(e.contains("no such device"), "{e}");
    }
}
