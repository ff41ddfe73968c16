#!/usr/bin/env bash
# Replays real file changes from git history through lancet, GNU patch and
# git apply, exact and with stale line numbers, with 3 and 0 lines of context;
# prints a table variant x tool -> correct / refused / wrong and writes it to
# target/compare.md. Cases where lancet is wrong, or refuses what another tool
# applies correctly, are listed and saved under /tmp/compare-cases/.
# The variants and the classification are described in benches/compare.py.
#
# Usage: benches/compare.sh [--repo PATH]... [--limit N] [--jobs N] [--out FILE]
#        benches/compare.sh --build-stdlib-repo DIR   # a long history to replay
#
# Default repository: this project. Needs git, GNU patch and python3 (3.9+,
# stdlib only). Exit status 0 when lancet meets its bar on every variant
# (correct on at least as many cases as the better of patch and git apply,
# wrong on none), 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
py=$(command -v python3.11 || command -v python3)
if [[ " $* " != *" --build-stdlib-repo "* ]]; then
    echo "building lancet (release)..." >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin lancet
fi
exec "$py" "$root/benches/compare.py" "$@"
