#!/usr/bin/env bash
# CI test of the Debian package: build it (packaging/build-deb.sh), install it
# with dpkg, run what it installed (binary, man page, completions, units), then
# purge it so the machine is left as it was found. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ] || ! command -v dpkg >/dev/null 2>&1; then
  echo "deb: skipped: installing a package needs root and dpkg"
  exit 0
fi
if dpkg -s nettune >/dev/null 2>&1; then
  echo "deb: skipped: a nettune package is already installed on this machine; not replacing it"
  exit 0
fi
# The package's purge removes nettune's state (/var/lib/nettune, the rollback
# journal) and what `apply --persist` wrote; never on a machine that has some.
for f in /var/lib/nettune /etc/nettune/plan.json /etc/systemd/system/nettune.service; do
  if [ -e "$f" ]; then
    echo "deb: skipped: $f exists on this machine; purging the test package would remove it"
    exit 0
  fi
done
for p in iproute2 ethtool; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    echo "deb: installing $p (a Depends of the package)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "$p" >/dev/null
  fi
done
if ! command -v cargo-deb >/dev/null 2>&1; then
  echo "deb: installing cargo-deb (cargo install cargo-deb --locked)"
  cargo install cargo-deb --locked --quiet
fi
if ! command -v man >/dev/null 2>&1; then
  echo "deb: installing man-db"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq man-db >/dev/null
fi

deb=$(packaging/build-deb.sh | tail -n 1)
deb=${deb##* }
[ -f "$deb" ] || { echo "deb: build-deb.sh did not name a .deb: $deb"; exit 1; }
echo "deb: built $deb ($(du -h "$deb" | cut -f1))"
# First in a throwaway overlay root: install, --version, man -l, remove, purge.
bash packaging/test-deb-root.sh "$deb"

fail() { echo "deb: FAIL: $*"; exit 1; }
trap 'dpkg -P nettune >/dev/null 2>&1 || true' EXIT
# Minimal images exclude /usr/share/man from dpkg; include our pages anyway.
dpkg --path-include='/usr/share/man/man1/nettune*' -i "$deb" >/dev/null

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
out=$(/usr/bin/nettune --version)
[ "$out" = "nettune $version" ] || fail "/usr/bin/nettune --version said: $out"
/usr/bin/nettune plan --profile throughput --root tests/fixtures/c4-8xlarge >/dev/null \
  || fail "the installed binary cannot plan on a fixture"

MANPAGER=cat MANWIDTH=100 man nettune 2>/dev/null | grep -q 'nettune-verify(1)' \
  || fail "man nettune does not render or list nettune-verify(1)"
MANPAGER=cat MANWIDTH=100 man nettune-verify 2>/dev/null | grep -q 'exit 3' \
  || fail "man nettune-verify lacks its examples"

bash -c 'source /usr/share/bash-completion/completions/nettune && complete -p nettune' >/dev/null \
  || fail "bash completion does not register"
grep -q 'verify' /usr/share/zsh/vendor-completions/_nettune || fail "zsh completion"
grep -q 'verify' /usr/share/fish/vendor_completions.d/nettune.fish || fail "fish completion"

if [ -d /run/systemd/system ]; then
  systemctl cat nettune-serve | grep -q '^ExecStart=/usr/bin/nettune serve' \
    || fail "systemctl cat nettune-serve"
  systemctl cat nettune | grep -q '^ExecStart=/usr/bin/nettune apply --plan /etc/nettune/plan.json' \
    || fail "systemctl cat nettune"
  [ "$(systemctl is-enabled nettune-serve 2>/dev/null || true)" != enabled ] \
    || fail "nettune-serve was enabled by the install"
  echo "deb: systemctl cat nettune-serve: ok"
else
  for u in nettune-serve nettune; do
    f=$(dpkg -L nettune | grep "/systemd/system/$u.service\$") || fail "no $u.service in the package"
    [ -f "$f" ] || fail "$f not installed"
  done
  grep -q '^ExecStart=/usr/bin/nettune serve' "$(dpkg -L nettune | grep '/nettune-serve.service$')" \
    || fail "nettune-serve.service does not run nettune serve"
  echo "deb: systemd is not running here; read the unit files from $(dirname "$f")"
fi
if command -v systemd-analyze >/dev/null 2>&1; then
  # Checks the units' syntax, ExecStart binaries and Documentation= man pages.
  systemd-analyze verify "$(dpkg -L nettune | grep '/nettune-serve.service$')" \
    "$(dpkg -L nettune | grep '/nettune.service$')" || fail "systemd-analyze verify"
fi
[ "$(stat -c %a /etc/default/nettune-serve)" = 600 ] || fail "/etc/default/nettune-serve is not 0600"
deps=$(dpkg-query -W -f='${Depends}' nettune)
for p in iproute2 ethtool; do
  case ", $deps," in *", $p,"*|*", $p "*) ;; *) fail "Depends lacks $p: $deps" ;; esac
done
# State a run would leave (the rollback journal's directory): purge removes it.
mkdir -p /var/lib/nettune && touch /var/lib/nettune/deb-test

dpkg -P nettune >/dev/null
trap - EXIT
! dpkg -s nettune >/dev/null 2>&1 || fail "still installed after dpkg -P"
for f in /usr/bin/nettune /etc/default/nettune-serve /usr/share/man/man1/nettune.1.gz /var/lib/nettune; do
  [ ! -e "$f" ] || fail "$f left behind by dpkg -P"
done
echo "deb: installed, ran /usr/bin/nettune, man nettune, completions and units; purged: ok"
