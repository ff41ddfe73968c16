#!/usr/bin/env python3
"""Which crates fill the `lancet` binary's `.data.rel.ro`, the pages the
dynamic loader writes at every start.

A position-independent executable's pointers in read-only data are relocated
by the loader before `main` (DT_RELR): every page of `.data.rel.ro` that holds
one is written, a copy-on-write page fault each, whether or not the process
ever reads it. This script walks those relocations and attributes each
relocated word, and the bytes up to the next one, to a crate:

- a panic `Location` (pointer to a source path, its length): the crate the
  path names (`name-1.2.3/src/...`; `/rustc/`, `library/`: std; `src/`:
  lancet);
- a function pointer (vtables): the crate of the function's symbol, the
  implementing type's crate for `<T as Trait>` (serde's `Expected` vtables,
  one per derived visitor, are a row of their own);
- a word inside a named data symbol (C grammars, `ring`'s statics): that
  symbol's owner;
- a pointer to DER (`0x30`/`0x31`): webpki-roots' trust anchors;
- anything else (tables of `&str`, `&[T]`): the crate of the nearest
  attributed word before it (fat LTO emits one crate's data together), so a
  big table shows as its crate's row; the five largest such runs are listed
  with samples of what they point at, to check by eye.

Usage: benches/process_relro.py [path/to/lancet]   (needs binutils' `nm`)
Owns nothing the build uses; a measuring tool like process_cpuid.sh.
"""

import bisect
import collections
import re
import struct
import subprocess
import sys

PAGE = 4096


def sections(data):
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [
        struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        for i in range(shnum)
    ]
    stroff = raw[shstrndx][4]

    def name(n):
        return data[stroff + n : data.index(b"\0", stroff + n)].decode()

    return {name(s[0]): s for s in raw}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "target/release/lancet"
    data = open(path, "rb").read()
    secs = sections(data)
    loaded = [(n, s) for n, s in secs.items() if s[3] and s[1] != 8]  # not NOBITS

    def sec_of(a):
        for n, s in secs.items():
            if s[3] and s[3] <= a < s[3] + s[5]:
                return n
        return None

    def read(a, n):
        for _, s in loaded:
            if s[3] <= a < s[3] + s[5]:
                o = s[4] + a - s[3]
                return data[o : o + n]
        return b""

    def word(a):
        b = read(a, 8)
        return struct.unpack("<Q", b)[0] if len(b) == 8 else 0

    # Relocated words: DT_RELR (addresses and bitmaps) and RELA relatives.
    locs = []
    if ".relr.dyn" in secs:
        s = secs[".relr.dyn"]
        base = 0
        for i in range(s[5] // 8):
            w = struct.unpack_from("<Q", data, s[4] + i * 8)[0]
            if w & 1 == 0:
                locs.append(w)
                base = w + 8
            else:
                bits, k = w >> 1, 0
                while bits:
                    if bits & 1:
                        locs.append(base + k * 8)
                    bits >>= 1
                    k += 1
                base += 63 * 8
    if ".rela.dyn" in secs:
        s = secs[".rela.dyn"]
        for i in range(s[5] // 24):
            off, info, _ = struct.unpack_from("<QQq", data, s[4] + i * 24)
            if info & 0xFFFFFFFF == 8:  # R_X86_64_RELATIVE
                locs.append(off)
    ro = secs[".data.rel.ro"]
    lo, hi = ro[3], ro[3] + ro[5]
    sel = sorted(a for a in locs if lo <= a < hi)

    syms, sized = [], []
    out = subprocess.run(
        ["nm", "-n", "-S", "-C", "--defined-only", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in out.splitlines():
        p = line.split(" ", 3)
        if len(p) == 4:
            a, size, kind, name = int(p[0], 16), int(p[1], 16), p[2], p[3]
            syms.append((a, name))
            if kind in "dD" and lo <= a < hi:
                sized.append((a, a + size, name))
        elif len(p) == 3:
            syms.append((int(p[0], 16), p[2]))
    syms.sort()
    addrs = [a for a, _ in syms]

    def sym(a):
        i = bisect.bisect_right(addrs, a) - 1
        return syms[i][1] if i >= 0 else ""

    def crate(name):
        if "serde_core::de::Expected>::fmt" in name:
            return "serde Expected vtables (derived visitors)"
        m = re.match(r"core::ptr::drop_in_place<(.*)>$", name)
        if m:
            name = m.group(1).lstrip("<&*( ")
        name = name.lstrip("<")
        if name.startswith("T as ") or name.startswith("F as "):
            name = name[5:]
        if name.startswith("ts_") or name.startswith("tree_sitter") or re.match(
            r"language\.\d+$", name
        ):
            return "tree-sitter grammars"
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
        if not m:
            return "?"
        c = m.group(1)
        return "std" if c in ("core", "alloc", "std") else c.replace("_", "-")

    path_re = re.compile(rb"([A-Za-z0-9_\-.]+?)-\d+\.\d+\.\d+[^/]*/src/")

    def classify(a):
        for s0, s1, name in sized:
            if s0 <= a < s1:
                return crate(name), True
        v = word(a)
        where = sec_of(v)
        if where == ".text":
            return crate(sym(v)), True
        if where == ".rodata":
            n = word(a + 8)
            if 0 < n < 512:
                b = read(v, n)
                m = path_re.search(b)
                if m:
                    return m.group(1).decode().replace("_", "-"), True
                if b.startswith(b"src/"):
                    return "lancet", True
                if b.startswith(b"/rustc/") or b.startswith(b"library/"):
                    return "std", True
            b = read(v, 3)
            if b[:1] in (b"0", b"1") and b[2:3] in (b"0", b"\x06"):
                return "webpki-roots", True
        return None, False

    owner = collections.Counter()
    pages = collections.defaultdict(set)
    runs, current, run_start, run_len = [], "?", None, 0
    for i, a in enumerate(sel):
        label, sure = classify(a)
        end = sel[i + 1] if i + 1 < len(sel) else hi
        if sure:
            if run_start is not None:
                runs.append((run_len, run_start, current))
                run_start, run_len = None, 0
            current = label
        else:
            label = current
            if run_start is None:
                run_start = a
            run_len += end - a
        owner[label] += end - a
        pages[label].add(a // PAGE)
    if run_start is not None:
        runs.append((run_len, run_start, current))

    first, last = lo // PAGE, (hi - 1) // PAGE
    print(f"{path}: .data.rel.ro {ro[5] / 1024:.1f} KB, {last - first + 1} pages, "
          f"{len(sel)} relocated words")
    print(f"{'crate':44s} {'KB':>7s} {'pages':>6s} {'touches':>8s}")
    for label, size in owner.most_common():
        print(f"{label:44s} {size / 1024:7.1f} {size / PAGE:6.1f} {len(pages[label]):8d}")
    print("\nlargest unlabelled runs (attributed to the crate before them):")
    for size, start, label in sorted(runs, reverse=True)[:5]:
        sample = []
        for a in [x for x in sel if start <= x < start + size][:: max(1, size // 8 // 4)][:4]:
            sample.append(read(word(a), 16))
        print(f"  {start:#x} {size / 1024:6.1f} KB -> {label}: {sample}")


if __name__ == "__main__":
    main()
