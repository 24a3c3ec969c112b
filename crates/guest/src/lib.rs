//! QEMU guests in which real, unmodified Linux NIC drivers (e1000, e1000e,
//! vmxnet3, virtio_net) bind to emulated devices, for nettune's tests and
//! studies (docs/guests.md).
//!
//! - [`kernel`]: Debian's `linux-image-*-amd64` unpacked in a cache
//!   directory (`.ci/guest-kernel` fills it), never the host's kernel;
//! - [`modules`]: the driver modules and their dependencies, in load order,
//!   from the package's `modules.dep`;
//! - [`initramfs`]: a newc cpio archive (busybox-static, the nettune binary,
//!   ethtool with its libraries, the modules and an `/init`);
//! - [`machine`]: the typed QEMU machine (q35, two NUMA nodes, the NICs,
//!   socket netdevs on 127.0.0.1, the agent's virtio-serial port) and its
//!   command line, pure and unit-tested;
//! - [`claim`]: the directory and ports one `nettune guest up` holds;
//! - [`run`]: boot under a total deadline (killed at it, the error carrying
//!   the tail of the console), clean shutdown.
//!
//! The guest runs `nettune agent --stdio` on a virtio-serial port that QEMU
//! joins to a unix socket on the host; the fleet's `guest` transport reaches it.

pub mod claim;
pub mod error;
pub mod initramfs;
pub mod kernel;
pub mod machine;
pub mod modules;
pub mod run;
pub mod study;

pub use error::GuestError;
pub use machine::{Accel, GuestName, Machine, Netdev, Nic, NicModel};
pub use run::{BootOptions, Guest};
