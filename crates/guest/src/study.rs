//! Guests joined into a star for the studies (docs/guests.md, "Studies"):
//! one server and 1 to 8 clients, each client's NIC joined to one NIC of the
//! server by a UDP socket netdev pair on 127.0.0.1, IPv4 addresses set by the
//! guest's `/init` before it says it is ready, and a fleet inventory naming
//! every guest's agent socket (pure: planned and written without QEMU).
//!
//! Link `i` (client `i`, from 1) is `10.77.i.0/24`: the server's `eth(i-1)`
//! holds `10.77.i.1`, client `i`'s `eth0` `10.77.i.2`; the inventory gives
//! client `i` the label `server_address = "10.77.i.1"`, which is where
//! `nettune experiment`, `fleet bench` and `autotune` send its load.

use crate::error::GuestError;
use crate::initramfs::init::READY;
use crate::initramfs::{Archive, Contents, Source, SystemLdd};
use crate::kernel::Kernel;
use crate::machine::{Accel, GuestName, Machine, Netdev, Nic, NicModel};
use crate::run::Guest;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Most clients: one NIC each on the server, whose machine takes 8.
pub const MAX_CLIENTS: usize = 8;
/// The server's name in the inventory (and its role).
pub const SERVER: &str = "server";
/// The clients' role in the inventory.
pub const CLIENTS: &str = "clients";
/// The first octets of every link's /24.
const NET: [u8; 2] = [10, 77];

/// A star of guests: what `nettune guest up` boots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Star {
    /// The NIC of every guest.
    pub model: NicModel,
    /// Clients, 1 to [`MAX_CLIENTS`].
    pub clients: usize,
    /// The first UDP port on 127.0.0.1; the star uses `2 × clients` from it.
    pub base_port: u16,
}

/// One guest of a star.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// `server` or `clientN`.
    pub name: GuestName,
    /// Its NICs, in PCI order (`eth0`, `eth1`...).
    pub nics: Vec<Nic>,
    /// The address of each NIC, in the same order (prefix /24).
    pub addrs: Vec<Ipv4Addr>,
    /// A client's server address (the other end of its link).
    pub server_address: Option<Ipv4Addr>,
}

impl Star {
    /// The guests: the server first, then the clients.
    pub fn members(&self) -> Result<Vec<Member>, GuestError> {
        let bad = |why: String| GuestError::BadMachine {
            guest: SERVER.to_string(),
            why,
        };
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(bad(format!(
                "{} clients: 1 to {MAX_CLIENTS} (one server NIC each)",
                self.clients
            )));
        }
        let last = u32::from(self.base_port) + 2 * self.clients as u32 - 1;
        if self.base_port < 1024 || last > u32::from(u16::MAX) {
            return Err(bad(format!(
                "base port {}: the star takes ports {}..={last}, all within 1024..=65535",
                self.base_port, self.base_port
            )));
        }
        let nic = |local: u16, remote: u16| Nic {
            model: self.model,
            netdev: Netdev::Udp { local, remote },
            node1: false,
        };
        let mut server = Member {
            name: GuestName::new(SERVER)?,
            nics: vec![],
            addrs: vec![],
            server_address: None,
        };
        let mut clients = Vec::new();
        for i in 1..=self.clients {
            // Checked above: base_port + 2 * clients - 1 fits in u16.
            let s_port = self.base_port + 2 * (i as u16 - 1);
            let c_port = s_port + 1;
            let link = i as u8;
            let s_addr = Ipv4Addr::new(NET[0], NET[1], link, 1);
            server.nics.push(nic(s_port, c_port));
            server.addrs.push(s_addr);
            clients.push(Member {
                name: GuestName::new(&format!("client{i}"))?,
                nics: vec![nic(c_port, s_port)],
                addrs: vec![Ipv4Addr::new(NET[0], NET[1], link, 2)],
                server_address: Some(s_addr),
            });
        }
        Ok(std::iter::once(server).chain(clients).collect())
    }

    /// The first and last UDP port of the star's links (valid once
    /// [`Star::members`] accepted the star).
    pub fn port_range(&self) -> (u16, u16) {
        let span = u16::try_from(self.clients.saturating_mul(2)).unwrap_or(u16::MAX);
        let last = self.base_port.saturating_add(span.saturating_sub(1));
        (self.base_port, last)
    }

    /// A fleet inventory (nettune TOML) of the star, each guest's agent
    /// socket at `run_dir/NAME/agent.sock`.
    pub fn inventory(&self, members: &[Member], run_dir: &Path) -> String {
        let mut s = format!(
            "# Written by `nettune guest up`: {} QEMU guests with the emulated NIC {} \
             (Linux driver {}), joined by UDP socket netdevs on 127.0.0.1.\n",
            members.len(),
            self.model.device(),
            self.model.driver()
        );
        for m in members {
            let sock = run_dir.join(m.name.as_str()).join("agent.sock");
            let role = if m.server_address.is_some() {
                CLIENTS
            } else {
                SERVER
            };
            let _ = write!(
                s,
                "\n[[host]]\nname = \"{}\"\ntransport = \"guest\"\nsocket = {}\nroles = [\"{role}\"]\n",
                m.name,
                toml_string(&sock.to_string_lossy())
            );
            let addrs: Vec<String> = m.addrs.iter().map(Ipv4Addr::to_string).collect();
            let mut labels = format!(
                "nic = \"{}\", addresses = \"{}\"",
                self.model.device(),
                addrs.join(" ")
            );
            if let Some(a) = m.server_address {
                let _ = write!(labels, ", server_address = \"{a}\"");
            }
            let _ = writeln!(s, "labels = {{ {labels} }}");
        }
        s
    }
}

/// A TOML basic string of a path: `\` and `"` escaped (the machine
/// already refused a path with a control character, which QEMU would not
/// parse either).
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The shell lines that give `eth0`, `eth1`... their addresses (/24).
pub fn address_lines(addrs: &[Ipv4Addr]) -> String {
    addrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            format!("ip addr add {a}/24 dev eth{i} || echo \"nettune-guest: no address {a} on eth{i}\"\n")
        })
        .collect()
}

/// Set the addresses in the archive's `/init`: its lines go just before
/// the ready line, after the modules are loaded and the links are up.
pub fn set_addresses(
    archive: &mut Archive,
    guest: &str,
    addrs: &[Ipv4Addr],
) -> Result<(), GuestError> {
    let bad = |why: &str| GuestError::BadMachine {
        guest: guest.to_string(),
        why: why.to_string(),
    };
    let init = archive
        .entries()
        .iter()
        .find(|e| e.path == "init")
        .ok_or_else(|| bad("the initramfs has no /init"))?;
    let Source::Bytes(b) = &init.source else {
        return Err(bad(
            "the initramfs's /init is not a script written by this crate",
        ));
    };
    let script = String::from_utf8_lossy(b);
    let ready = format!("echo \"{READY}\"\n");
    let at = script
        .rfind(&ready)
        .ok_or_else(|| bad("the initramfs's /init prints no ready line"))?;
    let mut new = script[..at].to_string();
    new.push_str(&address_lines(addrs));
    new.push_str(&script[at..]);
    archive.bytes("init", new.into_bytes(), 0o755);
    Ok(())
}

/// What every guest of a star is made of.
#[derive(Debug, Clone)]
pub struct Build {
    /// QEMU ([`crate::run::find_qemu`]).
    pub qemu: PathBuf,
    /// The guest kernel.
    pub kernel: Kernel,
    /// busybox-static, the nettune binary run as the agent, and ethtool.
    pub busybox: PathBuf,
    /// The nettune binary in the guests (the controller's version).
    pub nettune: PathBuf,
    /// ethtool.
    pub ethtool: PathBuf,
    /// KVM or TCG.
    pub accel: Accel,
    /// Memory of each guest, MiB.
    pub mem_mib: u32,
}

/// Write each member's initramfs and machine under `run_dir/NAME/`, boot
/// them all at once and wait until every one is ready (each within
/// `deadline`). On an error the guests already up are killed.
pub fn boot_star(
    build: &Build,
    star: &Star,
    members: &[Member],
    run_dir: &Path,
    deadline: Duration,
) -> Result<Vec<Guest>, GuestError> {
    let mut machines = Vec::new();
    for m in members {
        let dir = run_dir.join(m.name.as_str());
        std::fs::create_dir_all(&dir).map_err(GuestError::io(&dir))?;
        let contents = Contents {
            busybox: build.busybox.clone(),
            nettune: build.nettune.clone(),
            ethtool: build.ethtool.clone(),
            kernel: build.kernel.clone(),
            drivers: vec![star.model.driver().to_string()],
        };
        let mut archive = contents.archive(&SystemLdd)?;
        set_addresses(&mut archive, m.name.as_str(), &m.addrs)?;
        let initrd = dir.join("initrd.cpio");
        let f = std::fs::File::create(&initrd).map_err(GuestError::io(&initrd))?;
        let mut w = std::io::BufWriter::new(f);
        archive.write(&mut w)?;
        std::io::Write::flush(&mut w).map_err(GuestError::io(&initrd))?;
        machines.push(Machine {
            name: m.name.clone(),
            kernel: build.kernel.vmlinuz(),
            initrd,
            run_dir: dir,
            accel: build.accel,
            mem_mib: build.mem_mib,
            nics: m.nics.clone(),
            capture: false,
        });
    }
    let booted: Vec<Result<Guest, GuestError>> = std::thread::scope(|s| {
        let handles: Vec<_> = machines
            .into_iter()
            .map(|m| s.spawn(move || Guest::boot(&build.qemu, m, deadline)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(GuestError::BadMachine {
                        guest: "?".to_string(),
                        why: "the thread booting it panicked".to_string(),
                    })
                })
            })
            .collect()
    });
    // Every guest up, or the first error (the others dropped: killed).
    booted.into_iter().collect()
}

#[cfg(test)]
mod tests;
