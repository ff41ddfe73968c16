#!/usr/bin/env bash
# The syntax guard's cost per real multi-hunk diff, in instructions
# (callgrind, so the figure does not depend on the machine's load):
# `lancet apply --check` with the guard on (the default) and with
# `--syntax off`, on diffs from this repository's history. The difference is
# the guard's whole cost; its share of the no-guard count is the figure issue
# 10 bounds (≤ 25 %, about 0.2 ms).
#
# Usage: benches/syntax_guard_cost.sh [commit:path ...]
#        (default: the cases below: a 4-hunk diff on a 654-line file and a
#        23-hunk diff on a 922-line one)
#
# Needs cargo, git and valgrind. Each case is the commit's `git diff` of one
# file applied (--check) to its pre-image, as benches/process_udiff.sh does.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cases=("$@")
if ((${#cases[@]} == 0)); then
    cases=(
        765459114ebdf2ad6f83d4fb538c1cbe9bb18a54:src/syntax.rs
        e15a0ae424160ecef98afc876402e443103e4773:src/agent/words.rs
    )
fi

echo "building lancet (release)..." >&2
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin lancet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$target/release/lancet" "$work/lancet"

# Instructions of one run: callgrind's total.
instructions() {
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" >/dev/null 2>"$work/cg.err" ||
        { cat "$work/cg.err" >&2; exit 1; }
    awk '/^summary:/ { print $2 }' "$work/cg.out"
}

printf '%-10s %-22s %6s %5s %12s %12s %12s %7s\n' commit file lines hunks guard off overhead share
for case in "${cases[@]}"; do
    c=${case%%:*} path=${case#*:}
    p=$(git -C "$root" rev-parse "$c^")
    tree=$work/tree
    rm -rf "$tree" && mkdir -p "$tree/$(dirname "$path")"
    git -C "$root" cat-file blob "$p:$path" >"$tree/$path"
    git -C "$root" -c diff.noprefix=false diff --no-ext-diff --no-textconv --no-color \
        --no-renames --src-prefix=a/ --dst-prefix=b/ "$p" "$c" -- "$path" >"$work/edit.diff"
    on=$(instructions "$work/lancet" apply --check -p1 -C "$tree" "$work/edit.diff")
    off=$(instructions "$work/lancet" apply --check --syntax off -p1 -C "$tree" "$work/edit.diff")
    printf '%-10s %-22.22s %6d %5d %12d %12d %12d %6.1f%%\n' "${c:0:10}" "$path" \
        "$(wc -l <"$tree/$path")" "$(grep -c '^@@' "$work/edit.diff")" "$on" "$off" $((on - off)) \
        "$(awk -v a="$on" -v b="$off" 'BEGIN { print 100 * (a - b) / b }')"
done
