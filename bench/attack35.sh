#!/usr/bin/env bash
# Rerun the reproductions of issue 35's outside attack (dfe2618) against this
# build, each bounded in time, touching only a temporary directory, fixture
# copies, loopback inside a network namespace made here, and fake agents.
# Usage: bash bench/attack35.sh [NETTUNE]   (default target/debug/nettune)
# Prints one line per reproduction: what was tried, what happened.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-target/debug/nettune}")
T=$(mktemp -d /tmp/nt-attack35.XXXXXX)
NS=ntatk$$
cleanup() { ip netns del "$NS" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
say() { printf '%-58s %s\n' "$1" "$2"; }
peak() { awk '/VmHWM/ {print int($2/1024) " MiB"}' "/proc/$1/status" 2>/dev/null; }

# 1. capture --out through planted links (files, a dangling link, a linked dir).
echo precious > "$T/victim"; mkdir -p "$T/otherdir" "$T/cap/netlink" "$T/cap/proc"
ln -s "$T/victim" "$T/cap/netlink/qdisc.json"
ln -s "$T/newfile" "$T/cap/LABEL"
ln -s "$T/victim" "$T/cap/proc/meminfo"
timeout 120 "$BIN" capture --out "$T/cap" >/dev/null 2>&1
v=$(cat "$T/victim"); nf=$([ -e "$T/newfile" ] && echo created || echo absent)
say "capture: links at qdisc.json, meminfo, LABEL" "victim '$v', $nf, exit ok"
mkdir -p "$T/cap2"; ln -s "$T/otherdir" "$T/cap2/samples"
timeout 120 "$BIN" capture --out "$T/cap2" --samples 1 --interval 0.1 >/dev/null 2>"$T/err"; rc=$?
say "capture --samples: samples -> OTHERDIR" "exit $rc, OTHERDIR holds $(ls "$T/otherdir" | wc -l) entries: $(head -c 90 "$T/err")"

# 2. A plan naming core_pattern / modprobe, by apply, fleet apply and rollback.
cp -a tests/fixtures/c4-8xlarge "$T/root"
"$BIN" plan --profile throughput --json --root "$T/root" > "$T/plan.json"
python3 - "$T/plan.json" "$T/evil.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
c = p["changes"][0]
c["target"] = {"kind": "file", "path": "/proc/sys/kernel/core_pattern", "format": "text"}
c["after"] = "|/tmp/evil.sh %p"; c["reason"] = "harmless"
json.dump(p, open(sys.argv[2], "w"))
EOF
timeout 60 "$BIN" apply --plan "$T/evil.json" --yes --root "$T/root" --state-dir "$T/state" >/dev/null 2>"$T/err"; rc=$?
say "apply --plan core_pattern" "exit $rc: $(head -c 110 "$T/err")"
printf '[[host]]\nname = "h"\ntransport = "local"\nlabels = { root = "%s", state_dir = "%s" }\n' "$T/root" "$T/state" > "$T/inv.toml"
timeout 60 "$BIN" fleet apply --inventory "$T/inv.toml" --plan "$T/evil.json" --yes >/dev/null 2>"$T/err"; rc=$?
say "fleet apply --plan core_pattern" "exit $rc: $(head -c 110 "$T/err")"
timeout 60 "$BIN" fleet apply --inventory "$T/inv.toml" --plan "$T/plan.json" --dry-run >"$T/out" 2>&1; rc=$?
say "fleet apply --dry-run (a real plan)" "exit $rc, $(grep -c -- ' -> ' "$T/out") change lines shown, nothing applied"
timeout 60 "$BIN" apply --plan "$T/plan.json" --yes --root "$T/root" --state-dir "$T/state" >/dev/null 2>&1
j=$(ls "$T/state"/generations/*/journal.log 2>/dev/null | head -1)
if [ -n "$j" ]; then
  # Rewritten as an attacker who can write the journal would: checksums too.
  python3 - "$j" <<'EOF'
import sys
def fnv(b):
    h = 0xcbf29ce484222325
    for c in b + b"\xff":
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h
p = sys.argv[1]; out = []
for line in open(p).read().splitlines():
    sum_, rec = line.split(" ", 1)
    assert fnv(rec.encode()) == sum_, "not the journal checksum"
    rec = rec.replace("/proc/sys/net/core/rmem_max", "/proc/sys/kernel/core_pattern")
    out.append(fnv(rec.encode()) + " " + rec)
open(p, "w").write("\n".join(out) + "\n")
EOF
  timeout 60 "$BIN" rollback --root "$T/root" --state-dir "$T/state" >/dev/null 2>"$T/err"; rc=$?
  cp_now=$(cat "$T/root/proc/sys/kernel/core_pattern" 2>/dev/null || echo absent)
  say "rollback of a journal naming core_pattern" "exit $rc, core_pattern $cp_now: $(head -c 80 "$T/err")"
else
  say "rollback of a journal naming core_pattern" "no journal found under $T/state (layout changed?)"
fi

# 3. One hostile fleet host, and 16 (fake agents answering 64 MiB at once).
if [ -x target/debug/examples/hostile_agent ]; then
  for k in values string junk; do
    say "hostile agents, 16 x 64 MiB ($k)" "$(timeout 600 target/debug/examples/hostile_agent $k 16 | sed 's/.*; //')"
  done
fi

# 4. Inventory ranges: expansion before the name check, and quadratic [0:0]s.
python3 -c "print('[[host]]\nname = \"h[1:10000]' + 'x'*100000 + '\"\ntransport = \"local\"')" > "$T/range.toml"
/usr/bin/time -f "%e s, %M KiB" timeout 60 "$BIN" fleet inspect --inventory "$T/range.toml" >/dev/null 2>"$T/err"; rc=$?
say "inventory h[1:10000] + 100 KB" "exit $rc, $(tail -1 "$T/err"): $(head -c 70 "$T/err")"
python3 -c "print('[[host]]\nname = \"h' + '[0:0]'*4000 + '\"\ntransport = \"local\"')" > "$T/zeros.toml"
/usr/bin/time -f "%e s, %M KiB" timeout 60 "$BIN" fleet inspect --inventory "$T/zeros.toml" >/dev/null 2>"$T/err"; rc=$?
say "inventory [0:0] x 4000" "exit $rc, $(tail -1 "$T/err")"

# 5. The server: handshakes in progress beside a flood, and its memory.
# (No netem on this kernel: a slow path is a client that waits 0.5 s after
# its preamble; kept means the server has not closed it by then.)
PORT=5290
ip netns add "$NS" && ip -n "$NS" link set lo up
ip netns exec "$NS" "$BIN" serve --listen 127.0.0.1 --port $PORT >/dev/null 2>"$T/serve.err" &
sleep 1; SPID=$(ip netns pids "$NS" | head -1)
ip netns exec "$NS" timeout 60 python3 - $PORT <<'EOF' > "$T/flood"
import socket, sys, threading, time
port = int(sys.argv[1]); stop = time.time() + 8; n = [0]
def flood():
    while time.time() < stop:
        for p in range(20):
            s = socket.socket(); s.setblocking(False)
            try:
                s.bind((f"127.{p + 1}.0.{(n[0] % 250) + 2}", 0)); s.connect_ex(("127.0.0.1", port))
            except OSError:
                pass
            s.close(); n[0] += 1
        time.sleep(0.04)
threading.Thread(target=flood, daemon=True).start()
time.sleep(1)
kept = 0
for i in range(5):
    c = socket.create_connection(("127.0.0.1", port), source_address=(f"127.{i + 1}.0.1", 0))
    c.sendall(b"NTUN\x00\x01")
    c.settimeout(5); first = c.recv(64)
    time.sleep(0.5)
    c.settimeout(0.2)
    try:
        kept += c.recv(1) != b""
    except socket.timeout:
        kept += 1
    c.close()
time.sleep(max(0, stop - time.time()))
print(f"{kept} {n[0]}")
EOF
read kept conns < "$T/flood"
lines=$(grep -c "make room" "$T/serve.err")
say "5 handshakes waiting 0.5 s, beside $conns conns (8 s) from 20 /24s" "$kept of 5 kept; server logged $lines eviction lines"
pids=()
for i in 1 2 3 4 5 6 7 8; do
  timeout 40 ip netns exec "$NS" "$BIN" bench 127.0.0.1 -p $PORT -t tcp-rr --size 16M --outstanding 7 -d 3 >/dev/null 2>>"$T/mem.err" &
  pids+=($!)
done
wait "${pids[@]}"
say "server after 8 x tcp-rr --size 16M --outstanding 7" "peak RSS $(peak "$SPID"); $(sort "$T/mem.err" | uniq -c | sort -rn | head -1 | cut -c1-90)"
kill "$SPID" 2>/dev/null

# 6. Low: FIFOs where a file is read.
mkfifo "$T/fifo"; mkdir -p "$T/from"; mkfifo "$T/from/results.json"
timeout 10 "$BIN" autotune --lab --objective max-throughput --from "$T/from" >/dev/null 2>"$T/err"; rc=$?
say "autotune --from DIR with a FIFO results.json" "exit $rc: $(head -c 80 "$T/err")"
timeout 10 "$BIN" fleet inspect --inventory "$T/fifo" >/dev/null 2>"$T/err"; rc=$?
say "fleet inspect --inventory FIFO" "exit $rc: $(head -c 80 "$T/err")"
