#!/usr/bin/env bash
# Build the Debian package: release binary, man pages and completions generated
# from the clap definitions, then cargo-deb (metadata in crates/nettune/Cargo.toml).
# Prints the path of the .deb on its last line. Needs cargo-deb
# (`cargo install cargo-deb --locked`).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked -p nettune
# cargo-deb maps asset paths starting with target/release/ to the real target dir.
gen="$target/release/deb-gen"
rm -rf "$gen"
mkdir -p "$gen/man" "$gen/completions"
"$target/release/nettune" man --out "$gen/man" >/dev/null
gzip -9n "$gen"/man/*.1
"$target/release/nettune" completions bash > "$gen/completions/nettune"
"$target/release/nettune" completions zsh > "$gen/completions/_nettune"
"$target/release/nettune" completions fish > "$gen/completions/nettune.fish"
cargo deb -p nettune --no-build --strip --output "$target/debian/" | tail -n 1
