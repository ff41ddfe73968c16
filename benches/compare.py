#!/usr/bin/env python3
"""Replays real file changes from git history through lancet, GNU patch and git apply.

For every (commit, file) change with a pre-image (modifications of regular text
files; creations, deletions, binaries, symlinks and files over --max-bytes are
skipped), the diff is made by `git diff` (git format: `diff --git`, `index`
lines, a/ b/ prefixes) and applied by each tool in a fresh temporary directory
to one of these inputs:

  exact          the pre-image, the `-U3` diff
  shifted-mid    the pre-image with 7 filler lines inserted at a pseudo-random
                 line boundary (seeded by commit and path) that is strictly
                 outside (not inside and not adjacent to) every hunk's old
                 range of the -U3 diff and above the last hunk, so the last
                 hunk at least, and every hunk after the filler, has stale
                 line numbers; the diff is the same -U3 diff
  shifted-top    the filler inserted above line 1, so every hunk is stale;
                 only when the first hunk does not start at line 1 (a hunk at
                 line 1 would have the filler adjacent to it)
  zero-exact     the `-U0` diff on the pre-image
  zero-mid       the `-U0` diff on the shifted-mid input
  zero-top       the `-U0` diff on the shifted-top input

The filler is 7 comment-like lines with a per-case tag (so they occur nowhere
else), ending like the line they precede (LF or CRLF). The expected result of a
shifted input is the real post-image with the same filler inserted at the
matching place (the position shifted by the line delta of the hunks above it).
Because the filler is strictly outside every -U3 hunk, it is also strictly
outside every -U0 hunk, including pure insertions, so the expected result is
never ambiguous.

Tools (each in its own fresh directory, the file written with its git mode):

  patch   GNU patch: `patch -p1 --batch --forward -i DIFF` (default fuzz 2)
  git     `git init -q` then `git apply -p1 DIFF`; for the -U0 variants with
          `--unidiff-zero`, without which git apply refuses every zero-context
          hunk by design
  lancet  `lancet apply -p1 -C DIR DIFF`

Each result is `correct` (the file equals the expected image byte for byte),
`refused` (non-zero exit and the file unchanged) or `wrong` (anything else:
exit 0 with another result, or a non-zero exit that changed the file, e.g.
patch applying some hunks and rejecting others).

Output: a table variant x tool -> correct / refused / wrong on stdout and in
--out (markdown), and every case where lancet is wrong, or refused while
another tool is correct, listed and saved under --cases-dir (the input file,
the diff, the expected file, each tool's result and output, and a README).

`--build-stdlib-repo DIR` builds a second corpus when no long git history is
on the machine: a linear history whose commits are the pure-Python standard
library (`*.py`, tests excluded) of each CPython installed under pyenv, in
version order, plus the distribution's /usr/lib/python3.X where present.

Stdlib only; Python 3.9+.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FILLER_LINES = 7
TOOLS = ("patch", "git", "lancet")
VARIANTS = ("exact", "shifted-mid", "shifted-top", "zero-exact", "zero-mid", "zero-top")
VARIANT_DOC = {
    "exact": "-U3 diff, pre-image as is",
    "shifted-mid": "-U3 diff, 7 lines inserted between/above hunks (random gap)",
    "shifted-top": "-U3 diff, 7 lines inserted above line 1",
    "zero-exact": "-U0 diff, pre-image as is",
    "zero-mid": "-U0 diff, shifted-mid input",
    "zero-top": "-U0 diff, shifted-top input",
}
HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
GIT = ["git", "-c", "core.quotepath=true", "-c", "diff.noprefix=false",
       "-c", "diff.mnemonicprefix=false", "-c", "diff.relative=false",
       "-c", "core.autocrlf=false", "-c", "core.safecrlf=false"]
TIMEOUT = 120


def run(cmd, cwd=None, input_bytes=None, env=None, timeout=TIMEOUT):
    try:
        p = subprocess.run(cmd, cwd=cwd, input=input_bytes, env=env, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or b"", (e.stderr or b"") + b"\n[timeout]"


def git(repo, *args, check=True):
    rc, out, err = run(GIT + ["-C", str(repo)] + list(args))
    if check and rc != 0:
        raise RuntimeError(f"git {' '.join(args)}: {err.decode(errors='replace')}")
    return out


# ------------------------------------------------------------------ changes


@dataclass
class Change:
    repo: str
    parent: str
    commit: str
    path: str
    mode: str  # new mode, e.g. 100644
    old_mode: str
    pre: bytes = b""
    post: bytes = b""


def is_binary(data: bytes) -> bool:
    # git's buffer_is_binary: a NUL byte in the first 8000 bytes.
    return b"\0" in data[:8000]


def changes(repo: Path, max_bytes: int, limit: int | None):
    """Every modification of a regular text file in the history, oldest first."""
    commits = git(repo, "log", "--no-merges", "--reverse", "--format=%H %P").decode().split("\n")
    out: list[Change] = []
    skipped = {"created": 0, "deleted": 0, "binary": 0, "huge": 0, "not regular": 0, "other": 0}
    for line in commits:
        parts = line.split()
        if len(parts) < 2:
            if parts:  # root commit: creations only
                skipped["created"] += len(git(repo, "ls-tree", "-r", "--name-only", parts[0]).splitlines())
            continue
        commit, parent = parts[0], parts[1]
        raw = git(repo, "diff-tree", "-r", "-z", "--no-renames", "--raw", parent, commit)
        fields = raw.split(b"\0")
        i = 0
        while i + 1 < len(fields):
            meta, path = fields[i].decode(), fields[i + 1].decode("utf-8", "surrogateescape")
            i += 2
            if not meta.startswith(":"):
                continue
            old_mode, new_mode, old_sha, new_sha, status = meta[1:].split()
            if status == "A":
                skipped["created"] += 1
                continue
            if status == "D":
                skipped["deleted"] += 1
                continue
            if status != "M" and status != "T":
                skipped["other"] += 1
                continue
            if not (old_mode.startswith("1006") or old_mode.startswith("1007")) or not (
                    new_mode.startswith("1006") or new_mode.startswith("1007")):
                skipped["not regular"] += 1
                continue
            out.append(Change(str(repo), parent, commit, path, new_mode, old_mode,
                              pre=old_sha.encode(), post=new_sha.encode()))
    # Fetch the blobs in one `git cat-file --batch`.
    want = []
    for c in out:
        want += [c.pre, c.post]
    blobs = cat_blobs(repo, want)
    kept = []
    for c in out:
        c.pre, c.post = blobs[c.pre], blobs[c.post]
        if is_binary(c.pre) or is_binary(c.post):
            skipped["binary"] += 1
        elif len(c.pre) > max_bytes or len(c.post) > max_bytes:
            skipped["huge"] += 1
        elif c.pre == c.post:
            skipped["other"] += 1  # mode-only change
        else:
            kept.append(c)
    if limit:
        kept = kept[:limit]
    return kept, skipped


def cat_blobs(repo: Path, shas: list[bytes]) -> dict[bytes, bytes]:
    uniq = list(dict.fromkeys(shas))
    p = subprocess.run(GIT + ["-C", str(repo), "cat-file", "--batch"],
                       input=b"".join(s + b"\n" for s in uniq), stdout=subprocess.PIPE, check=True)
    data, pos, res = p.stdout, 0, {}
    for sha in uniq:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        size = int(header[2])
        res[sha] = data[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1
    return res


# ------------------------------------------------------------------ variants


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their endings; only LF ends a line (as for git and patch)."""
    lines = data.split(b"\n")
    out = [l + b"\n" for l in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def hunk_ranges(diff: bytes) -> list[tuple[int, int, int, int]]:
    """(old start 0-based, old count, new start 0-based, new count) per hunk."""
    res = []
    for line in diff.split(b"\n"):
        m = HUNK_RE.match(line)
        if not m:
            continue
        os_, oc = int(m.group(1)), int(m.group(2) or b"1")
        ns, nc = int(m.group(3)), int(m.group(4) or b"1")
        res.append((os_ if oc == 0 else os_ - 1, oc, ns if nc == 0 else ns - 1, nc))
    return res


def seed_of(*parts: str) -> int:
    return int.from_bytes(hashlib.sha1("\0".join(parts).encode()).digest()[:8], "big")


def filler(tag: str, eol: bytes) -> bytes:
    words = [
        f"# [{tag}] unrelated lines inserted by benches/compare.py so that",
        f"# [{tag}] the diff's line numbers no longer match this file;",
        f"# [{tag}] they belong to no hunk and must survive the patch as is.",
        f"# [{tag}] lorem ipsum dolor sit amet, consectetur adipiscing elit,",
        f"# [{tag}] sed do eiusmod tempor incididunt ut labore et dolore",
        f"# [{tag}] magna aliqua; ut enim ad minim veniam, quis nostrud",
        f"# [{tag}] exercitation ullamco laboris nisi ut aliquip ex ea.",
    ]
    assert len(words) == FILLER_LINES
    return b"".join(w.encode() + eol for w in words)


def insert_at(lines: list[bytes], pos: int, block: bytes) -> bytes:
    return b"".join(lines[:pos]) + block + b"".join(lines[pos:])


def shifted(change: Change, u3: bytes, where: str):
    """(input, expected) with the filler inserted, or None when not applicable."""
    pre, post = split_lines(change.pre), split_lines(change.post)
    hunks = hunk_ranges(u3)
    if not hunks or not pre:
        return None
    if where == "top":
        if hunks[0][0] == 0:
            return None
        pos = 0
    else:
        last_start = hunks[-1][0]
        allowed = [p for p in range(0, last_start)
                   if all(p < s or p > s + c for s, c, _, _ in hunks)]
        if not allowed:
            return None
        pos = allowed[seed_of(change.commit, change.path, "mid") % len(allowed)]
    # The post-image position: the line delta of every hunk above `pos`.
    new_pos = pos + sum(nc - oc for s, oc, _, nc in hunks if s + oc < pos)
    # Sanity: the lines around the gap are the same on both sides.
    if pos < len(pre) and new_pos < len(post):
        assert pre[pos] == post[new_pos], (change.commit, change.path, pos, new_pos)
    eol = b"\r\n" if pos < len(pre) and pre[pos].endswith(b"\r\n") else b"\n"
    tag = hashlib.sha1(f"{change.commit}:{change.path}:{where}".encode()).hexdigest()[:8]
    block = filler(tag, eol)
    return insert_at(pre, pos, block), insert_at(post, new_pos, block), pos + 1


# ------------------------------------------------------------------ tools


@dataclass
class Outcome:
    verdict: str  # correct / refused / wrong
    rc: int
    out: bytes
    result: bytes | None
    rej: bool = False


def apply_tool(tool: str, lancet: str, path: str, mode: str, pre: bytes, diff: bytes,
               expected: bytes, zero: bool) -> Outcome:
    with tempfile.TemporaryDirectory(prefix=f"cmp-{tool}-") as tmp:
        work = Path(tmp) / "w"
        work.mkdir()
        diff_file = Path(tmp) / "edit.diff"
        diff_file.write_bytes(diff)
        target = work / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(pre)
        os.chmod(target, 0o755 if mode.endswith("755") else 0o644)
        env = dict(os.environ, LC_ALL="C", GIT_CEILING_DIRECTORIES=tmp)
        if tool == "patch":
            cmd = ["patch", "-p1", "--batch", "--forward", "-i", str(diff_file)]
        elif tool == "git":
            run(["git", "init", "-q"], cwd=work, env=env)
            cmd = GIT + ["apply", "-p1"] + (["--unidiff-zero"] if zero else []) + [str(diff_file)]
        else:
            cmd = [lancet, "apply", "-p1", "-C", str(work), str(diff_file)]
        rc, out, err = run(cmd, cwd=work, env=env)
        result = target.read_bytes() if target.is_file() else None
        rej = Path(str(target) + ".rej").exists()
        if result == expected:
            verdict = "correct"
        elif rc != 0 and result == pre:
            verdict = "refused"
        else:
            verdict = "wrong"
        return Outcome(verdict, rc, out + err, result, rej)


# ------------------------------------------------------------------ one case


@dataclass
class CaseResult:
    change: Change
    variants: dict = field(default_factory=dict)  # variant -> {tool: Outcome} | None
    inputs: dict = field(default_factory=dict)    # variant -> (input, diff, expected, line)


def run_case(change: Change, lancet: str) -> CaseResult:
    repo = change.repo
    base = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames",
            "--src-prefix=a/", "--dst-prefix=b/", "--diff-algorithm=myers"]
    u3 = git(repo, *base, "-U3", change.parent, change.commit, "--", change.path)
    u0 = git(repo, *base, "-U0", change.parent, change.commit, "--", change.path)
    res = CaseResult(change)
    if b"\n@@ " not in u3 or b"GIT binary patch" in u3 or b"\nBinary files " in u3:
        return res
    mid = shifted(change, u3, "mid")
    top = shifted(change, u3, "top")
    plan = {
        "exact": (change.pre, u3, change.post, None),
        "shifted-mid": (mid[0], u3, mid[1], mid[2]) if mid else None,
        "shifted-top": (top[0], u3, top[1], top[2]) if top else None,
        "zero-exact": (change.pre, u0, change.post, None),
        "zero-mid": (mid[0], u0, mid[1], mid[2]) if mid else None,
        "zero-top": (top[0], u0, top[1], top[2]) if top else None,
    }
    for variant, spec in plan.items():
        if spec is None:
            res.variants[variant] = None
            continue
        inp, diff, expected, _ = spec
        res.inputs[variant] = spec
        res.variants[variant] = {
            tool: apply_tool(tool, lancet, change.path, change.mode, inp, diff, expected,
                             variant.startswith("zero"))
            for tool in TOOLS
        }
    return res


# ------------------------------------------------------------------ report


def short(s: str) -> str:
    return s[:10]


def save_case(root: Path, idx: int, r: CaseResult, variant: str, lancet: str, why: str) -> Path:
    c = r.change
    inp, diff, expected, line = r.inputs[variant]
    name = f"{idx:04d}-{short(c.commit)}-{re.sub(r'[^A-Za-z0-9._-]+', '_', c.path)}-{variant}"
    d = root / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "input").write_bytes(inp)
    (d / "edit.diff").write_bytes(diff)
    (d / "expected").write_bytes(expected)
    outcomes = r.variants[variant]
    for tool, o in outcomes.items():
        (d / f"{tool}.out.txt").write_bytes(b"exit %d\n" % o.rc + o.out)
        if o.result is not None and o.result != expected:
            (d / f"{tool}.result").write_bytes(o.result)
    # The lancet JSON report, for the diagnosis.
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp) / c.path
        t.parent.mkdir(parents=True, exist_ok=True)
        t.write_bytes(inp)
        rc, out, err = run([lancet, "apply", "--check", "--json", "-p1", "-C", tmp, str(d / "edit.diff")])
        (d / "lancet.json").write_bytes(out + err)
    (d / "README.md").write_text(
        f"# {c.path} at {c.commit} ({variant})\n\n"
        f"repository: {c.repo}\nparent: {c.parent}\n"
        f"variant: {variant} — {VARIANT_DOC[variant]}\n"
        + (f"filler inserted before input line {line}\n" if line else "")
        + f"why saved: {why}\n\n"
        + "".join(f"- {tool}: {o.verdict} (exit {o.rc}{', .rej written' if o.rej else ''})\n"
                  for tool, o in outcomes.items())
        + "\nReproduce:\n\n```sh\n"
        f"d=$(mktemp -d); mkdir -p \"$d/{os.path.dirname(c.path) or '.'}\"; cp input \"$d/{c.path}\"\n"
        f"lancet apply -p1 -C \"$d\" edit.diff; cmp \"$d/{c.path}\" expected\n```\n")
    return d


def failure_kind(text: str, verdict: str) -> str:
    if verdict == "wrong":
        return "applied, wrong result"
    for line in text.split("\n"):
        if "failed" not in line:
            continue
        if "no context lines and removes nothing" in line:
            return "context-free insertion refused (file is not the diff's pre-image)"
        if re.search(r"match \d+ places", line):
            return "old lines at several places, none at the stated line + learned offset"
        return re.sub(r"\d+", "N", line.split(":", 1)[-1].strip())[:100]
    return "other: " + text.strip().split("\n")[0][:100]


def table(title: str, counts: dict, n_cases: dict) -> str:
    lines = [f"### {title}", "",
             "| variant | cases | " + " | ".join(f"{t} ✓ / refused / wrong" for t in TOOLS) + " | lancet bar |",
             "|---|---:|" + "---:|" * len(TOOLS) + "---|"]
    for v in VARIANTS:
        cells = []
        for t in TOOLS:
            k = counts[v][t]
            cells.append(f"{k['correct']} / {k['refused']} / {k['wrong']}")
        best = max(counts[v]["patch"]["correct"], counts[v]["git"]["correct"])
        ok = counts[v]["lancet"]["correct"] >= best and counts[v]["lancet"]["wrong"] == 0
        bar = "met" if ok else (
            f"MISSED ({counts[v]['lancet']['correct']} < {best})"
            if counts[v]["lancet"]["correct"] < best else "MISSED (wrong > 0)")
        lines.append(f"| {v} | {n_cases[v]} | " + " | ".join(cells) + f" | {bar} |")
    return "\n".join(lines) + "\n"


def compare_repo(repo: Path, args, md: list[str]) -> bool:
    t0 = time.time()
    cs, skipped = changes(repo, args.max_bytes, args.limit)
    commits = len({c.commit for c in cs})
    print(f"{repo}: {len(cs)} file changes in {commits} commits "
          f"(skipped: {', '.join(f'{k} {v}' for k, v in skipped.items() if v)})", file=sys.stderr)
    counts = {v: {t: {"correct": 0, "refused": 0, "wrong": 0} for t in TOOLS} for v in VARIANTS}
    n_cases = {v: 0 for v in VARIANTS}
    only_lancet = {v: 0 for v in VARIANTS}  # lancet correct, patch and git not
    flagged = []  # (variant, CaseResult, why)
    other_wrong = {t: [] for t in ("patch", "git")}
    done = 0
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = [ex.submit(run_case, c, args.lancet) for c in cs]
        for f in cf.as_completed(futs):
            r = f.result()
            done += 1
            if done % 200 == 0:
                print(f"  {done}/{len(cs)} ({time.time() - t0:.0f} s)", file=sys.stderr)
            for v, outcomes in r.variants.items():
                if outcomes is None:
                    continue
                n_cases[v] += 1
                for t, o in outcomes.items():
                    counts[v][t][o.verdict] += 1
                lv = outcomes["lancet"].verdict
                others = [t for t in ("patch", "git") if outcomes[t].verdict == "correct"]
                if lv == "correct" and not others:
                    only_lancet[v] += 1
                if lv == "wrong":
                    flagged.append((v, r, "lancet wrong"))
                elif lv == "refused" and others:
                    flagged.append((v, r, f"lancet refused, {' and '.join(others)} correct"))
                for t in ("patch", "git"):
                    if outcomes[t].verdict == "wrong":
                        other_wrong[t].append((v, r))
    flagged.sort(key=lambda x: (VARIANTS.index(x[0]), x[1].change.commit, x[1].change.path))
    name = repo.name if repo.name != ".git" else repo.parent.name
    title = f"{repo} — {len(cs)} file changes, {commits} commits"
    md.append(table(title, counts, n_cases))
    md.append("Cases per variant differ: shifted-mid needs a gap strictly outside every hunk above "
              "the last hunk; shifted-top needs the first hunk below line 1.\n")
    md.append("Lancet correct where neither patch nor git apply is: " + ", ".join(
        f"{v} {only_lancet[v]}" for v in VARIANTS) + ".\n")
    cases_root = Path(args.cases_dir) / name
    if cases_root.exists():
        shutil.rmtree(cases_root)  # this script's own output from an earlier run
    if flagged:
        kinds: dict = {}
        for v, r, why in flagged:
            text = r.variants[v]["lancet"].out.decode(errors="replace")
            kinds.setdefault((v, failure_kind(text, r.variants[v]["lancet"].verdict)), []).append(r)
        md.append("Kinds (variant: lancet's first failure → cases):\n")
        for (v, k), lst in sorted(kinds.items(), key=lambda x: (VARIANTS.index(x[0][0]), x[0][1])):
            md.append(f"- {v}: {k} → {len(lst)}")
        md.append("")
        md.append(f"Lancet wrong, or refused while another tool is correct ({len(flagged)}; "
                  f"saved under `{cases_root}/`):\n")
        md.append("| # | variant | commit | file | lancet | patch | git | why |\n|---:|---|---|---|---|---|---|---|")
        for i, (v, r, why) in enumerate(flagged, 1):
            d = save_case(cases_root, i, r, v, args.lancet, why)
            o = r.variants[v]
            msg = o["lancet"].out.decode(errors="replace").strip().split("\n")
            first = next((l for l in msg if "failed" in l), msg[0] if msg else "")[:160]
            md.append(f"| {i} | {v} | {short(r.change.commit)} | `{r.change.path}` | "
                      f"{o['lancet'].verdict} | {o['patch'].verdict} | {o['git'].verdict} | "
                      f"{first.replace('|', '/')} (`{d.name}`) |")
        md.append("")
    else:
        md.append("No case where lancet is wrong, or refused while another tool is correct.\n")
    for t, lst in other_wrong.items():
        if lst:
            md.append(f"{t} wrong in {len(lst)} cases, e.g.: " + ", ".join(
                f"{v} {short(r.change.commit)} `{r.change.path}`" for v, r in lst[:8]) + "\n")
    md.append(f"_{time.time() - t0:.0f} s, {args.jobs} jobs._\n")
    return all(
        counts[v]["lancet"]["wrong"] == 0
        and counts[v]["lancet"]["correct"] >= max(counts[v]["patch"]["correct"], counts[v]["git"]["correct"])
        for v in VARIANTS)


# ------------------------------------------------------------------ stdlib corpus


def build_stdlib_repo(dest: Path) -> None:
    """A linear history of the pure-Python stdlib of every installed CPython."""
    roots = []
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for v in sorted(pyenv.glob("[0-9]*"), key=lambda p: tuple(int(x) for x in re.findall(r"\d+", p.name))):
        nums = tuple(int(x) for x in re.findall(r"\d+", v.name))
        lib = v / "lib" / f"python{nums[0]}.{nums[1]}"
        if lib.is_dir() and nums[0] == 3:
            roots.append((nums, f"CPython {v.name} (pyenv)", lib))
    for lib in Path("/usr/lib").glob("python3.*"):
        nums = tuple(int(x) for x in re.findall(r"\d+", lib.name))
        if (lib / "os.py").is_file():
            # The distribution's build of 3.X goes before pyenv's (newer patch) 3.X.
            roots.append((nums + (-1,), f"{lib} (distribution)", lib))
    roots.sort(key=lambda r: r[0])
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    git(dest, "init", "-q")
    skip = re.compile(r"(^|/)(test|tests|idle_test|site-packages|__pycache__|config-[^/]*|lib-dynload)(/|$)")
    for nums, label, lib in roots:
        for p in dest.iterdir():
            if p.name != ".git":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        n = 0
        for src in lib.rglob("*.py"):
            rel = src.relative_to(lib).as_posix()
            if skip.search(rel) or not src.is_file() or src.is_symlink():
                continue
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out)
            n += 1
        git(dest, "add", "-A")
        git(dest, "-c", "user.name=compare", "-c", "user.email=compare@localhost", "commit", "-q",
            "--allow-empty", "-m", f"{label}: {n} files")
        print(f"{dest}: {label}: {n} files", file=sys.stderr)


def main() -> int:
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", action="append", type=Path,
                    help="git repository to replay (repeatable; default: this project)")
    ap.add_argument("--lancet", default=str(here / "target" / "release" / "lancet"))
    ap.add_argument("--out", default=str(here / "target" / "compare.md"))
    ap.add_argument("--cases-dir", default="/tmp/compare-cases")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--max-bytes", type=int, default=1 << 20, help="skip larger files (default 1 MiB)")
    ap.add_argument("--limit", type=int, help="at most this many file changes per repository")
    ap.add_argument("--build-stdlib-repo", type=Path, metavar="DIR",
                    help="build the stdlib-history corpus in DIR and exit")
    args = ap.parse_args()
    if args.build_stdlib_repo:
        build_stdlib_repo(args.build_stdlib_repo)
        return 0
    repos = args.repo or [here]
    # A private copy: others may rebuild target/release/lancet during the run.
    pinned = Path(tempfile.mkdtemp(prefix="compare-lancet-")) / "lancet"
    shutil.copy2(Path(args.lancet).resolve(), pinned)
    args.lancet = str(pinned)
    rc, head, _ = run(["git", "-C", str(here), "describe", "--always", "--dirty"])
    source = head.decode().strip() if rc == 0 else "?"
    md = ["# lancet vs GNU patch vs git apply on real history", "",
          f"patch: `{run(['patch', '--version'])[1].decode().splitlines()[0]}`, "
          f"git: `{run(['git', '--version'])[1].decode().strip()}`, "
          f"lancet: `{run([args.lancet, '--version'])[1].decode().strip()}` "
          f"(built from `{source}` of {here})", "",
          "Variants: " + "; ".join(f"**{v}** {d}" for v, d in VARIANT_DOC.items()) + ".", "",
          "Cells: correct (byte-identical to the real post-image) / refused (non-zero exit, "
          "file untouched) / wrong (anything else). Bar: lancet correct ≥ the best of patch and "
          "git apply, and never wrong. git apply runs with `--unidiff-zero` on the zero-context "
          "variants (without it, it refuses every -U0 diff).", ""]
    ok = True
    for repo in repos:
        start = len(md)
        ok &= compare_repo(repo.resolve(), args, md)
        print("\n".join(md[start:]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(md) + "\n")
    print(f"written: {args.out}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
