#!/usr/bin/env bash
# Process-level bench for unified diffs: the whole `lancet apply` process
# (start-up, parsing, reading, resolving, writing, the undo journal) next to
# GNU patch applying the same git diff to the same file, on
#   1. ~20 real diffs from this project's history (one file changed by one
#      commit, `git diff` with 3 lines of context, applied to its pre-image;
#      picked evenly across the history's modifications), and
#   2. a 1,000-hunk git diff (every 100th line changed) on a 100,000-line file,
#   3. a 50-hunk git diff (every 2,000th line changed) on the same file.
# `benches/udiff.rs` measures the engine alone on case 2; `benches/process.sh`
# does the same comparison for a search/replace block.
#
# Usage: benches/process_udiff.sh [runs] [diffs]   (default: 30 timed runs per
#        tool and case, 20 real diffs)
#        BEFORE=path/to/an/older/lancet benches/process_udiff.sh ...
#        adds a column "before": that binary's fresh apply, timed in the same
#        hyperfine invocation as the others (seconds apart, where two runs of
#        this script minutes apart drift by ±10 % on a shared machine), and
#        the ratio now/before.
#
# Needs cargo, git, awk and GNU patch; times with hyperfine when installed,
# else with a bash loop. Every run starts from the pristine file (hyperfine's
# `--prepare`, never timed), and both tools' results are checked against the
# real post-image before anything is timed.
#
# lancet is timed twice: "fresh", with no `.lancet/` (so each run makes
# `.lancet/`, its `.gitignore` and `.lancet/undo`, as only a project's first
# apply does: the pessimistic figure), and "warm", with `.lancet/undo`
# already holding three entries of earlier applies of the same diff, as
# every later apply finds it. And "steady": the mean of applies in one tree
# whose journal is past its limit of twenty entries and kept from run to run,
# so that what a full journal costs (the oldest entry recycled on every apply;
# pruning, ten old entries deleted on every tenth apply, where an entry cannot
# be recycled or with an older lancet) is paid as a project used for a while
# pays it; patch's mean beside it ("p-stdy").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=benches/timing.sh
. "$root/benches/timing.sh"
runs=${1:-30}
want=${2:-20}
before=${BEFORE:-}
if [[ -n $before && ! -x $before ]]; then
    echo "process_udiff.sh: BEFORE=$before is not an executable" >&2
    exit 2
fi
target=${CARGO_TARGET_DIR:-$root/target}

echo "building lancet (release)..." >&2
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin lancet

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A private copy: a concurrent build must not swap the binary mid-run.
cp "$target/release/lancet" "$work/lancet"
lancet=$work/lancet
if [[ -n $before ]]; then
    cp "$before" "$work/before"
    before=$work/before
fi

# ------------------------------------------------------------------ cases
# Each case is a directory: pre (pristine file), post (expected), edit.diff,
# path (the file's path in the tree), tree/ (where the tools run).

n_cases=0
add_case() { # name path pre-file post-file diff-file
    local d=$work/cases/$1
    mkdir -p "$d/tree/$(dirname "$2")"
    printf '%s' "$2" >"$d/path"
    cp "$3" "$d/pre"
    cp "$4" "$d/post"
    cp "$5" "$d/edit.diff"
    n_cases=$((n_cases + 1))
}

# 1. Real diffs: modifications of text files (under 256 KiB) in this history.
git -C "$root" log --no-merges --reverse --format='%H %P' | while read -r c p _; do
    [[ -n ${p:-} ]] || continue
    git -C "$root" diff-tree -r --no-renames --numstat "$p" "$c" | while read -r add del path; do
        [[ $add == - || $path == *' '* ]] && continue # binary, or a path with spaces
        # Modifications only: the path exists on both sides.
        git -C "$root" cat-file -e "$p:$path" 2>/dev/null || continue
        git -C "$root" cat-file -e "$c:$path" 2>/dev/null || continue
        size=$(git -C "$root" cat-file -s "$p:$path")
        ((size > 0 && size < 262144)) || continue
        echo "$c $p $path $((add + del))"
    done
done >"$work/changes.txt"
total=$(wc -l <"$work/changes.txt")
if ((total == 0)); then
    echo "process_udiff.sh: no modifications in the history" >&2
    exit 1
fi
# Evenly spaced over the history.
awk -v n="$total" -v k="$want" 'BEGIN { step = n / k; if (step < 1) step = 1 }
    { if (NR - 1 >= next_pick) { print; next_pick += step } }' "$work/changes.txt" >"$work/picked.txt"
i=0
while read -r c p path _; do
    i=$((i + 1))
    git -C "$root" cat-file blob "$p:$path" >"$work/pre.tmp"
    git -C "$root" cat-file blob "$c:$path" >"$work/post.tmp"
    git -C "$root" -c diff.noprefix=false -c diff.mnemonicprefix=false diff --no-ext-diff \
        --no-textconv --no-color --no-renames --src-prefix=a/ --dst-prefix=b/ \
        "$p" "$c" -- "$path" >"$work/diff.tmp"
    add_case "$(printf 'r%02d' "$i")" "$path" "$work/pre.tmp" "$work/post.tmp" "$work/diff.tmp"
    printf '%s %s\n' "$(printf 'r%02d' "$i")" "${c:0:10} $path" >>"$work/labels.txt"
done <"$work/picked.txt"

# 2. 1,000 hunks on 100,000 lines: Rust-like code from a Park–Miller
#    generator (products stay below 2^53, so any awk writes the same file);
#    line 50, 150, 250, … changed; the diff made by git (with `index` lines).
awk -v lines=100000 '
function rnd(n) { seed = (seed * 16807) % 2147483647; return seed % n }
function emit(s) { if (count < lines) { print s; count++ } }
BEGIN {
    seed = 20240601
    nw = split("config buffer index parser token node value count offset result state entry path line range cache writer reader limit score", w, " ")
    nm = split("push insert get find map resolve apply", m, " ")
    while (count < lines) {
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
# synthetic NAME EVERY: line EVERY/2, EVERY/2 + EVERY, … of big.rs changed,
# the git diff of that as case NAME.
synthetic() {
    local name=$1 every=$2 repo=$work/repo-$1
    awk -v every="$every" '{ if (NR % every == every / 2) { k++; if ($0 ~ /^ *$/) print "    // edit " k; else { sub(/let /, "let mut "); print $0 " // edit " k } } else print }' \
        "$work/big.rs" >"$work/$name.post.rs"
    mkdir -p "$repo/src"
    cp "$work/big.rs" "$repo/src/big.rs"
    git -C "$repo" init -q
    git -C "$repo" add src/big.rs
    git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m pre
    cp "$work/$name.post.rs" "$repo/src/big.rs"
    git -C "$repo" -c diff.noprefix=false diff --no-color >"$work/$name.diff"
    hunks=$(grep -c '^@@' "$work/$name.diff")
    add_case "$name" src/big.rs "$work/big.rs" "$work/$name.post.rs" "$work/$name.diff"
    printf '%s %s\n' "$name" "$hunks hunks, 100000 lines (synthetic)" >>"$work/labels.txt"
}
synthetic big 100
# 3. The issue's case: a 50-hunk git diff on the same 100,000-line file.
synthetic h50 2000

# ------------------------------------------------------------------ check

for d in "$work"/cases/*/; do
    d=${d%/}
    path=$(cat "$d/path")
    cat >"$d/restore" <<EOF
rm -rf "$d/tree/.lancet"
cp "$d/pre" "$d/tree/$path"
EOF
    # The warm start: the pristine file and a copy of a `.lancet/` that
    # three earlier applies left (made below, once the tools are checked).
    mkdir -p "$d/warm"
    cat >"$d/warm/restore" <<EOF
rm -rf "$d/tree/.lancet"
cp -a "$d/lancet-warm" "$d/tree/.lancet"
cp "$d/pre" "$d/tree/$path"
EOF
    tools=(lancet patch)
    [[ -z $before ]] || tools+=(before)
    for tool in "${tools[@]}"; do
        sh "$d/restore"
        if [[ $tool == lancet ]]; then
            cmd=("$lancet" apply -p1 -C "$d/tree" "$d/edit.diff")
        elif [[ $tool == before ]]; then
            cmd=("$before" apply -p1 -C "$d/tree" "$d/edit.diff")
        else
            cmd=(patch -p1 -s --no-backup-if-mismatch -d "$d/tree" -i "$d/edit.diff")
        fi
        if ! "${cmd[@]}" >"$work/out.txt" 2>&1 || ! cmp -s "$d/tree/$path" "$d/post"; then
            echo "process_udiff.sh: $tool did not produce the post-image for $(basename "$d") ($path):" >&2
            cat "$work/out.txt" >&2
            exit 1
        fi
    done
    # Three applies' journal, kept aside; the warm run is checked like the others.
    sh "$d/restore"
    for _ in 1 2 3; do
        cp "$d/pre" "$d/tree/$path"
        "$lancet" apply -p1 -C "$d/tree" "$d/edit.diff" >/dev/null 2>&1
    done
    entries=$(find "$d/tree/.lancet/undo" -mindepth 1 -maxdepth 1 -type d | wc -l)
    if ((entries != 3)); then
        echo "process_udiff.sh: three applies left $entries journal entries for $(basename "$d")" >&2
        exit 1
    fi
    cp -a "$d/tree/.lancet" "$d/lancet-warm"
    sh "$d/warm/restore"
    if ! "$lancet" apply -p1 -C "$d/tree" "$d/edit.diff" >"$work/out.txt" 2>&1 || ! cmp -s "$d/tree/$path" "$d/post"; then
        echo "process_udiff.sh: lancet (warm) did not produce the post-image for $(basename "$d") ($path):" >&2
        cat "$work/out.txt" >&2
        exit 1
    fi
done

# ------------------------------------------------------------------ time

# The median in ms of `runs` timed runs of the command after $1, restoring case $1 first.
loop_median() {
    local d=$1
    shift
    time_runs "$d" "$runs" "$@" | awk '{ t[NR] = $1 / 1000 }
        END { printf "%.3f", NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }'
}

# Prints "median_ms_lancet median_ms_lancet_warm median_ms_lancet_check
# median_ms_patch" for case dir $1.
time_case() {
    local d=$1
    local l_cmd=("$lancet" apply -p1 -C "$d/tree" "$d/edit.diff")
    local c_cmd=("$lancet" apply --check -p1 -C "$d/tree" "$d/edit.diff")
    local p_cmd=(patch -p1 -s --no-backup-if-mismatch -d "$d/tree" -i "$d/edit.diff")
    local b_cmd=("$before" apply -p1 -C "$d/tree" "$d/edit.diff")
    if command -v hyperfine >/dev/null; then
        local extra=()
        [[ -z $before ]] || extra=(--prepare "sh $d/restore" -n before "${b_cmd[*]}")
        # One --prepare per command, in order: the warm run's puts its journal back.
        hyperfine --shell=none --style=none --warmup 3 --runs "$runs" \
            --prepare "sh $d/restore" --prepare "sh $d/warm/restore" \
            --prepare "sh $d/restore" --prepare "sh $d/restore" \
            --export-csv "$d/times.csv" \
            -n lancet "${l_cmd[*]}" -n warm "${l_cmd[*]}" -n check "${c_cmd[*]}" \
            -n patch "${p_cmd[*]}" "${extra[@]}" \
            >/dev/null 2>"$d/hyperfine.err"
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            { m[$col["command"]] = $col["median"] * 1000 }
            END { printf "%.3f %.3f %.3f %.3f %.3f\n", m["lancet"], m["warm"], m["check"], m["patch"], m["before"] }' "$d/times.csv"
    else
        echo "$(loop_median "$d" "${l_cmd[@]}") $(loop_median "$d/warm" "${l_cmd[@]}")" \
            "$(loop_median "$d" "${c_cmd[@]}") $(loop_median "$d" "${p_cmd[@]}")" \
            "$([[ -z $before ]] && echo 0 || loop_median "$d" "${b_cmd[@]}")"
    fi
}

# Prints "mean_ms_lancet mean_ms_patch" of consecutive applies of case $1's
# diff in one tree whose `.lancet/` is kept from run to run (only the file is
# put back before each), after 26 untimed applies have filled the undo
# journal past its twenty entries: a full journal's cost is then paid as in
# a project used for a while (the oldest entry recycled by every apply; with
# an older lancet, ten old entries deleted every tenth apply), so the mean,
# not the median, is the figure.
time_steady() {
    local d=$1 i
    local l_cmd=("$lancet" apply -p1 -C "$d/tree" "$d/edit.diff")
    local p_cmd=(patch -p1 -s --no-backup-if-mismatch -d "$d/tree" -i "$d/edit.diff")
    local path
    path=$(cat "$d/path")
    sh "$d/restore"
    for ((i = 0; i < 26; i++)); do
        cp "$d/pre" "$d/tree/$path"
        "${l_cmd[@]}" >/dev/null 2>&1
    done
    if command -v hyperfine >/dev/null; then
        hyperfine --shell=none --style=none --runs "$((runs * 2))" \
            --prepare "cp $d/pre $d/tree/$path" --export-csv "$d/steady.csv" \
            -n lancet "${l_cmd[*]}" -n patch "${p_cmd[*]}" >/dev/null 2>"$d/steady.err"
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            { m[$col["command"]] = $col["mean"] * 1000 }
            END { printf "%.3f %.3f\n", m["lancet"], m["patch"] }' "$d/steady.csv"
    else
        # The bash loop's own cost (a fork) is in both figures.
        local t
        for t in lancet patch; do
            local -n cmd=${t:0:1}_cmd
            for ((i = 0; i < runs * 2; i++)); do
                cp "$d/pre" "$d/tree/$path"
                local t0 t1
                t0=$(now_us)
                "${cmd[@]}" >/dev/null 2>&1
                t1=$(now_us)
                echo $((t1 - t0))
            done | awk '{ s += $1 } END { printf "%.3f ", s / NR / 1000 }'
        done
        echo
    fi
}

timer="bash loop (hyperfine not found)"
command -v hyperfine >/dev/null && timer="hyperfine $(hyperfine --version | cut -d' ' -f2)"
echo "timer: $timer; $runs runs per tool and case; medians in ms"
echo 'lancet: a real apply (undo journal, temp file, rename; no flush unless fsync = true), with no .lancet/ yet (fresh)'
echo '  and with .lancet/undo holding three earlier entries (warm); --check: the same without writing;'
echo "  steady: mean of $((runs * 2)) applies, the journal past its limit and kept (p-stdy: patch's mean)"
[[ -z $before ]] || echo "  before: $before's fresh apply, timed beside the others; now/b: fresh / before"
printf '%-4s %-46s %6s %5s %8s %8s %8s %8s %7s %7s %7s %7s %7s' case "commit file" lines hunks fresh warm --check patch fresh/p warm/p steady p-stdy stdy/p
[[ -z $before ]] && echo || printf ' %7s %7s\n' before now/b
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > 0 ? a / b : 0) }'; }
while read -r name label; do
    d=$work/cases/$name
    read -r ml mw mc mp mb < <(time_case "$d")
    read -r sl sp < <(time_steady "$d")
    lines=$(wc -l <"$d/pre")
    h=$(grep -c '^@@' "$d/edit.diff" || true)
    printf '%-4s %-46.46s %6d %5d %8.2f %8.2f %8.2f %8.2f %6.2fx %6.2fx %7.2f %7.2f %6.2fx' "$name" "$label" "$lines" "$h" \
        "$ml" "$mw" "$mc" "$mp" "$(ratio "$ml" "$mp")" "$(ratio "$mw" "$mp")" "$sl" "$sp" "$(ratio "$sl" "$sp")"
    [[ -z $before ]] && echo || printf ' %7.2f %6.2fx\n' "$mb" "$(ratio "$ml" "$mb")"
    [[ $name == big || $name == h50 ]] || echo "$ml $mw $mc $mp $sl $sp $mb" >>"$work/real.ms"
done <"$work/labels.txt"
# The real diffs together: the median of the per-diff medians.
awk -v before="$before" '{ l[NR] = $1; w[NR] = $2; c[NR] = $3; p[NR] = $4; sl[NR] = $5; sp[NR] = $6; b[NR] = $7 }
    function med(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END { ml = med(l, NR); mw = med(w, NR); mc = med(c, NR); mp = med(p, NR); msl = med(sl, NR); msp = med(sp, NR); mb = med(b, NR)
        printf "%-4s %-46s %6s %5s %8.2f %8.2f %8.2f %8.2f %6.2fx %6.2fx %7.2f %7.2f %6.2fx", "all", "median of the " NR " real diffs", "", "", ml, mw, mc, mp, ml / mp, mw / mp, msl, msp, (msp > 0 ? msl / msp : 0)
        if (before == "") print ""; else printf " %7.2f %6.2fx\n", mb, (mb > 0 ? ml / mb : 0) }' "$work/real.ms"
