#!/usr/bin/env python3
"""Replays real file changes from git history through lancet (every edit format), GNU patch and git apply.

For every (commit, file) change with a pre-image (modifications of regular text
files; creations, deletions, binaries, symlinks and files over --max-bytes are
skipped), the change is rendered in each of lancet's edit formats
(benches/compare_formats.py), with or without one of the mistakes models make
(benches/compare_mistakes.py, seeded by commit, path and variant), and applied
by each tool in a fresh temporary directory. Variants (a mistake each; the
formats it is made in):

  exact        no mistake: the -U3 git diff; one SEARCH/REPLACE block per -U3
               hunk; one bare-`@@` apply_patch chunk per -U3 hunk; one
               hashline directive per -U0 hunk (anchors without echo); the
               whole new file                                     (all five)
  zero-exact   the `-U0` diff on the pre-image                    (udiff)
  echo         hashline anchors with the line's content echoed after `|`, as
               a model copies them from the view; the file as read (hashline)
  shifted-mid  stale line numbers: 7 filler lines inserted at a pseudo-random
               line boundary strictly outside (not inside, not adjacent to)
               every -U3 hunk and above the last one, so at least the last
               hunk is stale; hashline anchors echo the old line and its
               content (`12:ABC|code`)                            (udiff, hashline)
  shifted-top  the filler above line 1 (only when no hunk starts at line 1)
                                                                  (udiff, hashline)
  zero-mid, zero-top   the -U0 diff on the shifted inputs; determined only when
               every hunk has old lines, found once in the input below the
               filler                                             (udiff)
  dedent       lost indentation: each hunk with a common indentation loses
               one level (a tab, or up to 4 spaces) on every line, old and
               new                                                (udiff, sr, apply-patch)
  whitespace   in quoted lines (context and `-`) only: trailing whitespace
               added or removed, leading tabs as 4 spaces or 4 spaces as a
               tab; REPLACE keeps the true text; not determined when a drifted
               `-` line became one of the hunk's new lines     (udiff, sr, apply-patch)
  typo         1-2 characters substituted or deleted in 1-2 quoted lines, never
               blank, never equal to a line of the file: in any SEARCH line for
               search/replace (REPLACE keeps the true text), in context lines
               only for udiff and apply_patch (there `-` lines are held to the
               file by design); determined when the lines the typo left intact
               (non-blank, at their offsets in the quote) stand at one place of
               the file: a quote left with only `}` and `    }` intact says
               nothing, and a diff's line number is a hint, never a place of
               its own (locate.md)                                (udiff, sr, apply-patch)
  counts       `@@` counts off by one or two; not determined when the last
               hunk counts more lines than it holds (a reply cut off inside
               its last hunk reads so: unified-diff.md §1.4)      (udiff)
  crlf         the file has CRLF endings (pre- and post-image converted; only
               files without any CR), the edit is written with LF (all five)
  no-eol       the pre- and post-image lack their final newline, the edit is
               written as if they had it; only changes whose last -U3 hunk
               reaches the last line                              (all five)
  ambiguous    one hunk's old lines (its -U3 context and `-` lines) copied to a
               line boundary strictly outside every hunk, after the last hunk
               when there is room: search/replace and apply_patch (no line
               numbers, no `@@` anchor) must refuse ("refused as it should");
               a unified diff still has its line numbers, so it must apply
               (udiff, sr, apply-patch)
  invented     one context line the file does not have (no line of the file
               equals it), written between two quoted lines of one hunk, in
               old and new alike: the quote contradicts the file. Two answers
               are right: a refusal ("refused as it should": search/replace
               and apply_patch, whose quote must stand in the file), or the
               real change with the invented line not written (a context line
               is never written; a unified diff may pass over up to 2 outer
               context lines that do not match, unified-diff.md); writing the
               invented line, or applying elsewhere, is wrong
                                                                  (udiff, sr, apply-patch)
  moved        stale line numbers the other way: a block of 3-7 lines
               strictly outside every -U3 hunk and above the last one cut
               and put back strictly below the last hunk, so the hunks below
               the cut stand 3-7 lines higher than numbered; hashline anchors
               echo the old line and its content; determined as shifted-mid
                                                                  (udiff, hashline)
  elision      one SEARCH/REPLACE block spanning every hunk, the unchanged
               stretches between hunks written `...` (search-replace.md
               §5.2); only changes with 2 hunks or more             (sr)
  multi        every changed file of a commit (2-8 files among the replayed
               changes) in one edit, exact: git's diff of the commit for those
               paths; the files' search/replace blocks, hashline `@@ file`
               sections and whole-file fences one after another; one
               apply_patch envelope. Correct when every file is; determined
               when every file's exact case is                   (all five)

Where a format has no room for a mistake, the cell is empty on purpose:
stale line numbers and `@@` counts exist only in udiff and hashline (search/
replace and apply_patch quote text, whole rewrites); quoted-text mistakes
(dedent, whitespace, typo, ambiguous, invented) have no quote to spoil in
hashline (anchors are checked by hash: a spoiled echo is the echo variant's
business and the hash decides) or whole (the text is the answer); `...`
elision is grammar only in search/replace (a `...` line in a diff or
apply_patch chunk is a context line the file lacks, i.e. invented; in a whole
file it is a placeholder, refused when it drops over 30% of the file, never
expanded: whole.md §4).

The expected image is the real post-image with the same insertion (filler,
duplicate) or conversion (CRLF, no final newline) as the input. Search/replace,
apply_patch, hashline and whole cannot say "add/remove the final newline": for
them the expected image keeps the input's final-newline state, and a change
that only toggles it is skipped.

Determined: a case is "determined" when the input decides the answer. udiff
and whole: always (line numbers; the whole text; for whole, not when a line's
only change is its trailing whitespace, which whole.md keeps), except an ambiguous udiff
whose duplicate went above a hunk (its line numbers are then stale and the
text is in two places) and the zero-mid/zero-top rule above. search/replace and apply_patch: every hunk's old
lines occur exactly once in the pre-image (exactly for exact, typo, crlf,
no-eol, elision; with whitespace runs collapsed for whitespace and dedent).
hashline: no echo needed for exact/crlf/no-eol; shifted needs every edit to
have one decisive anchor (its echoed content informative and once within
±20 lines of the stated line in the input). Tables count determined cases;
the others are counted in a table of their own.

Tools (each in its own fresh directory, the file written with its git mode):

  patch   GNU patch: `patch -p1 --batch --forward -i DIFF` (default fuzz 2), udiff only
  git     `git init -q` then `git apply -p1 DIFF` (defaults; `--unidiff-zero`
          for the -U0 variants, without which git apply refuses every
          zero-context hunk by design), udiff only
  lancet  `lancet apply --format F --no-undo --syntax off -C DIR EDIT` (`-p1`
          for udiff, `--file PATH` for search-replace and whole); the syntax
          guard is off unless --syntax says otherwise: the bench measures
          placement, and the filler and copied lines it inserts are not valid
          code in every language (benches/syntax_replay.sh measures the guard)

For the formats other than udiff there is no peer tool: the patch and git
columns of the same row, on the unified diff with the same mistake, are the
reference ("would a diff have done better?").

Each result is `correct` (the file equals the expected image byte for byte),
`refused` (non-zero exit and the file unchanged) or `wrong` (anything else:
exit 0 with another result, or a non-zero exit that changed the file). Where
the answer is a refusal (ambiguous search/replace and apply_patch), a refusal
is "refused as it should" and applying anywhere is wrong.

Bar, per variant and lancet format, on determined cases: wrong on none, and
correct (or refused as it should) on at least the share of cases the better of
patch and git apply gets on that variant's unified diff (for udiff itself: at
least as many cases). Exit status 0 when lancet meets the bar everywhere (so is
wrong on no determined case), 1 otherwise. Wrong results on cases that are not
determined are counted in their own table and saved, but do not fail the run:
there the real post-image is one answer among others the input allows.

Output: per repository a table variant x tool/format -> correct / refused /
wrong on stdout and in --out (markdown), a summary of lancet's failures by
kind, and every case where lancet is wrong, or refuses a determined case,
saved under --cases-dir/REPO/ (input, edit, expected, lancet's result and
output, a README with the reason and the one `lancet apply` command that
reproduces it).

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
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare_formats as fmt  # noqa: E402
import compare_mistakes as mis  # noqa: E402

FILLER_LINES = 7
FORMATS = ("udiff", "search-replace", "apply-patch", "hashline", "whole")
ALL = FORMATS
QUOTED = ("udiff", "search-replace", "apply-patch")
VARIANT_FORMATS = {
    "exact": ALL,
    "zero-exact": ("udiff",),
    "echo": ("hashline",),
    "shifted-mid": ("udiff", "hashline"),
    "shifted-top": ("udiff", "hashline"),
    "zero-mid": ("udiff",),
    "zero-top": ("udiff",),
    "dedent": QUOTED,
    "whitespace": QUOTED,
    "typo": QUOTED,
    "counts": ("udiff",),
    "crlf": ALL,
    "no-eol": ALL,
    "ambiguous": QUOTED,
    "invented": QUOTED,
    "moved": ("udiff", "hashline"),
    "elision": ("search-replace",),
    "multi": ALL,
}
VARIANTS = tuple(VARIANT_FORMATS)
VARIANT_DOC = {
    "exact": "no mistake",
    "zero-exact": "-U0 diff",
    "echo": "hashline anchors echo their line (`12:ABC|code`), file as read",
    "shifted-mid": "7 lines inserted between/above hunks (hashline: echoed anchors)",
    "shifted-top": "7 lines inserted above line 1 (hashline: echoed anchors)",
    "zero-mid": "-U0 diff, shifted-mid input",
    "zero-top": "-U0 diff, shifted-top input",
    "dedent": "quoted and new lines lost one indentation level",
    "whitespace": "trailing whitespace / tabs vs spaces drift in quoted lines",
    "typo": "1-2 characters wrong in 1-2 quoted lines",
    "counts": "`@@` counts off by 1-2",
    "crlf": "CRLF file, LF edit",
    "no-eol": "file without final newline, edit written as if it had one",
    "ambiguous": "a hunk's old lines copied elsewhere (sr, apply-patch must refuse)",
    "invented": "a context line the file lacks, in a quote (refusal or the real change)",
    "moved": "a block of 3-7 lines above the last hunk moved below it (hashline: echoed anchors)",
    "elision": "one block over all hunks, `...` between",
    "multi": "every changed file of a commit in one edit",
}
# Table columns: (tool, format).
COLUMNS = (("lancet", "udiff"), ("patch", "udiff"), ("git", "udiff"), ("lancet", "search-replace"),
           ("lancet", "apply-patch"), ("lancet", "hashline"), ("lancet", "whole"))
COLUMN_NAME = {("lancet", "udiff"): "lancet udiff", ("patch", "udiff"): "patch",
               ("git", "udiff"): "git apply", ("lancet", "search-replace"): "lancet sr",
               ("lancet", "apply-patch"): "lancet apply-patch", ("lancet", "hashline"): "lancet hashline",
               ("lancet", "whole"): "lancet whole"}
VERDICTS = ("correct", "refused", "wrong", "refused-ok")
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


def whole_says(pre: bytes, post: bytes) -> bool:
    """Whether a whole-file rewrite can say this change: whole.md §5 keeps the
    file's trailing whitespace on a line the rewrite keeps (scenario 38: a
    model's copy drops it), so a change that only strips or adds trailing
    whitespace on a line is not one the format expresses.

    Two ways of finding such a line, either is enough: lines aligned as equal
    once trailing whitespace is stripped but different as bytes; and, in the
    byte-level diff, a changed block whose old and new sides hold the same
    line with different trailing whitespace (where the stripped line equals
    a neighbour — a blank line, `//!` — the first alignment can pair it with
    the neighbour instead)."""
    import difflib
    a, b = pre.split(b"\n"), post.split(b"\n")
    strip = lambda l: l.rstrip(b" \t\r")
    sm = difflib.SequenceMatcher(None, [strip(l) for l in a], [strip(l) for l in b], autojunk=False)
    # Equal once trailing whitespace is stripped, different as bytes.
    if any(a[i] != b[j + (i - i1)] for tag, i1, i2, j1, _ in sm.get_opcodes()
           if tag == "equal" for i in range(i1, i2) for j in [j1]):
        return False
    raw = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in raw.get_opcodes():
        if tag != "replace":
            continue
        old, new = {}, {}
        for l in a[i1:i2]:
            old.setdefault(strip(l), set()).add(l)
        for l in b[j1:j2]:
            new.setdefault(strip(l), set()).add(l)
        if any(old[k] != new[k] for k in old.keys() & new.keys()):
            return False
    return True


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


def moved(change: Change, u3: bytes):
    """(input, expected, note) with a block above the last hunk moved below it, or None."""
    pre, post = split_lines(change.pre), split_lines(change.post)
    hunks = hunk_ranges(u3)
    if not hunks or not pre or not change.pre.endswith(b"\n") or not change.post.endswith(b"\n"):
        return None
    outside = lambda p: all(p < s or p > s + c for s, c, _, _ in hunks)  # noqa: E731
    rng = random.Random(seed_of(change.commit, change.path, "moved"))
    k = rng.randint(3, 7)
    last_start, last_end = hunks[-1][0], hunks[-1][0] + hunks[-1][1]
    # The block pre[p:p+k] touches no hunk (every line and both edges outside).
    starts = [p for p in range(0, last_start - k)
              if all(outside(x) for x in range(p, p + k + 1))]
    dests = [q for q in range(last_end + 1, len(pre) + 1) if outside(q)]
    if not starts or not dests:
        return None
    p, q = starts[rng.randrange(len(starts))], dests[rng.randrange(len(dests))]
    to_new = lambda x: x + sum(nc - oc for s, oc, _, nc in hunks if s + oc < x)  # noqa: E731
    np_, nq = to_new(p), to_new(q)
    block = pre[p:p + k]
    assert post[np_:np_ + k] == block, (change.commit, change.path, p, np_)
    inp = pre[:p] + pre[p + k:]
    inp = inp[:q - k] + block + inp[q - k:]
    exp = post[:np_] + post[np_ + k:]
    exp = exp[:nq - k] + block + exp[nq - k:]
    return b"".join(inp), b"".join(exp), f"input lines {p + 1}-{p + k} moved below input line {q}"


# ------------------------------------------------------------------ plans


@dataclass
class Spec:
    """One edit of one change in one format, with or without a mistake."""
    variant: str
    format: str
    input: bytes
    edit: bytes
    expected: bytes | None  # None: the right answer is a refusal
    determined: bool
    zero: bool = False      # a -U0 diff (git apply needs --unidiff-zero)
    note: str = ""
    # Several files in one edit (variant multi): (path, mode, input, expected) each;
    # `input` and `expected` above are then their concatenations, for the report.
    files: list | None = None
    # Two answers are right (variant invented): the expected image, or a refusal.
    refusal_ok: bool = False


def text_lines(data: bytes) -> list[str]:
    """The lines of a file as text, without their "\\n" (a CR stays)."""
    lines = fmt.dec(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def keep_eol_state(inp: bytes, expected: bytes) -> bytes:
    """The expected image of a format that cannot change the final newline."""
    if not inp or not expected:
        return expected
    if inp.endswith(b"\n") and not expected.endswith(b"\n"):
        return expected + (b"\r\n" if inp.endswith(b"\r\n") else b"\n")
    if not inp.endswith(b"\n") and expected.endswith(b"\n"):
        return expected[:-2] if expected.endswith(b"\r\n") else expected[:-1]
    return expected


def duplicate(change: Change, u3: bytes, hunks: list, rng: random.Random):
    """(input, expected, duplicate line, after the last hunk?) with one hunk's old lines copied."""
    pre, post = split_lines(change.pre), split_lines(change.post)
    ranges = hunk_ranges(u3)
    k = rng.randrange(len(hunks))
    s, c = hunks[k].old_range0()
    if c == 0:
        return None
    block = b"".join(pre[s:s + c])
    eol = b"\r\n" if block.endswith(b"\r\n") else b"\n"
    if not block.endswith(b"\n"):
        block += eol
    allowed = [p for p in range(0, len(pre) + 1)
               if all(p < hs or p > hs + hc for hs, hc, _, _ in ranges)
               and (p < len(pre) or change.pre.endswith(b"\n"))]
    if not allowed:
        return None
    last_end = ranges[-1][0] + ranges[-1][1]
    below = [p for p in allowed if p > last_end]
    pool = below or allowed
    pos = pool[rng.randrange(len(pool))]
    new_pos = pos + sum(nc - oc for hs, oc, _, nc in ranges if hs + oc < pos)
    return insert_at(pre, pos, block), insert_at(post, new_pos, block), pos + 1, bool(below), k


def hashline_view(lancet: str, pre: bytes):
    with tempfile.TemporaryDirectory(prefix="cmp-view-") as tmp:
        f = Path(tmp) / "f"
        f.write_bytes(pre)
        rc, out, _ = run([lancet, "view", "--format", "hashline", str(f)])
    return fmt.parse_view(out) if rc == 0 else None


def decisive(edits, inp: bytes, view) -> bool:
    """Every hashline edit has an anchor whose echoed content stands once within ±20 lines."""
    lines = [l.rstrip() for l in text_lines(inp)]
    for e in edits:
        ok = False
        for n in e.anchors:
            content = view[n - 1][1].rstrip()
            if not fmt.informative(content):
                continue
            lo, hi = max(0, n - 21), min(len(lines), n + 20)
            if sum(1 for l in lines[lo:hi] if l == content) == 1:
                ok = True
                break
        if not ok and e.anchors:
            return False
    return True


def plan(change: Change, u3: bytes, u0: bytes, args) -> list[Spec]:
    """Every (variant, format) edit of this change that the filters keep."""
    want = lambda v, f: v in args.variants and f in args.formats and f in VARIANT_FORMATS[v]  # noqa: E731
    pre, post, path = change.pre, change.post, change.path
    header3, h3 = fmt.parse_diff(u3)
    header0, h0 = fmt.parse_diff(u0)
    if not h3 or not h0:
        return []
    pre_l = text_lines(pre)
    pre_set = {mis.norm_exact(l).rstrip() for l in pre_l}
    n_pre = len(pre_l)
    rng = lambda v: random.Random(seed_of(change.commit, path, v))  # noqa: E731
    # A hunk whose old lines are all blank cannot be quoted so that it is found once.
    unique = lambda hs, norm=mis.norm_exact: all(  # noqa: E731
        mis.occurrences(pre_l, h.old(), norm) == 1 and any(l.strip() for l in h.old()) for h in hs)
    uniq_exact = unique(h3)
    specs: list[Spec] = []

    # Only udiff can say "add/remove the final newline"; a change that does nothing else
    # cannot be written in the other formats (SEARCH would equal REPLACE).
    expressible = keep_eol_state(pre, post) != pre

    def add(v, f, inp, edit, expected, determined, zero=False, note="", refusal_ok=False):
        if f != "udiff" and not expressible:
            return
        if f != "udiff" and expected is not None:
            expected = keep_eol_state(inp, expected)
            if expected == inp:
                return  # only the final newline changed: not expressible in this format
        specs.append(Spec(v, f, inp, edit, expected, determined, zero, note, refusal_ok=refusal_ok))

    view = None
    if "hashline" in args.formats and any(want(v, "hashline") for v in VARIANTS):
        view = hashline_view(args.lancet, pre)
        if view is not None and len(view) != n_pre:
            view = None

    def quoted_formats(v, inp, expected, hunks_q, hunks_sr, sr_quoted, determined_q, note="", determined_u=True):
        """udiff + apply-patch from hunks_q, search/replace from hunks_sr (SEARCH from sr_quoted)."""
        if hunks_q is not None:
            if want(v, "udiff"):
                add(v, "udiff", inp, fmt.render_udiff(header3, hunks_q), expected, determined_u, note=note)
            if want(v, "apply-patch"):
                add(v, "apply-patch", inp, fmt.render_apply_patch(path, hunks_q, n_pre), expected,
                    determined_q, note=note)
        if hunks_sr is not None and want(v, "search-replace"):
            add(v, "search-replace", inp,
                fmt.render_search_replace(path, hunks_sr, [h.old() for h in sr_quoted] if sr_quoted else None),
                expected, determined_q, note=note)

    # exact
    v = "exact"
    quoted_formats(v, pre, post, h3, h3, None, uniq_exact)
    if want(v, "hashline") and view is not None:
        add(v, "hashline", pre, fmt.render_hashline(path, fmt.hashline_edits(h0, view, False)), post, True)
    if want(v, "whole"):
        add(v, "whole", pre, fmt.render_whole(path, post), post, whole_says(pre, post))
    if want("echo", "hashline") and view is not None:
        add("echo", "hashline", pre, fmt.render_hashline(path, fmt.hashline_edits(h0, view, True)), post, True)
    if want("zero-exact", "udiff"):
        add("zero-exact", "udiff", pre, fmt.render_udiff(header0, h0), post, True, zero=True)

    # stale line numbers
    for where in ("mid", "top"):
        s = shifted(change, u3, where)
        if s is None:
            continue
        inp, exp, line = s
        note = f"filler inserted before input line {line}"
        if want(f"shifted-{where}", "udiff"):
            add(f"shifted-{where}", "udiff", inp, fmt.render_udiff(header3, h3), exp, True, note=note)
        if want(f"zero-{where}", "udiff"):
            # Without context, a hunk is placed by its old lines (found once in the input)
            # or, above the filler, by its line number; a pure insertion has no old lines,
            # and nothing in a shifted input says its number is still right.
            in_l = text_lines(inp)
            det0 = all(h.old_count() and (h.old_range0()[0] < line - 1
                                          or mis.occurrences(in_l, h.old()) == 1) for h in h0)
            add(f"zero-{where}", "udiff", inp, fmt.render_udiff(header0, h0), exp, det0, zero=True,
                note=note)
        if want(f"shifted-{where}", "hashline") and view is not None:
            edits = fmt.hashline_edits(h0, view, True)
            add(f"shifted-{where}", "hashline", inp, fmt.render_hashline(path, edits), exp,
                decisive(edits, inp, view), note=note)

    # stale line numbers the other way: lines above the last hunk moved below it
    if want("moved", "udiff") or want("moved", "hashline"):
        m = moved(change, u3)
        if m is not None:
            inp, exp, note = m
            if want("moved", "udiff"):
                add("moved", "udiff", inp, fmt.render_udiff(header3, h3), exp, True, note=note)
            if want("moved", "hashline") and view is not None:
                edits = fmt.hashline_edits(h0, view, True)
                add("moved", "hashline", inp, fmt.render_hashline(path, edits), exp,
                    decisive(edits, inp, view), note=note)

    # lost indentation: old and new lines alike
    if any(want("dedent", f) for f in QUOTED):
        d = mis.dedent(h3)
        if d is not None:
            quoted_formats("dedent", pre, post, d, d, None, unique(h3, mis.norm_space))

    # whitespace drift in quoted lines
    if any(want("whitespace", f) for f in QUOTED):
        w = mis.whitespace(h3, rng("whitespace"))
        if w is not None:
            # A `-` line drifted into one of the hunk's `+` lines (trailing whitespace
            # stripped where stripping it was the change) no longer says it changes.
            said = all(not (dl.tag == "-" and dl.text != ol.text and dl.text in h.new())
                       for hw, h in zip(w, h3) for dl, ol in zip(hw.lines, h.lines))
            quoted_formats("whitespace", pre, post, w, h3, w, said and unique(h3, mis.norm_space))

    # typos: context lines for udiff/apply-patch, any SEARCH line for search/replace
    if any(want("typo", f) for f in QUOTED):
        t_ctx = mis.typo(h3, rng("typo-context"), " ", pre_set)
        t_sr = mis.typo(h3, rng("typo-search"), " -", pre_set)
        # Determined only where the lines left intact still say where each hunk goes.
        if t_ctx is not None:
            det_ctx = uniq_exact and mis.intact_once(pre_l, h3, t_ctx)
            quoted_formats("typo", pre, post, t_ctx, None, None, det_ctx,
                           determined_u=mis.intact_once(pre_l, h3, t_ctx))
        if t_sr is not None:
            det_sr = uniq_exact and mis.intact_once(pre_l, h3, t_sr)
            quoted_formats("typo", pre, post, None, h3, t_sr, det_sr)

    if want("counts", "udiff"):
        wrong_counts = mis.counts(h3, rng("counts"))
        if wrong_counts is not None:
            # The last hunk counting more lines than it holds reads as a reply cut off
            # inside it (unified-diff.md §1.4): the lines that would follow are unknown.
            last = wrong_counts[-1]
            cut = last.counts is not None and (last.counts[0] > last.old_count()
                                               or last.counts[1] > last.new_count())
            add("counts", "udiff", pre, fmt.render_udiff(header3, wrong_counts), post, not cut)

    # CRLF file, LF edit
    if b"\r" not in pre and b"\r" not in post and pre:
        cin, cexp = pre.replace(b"\n", b"\r\n"), post.replace(b"\n", b"\r\n")
        quoted_formats("crlf", cin, cexp, h3, h3, None, uniq_exact)
        if want("crlf", "hashline") and view is not None:
            add("crlf", "hashline", cin, fmt.render_hashline(path, fmt.hashline_edits(h0, view, False)),
                cexp, True)
        if want("crlf", "whole"):
            add("crlf", "whole", cin, fmt.render_whole(path, post), cexp, whole_says(pre, post))

    # no final newline, edit written as if there were one
    last_s, last_c = h3[-1].old_range0()
    if (pre.endswith(b"\n") and post.endswith(b"\n") and last_s + last_c == n_pre
            and not pre.endswith(b"\r\n") and pre[:-1] and post[:-1]
            and not pre[:-1].endswith(b"\n") and not post[:-1].endswith(b"\n")):
        nin, nexp = pre[:-1], post[:-1]
        quoted_formats("no-eol", nin, nexp, h3, h3, None, uniq_exact)
        if want("no-eol", "hashline") and view is not None:
            add("no-eol", "hashline", nin, fmt.render_hashline(path, fmt.hashline_edits(h0, view, False)),
                nexp, True)
        if want("no-eol", "whole"):
            add("no-eol", "whole", nin, fmt.render_whole(path, post), nexp, whole_says(pre, post))

    # ambiguity: one hunk's old lines copied outside every hunk
    if any(want("ambiguous", f) for f in QUOTED):
        dup = duplicate(change, u3, h3, rng("ambiguous"))
        if dup is not None:
            inp, exp, line, below, k = dup
            note = f"copy of a hunk's old lines inserted before input line {line}"
            if want("ambiguous", "udiff"):
                add("ambiguous", "udiff", inp, fmt.render_udiff(header3, h3), exp, below, note=note)
            if want("ambiguous", "apply-patch"):
                # `*** End of File` settles a chunk that ends the file (apply-patch.md §3.4).
                s_k, c_k = h3[k].old_range0()
                add("ambiguous", "apply-patch", inp, fmt.render_apply_patch(path, h3, n_pre),
                    exp if s_k + c_k == n_pre else None, True, note=note)
            if want("ambiguous", "search-replace"):
                add("ambiguous", "search-replace", inp, fmt.render_search_replace(path, h3), None, True,
                    note=note)

    # an invented context line: a refusal, or the real change (context is never written)
    if any(want("invented", f) for f in QUOTED):
        inv = mis.invent(h3, rng("invented"), pre_set)
        if inv is not None:
            for f in QUOTED:
                if not want("invented", f):
                    continue
                edit = (fmt.render_udiff(header3, inv) if f == "udiff"
                        else fmt.render_apply_patch(path, inv, n_pre) if f == "apply-patch"
                        else fmt.render_search_replace(path, inv))
                add("invented", f, pre, edit, post, True, refusal_ok=True)

    if want("elision", "search-replace") and len(h3) >= 2:
        add("elision", "search-replace", pre, fmt.render_search_replace_elided(path, h3), post, uniq_exact)
    return specs


# ------------------------------------------------------------------ tools


@dataclass
class Outcome:
    verdict: str  # correct / refused / wrong / refused-ok
    rc: int
    out: bytes
    result: bytes | None
    cmd: list = field(default_factory=list)


EDIT_NAME = {"udiff": "edit.diff", "search-replace": "edit.md", "apply-patch": "edit.patch",
             "hashline": "edit.hashline", "whole": "edit.md"}


SYNTAX: list[str] = []  # ["--syntax", MODE] when lancet has the guard (set in main)


def lancet_args(spec: Spec, path: str) -> list[str]:
    a = ["apply", "--format", spec.format, "--no-undo"] + SYNTAX
    if spec.format == "udiff":
        a += ["-p1"]
    if spec.format in ("search-replace", "whole") and not spec.files:
        a += ["--file", path]
    return a


def apply_tool(tool: str, lancet: str, change: Change, spec: Spec) -> Outcome:
    files = spec.files or [(change.path, change.mode, spec.input, spec.expected)]
    path = change.path
    with tempfile.TemporaryDirectory(prefix=f"cmp-{tool}-") as tmp:
        work = Path(tmp) / "w"
        work.mkdir()
        edit_file = Path(tmp) / EDIT_NAME[spec.format]
        edit_file.write_bytes(spec.edit)
        for fpath, mode, finput, _ in files:
            target = work / fpath
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(finput)
            os.chmod(target, 0o755 if mode.endswith("755") else 0o644)
        env = dict(os.environ, LC_ALL="C", GIT_CEILING_DIRECTORIES=tmp)
        if tool == "patch":
            cmd = ["patch", "-p1", "--batch", "--forward", "-i", str(edit_file)]
        elif tool == "git":
            run(["git", "init", "-q"], cwd=work, env=env)
            cmd = GIT + ["apply", "-p1"] + (["--unidiff-zero"] if spec.zero else []) + [str(edit_file)]
        else:
            cmd = [lancet] + lancet_args(spec, path) + ["-C", str(work), str(edit_file)]
        rc, out, err = run(cmd, cwd=work, env=env)
        if spec.files:
            # Several files: compared one by one, reported as their concatenation.
            results = [(work / f[0]).read_bytes() if (work / f[0]).is_file() else None for f in files]
            untouched = rc != 0 and all(r == f[2] for r, f in zip(results, files))
            if untouched:
                result = spec.input
            elif all(r == f[3] for r, f in zip(results, files)):
                result = spec.expected
            else:
                result = b"".join(r or b"" for r in results)
        else:
            target = work / path
            result = target.read_bytes() if target.is_file() else None
            untouched = rc != 0 and result == spec.input
        if spec.expected is None:
            verdict = "refused-ok" if untouched else "wrong"
        elif result == spec.expected:
            verdict = "correct"
        elif untouched and spec.refusal_ok:
            verdict = "refused-ok"
        elif untouched:
            verdict = "refused"
        else:
            verdict = "wrong"
        return Outcome(verdict, rc, out + err, result, cmd)


# ------------------------------------------------------------------ one case


@dataclass
class CaseResult:
    change: Change
    runs: list = field(default_factory=list)  # (Spec, {tool: Outcome})


def run_case(change: Change, args) -> CaseResult:
    repo = change.repo
    base = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames",
            "--src-prefix=a/", "--dst-prefix=b/", "--diff-algorithm=myers"]
    u3 = git(repo, *base, "-U3", change.parent, change.commit, "--", change.path)
    u0 = git(repo, *base, "-U0", change.parent, change.commit, "--", change.path)
    res = CaseResult(change)
    if b"\n@@ " not in u3 or b"GIT binary patch" in u3 or b"\nBinary files " in u3:
        return res
    for spec in plan(change, u3, u0, args):
        tools = ("lancet", "patch", "git") if spec.format == "udiff" else ("lancet",)
        res.runs.append((spec, {t: apply_tool(t, args.lancet, change, spec) for t in tools}))
    return res


def run_multi(group: list[Change], args) -> CaseResult:
    """Variant multi: every file of one commit in one edit, in each format."""
    first = group[0]
    repo, parent, commit = first.repo, first.parent, first.commit
    base = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames",
            "--src-prefix=a/", "--dst-prefix=b/", "--diff-algorithm=myers"]
    shown = Change(repo, parent, commit, f"{first.path} (+{len(group) - 1} files)", first.mode,
                   first.old_mode)
    res = CaseResult(shown)
    parts = []  # (change, header3, h3, h0, n_pre, view)
    for c in group:
        u3 = git(repo, *base, "-U3", parent, commit, "--", c.path)
        u0 = git(repo, *base, "-U0", parent, commit, "--", c.path)
        if b"\n@@ " not in u3 or b"GIT binary patch" in u3 or b"\nBinary files " in u3:
            return res
        header3, h3 = fmt.parse_diff(u3)
        _, h0 = fmt.parse_diff(u0)
        if not h3 or not h0:
            return res
        n_pre = len(text_lines(c.pre))
        view = hashline_view(args.lancet, c.pre) if "hashline" in args.formats else None
        parts.append((c, header3, h3, h0, n_pre, view if view is None or len(view) == n_pre else None))
    want = lambda f: "multi" in args.variants and f in args.formats  # noqa: E731
    pre_l = {c.path: text_lines(c.pre) for c, *_ in parts}
    uniq = all(mis.occurrences(pre_l[c.path], h.old()) == 1 and any(l.strip() for l in h.old())
               for c, _, h3, *_ in parts for h in h3)
    # Formats other than udiff cannot toggle a final newline (see `plan`).
    expressible = all(keep_eol_state(c.pre, c.post) != c.pre for c, *_ in parts)
    specs = []

    def spec(f, edit, determined):
        files = [(c.path, c.mode, c.pre, c.post if f == "udiff" else keep_eol_state(c.pre, c.post))
                 for c, *_ in parts]
        specs.append(Spec("multi", f, b"".join(x[2] for x in files), edit,
                          b"".join(x[3] for x in files), determined, files=files,
                          note=f"{len(files)} files: " + ", ".join(x[0] for x in files)))

    # A path line above a block must read as a path (search-replace.md §1: an
    # extension, a slash or a known name): a bare `benchsuite` is written
    # `./benchsuite`, as a model names such a file when several are in play.
    named = lambda p: p if "/" in p or "." in p else "./" + p  # noqa: E731
    if want("udiff"):
        spec("udiff", git(repo, *base, "-U3", parent, commit, "--", *[c.path for c, *_ in parts]), True)
    if expressible:
        if want("search-replace"):
            spec("search-replace", b"".join(fmt.render_search_replace(named(c.path), h3)
                                            for c, _, h3, *_ in parts), uniq)
        if want("apply-patch"):
            spec("apply-patch", fmt.render_apply_patch_files([(c.path, h3, n) for c, _, h3, _, n, _ in parts]),
                 uniq)
        if want("hashline") and all(p[5] is not None for p in parts):
            spec("hashline", b"".join(fmt.render_hashline(c.path, fmt.hashline_edits(h0, view, False))
                                      for c, _, _, h0, _, view in parts), True)
        if want("whole"):
            spec("whole", b"".join(fmt.render_whole(named(c.path), c.post) for c, *_ in parts),
                 all(whole_says(c.pre, c.post) for c, *_ in parts))
    for sp in specs:
        tools = ("lancet", "patch", "git") if sp.format == "udiff" else ("lancet",)
        res.runs.append((sp, {t: apply_tool(t, args.lancet, first, sp) for t in tools}))
    return res


def multi_groups(cs: list[Change]) -> list[list[Change]]:
    """The commits with 2-8 replayed file changes, each one group."""
    by: dict = {}
    for c in cs:
        by.setdefault(c.commit, []).append(c)
    return [g for g in by.values() if 2 <= len(g) <= 8]


# ------------------------------------------------------------------ report


def short(s: str) -> str:
    return s[:10]


def failure_kind(text: str, verdict: str) -> str:
    if verdict == "wrong":
        return "applied, wrong result"
    for line in text.split("\n"):
        if "failed" not in line and "rror" not in line and "refused" not in line:
            continue
        if "no context lines and removes nothing" in line:
            return "context-free insertion refused (file is not the diff's pre-image)"
        if re.search(r"match(es)? \d+ places", line):
            return "matches several places"
        body = line.split(":", 1)[-1].strip() if re.match(r"^\s*(edit|hunk|chunk|block|file) \d+", line) else line
        return re.sub(r"\d+", "N", body.strip())[:110]
    return "other: " + re.sub(r"\d+", "N", text.strip().split("\n")[0])[:110]


def save_case(root: Path, idx: int, change: Change, spec: Spec, outcomes: dict, why: str) -> Path:
    c = change
    name = (f"{idx:04d}-{spec.variant}-{spec.format}-{short(c.commit)}-"
            f"{re.sub(r'[^A-Za-z0-9._-]+', '_', c.path)}")[:150]
    d = root / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    edit_name = EDIT_NAME[spec.format]
    (d / edit_name).write_bytes(spec.edit)
    if spec.files:
        for fpath, _, finput, fexp in spec.files:
            for sub, data in (("input", finput), ("expected", fexp)):
                (d / sub / fpath).parent.mkdir(parents=True, exist_ok=True)
                (d / sub / fpath).write_bytes(data)
    else:
        (d / "input").write_bytes(spec.input)
        if spec.expected is not None:
            (d / "expected").write_bytes(spec.expected)
    for tool, o in outcomes.items():
        (d / f"{tool}.out.txt").write_bytes(b"exit %d\n" % o.rc + o.out)
        if o.result is not None and o.result != spec.expected and o.result != spec.input:
            (d / f"{tool}.result").write_bytes(o.result)
    args = " ".join(lancet_args(spec, c.path))
    dirname = os.path.dirname(c.path) or "."
    check = (f"cmp \"$d/{c.path}\" expected" if spec.expected is not None
             else f"cmp \"$d/{c.path}\" input   # must be refused: the file stays as it was")
    setup = f"d=$(mktemp -d); mkdir -p \"$d/{dirname}\"; cp input \"$d/{c.path}\"\n"
    if spec.files:
        setup = "d=$(mktemp -d); cp -r input/. \"$d\"\n"
        check = "diff -r \"$d\" expected"
    (d / "README.md").write_text(
        f"# {c.path} at {c.commit} — {spec.variant}, {spec.format}\n\n"
        f"repository: {c.repo}\nparent: {c.parent}\n"
        f"variant: {spec.variant} — {VARIANT_DOC[spec.variant]}\n"
        + (f"{spec.note}\n" if spec.note else "")
        + f"determined: {'yes' if spec.determined else 'no'}\n"
        f"why saved: {why}\n\n"
        + "".join(f"- {tool}: {o.verdict} (exit {o.rc})\n" for tool, o in outcomes.items())
        + "\nReproduce (from this directory):\n\n```sh\n"
        + setup + f"lancet {args} -C \"$d\" {edit_name}; {check}\n```\n")
    return d


def cell(k: dict) -> str:
    if sum(k.values()) == 0:
        return "–"
    if k["refused-ok"]:
        return f"{k['refused-ok']} r✓ + {k['correct']} / {k['refused']} / {k['wrong']}"
    return f"{k['correct']} / {k['refused']} / {k['wrong']}"


def new_counts():
    return {v: {col: {x: 0 for x in VERDICTS} for col in COLUMNS} for v in VARIANTS}


def bar(counts, v) -> list[str]:
    """The columns of variant v where lancet misses its bar (determined cases)."""
    missed = []
    row = counts[v]
    peer_rate, peer_n = 0.0, 0
    for t in ("patch", "git"):
        k = row[(t, "udiff")]
        n = sum(k.values())
        if n:
            peer_rate = max(peer_rate, k["correct"] / n)
            peer_n = max(peer_n, k["correct"])
    for col in COLUMNS:
        if col[0] != "lancet":
            continue
        k = row[col]
        n = sum(k.values())
        if not n:
            continue
        good = k["correct"] + k["refused-ok"]
        name = COLUMN_NAME[col].replace("lancet ", "")
        if k["wrong"]:
            missed.append(f"{name}: wrong {k['wrong']}")
        elif k["refused-ok"] or v == "ambiguous" and col[1] != "udiff":
            continue  # the answer is a refusal; the peers' udiff is no reference
        elif col[1] == "udiff":
            if good < peer_n:
                missed.append(f"{name}: {good} < {peer_n}")
        elif good / n + 1e-9 < peer_rate:
            missed.append(f"{name}: {100 * good / n:.1f}% < {100 * peer_rate:.1f}%")
    return missed


def table(title: str, counts: dict, variants, with_bar: bool) -> str:
    cols = [c for c in COLUMNS if any(sum(counts[v][c].values()) for v in variants)]
    if not cols:
        return f"### {title}\n\nnone\n"
    lines = [f"### {title}", "",
             "| variant | " + " | ".join(COLUMN_NAME[c] for c in cols) + (" | lancet bar |" if with_bar else " |"),
             "|---|" + "---:|" * len(cols) + ("---|" if with_bar else "")]
    for v in variants:
        if not any(sum(counts[v][c].values()) for c in cols):
            continue
        row = f"| {v} | " + " | ".join(cell(counts[v][c]) for c in cols) + " |"
        if with_bar:
            m = bar(counts, v)
            row += (" met |" if not m else " MISSED: " + "; ".join(m) + " |")
        lines.append(row)
    return "\n".join(lines) + "\n"


def repo_name(repo: Path) -> str:
    name = repo.name
    if name in (".git", "repo") or name.endswith(".git") and name != ".git":
        name = repo.parent.name if name in (".git", "repo") else name[:-4]
    return name


def compare_repo(repo: Path, args, md: list[str]) -> bool:
    t0 = time.time()
    cs, skipped = changes(repo, args.max_bytes, args.limit)
    commits = len({c.commit for c in cs})
    print(f"{repo}: {len(cs)} file changes in {commits} commits "
          f"(skipped: {', '.join(f'{k} {v}' for k, v in skipped.items() if v)})", file=sys.stderr)
    det, undet = new_counts(), new_counts()
    flagged = []  # (Spec, CaseResult, outcomes, why)
    done = 0
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = [ex.submit(run_case, c, args) for c in cs]
        if "multi" in args.variants:
            futs += [ex.submit(run_multi, g, args) for g in multi_groups(cs)]
        for f in cf.as_completed(futs):
            r = f.result()
            done += 1
            if done % 50 == 0:
                print(f"  {done}/{len(futs)} ({time.time() - t0:.0f} s)", file=sys.stderr)
            for spec, outcomes in r.runs:
                counts = det if spec.determined else undet
                for t, o in outcomes.items():
                    counts[spec.variant][(t, spec.format)][o.verdict] += 1
                lv = outcomes["lancet"].verdict
                if lv == "wrong":
                    flagged.append((spec, r, outcomes, "lancet wrong" + ("" if spec.determined
                                                                         else " (case not determined)")))
                elif lv == "refused" and spec.determined:
                    flagged.append((spec, r, outcomes, "lancet refused a determined case"))
    flagged.sort(key=lambda x: (VARIANTS.index(x[0].variant), FORMATS.index(x[0].format),
                                x[1].change.commit, x[1].change.path))
    name = repo_name(repo)
    n_det = sum(sum(k.values()) for v in VARIANTS for col, k in det[v].items() if col[0] == "lancet")
    n_und = sum(sum(k.values()) for v in VARIANTS for col, k in undet[v].items() if col[0] == "lancet")
    md.append(table(f"{name} ({repo}) — {len(cs)} file changes, {commits} commits; "
                    f"{n_det} determined lancet runs", det, VARIANTS, True))
    md.append(f"Not determined (counted apart; {n_und} lancet runs):\n")
    md.append(table(f"{name}: not determined", undet, VARIANTS, False))
    cases_root = Path(args.cases_dir) / name
    if cases_root.exists():
        shutil.rmtree(cases_root)  # this script's own output from an earlier run
    if flagged:
        kinds: dict = {}
        for spec, r, outcomes, why in flagged:
            o = outcomes["lancet"]
            key = (spec.variant, spec.format, failure_kind(o.out.decode(errors="replace"), o.verdict))
            kinds.setdefault(key, []).append(r)
        md.append("Lancet's failures by kind (variant, format: first failure line → cases):\n")
        for (v, f, k), lst in sorted(kinds.items(), key=lambda x: (VARIANTS.index(x[0][0]),
                                                                   FORMATS.index(x[0][1]), x[0][2])):
            md.append(f"- {v}, {f}: {k} → {len(lst)}")
        md.append("")
        md.append(f"Lancet wrong, or refusing a determined case ({len(flagged)}; saved under "
                  f"`{cases_root}/`):\n")
        md.append("| # | variant | format | commit | file | lancet | patch | git | first line of lancet's "
                  "output (case dir) |\n|---:|---|---|---|---|---|---|---|---|")
        for i, (spec, r, outcomes, why) in enumerate(flagged, 1):
            d = save_case(cases_root, i, r.change, spec, outcomes, why)
            o = outcomes["lancet"]
            msg = o.out.decode(errors="replace").strip().split("\n")
            first = next((l for l in msg if "failed" in l or "rror" in l), msg[0] if msg else "")[:140]
            pv = outcomes["patch"].verdict if "patch" in outcomes else ""
            gv = outcomes["git"].verdict if "git" in outcomes else ""
            md.append(f"| {i} | {spec.variant} | {spec.format} | {short(r.change.commit)} | "
                      f"`{r.change.path}` | {o.verdict} | {pv} | {gv} | "
                      f"{first.replace('|', '/')} (`{d.name}`) |")
        md.append("")
    else:
        md.append("No case where lancet is wrong or refuses a determined case.\n")
    md.append(f"_{time.time() - t0:.0f} s, {args.jobs} jobs._\n")
    # Only determined cases count: where the input does not decide the answer, a result
    # other than the real post-image is not evidence of a wrong placement (it is listed).
    return all(not bar(det, v) for v in VARIANTS)


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
    ap.add_argument("--syntax", default="off", choices=("off", "reject", "warn"),
                    help="lancet's syntax guard (default off: the bench measures placement; the filler "
                         "and copied lines it inserts are not valid code in every language)")
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help="comma-separated formats to render (default: all: " + ",".join(FORMATS) + ")")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated variants (default: all: " + ",".join(VARIANTS) + ")")
    ap.add_argument("--build-stdlib-repo", type=Path, metavar="DIR",
                    help="build the stdlib-history corpus in DIR and exit")
    args = ap.parse_args()
    if args.build_stdlib_repo:
        build_stdlib_repo(args.build_stdlib_repo)
        return 0
    args.formats = [f for f in args.formats.split(",") if f]
    args.variants = [v for v in args.variants.split(",") if v]
    for f in args.formats:
        if f not in FORMATS:
            ap.error(f"unknown format {f!r} (known: {', '.join(FORMATS)})")
    for v in args.variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r} (known: {', '.join(VARIANTS)})")
    repos = args.repo or [here]
    # A private copy: others may rebuild target/release/lancet during the run.
    pinned = Path(tempfile.mkdtemp(prefix="compare-lancet-")) / "lancet"
    shutil.copy2(Path(args.lancet).resolve(), pinned)
    args.lancet = str(pinned)
    if b"--syntax" in run([args.lancet, "apply", "--help"])[1]:
        SYNTAX[:] = ["--syntax", args.syntax]
    rc, head, _ = run(["git", "-C", str(here), "describe", "--always", "--dirty"])
    source = head.decode().strip() if rc == 0 else "?"
    md = ["# lancet (every edit format) vs GNU patch vs git apply on real history", "",
          f"patch: `{run(['patch', '--version'])[1].decode().splitlines()[0]}`, "
          f"git: `{run(['git', '--version'])[1].decode().strip()}`, "
          f"lancet: `{run([args.lancet, '--version'])[1].decode().strip()}` "
          f"(built from `{source}` of {here})", "",
          "Variants: " + "; ".join(f"**{v}** {VARIANT_DOC[v]} ({', '.join(VARIANT_FORMATS[v])})"
                                   for v in args.variants) + ".", "",
          "Cells: correct (byte-identical to the expected image) / refused (non-zero exit, file "
          "untouched) / wrong (anything else); `N r✓` = refused as it should (ambiguous input). "
          "patch and git apply run on the unified diff with the same mistake: the reference for "
          "every format's column. git apply runs with `--unidiff-zero` on the zero-context variants. "
          "Bar (determined cases): lancet wrong on none, and correct on at least the better peer's "
          "share (udiff: count). Variants and determination: see benches/compare.py. "
          f"lancet runs with `{' '.join(SYNTAX) or 'no syntax guard'}`.", ""]
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
