#!/usr/bin/env bash
# Replays real file changes from git history through lancet in every edit
# format (search/replace, unified diff, apply_patch, hashline, whole file) and,
# for unified diffs, through GNU patch and git apply. Each change is rendered
# exactly and with the mistakes models make, injected deterministically
# (seeded by commit, path and variant): stale line numbers (lines inserted
# above/between hunks; hashline anchors with echoes), -U0 diffs, lost
# indentation, whitespace drift, typos in quoted lines, wrong `@@` counts, a
# CRLF file with an LF edit, a file without final newline, the quoted text made
# to occur twice (search/replace and apply_patch must refuse), an invented
# context line (a refusal or the real change), a block moved from above the
# last hunk to below it (stale numbers the other way; hashline with echoed
# anchors), `...` elision, and every file of a commit in one edit (multi). Prints per repository a table variant x tool/format -> correct /
# refused / wrong (patch and git apply on the unified diff with the same
# mistake are the reference for every format), determined cases apart from the
# others, and writes it to target/compare.md. Every case where lancet is wrong,
# or refuses a determined case, is saved under /tmp/compare-cases/REPO/ with a
# README holding the one `lancet apply` command that reproduces it.
# The variants, the formats and the classification are described in
# benches/compare.py (renderers: compare_formats.py; mistakes:
# compare_mistakes.py).
#
# Usage: benches/compare.sh [--repo PATH]... [--limit N] [--jobs N] [--out FILE]
#                           [--formats F,...] [--variants V,...] [--cases-dir DIR]
#        benches/compare.sh --build-stdlib-repo DIR   # a long history to replay
#
# Default repository: this project (--repo also takes a bare git directory).
# Needs git, GNU patch and python3 (3.9+, stdlib only). Exit status 0 when
# lancet is wrong on no determined case and meets its bar on every variant and format
# (on determined cases: correct on at least the share the better of patch and
# git apply gets on the same variant's unified diff), 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
py=$(command -v python3.11 || command -v python3)
if [[ " $* " != *" --build-stdlib-repo "* ]]; then
    echo "building lancet (release)..." >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin lancet
fi
exec "$py" "$root/benches/compare.py" "$@"
