#!/usr/bin/env bash
# Replays real commits through `lancet apply` with the syntax guard on and
# counts how often the guard refuses code that is the real upstream file.
#
# For each repository (default: this project's own), the last N non-merge
# commits that touch .rs/.py files are walked. For each commit C, the diff
# `git diff -U3 --no-renames C~1 C -- '*.rs' '*.py'` is applied by
# `lancet apply --json` to a temporary directory holding C~1's version of the
# files it modifies or deletes, with `--syntax reject` (the default). Each
# commit is one of:
#
#   applied   exit 0 and every file equals C's version (deleted ones absent)
#   syntax    refused by the syntax guard although `--syntax off` gives C's
#             files and the language's own parser accepts a file the
#             guard refused: the guard refused valid upstream code (the bar
#             is 0)
#   broken    refused by the guard, `--syntax off` gives C's files, and the
#             language's own parser rejects every file the guard refused too
#             (code broken upstream, e.g. a test fixture that is meant to
#             be invalid): a right refusal
#   syntax*   refused by the guard, and without it the result is not C's
#             files either (another problem hidden behind the guard's)
#   refused   refused for another reason, counted by the first failing edit
#             status (not_found, stale, ...) or the exit status (exit2, exit3)
#   wrong     exit 0 with any other result
#   skipped   root commits, and commits whose .rs/.py changes include a
#             binary file, a symlink, a submodule or a type change
#
# Both sides of every diff are real upstream code, and the guard sees only
# the two versions of each file, so more pairs can be had from the same
# history: `--span K` diffs C~K against C (K commits of changes at once: many
# changed runs, items moved far apart; commits with fewer than K ancestors
# are skipped), `--reverse` diffs C against C~K, taking C's files back (a
# revert: the same pairs the other way round). The verdicts above then speak
# of the diff's target instead of C.
#
# Commits refused by the guard and wrong ones are saved (pre-image, diff,
# report, real post-image) under --cases DIR (default
# ${TMPDIR:-/tmp}/syntax-replay-cases) for a closer look.
#
# The language's own parser: Python's `ast.parse` for .py/.pyi (valid if
# `python3` or any interpreter given with `--python CMD` accepts it: pass a
# newer one for PEP 701 f-strings or PEP 695 `type`, python2.7 for a
# history with Python 2 files), `rustfmt --emit stdout` on standard input for
# .rs (rustc's parser; valid if any of editions 2015, 2018, 2021, 2024
# accepts it). Where the tool is not installed the file counts as valid (a
# refusal then shows as `syntax`).
#
# Usage: benches/syntax_replay.sh [-n N] [--span K] [--reverse] [--bin LANCET]
#        [--cases DIR] [--python CMD]... [REPO]...
# REPO is any git directory (a work tree or a bare repository). Needs bash and
# git; no network. Exit status 0 when no commit is in `syntax` or `wrong`,
# 1 otherwise.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
limit=300
span=1
reverse=0
bin=
cases=${TMPDIR:-/tmp}/syntax-replay-cases
repos=()
pythons=(python3)
while (($#)); do
    case $1 in
    -n) limit=$2; shift 2 ;;
    --span) span=$2; shift 2 ;;
    --reverse) reverse=1; shift ;;
    --python) pythons+=("$2"); shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) repos+=("$1"); shift ;;
    esac
done
((${#repos[@]})) || repos=("$root")
if [[ -z $bin ]]; then
    echo "building lancet (release)..." >&2
    cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin lancet
    bin=${CARGO_TARGET_DIR:-$root/target}/release/lancet
fi
mkdir -p "$cases"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Writes C's version (or C~1's) of every listed file under DIR.
# materialize REPO REV DIR FILE...
materialize() {
    local repo=$1 rev=$2 dir=$3 f
    shift 3
    for f in "$@"; do
        mkdir -p "$dir/$(dirname "$f")"
        git -C "$repo" show "$rev:$f" >"$dir/$f"
    done
}

# Whether DIR holds exactly C's version of the changed files.
# matches REPO C DIR — reads the arrays `written` and `deleted`.
matches() {
    local repo=$1 c=$2 dir=$3 f
    for f in "${written[@]}"; do
        [[ -f $dir/$f ]] || return 1
        cmp -s "$dir/$f" <(git -C "$repo" show "$c:$f") || return 1
    done
    for f in "${deleted[@]}"; do
        [[ ! -e $dir/$f ]] || return 1
    done
}

# The first edit status other than applied/already_applied/noop in a JSON
# report (compact, one object), or the exit status.
failure_kind() {
    local json=$1 rc=$2 s
    s=$(grep -o '"status":"[a-z_]*"' "$json" | sed 's/.*:"\(.*\)"/\1/' |
        grep -vx 'applied\|already_applied\|noop\|modified\|created\|deleted\|renamed\|unchanged\|failed' |
        head -n 1 || true)
    if grep -q '"status":"syntax_error"' "$json"; then
        echo syntax_error
    elif [[ -n $s ]]; then
        echo "$s"
    else
        echo "exit$rc"
    fi
}

# The paths whose edits the guard refused, one a line, from a compact JSON
# report: each file object starts with `{"path":"`; the structural
# `"status":"syntax_error"` never occurs inside a JSON string (its quotes
# would be escaped).
guard_refused() {
    sed 's/{"path":"/\n\x01/g' "$1" | grep '^'$'\x01' | grep '"status":"syntax_error"' |
        sed 's/^\x01\([^"]*\)".*/\1/'
}

# Whether the language's own parser accepts C's version of PATH.
# upstream_valid REPO C PATH
upstream_valid() {
    local e
    case $3 in
    *.py | *.pyi)
        command -v python3 >/dev/null || return 0
        for e in "${pythons[@]}"; do
            git -C "$1" show "$2:$3" |
                "$e" -c 'import ast, sys; ast.parse(getattr(sys.stdin, "buffer", sys.stdin).read())' 2>/dev/null && return 0
        done
        return 1
        ;;
    *.rs)
        command -v rustfmt >/dev/null || return 0
        for e in 2015 2018 2021 2024; do
            git -C "$1" show "$2:$3" | rustfmt --edition "$e" --emit stdout >/dev/null 2>&1 && return 0
        done
        return 1
        ;;
    esac
}

table=$work/table
: >"$table"
bad=0
for repo in "${repos[@]}"; do
    # A name for the table: the work tree's, or a bare mirror's parent's.
    dir=$(git -C "$repo" rev-parse --show-toplevel 2>/dev/null || (cd "$repo" && pwd))
    name=$(basename "$dir")
    [[ $name == repo ]] && name=$(basename "$(dirname "$dir")")
    declare -A count=()
    n=0
    while read -r c; do
        n=$((n + 1))
        if ! git -C "$repo" rev-parse -q --verify "$c~$span" >/dev/null; then
            count[skipped]=$((${count[skipped]:-0} + 1))
            continue
        fi
        if ((reverse)); then from=$c to=$c~$span; else from=$c~$span to=$c; fi
        raw=$(git -C "$repo" -c core.quotePath=false diff --no-renames --raw --numstat "$from" "$to" -- '*.rs' '*.py')
        # Modes other than regular files, type changes and binaries: skipped.
        if [[ -z $raw ]] ||
            grep -E '^:' <<<"$raw" | grep -qvE '^:(100644|100755|000000) (100644|100755|000000) [0-9a-f]+ [0-9a-f]+ [AMD]'$'\t' ||
            grep -qE '^-'$'\t''-'$'\t' <<<"$raw"; then
            count[skipped]=$((${count[skipped]:-0} + 1))
            continue
        fi
        old=() written=() deleted=()
        while IFS=$'\t' read -r meta path; do
            case ${meta##* } in
            A) written+=("$path") ;;
            M) old+=("$path"); written+=("$path") ;;
            D) old+=("$path"); deleted+=("$path") ;;
            esac
        done < <(grep -E '^:' <<<"$raw")
        d=$work/case
        rm -rf "$d"
        mkdir -p "$d/ws"
        git -C "$repo" diff --no-renames --no-color --no-ext-diff -U3 "$from" "$to" -- '*.rs' '*.py' >"$d/diff"
        materialize "$repo" "$from" "$d/ws" "${old[@]}"
        cp -a "$d/ws" "$d/pre"
        rc=0
        "$bin" apply --json --syntax reject -C "$d/ws" "$d/diff" >"$d/report.json" 2>"$d/stderr" || rc=$?
        if ((rc == 0)); then
            if matches "$repo" "$to" "$d/ws"; then kind=applied; else kind=wrong; fi
        else
            kind=$(failure_kind "$d/report.json" "$rc")
            if [[ $kind == syntax_error ]]; then
                rm -rf "$d/off" && cp -a "$d/pre" "$d/off"
                if "$bin" apply --json --syntax off -C "$d/off" "$d/diff" >/dev/null 2>&1 &&
                    matches "$repo" "$to" "$d/off"; then
                    # `broken` only when every file the guard refused is
                    # invalid: one broken fixture must not hide a valid file
                    # refused beside it.
                    kind=broken
                    while read -r f; do
                        if upstream_valid "$repo" "$to" "$f"; then kind=syntax; fi
                    done < <(guard_refused "$d/report.json")
                else
                    kind='syntax*'
                fi
            else
                kind="refused:$kind"
            fi
        fi
        count[$kind]=$((${count[$kind]:-0} + 1))
        if [[ $kind == syntax || $kind == wrong ]]; then bad=$((bad + 1)); fi
        if [[ $kind == syntax* || $kind == broken || $kind == wrong ]]; then
            keep=$cases/$name-${c:0:10}$( ((span == 1)) || echo "-span$span")$( ((reverse == 0)) || echo -reverse)
            rm -rf "$keep" && mkdir -p "$keep"
            cp -a "$d/pre" "$keep/pre" && cp "$d/diff" "$d/report.json" "$keep/"
            materialize "$repo" "$to" "$keep/post" "${written[@]}"
            echo "$name ${c:0:10}: $kind -> $keep" >&2
        fi
    done < <(git -C "$repo" log --no-merges --format=%H -n "$limit" HEAD -- '*.rs' '*.py')
    refusals=$(for k in "${!count[@]}"; do
        if [[ $k == refused:* ]]; then echo "${k#refused:} ${count[$k]}"; fi
    done | sort | tr '\n' ' ')
    printf '| %s | %d | %d | %d | %d | %d | %d | %d | %s|\n' "$name" "$n" "${count[skipped]:-0}" \
        "${count[applied]:-0}" "${count[syntax]:-0}" "${count[broken]:-0}" "${count['syntax*']:-0}" \
        "${count[wrong]:-0}" \
        "${refusals:-none }" >>"$table"
    unset count
done

echo "| repository | commits | skipped | applied = real | syntax (bar 0) | broken | syntax* | wrong | other refusals |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$table"
((bad == 0))
