"""The mistakes models make in edits, injected deterministically (for benches/compare.py).

Every generator takes a `random.Random` seeded by commit, path and variant,
so a run is reproducible. Each works on the parsed hunks
(benches/compare_formats.py) and returns new hunks, or None when the mistake
cannot be made on this change (no indented hunk, no context line to misspell).

  dedent      one indentation level (a tab, or up to 4 spaces of the hunk's
              common indentation) removed from every line of a hunk, old and
              new alike: the model lost a level
  whitespace  in quoted lines (context and `-`) only: trailing whitespace
              added or removed, leading tabs written as 4 spaces or 4 spaces
              as a tab
  typo        1-2 characters substituted or deleted in 1-2 quoted lines (never
              a blank line; never making the line equal to a line of the file)
  counts      each hunk's `@@` counts off by one or two (at least one hunk)
  invent      a context line the file does not have, written mid-quote (between
              two quoted lines of one hunk, in old and new alike), indented as
              its neighbour: the model remembered a line that is not there

And the checks of whether the input still determines the answer:
`occurrences` counts where a hunk's old lines stand in a file, under a
normalisation of each line; `intact_once` whether the lines a typo left
intact still stand at one place only.
"""

from __future__ import annotations

import copy
import random

from compare_formats import Hunk, Line


def _split_cr(text: str) -> tuple[str, str]:
    return (text[:-1], "\r") if text.endswith("\r") else (text, "")


def _indent(text: str) -> str:
    return text[:len(text) - len(text.lstrip(" \t"))]


def dedent(hunks: list[Hunk]) -> list[Hunk] | None:
    out = copy.deepcopy(hunks)
    changed = False
    for h in out:
        lines = [_split_cr(l.text)[0] for l in h.lines]
        nonblank = [l for l in lines if l.strip()]
        if not nonblank:
            continue
        common = _indent(nonblank[0])
        for l in nonblank[1:]:
            ind = _indent(l)
            k = 0
            while k < min(len(common), len(ind)) and common[k] == ind[k]:
                k += 1
            common = common[:k]
        if not common:
            continue
        if common[0] == "\t":
            cut = "\t"
        else:
            n = len(common) - len(common.lstrip(" "))
            cut = " " * min(4, n)
        if not cut:
            continue
        for l in h.lines:
            body, cr = _split_cr(l.text)
            if body.startswith(cut):
                l.text = body[len(cut):] + cr
        changed = True
    return out if changed else None


def _drift(text: str, rng: random.Random) -> str | None:
    body, cr = _split_cr(text)
    ops = ["add-trailing"]
    if body != body.rstrip():
        ops.append("strip-trailing")
    ind = _indent(body)
    if "\t" in ind:
        ops.append("tabs-to-spaces")
    if "    " in ind:
        ops.append("spaces-to-tab")
    op = rng.choice(ops)
    if op == "add-trailing":
        new = body + rng.choice([" ", "  ", "\t", "   "])
    elif op == "strip-trailing":
        new = body.rstrip()
    elif op == "tabs-to-spaces":
        new = ind.replace("\t", "    ") + body[len(ind):]
    else:
        new = ind.replace("    ", "\t") + body[len(ind):]
    return new + cr if new != body else None


def whitespace(hunks: list[Hunk], rng: random.Random) -> list[Hunk] | None:
    out = copy.deepcopy(hunks)
    quoted = [l for h in out for l in h.lines if l.tag != "+" and l.text.strip()]
    if not quoted:
        return None
    chosen = [l for l in quoted if rng.random() < 0.5] or [rng.choice(quoted)]
    changed = False
    for l in chosen:
        new = _drift(l.text, rng)
        if new is not None:
            l.text = new
            changed = True
    return out if changed else None


_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"


def _misspell(text: str, rng: random.Random) -> str:
    body, cr = _split_cr(text)
    chars = list(body)
    for _ in range(rng.choice([1, 1, 2])):
        spots = [i for i, ch in enumerate(chars) if not ch.isspace()]
        if not spots:
            break
        i = rng.choice(spots)
        if rng.random() < 0.5 and len(spots) > 1:
            del chars[i]
        else:
            chars[i] = rng.choice([c for c in _ALPHABET if c != chars[i]])
    return "".join(chars) + cr


def typo(hunks: list[Hunk], rng: random.Random, tags: str, file_lines: set[str]) -> list[Hunk] | None:
    """Misspell 1-2 quoted lines whose tag is in `tags` (' ' context, '-' removed)."""
    out = copy.deepcopy(hunks)
    eligible = [l for h in out for l in h.lines if l.tag in tags and l.text.strip()]
    if not eligible:
        return None
    n = min(len(eligible), rng.choice([1, 1, 2]))
    done = 0
    for l in rng.sample(eligible, n):
        for _ in range(8):
            new = _misspell(l.text, rng)
            key = _split_cr(new)[0].rstrip()
            if new != l.text and new.strip() and key not in file_lines:
                l.text = new
                done += 1
                break
    return out if done else None


def counts(hunks: list[Hunk], rng: random.Random) -> list[Hunk] | None:
    out = copy.deepcopy(hunks)
    # A count of 0 says where a pure insertion or deletion goes: it is left alone.
    countable = [h for h in out if h.old_count() and h.new_count()]
    if not countable:
        return None
    picked = [h for h in countable if rng.random() < 0.5] or [rng.choice(countable)]
    for h in picked:
        oc, nc = h.old_count(), h.new_count()
        which = rng.choice(["old", "new", "both"])
        d = rng.choice([-2, -1, 1, 2])
        if which in ("old", "both"):
            oc = oc + d if oc + d > 0 else oc + abs(d)
        if which in ("new", "both"):
            nc = nc + d if nc + d > 0 else nc + abs(d)
        h.counts = (oc, nc)
    return out


_INVENTED = (
    "result = compute(value)",
    "if (ready) { flush(); }",
    "return self.cache.get(key)",
    "let state = State::default();",
    "log.debug(\"checkpoint reached\")",
    "total += item.size;",
    "assert len(items) > 0",
    "# keep the previous behaviour for now",
)


def invent(hunks: list[Hunk], rng: random.Random, file_lines: set[str]) -> list[Hunk] | None:
    """Insert one invented context line between two quoted lines of one hunk.

    The line stands in no line of the file (`file_lines`: the file's lines,
    right-stripped), so no reading of the quote finds it."""
    out = copy.deepcopy(hunks)
    # (hunk, index): a gap with a quoted (context or `-`) line on each side.
    spots = [(h, i) for h in out for i in range(1, len(h.lines))
             if h.lines[i - 1].tag != "+" and h.lines[i].tag != "+"]
    if not spots:
        return None
    h, i = spots[rng.randrange(len(spots))]
    below = h.lines[i]
    body, cr = _split_cr(below.text if below.text.strip() else h.lines[i - 1].text)
    for text in rng.sample(_INVENTED, len(_INVENTED)):
        line = _indent(body) + text
        if line.rstrip() not in file_lines:
            h.lines.insert(i, Line(" ", line + cr))
            return out
    return None


# ------------------------------------------------------------------ determined?


def norm_exact(l: str) -> str:
    return l[:-1] if l.endswith("\r") else l


def norm_space(l: str) -> str:
    return " ".join(l.split())


def occurrences(file_lines: list[str], block: list[str], norm=norm_exact) -> int:
    """How many places the lines `block` stand at in `file_lines`, both normalised by `norm`."""
    if not block:
        return 1
    f = [norm(l) for l in file_lines]
    b = [norm(l) for l in block]
    n = len(b)
    first = b[0]
    return sum(1 for i in range(len(f) - n + 1) if f[i] == first and f[i:i + n] == b)


def intact_once(file_lines: list[str], hunks: list[Hunk], spoiled: list[Hunk]) -> bool:
    """Whether each hunk's quoted lines the mistake left intact still say where it goes.

    The lines of `spoiled` (a misspelled copy of `hunks`, line for line) that
    equal their original, non-blank, taken with their offsets in the old side,
    must stand at exactly one place of the file. A quote whose intact lines
    are only `}` and `    }` (the rest misspelled) says nothing the file does
    not have twenty times; a position (a diff's line number) is a hint, never
    a place of its own (edit-formats/locate.md), so it does not count here.
    """
    f = [norm_exact(l) for l in file_lines]
    for h, sp in zip(hunks, spoiled):
        old = [l for l in h.lines if l.tag != "+"]
        new = [l for l in sp.lines if l.tag != "+"]
        if len(old) != len(new):
            return False
        pattern = [(i, norm_exact(o.text)) for i, (o, n) in enumerate(zip(old, new))
                   if o.text == n.text and o.text.strip()]
        if not pattern:
            return False
        first_i, first = pattern[0]
        hits = 0
        for p in range(len(f) - len(old) + 1):
            if f[p + first_i] == first and all(f[p + i] == t for i, t in pattern):
                hits += 1
                if hits > 1:
                    return False
        if hits != 1:
            return False
    return True

