//! `enhanced-networking-off`: a cloud guest whose NIC is a paravirtual or
//! emulated device (Xen netfront `vif`, e1000 emulation, Hyper-V netvsc
//! without its SR-IOV partner, virtio on GCP) where the cloud offers a
//! faster one (ENA or an Intel VF on EC2, gVNIC on GCP, accelerated
//! networking on Azure).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;
use model::doctor_facts::Cloud;

/// Drivers of SR-IOV virtual functions that carry a netvsc NIC's traffic on Azure.
const AZURE_VF_DRIVERS: &[&str] = &["mlx4_core", "mlx4_en", "mlx5_core", "mana"];

/// The slow NIC driver and what the cloud offers instead, if `driver` is one.
fn slow_driver(cloud: Cloud, driver: &str) -> Option<(&'static str, &'static str)> {
    match (cloud, driver) {
        (Cloud::Aws, "vif" | "xen-netfront" | "xen_netfront") => Some((
            "Xen netfront (paravirtual, split driver through dom0)",
            "ENA (Nitro instance types, or `aws ec2 modify-instance-attribute --ena-support` on Xen types that have it) or an Intel 82599 VF (ixgbevf, `--sriov-net-support simple`)",
        )),
        (Cloud::Aws | Cloud::Gcp | Cloud::Azure, "e1000" | "e1000e") => Some((
            "emulated Intel e1000 (every packet trapped to the hypervisor)",
            "the cloud's paravirtual or SR-IOV NIC (ENA on EC2, gVNIC on GCP, accelerated networking on Azure)",
        )),
        (Cloud::Gcp, "virtio_net" | "virtio-pci") => Some((
            "virtio-net",
            "gVNIC (create the VM with `--network-interface=nic-type=GVNIC`; the gve driver)",
        )),
        (Cloud::Azure, "hv_netvsc") => Some((
            "Hyper-V netvsc (synthetic, through the host's vSwitch)",
            "accelerated networking (SR-IOV): `az network nic update --accelerated-networking true`",
        )),
        _ => None,
    }
}

fn cloud_name(c: Cloud) -> &'static str {
    match c {
        Cloud::Aws => "EC2",
        Cloud::Gcp => "GCE",
        Cloud::Azure => "Azure",
    }
}

/// A cloud guest without enhanced networking.
#[derive(Debug)]
pub struct EnhancedNetworkingOff;

impl DoctorRule for EnhancedNetworkingOff {
    fn id(&self) -> FindingId {
        FindingId::EnhancedNetworkingOff
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "a cloud guest on a paravirtual NIC where SR-IOV/ENA/gVNIC is offered"
    }
    fn rationale(&self) -> &'static str {
        "a paravirtual or emulated NIC passes every packet through the hypervisor's software path; the cloud's SR-IOV NICs DMA straight into the guest and carry about ten times the packet rate"
    }
    fn source(&self) -> &'static str {
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html) (EC2 classic Xen split driver limited to 200 kpps, SR-IOV VPC 8xlarge instances about 2 Mpps)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let p = &cx.input.facts.platform;
        if p.sys_vendor.is_none()
            && p.product_name.is_none()
            && p.bios_version.is_none()
            && p.hypervisor.is_none()
        {
            return Err(Skip::because(
                "/sys/class/dmi/id/sys_vendor: not found (and no /sys/hypervisor/type): the platform is unknown",
            ));
        }
        let Some(cloud) = p.cloud() else {
            return Ok(());
        };
        let ifaces = &cx.snap().interfaces;
        for iface in ifaces {
            let Some(driver) = iface.driver.as_deref() else {
                continue;
            };
            let Some((what, instead)) = slow_driver(cloud, driver) else {
                continue;
            };
            // Azure pairs netvsc with a VF of the same MAC when accelerated networking is on.
            if cloud == Cloud::Azure
                && ifaces.iter().any(|o| {
                    o.name != iface.name
                        && o.mac.is_some()
                        && o.mac == iface.mac
                        && o.driver
                            .as_deref()
                            .is_some_and(|d| AZURE_VF_DRIVERS.contains(&d))
                })
            {
                continue;
            }
            let name = iface.name.as_str();
            let mut f = crate::finding::from_rule(
                self,
                name,
                format!("{name}: {} guest on {what}", cloud_name(cloud)),
            )
            .evidence(
                "NIC driver",
                driver.to_string(),
                format!("/sys/class/net/{name}/device/driver"),
            );
            for (k, v) in [
                ("sys_vendor", &p.sys_vendor),
                ("product_name", &p.product_name),
                ("bios_version", &p.bios_version),
            ] {
                if let Some(v) = v {
                    f = f.evidence(k, v.clone(), format!("/sys/class/dmi/id/{k}"));
                }
            }
            if let Some(h) = &p.hypervisor {
                f = f.evidence("hypervisor", h.clone(), "/sys/hypervisor/type");
            }
            out.push(f.fix(Fix {
                text: format!(
                    "Switch the instance to {instead}; no host setting makes up the difference."
                ),
                ..Fix::default()
            }));
        }
        Ok(())
    }
}
