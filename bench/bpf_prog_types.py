#!/usr/bin/env python3
"""Which BPF program types this kernel lets root load (issue 39): `r0 = 0;
exit` as fentry and fexit of sk_skb_reason_drop, fentry of tcp_v4_rcv, a BTF
raw tracepoint on kfree_skb, a raw tracepoint and a kprobe program, through
bpf(BPF_PROG_LOAD) directly (x86-64). The BTF ids come from
/sys/kernel/btf/vmlinux, walked minimally (trusted input: the running
kernel's own BTF). Prints each load's file descriptor or errno.

    python3 bench/bpf_prog_types.py
"""
import ctypes, os, struct

d = open("/sys/kernel/btf/vmlinux", "rb").read()
_, _, _, hl, to, tl, so, sl = struct.unpack_from("<HBBIIIII", d, 0)
T, S = d[hl + to:hl + to + tl], d[hl + so:hl + so + sl]


def name(o):
    return S[o:S.index(b"\0", o)].decode()


EXTRA = {1: 4, 3: 12, 14: 4, 17: 4}
at, i, ids = 0, 1, {}
while at < len(T):
    no, info, _ = struct.unpack_from("<III", T, at)
    k, v = (info >> 24) & 0x1f, info & 0xffff
    n = EXTRA.get(k, v * 12 if k in (4, 5, 15, 19) else v * 8 if k in (6, 13) else 0)
    ids.setdefault((k, name(no)), i)
    at, i = at + 12 + n, i + 1

libc = ctypes.CDLL(None, use_errno=True)
insns = ctypes.create_string_buffer(struct.pack("<BBhi", 0xb7, 0, 0, 0) + struct.pack("<BBhi", 0x95, 0, 0, 0))
lic = ctypes.create_string_buffer(b"GPL")
SYS_BPF, BPF_PROG_LOAD = 321, 5


def load(prog_type, attach_type, btf_id):
    a = bytearray(120)  # union bpf_attr up to core_relo_cnt
    struct.pack_into("<IIQQ", a, 0, prog_type, 2, ctypes.addressof(insns), ctypes.addressof(lic))
    struct.pack_into("<I", a, 68, attach_type)
    struct.pack_into("<I", a, 108, btf_id)
    buf = ctypes.create_string_buffer(bytes(a), 120)
    r = libc.syscall(SYS_BPF, BPF_PROG_LOAD, buf, 120)
    if r < 0:
        return os.strerror(ctypes.get_errno())
    os.close(r)
    return "loaded"


FUNC, TYPEDEF = 12, 8
TRACING, RAW_TP, KPROBE = 26, 17, 2
print("fentry sk_skb_reason_drop:", load(TRACING, 24, ids[(FUNC, "sk_skb_reason_drop")]))
print("fexit sk_skb_reason_drop:", load(TRACING, 25, ids[(FUNC, "sk_skb_reason_drop")]))
print("fentry tcp_v4_rcv:", load(TRACING, 24, ids[(FUNC, "tcp_v4_rcv")]))
print("tp_btf kfree_skb:", load(TRACING, 23, ids[(TYPEDEF, "btf_trace_kfree_skb")]))
print("raw_tracepoint:", load(RAW_TP, 0, 0))
print("kprobe:", load(KPROBE, 0, 0))
