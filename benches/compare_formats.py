"""Renders one real change in each of lancet's five edit formats (for benches/compare.py).

A change is read from `git diff` output into `Hunk`s (text decoded with
`surrogateescape`, so every byte survives a round trip); the renderers below
write those hunks as a model would in each format:

  udiff           the git diff itself, its header kept, each `@@` line rebuilt
                  from the hunk (counts from the body unless a mistake
                  overrides them)
  search-replace  one block per -U3 hunk: the path line, a ``` fence,
                  SEARCH = the hunk's old lines (context and `-`), REPLACE =
                  its new lines (context and `+`), marker-like lines escaped
                  as lancet's own renderer does; optionally one block for all
                  hunks with a `...` line between the pieces (elision)
  apply-patch     `*** Begin Patch` / `*** Update File:` / one bare `@@` chunk
                  per -U3 hunk / `*** End of File` after a chunk that ends at
                  the file's last line / `*** End Patch` (several files: one
                  `*** Update File:` section each in one envelope)
  hashline        one directive per -U0 hunk (`replace A B`, `delete A B`,
                  `insert after A` or `insert before A`), anchors `LINE:HASH`
                  taken from `lancet view --format hashline` of the pre-image,
                  with the line's content echoed after `|` when asked
  whole           the path line and the full new content in a backtick fence
                  one longer than the longest backtick run in it

A multi-file edit is the files' renderings one after another (search/replace
blocks, hashline `@@ file` sections, whole-file fences; the udiff is git's diff
of the commit restricted to those paths), apply_patch one envelope.

Nothing here runs a tool; stdlib only, Python 3.9+.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


def dec(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def enc(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


@dataclass
class Line:
    tag: str    # ' ' context, '-' removed, '+' added
    text: str   # without the "\n" (a CR of a CRLF line stays in it, as in git's diff)
    noeol: bool = False  # followed by `\ No newline at end of file`


@dataclass
class Hunk:
    old_start: int  # as in the header (1-based; for an empty old side, the line before)
    new_start: int
    section: str    # git's function context after the closing `@@`
    lines: list = field(default_factory=list)
    counts: tuple | None = None  # (old, new) written instead of the body's counts

    def old(self) -> list[str]:
        return [l.text for l in self.lines if l.tag != "+"]

    def new(self) -> list[str]:
        return [l.text for l in self.lines if l.tag != "-"]

    def old_count(self) -> int:
        return sum(1 for l in self.lines if l.tag != "+")

    def new_count(self) -> int:
        return sum(1 for l in self.lines if l.tag != "-")

    def old_range0(self) -> tuple[int, int]:
        """0-based start and count of the old side in the pre-image."""
        c = self.old_count()
        return (self.old_start if c == 0 else self.old_start - 1), c


def parse_diff(diff: bytes) -> tuple[str, list[Hunk]]:
    """(the header before the first `@@`, the hunks) of a one-file git diff."""
    text = dec(diff)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header: list[str] = []
    hunks: list[Hunk] = []
    for line in lines:
        m = HUNK_HEADER.match(line)
        if m:
            hunks.append(Hunk(int(m.group(1)), int(m.group(3)), m.group(5)))
        elif not hunks:
            header.append(line)
        elif line.startswith("\\"):
            if hunks[-1].lines:
                hunks[-1].lines[-1].noeol = True
        elif line[:1] in (" ", "-", "+"):
            hunks[-1].lines.append(Line(line[0], line[1:]))
        elif line == "":
            hunks[-1].lines.append(Line(" ", ""))
    return "".join(h + "\n" for h in header), hunks


# ------------------------------------------------------------------ udiff


def render_udiff(header: str, hunks: list[Hunk]) -> bytes:
    out = [header]
    for h in hunks:
        oc, nc = h.counts if h.counts else (h.old_count(), h.new_count())
        out.append(f"@@ -{h.old_start},{oc} +{h.new_start},{nc} @@{h.section}\n")
        for l in h.lines:
            out.append(l.tag + l.text + "\n")
            if l.noeol:
                out.append("\\ No newline at end of file\n")
    return enc("".join(out))


# ------------------------------------------------------------------ search/replace

_MARKER = re.compile(
    r"^(?:<{5,9}\s*(?:SEARCH|ORIGINAL|FIND)|-{5,9}\s*SEARCH|={5,9}|>{5,9}\s*(?:REPLACE|UPDATED)"
    r"|\+{5,9}\s*REPLACE)$", re.IGNORECASE)


def _is_marker(t: str) -> bool:
    t = t.strip()
    if not t:
        return False
    # A run of 5-9 of one character, then the word (src/format/search_replace.rs `marker`).
    first = t[0]
    n = len(t) - len(t.lstrip(first))
    return 5 <= n <= 9 and bool(_MARKER.match(t))


def sr_escape(line: str) -> str:
    """As `escape` in src/format/search_replace.rs: one backslash before a marker-like line."""
    body = line.lstrip()
    t = body.lstrip("\\")
    if _is_marker(t) or t.strip() == "...":
        return line[:len(line) - len(body)] + "\\" + body
    return line


def _sr_block(path: str, old: list[str], new: list[str]) -> str:
    return (path + "\n```\n<<<<<<< SEARCH\n" + "".join(sr_escape(l) + "\n" for l in old)
            + "=======\n" + "".join(sr_escape(l) + "\n" for l in new) + ">>>>>>> REPLACE\n```\n\n")


def render_search_replace(path: str, hunks: list[Hunk], quoted: list[list[str]] | None = None) -> bytes:
    """One block per hunk; `quoted[i]`, when given, is what the model wrote as SEARCH of hunk i."""
    out = []
    for i, h in enumerate(hunks):
        out.append(_sr_block(path, quoted[i] if quoted else h.old(), h.new()))
    return enc("".join(out))


def render_search_replace_elided(path: str, hunks: list[Hunk]) -> bytes:
    """One block for all hunks, the unchanged stretches between them written as `...`."""
    old: list[str] = []
    new: list[str] = []
    for i, h in enumerate(hunks):
        if i:
            old.append("...")
            new.append("...")
        old += [sr_escape(l) for l in h.old()]
        new += [sr_escape(l) for l in h.new()]
    return enc(path + "\n```\n<<<<<<< SEARCH\n" + "".join(l + "\n" for l in old) + "=======\n"
               + "".join(l + "\n" for l in new) + ">>>>>>> REPLACE\n```\n")


# ------------------------------------------------------------------ apply_patch


def _apply_patch_update(path: str, hunks: list[Hunk], n_lines: int) -> list[str]:
    out = [f"*** Update File: {path}\n"]
    for h in hunks:
        out.append("@@\n")
        for l in h.lines:
            out.append(l.tag + l.text + "\n")
        s, c = h.old_range0()
        if c and s + c == n_lines:
            out.append("*** End of File\n")
    return out


def render_apply_patch(path: str, hunks: list[Hunk], n_lines: int) -> bytes:
    """`n_lines`: the pre-image's line count as the model saw it (for `*** End of File`)."""
    return render_apply_patch_files([(path, hunks, n_lines)])


def render_apply_patch_files(files: list[tuple[str, list[Hunk], int]]) -> bytes:
    """One envelope, one `*** Update File:` section per (path, hunks, n_lines)."""
    out = ["*** Begin Patch\n"]
    for path, hunks, n_lines in files:
        out += _apply_patch_update(path, hunks, n_lines)
    out.append("*** End Patch\n")
    return enc("".join(out))


# ------------------------------------------------------------------ hashline


def parse_view(view: bytes) -> list[tuple[str, str]] | None:
    """(hash, content) per line of `lancet view --format hashline` output, or None."""
    res = []
    for i, line in enumerate(dec(view).split("\n")[:-1], 1):
        m = re.match(r"^(\d+):([A-Z]+)\|(.*)$", line, re.S)
        if not m or int(m.group(1)) != i:
            return None
        res.append((m.group(2), m.group(3)))
    return res


def informative(s: str) -> bool:
    return any(ch.isalnum() for ch in s)


@dataclass
class HashEdit:
    directive: str           # the `@@ ...` line
    anchors: list[int]       # 1-based line numbers the anchors name
    payload: list[str]


def hashline_edits(hunks0: list[Hunk], view: list[tuple[str, str]], echo: bool) -> list[HashEdit]:
    """The directives for the -U0 hunks; anchors name the view's lines."""
    def anchor(n: int) -> str:
        h, content = view[n - 1]
        return f"{n}:{h}" + (f"|{content}" if echo else "")

    edits = []
    n_lines = len(view)
    for h in hunks0:
        s, c = h.old_range0()
        new = [t[:-1] if t.endswith("\r") else t for t in h.new()]
        if n_lines == 0:
            edits.append(HashEdit("@@ set file", [], new))
        elif c == 0:
            # Insert between line s and s+1 (1-based s); prefer an informative anchor.
            if s == 0:
                edits.append(HashEdit(f"@@ insert before {anchor(1)}", [1], new))
            elif (not informative(view[s - 1][1]) and s < n_lines and informative(view[s][1])):
                edits.append(HashEdit(f"@@ insert before {anchor(s + 1)}", [s + 1], new))
            else:
                edits.append(HashEdit(f"@@ insert after {anchor(s)}", [s], new))
        else:
            a, b = s + 1, s + c
            rng = anchor(a) if a == b else f"{anchor(a)} {anchor(b)}"
            verb = "delete" if not new else "replace"
            edits.append(HashEdit(f"@@ {verb} {rng}", [a] if a == b else [a, b], new))
    return edits


def render_hashline(path: str, edits: list[HashEdit]) -> bytes:
    out = [f"@@ file {path}\n"]
    for e in edits:
        out.append(e.directive + "\n")
        out += ["+" + l + "\n" for l in e.payload]
    return enc("".join(out))


# ------------------------------------------------------------------ whole


def render_whole(path: str, content: bytes) -> bytes:
    text = dec(content)
    runs = [len(m.group(0)) for m in re.finditer(r"`+", text)]
    fence = "`" * max(3, (max(runs) + 1) if runs else 3)
    if text and not text.endswith("\n"):
        text += "\n"
    return enc(f"{path}\n{fence}\n{text}{fence}\n")
