//! The typed QEMU machine and its command line (pure: built and tested
//! without QEMU).
//!
//! A q35 machine with 2 vCPUs on 2 NUMA nodes (CPU 0 and half the memory on
//! node 0, CPU 1 and the rest on node 1), a `pxb-pcie` expander bridge with
//! `numa_node=1` and a root port behind it for the NICs placed on node 1,
//! the NICs on their netdevs, the kernel's console on a file and two
//! virtio-serial ports joined to unix sockets: `nettune` (the agent) and
//! `nettune-ctl` (a byte there powers the guest off).

use crate::error::GuestError;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// Longest guest name.
pub const MAX_NAME: usize = 32;
/// The virtio-serial port of the agent (its name in the guest's
/// `/sys/class/virtio-ports/*/name`).
pub const AGENT_PORT: &str = "nettune";
/// The virtio-serial port that powers the guest off.
pub const CONTROL_PORT: &str = "nettune-ctl";
/// The virtio-serial port on which the guest writes a tar of
/// `nettune capture` at boot (when [`Machine::capture`] is set).
pub const CAPTURE_PORT: &str = "nettune-capture";
/// The bus number of the expander bridge (below it, the node-1 root port).
const PXB_BUS_NR: u8 = 128;

/// A guest's name: 1 to [`MAX_NAME`] of `a-z`, `0-9` and `-`, not starting
/// with `-` (it names the run directory, QEMU's ids and error messages).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GuestName(String);

impl GuestName {
    /// A checked name.
    pub fn new(s: &str) -> Result<GuestName, GuestError> {
        let why = if s.is_empty() || s.len() > MAX_NAME {
            Some("must be 1 to 32 characters")
        } else if s.starts_with('-') {
            Some("starts with '-'")
        } else if !s
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            Some("only a-z, 0-9 and '-'")
        } else {
            None
        };
        match why {
            Some(why) => Err(GuestError::BadName {
                name: s.to_string(),
                why,
            }),
            None => Ok(GuestName(s.to_string())),
        }
    }
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GuestName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How QEMU runs the guest's CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// `-accel kvm` (`/dev/kvm`).
    Kvm,
    /// `-accel tcg,thread=multi`: emulated, one host thread per vCPU.
    Tcg,
}

impl Accel {
    /// QEMU's `-accel` value.
    pub fn arg(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg,thread=multi",
        }
    }
    /// `NETTUNE_GUEST_ACCEL=kvm` asks for KVM; anything else is TCG, which
    /// boots everywhere (docs/guests.md says why it is the default).
    pub fn from_env() -> Accel {
        match std::env::var("NETTUNE_GUEST_ACCEL").as_deref() {
            Ok("kvm") => Accel::Kvm,
            _ => Accel::Tcg,
        }
    }
}

/// An emulated NIC model, each bound by a real Linux driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NicModel {
    /// Intel 82545EM (`e1000-82545em`): e1000, takes `ethtool -C`.
    E1000_82545em,
    /// Intel 82540EM (`e1000`, QEMU's default): e1000, no `ethtool -c`.
    E1000_82540em,
    /// Intel 82574L (`e1000e`): e1000e, MSI-X rx/tx/other.
    E1000e,
    /// VMware vmxnet3 (`vmxnet3`): multi-queue MSI-X.
    Vmxnet3,
    /// virtio-net (`virtio-net-pci`): virtio_net, one queue pair on a socket netdev.
    VirtioNet,
}

impl NicModel {
    /// Every model.
    pub const ALL: [NicModel; 5] = [
        NicModel::E1000_82545em,
        NicModel::E1000_82540em,
        NicModel::E1000e,
        NicModel::Vmxnet3,
        NicModel::VirtioNet,
    ];
    /// QEMU's `-device` name.
    pub fn device(self) -> &'static str {
        match self {
            NicModel::E1000_82545em => "e1000-82545em",
            NicModel::E1000_82540em => "e1000",
            NicModel::E1000e => "e1000e",
            NicModel::Vmxnet3 => "vmxnet3",
            NicModel::VirtioNet => "virtio-net-pci",
        }
    }
    /// The Linux driver (and module) that binds to it.
    pub fn driver(self) -> &'static str {
        match self {
            NicModel::E1000_82545em | NicModel::E1000_82540em => "e1000",
            NicModel::E1000e => "e1000e",
            NicModel::Vmxnet3 => "vmxnet3",
            NicModel::VirtioNet => "virtio_net",
        }
    }
    /// The model of a QEMU device name.
    pub fn from_device(s: &str) -> Option<NicModel> {
        NicModel::ALL.into_iter().find(|m| m.device() == s)
    }
}

/// Where a NIC's frames go: only this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Netdev {
    /// A UDP socket on 127.0.0.1:`local` sending to 127.0.0.1:`remote`
    /// (another guest's `Udp` with the ports swapped is its wire).
    Udp {
        /// This end's port.
        local: u16,
        /// The other end's port.
        remote: u16,
    },
    /// QEMU's user-mode network with `restrict=on`: the guest reaches
    /// nothing outside QEMU.
    UserRestricted,
    /// A tap device with `queues` queues (2 to 8 make it multi-queue, and
    /// a `virtio-net-pci` on it gets `mq=on` and a vector per queue),
    /// named `ntgI` after the NIC's index `I` and created by QEMU. Only
    /// in a network namespace made for the guest
    /// ([`crate::run::BootOptions::netns`]): the names are that
    /// namespace's, and nothing of the host's own network is touched.
    Tap {
        /// Its queues: 1 to 8.
        queues: u8,
    },
}

/// The name of NIC `i`'s tap ([`Netdev::Tap`]).
pub fn tap_name(i: usize) -> String {
    format!("ntg{i}")
}

/// One NIC of the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// The emulated device.
    pub model: NicModel,
    /// Its netdev.
    pub netdev: Netdev,
    /// Behind the `pxb-pcie` of NUMA node 1 (else on the root bus, whose
    /// `numa_node` the guest reads as -1).
    pub node1: bool,
}

/// A guest machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// Its name.
    pub name: GuestName,
    /// The kernel image (`vmlinuz-*`).
    pub kernel: PathBuf,
    /// The initramfs ([`crate::initramfs`]).
    pub initrd: PathBuf,
    /// Where the sockets and the console log live (created by the caller).
    pub run_dir: PathBuf,
    /// KVM or TCG.
    pub accel: Accel,
    /// Memory in MiB, split evenly between the two nodes.
    pub mem_mib: u32,
    /// The NICs, in PCI order (the guest names them eth0, eth1...).
    pub nics: Vec<Nic>,
    /// Run `nettune capture` at boot and write its tar to
    /// [`Machine::capture_tar`] (through [`CAPTURE_PORT`]).
    pub capture: bool,
}

fn os(v: &mut Vec<OsString>, args: &[&str]) {
    v.extend(args.iter().map(OsString::from));
}

fn path_arg(prefix: &str, p: &Path, suffix: &str) -> Result<OsString, String> {
    let s = p
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", p.display()))?;
    // QEMU's option parser splits on ',' (a doubled one is literal).
    if s.contains(',') || s.chars().any(char::is_control) {
        return Err(format!(
            "{s:?}: a comma or control character in a path QEMU parses"
        ));
    }
    Ok(format!("{prefix}{s}{suffix}").into())
}

impl Machine {
    /// The agent's unix socket (QEMU listens on it).
    pub fn agent_socket(&self) -> PathBuf {
        self.run_dir.join("agent.sock")
    }
    /// The control socket (a byte written to it powers the guest off).
    pub fn control_socket(&self) -> PathBuf {
        self.run_dir.join("control.sock")
    }
    /// The kernel console's log.
    pub fn console_log(&self) -> PathBuf {
        self.run_dir.join("console.log")
    }
    /// Where the boot-time capture's tar arrives.
    pub fn capture_tar(&self) -> PathBuf {
        self.run_dir.join("capture.tar")
    }

    /// The MAC of NIC `i`: QEMU's 52:54:00 prefix, then two bytes from the
    /// guest's name (FNV-1a) and the NIC's index, so that the two ends of a
    /// link between guests of different names differ.
    pub fn mac(&self, i: usize) -> String {
        let h = self.name.as_str().bytes().fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        let h = (h >> 16) ^ (h & 0xffff);
        format!("52:54:00:{:02x}:{:02x}:{:02x}", h >> 8, h & 0xff, i & 0xff)
    }

    /// QEMU's arguments (after the program).
    pub fn args(&self) -> Result<Vec<OsString>, GuestError> {
        self.args_with(&[])
    }

    /// QEMU's arguments, with `append` after the kernel's own command line
    /// (each `NAME=VALUE`, letters, digits and `_` in the name, `[A-Za-z0-9_.,-]`
    /// in the value: the kernel hands such words to `/init` as environment).
    pub fn args_with(&self, append: &[String]) -> Result<Vec<OsString>, GuestError> {
        let bad = |why: String| GuestError::BadMachine {
            guest: self.name.to_string(),
            why,
        };
        if self.mem_mib < 256 || !self.mem_mib.is_multiple_of(2) || self.mem_mib > 65_536 {
            return Err(bad(format!(
                "memory {} MiB: an even number from 256 to 65536",
                self.mem_mib
            )));
        }
        if self.nics.len() > 8 {
            return Err(bad(format!("{} NICs: at most 8", self.nics.len())));
        }
        let half = self.mem_mib / 2;
        let mut v = Vec::new();
        os(&mut v, &["-name", self.name.as_str(), "-machine", "q35"]);
        os(&mut v, &["-accel", self.accel.arg(), "-smp", "2"]);
        let mem = self.mem_mib.to_string();
        os(&mut v, &["-m", &mem]);
        for n in 0..2 {
            let obj = format!("memory-backend-ram,id=mem{n},size={half}M");
            let node = format!("node,nodeid={n},cpus={n},memdev=mem{n}");
            os(&mut v, &["-object", &obj, "-numa", &node]);
        }
        os(
            &mut v,
            &[
                "-nodefaults",
                "-no-user-config",
                "-display",
                "none",
                "-no-reboot",
            ],
        );
        v.push("-kernel".into());
        v.push(path_arg("", &self.kernel, "").map_err(bad)?);
        v.push("-initrd".into());
        v.push(path_arg("", &self.initrd, "").map_err(bad)?);
        let mut cmdline = String::from("console=ttyS0 panic=-1 rdinit=/init loglevel=4");
        for a in append {
            let ok = a.split_once('=').is_some_and(|(n, val)| {
                !n.is_empty()
                    && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && val
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.,-".contains(c))
            });
            if !ok {
                return Err(bad(format!(
                    "kernel argument {a:?}: NAME=VALUE of letters, digits and _ (value also . , -)"
                )));
            }
            cmdline.push(' ');
            cmdline.push_str(a);
        }
        os(&mut v, &["-append", &cmdline]);
        v.push("-chardev".into());
        v.push(path_arg("file,id=console,path=", &self.console_log(), "").map_err(bad)?);
        os(&mut v, &["-serial", "chardev:console"]);
        let pxb = format!("pxb-pcie,id=pxb1,bus_nr={PXB_BUS_NR},bus=pcie.0,numa_node=1");
        os(&mut v, &["-device", &pxb]);
        let mut ports = 0usize;
        for (i, nic) in self.nics.iter().enumerate() {
            let netdev = match nic.netdev {
                Netdev::Udp { local, remote } => {
                    if local == 0 || remote == 0 || local == remote {
                        return Err(bad(format!(
                            "NIC {i}: UDP ports {local} and {remote}: two different ports, not 0"
                        )));
                    }
                    format!("socket,id=net{i},udp=127.0.0.1:{remote},localaddr=127.0.0.1:{local}")
                }
                Netdev::UserRestricted => format!("user,id=net{i},restrict=on"),
                Netdev::Tap { queues } => {
                    if !(1..=8).contains(&queues) {
                        return Err(bad(format!("NIC {i}: {queues} tap queues: 1 to 8")));
                    }
                    if queues > 1 && nic.model != NicModel::VirtioNet {
                        return Err(bad(format!(
                            "NIC {i}: a multi-queue tap needs virtio-net-pci, not {}",
                            nic.model.device()
                        )));
                    }
                    format!(
                        "tap,id=net{i},ifname={},script=no,downscript=no,queues={queues}",
                        tap_name(i)
                    )
                }
            };
            // virtio-net: one MSI-X vector per rx and tx queue, one for
            // the config and one for the control queue.
            let mq = match nic.netdev {
                Netdev::Tap { queues } if queues > 1 => {
                    format!(",mq=on,vectors={}", 2 * u32::from(queues) + 2)
                }
                _ => String::new(),
            };
            let bus = if nic.node1 {
                ports += 1;
                let rp = format!("pcie-root-port,id=rp{ports},bus=pxb1,chassis={ports}");
                os(&mut v, &["-device", &rp]);
                format!("rp{ports}")
            } else {
                "pcie.0".to_string()
            };
            let dev = format!(
                "{}{mq},netdev=net{i},mac={},bus={bus}",
                nic.model.device(),
                self.mac(i)
            );
            os(&mut v, &["-netdev", &netdev, "-device", &dev]);
        }
        os(&mut v, &["-device", "virtio-rng-pci,bus=pcie.0"]);
        os(&mut v, &["-device", "virtio-serial-pci,id=vser,bus=pcie.0"]);
        for (id, sock, name) in [
            ("agent", self.agent_socket(), AGENT_PORT),
            ("ctl", self.control_socket(), CONTROL_PORT),
        ] {
            v.push("-chardev".into());
            v.push(
                path_arg(
                    &format!("socket,id={id},path="),
                    &sock,
                    ",server=on,wait=off",
                )
                .map_err(bad)?,
            );
            let port = format!("virtserialport,bus=vser.0,chardev={id},name={name}");
            os(&mut v, &["-device", &port]);
        }
        if self.capture {
            v.push("-chardev".into());
            v.push(path_arg("file,id=cap,path=", &self.capture_tar(), "").map_err(bad)?);
            let port = format!("virtserialport,bus=vser.0,chardev=cap,name={CAPTURE_PORT}");
            os(&mut v, &["-device", &port]);
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests;
