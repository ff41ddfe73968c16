#!/usr/bin/env bash
# Process-level bench: the whole `lancet apply` process (start-up, reading the
# edit, reading and writing the file, the undo journal) for one search/replace
# block on a 1 MB source file, next to GNU patch applying the equivalent
# unified diff to the same file in the same run. `benches/apply.rs` measures
# the engine alone; this measures what a caller waits for.
#
# Usage: benches/process.sh [runs]        (default: 30 timed runs per tool)
#
# Needs cargo, diff and GNU patch. Times with hyperfine when it is installed
# (`apt-get install hyperfine`), else with a bash loop; peak memory comes from
# GNU time (`/usr/bin/time -v`, package `time`), skipped when it is missing.
# Every run starts from the pristine file: the restore is hyperfine's
# `--prepare` step (or done before the clock starts in the loop), so it is
# never timed. Both tools' results are checked against the expected file
# before anything is timed, so a fast failure cannot pass for a fast apply.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"
runs=${1:-30}
target=${CARGO_TARGET_DIR:-$root/target}
lancet=$target/release/lancet

echo "building lancet (release)..." >&2
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin lancet

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/src"

# 1 MiB of Rust-like code: functions of a few statements, comments and blank
# lines. The Park–Miller generator keeps every product below 2^53, so any awk
# writes the same file.
awk -v bytes=1048576 '
function rnd(n) { seed = (seed * 16807) % 2147483647; return seed % n }
function emit(s) { print s; size += length(s) + 1 }
BEGIN {
    seed = 20240601
    nw = split("config buffer index parser token node value count offset result state entry path line range cache writer reader limit score", w, " ")
    nm = split("push insert get find map resolve apply", m, " ")
    while (size < bytes) {
        f++
        emit(sprintf("pub fn %s_%d(input: &str) -> usize {", w[rnd(nw) + 1], f))
        k = rnd(12) + 2
        for (i = 0; i < k; i++) {
            r = rnd(4)
            if (r == 0) emit(sprintf("    // %s the %s of each %s", m[rnd(nm) + 1], w[rnd(nw) + 1], w[rnd(nw) + 1]))
            else if (r == 1) emit("")
            else emit(sprintf("    let %s_%d = %s.%s(%d);", w[rnd(nw) + 1], rnd(100), w[rnd(nw) + 1], m[rnd(nm) + 1], rnd(10000)))
        }
        emit("    0"); emit("}"); emit("")
    }
}' >"$work/big.rs"

# The edit: ten lines starting at a function three quarters into the file,
# every `let` made `let mut`.
total=$(wc -l <"$work/big.rs")
from=$(awk -v s=$((total * 3 / 4)) 'NR >= s && /^pub fn/ { print NR; exit }' "$work/big.rs")
to=$((from + 9))
sed -n "${from},${to}p" "$work/big.rs" >"$work/search.txt"
sed 's/let /let mut /' "$work/search.txt" >"$work/replace.txt"
if cmp -s "$work/search.txt" "$work/replace.txt"; then
    echo "process.sh: the chosen block has no 'let' to change" >&2
    exit 1
fi
{
    echo "src/big.rs"
    echo "<<<<<<< SEARCH"
    cat "$work/search.txt"
    echo "======="
    cat "$work/replace.txt"
    echo ">>>>>>> REPLACE"
} >"$work/edit.txt"
{
    head -n $((from - 1)) "$work/big.rs"
    cat "$work/replace.txt"
    tail -n +$((to + 1)) "$work/big.rs"
} >"$work/expected.rs"
# diff exits 1 when the files differ, which they do.
diff -u --label a/src/big.rs --label b/src/big.rs "$work/big.rs" "$work/expected.rs" >"$work/edit.diff" || true

# Restores the pristine file and forgets lancet's undo journal, so every run
# does the same work.
cat >"$work/restore" <<EOF
rm -rf "$work/tree/.lancet"
cp "$work/big.rs" "$work/tree/src/big.rs"
EOF

lancet_cmd=("$lancet" apply -C "$work/tree" "$work/edit.txt")
patch_cmd=(patch -p1 -s --no-backup-if-mismatch -d "$work/tree" -i "$work/edit.diff")

check() {
    local name=$1
    shift
    sh "$work/restore"
    if ! "$@" >"$work/out.txt" 2>&1; then
        echo "process.sh: $name failed:" >&2
        cat "$work/out.txt" >&2
        exit 1
    fi
    if ! cmp -s "$work/tree/src/big.rs" "$work/expected.rs"; then
        echo "process.sh: $name did not produce the expected file" >&2
        exit 1
    fi
}
check "lancet apply" "${lancet_cmd[@]}"
check "patch" "${patch_cmd[@]}"

printf 'file: %d bytes, %d lines; edit: lines %d-%d (%d-byte block, %d-byte diff); %d runs each\n' \
    "$(wc -c <"$work/big.rs")" "$total" "$from" "$to" \
    "$(wc -c <"$work/edit.txt")" "$(wc -c <"$work/edit.diff")" "$runs"

# Per tool: "median mean stddev min" in milliseconds, into $work/<name>.ms.
if command -v hyperfine >/dev/null; then
    timer="hyperfine $(hyperfine --version | cut -d' ' -f2)"
    # --shell=none spawns the commands directly, so no shell start-up is timed.
    # Paths are from mktemp (no spaces), so splitting on whitespace is safe.
    hyperfine --shell=none --style=none --warmup 3 --runs "$runs" \
        --prepare "sh $work/restore" \
        --export-csv "$work/times.csv" \
        -n lancet "${lancet_cmd[*]}" \
        -n patch "${patch_cmd[*]}" >/dev/null
    for name in lancet patch; do
        awk -F, -v name="$name" '
            NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            $col["command"] == name {
                printf "%.3f %.3f %.3f %.3f\n", $col["median"] * 1000, $col["mean"] * 1000,
                    $col["stddev"] * 1000, $col["min"] * 1000
            }' "$work/times.csv" >"$work/$name.ms"
    done
else
    timer="bash loop (hyperfine not found)"
    loop() {
        local name=$1
        shift
        time_runs "$work" "$runs" "$@" | awk '
            { t[NR] = $1 / 1000; s += t[NR]; q += t[NR] * t[NR] }
            END {
                med = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
                mean = s / NR; var = q / NR - mean * mean
                printf "%.3f %.3f %.3f %.3f\n", med, mean, sqrt(var > 0 ? var : 0), t[1]
            }' >"$work/$name.ms"
    }
    loop lancet "${lancet_cmd[@]}"
    loop patch "${patch_cmd[@]}"
fi

# Peak resident memory: the median of five runs, in KiB.
peak_kib() {
    local i
    if [[ ! -x /usr/bin/time ]]; then
        echo "-"
        return
    fi
    for ((i = 0; i < 5; i++)); do
        sh "$work/restore"
        /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null 2>&1
        awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$work/time.txt"
    done | sort -n | sed -n 3p
}
lancet_rss=$(peak_kib "${lancet_cmd[@]}")
patch_rss=$(peak_kib "${patch_cmd[@]}")

echo "timer: $timer"
printf '%-14s %10s %18s %10s %14s\n' tool median "mean ± σ" min "peak RSS"
row() {
    local label=$1 file=$2 rss=$3 med mean sd min
    read -r med mean sd min <"$file"
    printf '%-14s %7.2f ms %8.2f ± %5.2f ms %7.2f ms %10s KiB\n' "$label" "$med" "$mean" "$sd" "$min" "$rss"
}
row "lancet apply" "$work/lancet.ms" "$lancet_rss"
row "GNU patch" "$work/patch.ms" "$patch_rss"
