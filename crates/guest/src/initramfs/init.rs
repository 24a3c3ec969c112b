//! The guest's `/init` (busybox sh, PID 1).
//!
//! It mounts the kernel's filesystems, loads the modules in order, brings
//! every interface up (e1000 and friends request their IRQs on open), prints
//! [`READY`] on the console, then:
//! - serves the agent: its virtio-serial port is opened once, read-write,
//!   for the guest's whole life (a virtio port opens once at a time, and
//!   Linux discards what arrives while it is closed); it reads end-of-file
//!   while no host is connected, so the loop waits for the one byte the
//!   host's transport sends when it connects (`dd` reads exactly one), then
//!   runs `nettune agent --stdio` on it; when the host closes, the agent
//!   reads end-of-file and ends, and the loop waits for the next connection;
//! - powers off when a byte arrives on the control port.
//!
//! With a capture port, the tar it sends holds `capture/` (`nettune capture`)
//! and `tracing/kfree_skb-format` (the `skb:kfree_skb` tracepoint's format,
//! from tracefs). After [`READY`] the console shows the kernel's info
//! messages (a driver's parameters when a reload loads it again).

/// The line `/init` prints when the agent's loop is running.
pub const READY: &str = "nettune-guest: ready";

/// The console line before the capture's tar goes out: this, the size, ` bytes`.
pub const CAPTURE_LINE: &str = "nettune-guest: capture ";

/// The console line when the capture of the test hook
/// `NETTUNE_TEST_CAPTURE_AFTER_RX` starts: this, then the packet count.
pub const CAPTURE_AFTER_RX_LINE: &str = "nettune-guest: capturing after rx packets ";

/// The script, loading `modules` (absolute paths inside the guest) in order,
/// then, once every interface is up (so that the NICs' IRQ vectors are
/// placed as before), `late`.
pub fn init_script(modules: &[String], late: &[String]) -> String {
    let mut s = String::from(
        "#!/bin/sh\n\
         export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null\n\
         mkdir -p /root /run /tmp /var/lib/nettune\n",
    );
    let insmod = |s: &mut String, m: &String| {
        s.push_str(&format!(
            "insmod {m} || echo \"nettune-guest: insmod {m} failed\"\n"
        ))
    };
    for m in modules {
        insmod(&mut s, m);
    }
    s.push_str(
        "ip link set lo up\n\
         for i in /sys/class/net/*; do ip link set \"${i##*/}\" up; done\n",
    );
    for m in late {
        insmod(&mut s, m);
    }
    s.push_str(
        "port() { for p in /sys/class/virtio-ports/*; do [ \"$(cat $p/name)\" = \"$1\" ] && echo /dev/${p##*/}; done; }\n\
         AGENT=$(port nettune)\n\
         CTL=$(port nettune-ctl)\n\
         CAP=$(port nettune-capture)\n\
         capture() { \"$@\" >/dev/console 2>&1; mkdir -p /tmp/tracing; cp /sys/kernel/tracing/events/skb/kfree_skb/format /tmp/tracing/kfree_skb-format 2>/dev/null; tar -C /tmp -cf /tmp/capture.tar capture tracing; echo \"nettune-guest: capture $(wc -c </tmp/capture.tar) bytes\"; cat /tmp/capture.tar >$CAP; }\n\
         if [ -n \"$CAP\" ] && [ -z \"$NETTUNE_TEST_CAPTURE_AFTER_RX\" ]; then capture nettune capture --out /tmp/capture; fi\n\
         byte() { [ \"$(dd bs=1 count=1 2>/dev/null | wc -c)\" -eq 1 ]; }\n\
         exec 3<>$AGENT 4<>$CTL\n\
         ( while :; do if byte <&4; then echo \"nettune-guest: powering off\"; sync; poweroff -f; fi; sleep 0.2; done ) &\n\
         ( while :; do if byte <&3; then nettune agent --stdio <&3 >&3 2>/dev/console; else sleep 0.1; fi; done ) &\n",
    );
    // The test hook of crates/nettune/tests/guest_drops.rs: the capture
    // waits until eth0 has received NETTUNE_TEST_CAPTURE_AFTER_RX packets
    // (a flood from outside the guest, after the test set the guest up
    // through the agent), then records 4 samples 1 s apart, pinned to CPU
    // NETTUNE_TEST_CAPTURE_CPU when that is set.
    s.push_str(&format!(
        "if [ -n \"$CAP\" ] && [ -n \"$NETTUNE_TEST_CAPTURE_AFTER_RX\" ]; then ( \
         until [ \"$(cat /sys/class/net/eth0/statistics/rx_packets)\" -ge \"$NETTUNE_TEST_CAPTURE_AFTER_RX\" ]; do sleep 0.1; done; \
         echo \"{CAPTURE_AFTER_RX_LINE}$NETTUNE_TEST_CAPTURE_AFTER_RX\"; \
         capture ${{NETTUNE_TEST_CAPTURE_CPU:+taskset -c $NETTUNE_TEST_CAPTURE_CPU}} nettune capture --out /tmp/capture --samples 4 --interval 1 \
         ) & fi\n"
    ));
    // From READY on the kernel's info messages reach the console too: what a
    // driver says when it loads again (a module reload) is in the log the
    // host reads, without the boot's own chatter.
    s.push_str("echo 7 >/proc/sys/kernel/printk\n");
    s.push_str(&format!("echo \"{READY}\"\n"));
    s.push_str("while :; do sleep 3600; done\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_load_in_the_given_order_before_ready() {
        let s = init_script(
            &["/lib/modules/r/a.ko".into(), "/lib/modules/r/b.ko".into()],
            &[],
        );
        let a = s.find("insmod /lib/modules/r/a.ko").unwrap();
        let b = s.find("insmod /lib/modules/r/b.ko").unwrap();
        let ready = s.find(READY).unwrap();
        assert!(a < b && b < ready);
        assert!(s.contains("exec 3<>$AGENT 4<>$CTL"));
        assert!(s.contains("nettune agent --stdio <&3 >&3"));
    }

    #[test]
    fn the_capture_after_rx_hook_waits_for_eth0_and_is_pinned_when_asked() {
        let s = init_script(&[], &[]);
        // Without the hook the capture runs at boot, before READY.
        let boot = s
            .find("[ -z \"$NETTUNE_TEST_CAPTURE_AFTER_RX\" ]; then capture nettune capture --out /tmp/capture; fi")
            .unwrap();
        let hook = s.find("[ -n \"$NETTUNE_TEST_CAPTURE_AFTER_RX\" ]").unwrap();
        assert!(boot < hook && hook < s.find(READY).unwrap());
        let line = &s[hook..s[hook..].find('\n').unwrap() + hook];
        assert!(line.contains("statistics/rx_packets)\" -ge"), "{line}");
        assert!(
            line.contains("capture ${NETTUNE_TEST_CAPTURE_CPU:+taskset -c $NETTUNE_TEST_CAPTURE_CPU} nettune capture --out /tmp/capture --samples 4 --interval 1"),
            "{line}"
        );
        assert!(line.ends_with(") & fi"), "{line}");
    }
}
