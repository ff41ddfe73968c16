//! Splice: turn "this needle, matched here, becomes that" into line replacements
//! that keep every byte the model did not mean to change.
//!
//! Every text-locating format describes a change as a sequence of [`Op`]s over
//! its needle: keep needle line *i*, or add a new line (needle lines that are
//! not kept are removed). Search/replace derives the ops by diffing SEARCH
//! against REPLACE; a unified diff states them with ` `, `-` and `+`.
//!
//! Given the [`Match`] (which document line each needle line stands for), a
//! kept line keeps the **document's** bytes — its indentation, trailing
//! whitespace and Unicode punctuation — even when it was matched at a tolerant
//! tier. Only added lines are written from the model's text, re-indented by
//! [`Reindent`] when the match found the block at another indentation.
//!
//! Invariant: the replacements produced are disjoint, sorted, and lie inside
//! the match's range; document lines between two kept lines that the needle
//! never mentioned (blank-line drift) stay untouched.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::matcher::{Match, TAB_WIDTHS, indent_width, split_indent};
use crate::text::{Document, Eol};

/// One step of a change over a needle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Needle line `i` stays (its document line keeps its bytes).
    Keep(usize),
    /// A new line, in the model's words.
    Add(String),
}

/// One run of a line diff: `old` lines become `new` lines (equal or changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRun {
    /// Whether the lines are unchanged.
    pub equal: bool,
    /// Range of old lines.
    pub old: Range<usize>,
    /// Range of new lines.
    pub new: Range<usize>,
}

/// Above this many line pairs (old middle × new middle) the line diff
/// takes the middle as one replacement instead of searching for the shortest diff.
const DIFF_CELLS: usize = 1 << 24;

/// A line diff (Patience, via `similar`) as consecutive runs.
///
/// Positions are counted here from the runs' lengths: `similar` reports the
/// index fields of its insert and delete ops loosely (an insert after an
/// equal run can name an earlier old index), so they are never read.
pub fn line_diff<A: AsRef<str>, B: AsRef<str>>(old: &[A], new: &[B]) -> Vec<DiffRun> {
    let old: Vec<&str> = old.iter().map(AsRef::as_ref).collect();
    let new: Vec<&str> = new.iter().map(AsRef::as_ref).collect();
    // The lines both ends share are equal runs outright: only the middle is
    // diffed (an edit of a few lines in a large file costs comparisons, not
    // the diff's hashing of every line).
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_mid, new_mid) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    diff_middle(old_mid, new_mid, head, tail)
}

/// [`line_diff`] of two documents' lines, the same runs, without comparing
/// or collecting the lines the two texts share at either end: those are
/// found by comparing the texts' bytes in blocks, and only the lines between
/// are diffed line by line (a small edit of a large file costs a pass of
/// block compares, not a comparison and a slice per line).
pub fn doc_line_diff(old: &Document, new: &Document) -> Vec<DiffRun> {
    let (a, b) = (old.text().as_bytes(), new.text().as_bytes());
    let (n_old, n_new) = (old.line_count(), new.line_count());
    let both = n_old.min(n_new);
    // Head: the lines whose bytes, ending included, lie in the common prefix
    // are equal in both (their endings are the same bytes); a last line
    // without an ending may go on in the other text, so it is compared.
    let prefix = common_prefix(a, b);
    let mut head = first_line_where(n_old, |i| old.byte_range(i..i + 1).end > prefix).min(both);
    if head > 0 && old.eol(head - 1) == crate::text::Eol::None {
        head -= 1;
    }
    while head < both && old.line(head) == new.line(head) {
        head += 1;
    }
    // Tail, among the lines after the head: a line that starts after a byte
    // of the common suffix (the ending before it) is the same line in both.
    let suffix = common_suffix(a, b);
    let limit = (n_old - head).min(n_new - head);
    // (The byte before `start` is in the suffix: `start - 1 >= len - suffix`.)
    let from = first_line_where(n_old, |i| old.byte_range(i..i + 1).start > a.len() - suffix);
    let mut tail = (n_old - from).min(limit);
    while tail < limit && old.line(n_old - 1 - tail) == new.line(n_new - 1 - tail) {
        tail += 1;
    }
    let old_mid: Vec<&str> = (head..n_old - tail).map(|i| old.line(i)).collect();
    let new_mid: Vec<&str> = (head..n_new - tail).map(|i| new.line(i)).collect();
    diff_middle(&old_mid, &new_mid, head, tail)
}

/// The first of `0..n` for which `past` holds (`past` is false, then true).
fn first_line_where(n: usize, past: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if past(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The length of the longest common prefix of `a` and `b`, compared a block at a time.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// The length of the longest common suffix of `a` and `b`, compared a block at a time.
pub(crate) fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let (la, lb) = (a.len(), b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[la - i - BLOCK..la - i] == b[lb - i - BLOCK..lb - i] {
        i += BLOCK;
    }
    i + a[..la - i]
        .iter()
        .rev()
        .zip(b[..lb - i].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The runs of a line diff whose `head` first and `tail` last lines are
/// equal, `old_mid` and `new_mid` being the lines between.
fn diff_middle(old_mid: &[&str], new_mid: &[&str], head: usize, tail: usize) -> Vec<DiffRun> {
    // Where the two middles share no unique line, the diff falls back to
    // Myers, whose cost grows with both lengths times their difference: two
    // 50,000-line blocks with nothing in common would take minutes. Past a
    // bound the middle is one replacement, a correct diff if not a minimal one.
    // A larger middle is first cut at the lines that occur once on each
    // side (many scattered hunks in a large file leave a middle of tens of
    // thousands of lines, nearly all equal), and each gap between those is
    // diffed on its own, under the same bound.
    let mid = if old_mid.len().saturating_mul(new_mid.len()) > DIFF_CELLS {
        anchored(old_mid, new_mid)
    } else {
        diff_ops(old_mid, new_mid)
    };
    let ops = std::iter::once((true, head, head))
        .chain(mid)
        .chain(std::iter::once((true, tail, tail)));
    let (mut o, mut n) = (0, 0);
    let mut runs: Vec<DiffRun> = Vec::new();
    for (equal, ol, nl) in ops {
        if ol == 0 && nl == 0 {
            continue;
        }
        match runs.last_mut() {
            // Adjacent changed runs (a delete then an insert) are one
            // replacement; adjacent equal runs (a gap's end and an anchor) one run.
            Some(last) if equal == last.equal => {
                last.old.end += ol;
                last.new.end += nl;
            }
            _ => runs.push(DiffRun {
                equal,
                old: o..o + ol,
                new: n..n + nl,
            }),
        }
        o += ol;
        n += nl;
    }
    runs
}

/// The middle's ops as (equal, old lines, new lines): Patience, or one
/// replacement past [`DIFF_CELLS`].
fn diff_ops(old: &[&str], new: &[&str]) -> Vec<(bool, usize, usize)> {
    if old.is_empty() && new.is_empty() {
        return Vec::new();
    }
    // Most gaps between anchors are unchanged: no diff to set up for them.
    if old == new {
        return vec![(true, old.len(), old.len())];
    }
    if old.len().saturating_mul(new.len()) > DIFF_CELLS {
        return vec![(false, old.len(), new.len())];
    }
    similar::capture_diff_slices(similar::Algorithm::Patience, old, new)
        .iter()
        .map(|op| {
            let equal = matches!(op, similar::DiffOp::Equal { .. });
            (equal, op.old_range().len(), op.new_range().len())
        })
        .collect()
}

/// A hasher for keys that are hashes already (xxh3 of a line).
#[derive(Default)]
struct Prehashed(u64);

impl std::hash::Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// [`diff_ops`] of a middle too large for it whole: the lines that occur
/// exactly once in `old` and once in `new` (equal for certain: compared,
/// not only hashed) pair up; the longest run of pairs in order on both
/// sides are fixed points (Patience's anchors), and the gaps between them
/// are diffed one by one.
fn anchored(old: &[&str], new: &[&str]) -> Vec<(bool, usize, usize)> {
    let pairs = unique_anchors(
        old.len(),
        new.len(),
        |i| old[i].as_bytes(),
        |j| new[j].as_bytes(),
    );
    let mut out = Vec::new();
    let (mut o, mut n) = (0, 0);
    for (ao, an) in pairs {
        out.extend(diff_ops(&old[o..ao], &new[n..an]));
        out.push((true, 1, 1));
        (o, n) = (ao + 1, an + 1);
    }
    out.extend(diff_ops(&old[o..], &new[n..]));
    out
}

/// Patience's anchors of two line sequences (`n_old` lines, line `i` is
/// `old(i)`; the same for `new`): the lines that occur exactly once in each
/// pair up (equal for certain: compared, not only hashed), and of those the
/// longest run in the same order on both sides. Also the syntax guard's
/// line diff.
pub(crate) fn unique_anchors<'a, 'b>(
    n_old: usize,
    n_new: usize,
    old: impl Fn(usize) -> &'a [u8],
    new: impl Fn(usize) -> &'b [u8],
) -> Vec<(usize, usize)> {
    use std::collections::HashMap;
    use std::hash::BuildHasherDefault;
    use xxhash_rust::xxh3::xxh3_64;
    // Per line hash: (times in old, times in new, where in new).
    let mut seen: HashMap<u64, (u32, u32, usize), BuildHasherDefault<Prehashed>> =
        HashMap::with_capacity_and_hasher(n_old, BuildHasherDefault::default());
    let hashes: Vec<u64> = (0..n_old).map(|i| xxh3_64(old(i))).collect();
    for &h in &hashes {
        let e = seen.entry(h).or_insert((0, 0, 0));
        e.0 = e.0.saturating_add(1);
    }
    for j in 0..n_new {
        if let Some(e) = seen.get_mut(&xxh3_64(new(j))) {
            e.1 = e.1.saturating_add(1);
            e.2 = j;
        }
    }
    // In the old side's order (no sort): each old line looked up again.
    let pairs: Vec<(usize, usize)> = hashes
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            let e = seen.get(h)?;
            (e.0 == 1 && e.1 == 1 && old(i) == new(e.2)).then_some((i, e.2))
        })
        .collect();
    in_order(&pairs)
}

/// The longest subsequence of `pairs` (sorted by their first) whose seconds
/// increase too: patience sorting, with links back to rebuild it.
fn in_order(pairs: &[(usize, usize)]) -> Vec<(usize, usize)> {
    // `tails[k]`: the pair ending the best subsequence of length k + 1 so far.
    let mut tails: Vec<usize> = Vec::new();
    let mut back: Vec<Option<usize>> = Vec::with_capacity(pairs.len());
    for &(_, y) in pairs {
        let k = tails.partition_point(|&t| pairs[t].1 < y);
        back.push(k.checked_sub(1).map(|k| tails[k]));
        let i = back.len() - 1;
        if k == tails.len() {
            tails.push(i);
        } else {
            tails[k] = i;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(i) = at {
        out.push(pairs[i]);
        at = back[i];
    }
    out.reverse();
    out
}

/// The ops that turn `old` into `new`, by a line diff.
pub fn ops_from_diff<A: AsRef<str>, B: AsRef<str>>(old: &[A], new: &[B]) -> Vec<Op> {
    let mut ops = Vec::with_capacity(new.len());
    for run in line_diff(old, new) {
        if run.equal {
            ops.extend(run.old.map(Op::Keep));
        } else {
            ops.extend(new[run.new].iter().map(|l| Op::Add(l.as_ref().to_owned())));
        }
    }
    ops
}

/// Re-indents the model's new lines to sit where the match found the block.
///
/// Built from the matched line pairs: each needle indentation width maps to the
/// document line's own leading-whitespace string (tabs and alignment spaces
/// included). A new line at a width the needle used takes that string; a
/// deeper line takes the nearest shallower string plus the difference in the
/// file's indent unit (tabs if the matched lines indent with tabs) — unless
/// most lines were quoted at the file's own widths and none shows the model
/// writing that line's kind of whitespace for the other: then the line is
/// the model's own, as written. A whitespace-only line is shifted too.
#[derive(Debug, Clone)]
pub struct Reindent {
    /// The file's indentation for a quoted indentation, byte for byte (pairs
    /// at the common shift): a file that indents some lines with a tab and
    /// others with four spaces has two strings of one width.
    exact: Vec<(String, String)>,
    map: BTreeMap<usize, String>,
    /// The shift most matched lines share, for widths the map lacks.
    offset: i64,
    tabs: bool,
    /// The tab width under which the model's indentation lines up with the file's.
    tab: usize,
    identity: bool,
    /// Whether most matched lines were quoted at the file's own width (a
    /// shift of 0: only the characters differ, or a typo moved one line).
    widths_agree: bool,
    /// Whether a matched line was quoted with spaces for the file's tab
    /// (`spaces_for_tabs`), or with a tab for the file's spaces.
    spaces_for_tabs: bool,
    tabs_for_spaces: bool,
    /// Whether a matched line was quoted indented with a tab; with a space.
    quoted_tabs: bool,
    quoted_spaces: bool,
    /// The file's blank lines where the model quoted them empty, when they
    /// are all one whitespace-only string (a file whose editor keeps a
    /// block's indentation on its blank lines): what an empty new line
    /// stands for there.
    blank: Option<String>,
}

impl Reindent {
    /// Learns the indentation mapping from the matched pairs.
    pub fn new<S: AsRef<str>>(doc: &Document, needle: &[S], m: &Match) -> Reindent {
        let pairs: Vec<(&str, &str)> = m
            .alignment
            .iter()
            .enumerate()
            .filter_map(|(i, di)| {
                let (n_ind, n_body) = split_indent(needle[i].as_ref());
                let (d_ind, d_body) = split_indent(doc.line((*di)?));
                (!n_body.trim().is_empty() && !d_body.trim().is_empty()).then_some((n_ind, d_ind))
            })
            .collect();
        let tabs = pairs.iter().any(|(_, d)| d.starts_with('\t'));
        let identity = pairs.iter().all(|(n, d)| n == d);
        if identity {
            // Lines are written as given (see `apply`): nothing to learn (a
            // hunk of a git diff is found at its own indentation).
            return Reindent {
                exact: Vec::new(),
                map: BTreeMap::new(),
                offset: 0,
                tabs,
                tab: TAB_WIDTHS.first().copied().unwrap_or(4),
                identity,
                widths_agree: true,
                spaces_for_tabs: false,
                tabs_for_spaces: false,
                quoted_tabs: true,
                quoted_spaces: true,
                blank: None,
            };
        }
        // The tab width that makes the offsets most uniform (ties: the first tried).
        let offsets_at = |tab: usize| -> Vec<i64> {
            let mut v: Vec<i64> = pairs
                .iter()
                .map(|(n, d)| indent_width(d, tab) as i64 - indent_width(n, tab) as i64)
                .collect();
            v.sort_unstable();
            v
        };
        let distinct = |v: &[i64]| v.windows(2).filter(|w| w[0] != w[1]).count();
        let tab = TAB_WIDTHS
            .iter()
            .copied()
            .min_by_key(|&t| distinct(&offsets_at(t)))
            .unwrap_or(4);
        let offsets = offsets_at(tab);
        // The offset most pairs share (ties: the smallest shift) maps first.
        // Another pair maps only where it keeps the map in order — deeper in
        // the needle, deeper in the file — so that one quoted line that lost
        // its indentation (`}` typed at column 0 for the file's `        }`)
        // does not decide where new lines at that width go, while a block
        // retyped in another indent unit (2 → 4 columns) still maps level by
        // level.
        let common = {
            let mut best: Option<(usize, i64)> = None;
            for w in offsets.chunk_by(|a, b| a == b) {
                let better = best.is_none_or(|(count, off)| {
                    w.len() > count || (w.len() == count && w[0].abs() < off.abs())
                });
                if better {
                    best = Some((w.len(), w[0]));
                }
            }
            best.map_or(0, |(_, off)| off)
        };
        let shift = |n: &str, d: &str| indent_width(d, tab) as i64 - indent_width(n, tab) as i64;
        let mut exact: Vec<(String, String)> = Vec::new();
        for (n, d) in pairs.iter().filter(|(n, d)| shift(n, d) == common) {
            if !exact.iter().any(|(e, _)| e == n) {
                exact.push(((*n).to_owned(), (*d).to_owned()));
            }
        }
        let mut map: BTreeMap<usize, String> = BTreeMap::new();
        for (n, d) in pairs.iter().filter(|(n, d)| shift(n, d) == common) {
            map.entry(indent_width(n, tab))
                .or_insert_with(|| (*d).to_owned());
        }
        for (n, d) in pairs.iter().filter(|(n, d)| shift(n, d) != common) {
            let (w, dw) = (indent_width(n, tab), indent_width(d, tab));
            // Most lines quoted at the file's own indentation and this one
            // at column 0 for an indented file line: it lost its
            // indentation, and a new line the model put at column 0 means
            // column 0 (a retype to another indent unit keeps column 0 at 0).
            if common == 0 && w == 0 {
                continue;
            }
            // A line quoted at the file's own width (copied exactly) may share
            // a file width with a shallower quoted one; a line the model
            // shifted may not: that is the lost-indentation line.
            let exact = shift(n, d) == 0;
            let in_order = map.range(..w).all(|(_, s)| {
                let sw = indent_width(s, tab);
                sw < dw || exact && sw == dw
            }) && map.range(w + 1..).all(|(_, s)| {
                let sw = indent_width(s, tab);
                sw > dw || exact && sw == dw
            });
            if in_order {
                map.entry(w).or_insert_with(|| (*d).to_owned());
            }
        }
        let widths_agree = offsets.iter().filter(|o| **o == 0).count() * 2 > offsets.len();
        let mut quoted_empty = m
            .alignment
            .iter()
            .enumerate()
            .filter(|(i, _)| needle[*i].as_ref().is_empty())
            .filter_map(|(_, di)| Some(doc.line((*di)?)));
        let blank = quoted_empty.next().and_then(|first| {
            (!first.is_empty() && first.trim().is_empty() && quoted_empty.all(|l| l == first))
                .then(|| first.to_owned())
        });
        Reindent {
            exact,
            map,
            offset: common,
            tabs,
            tab,
            identity,
            widths_agree,
            spaces_for_tabs: pairs
                .iter()
                .any(|(n, d)| d.contains('\t') && !n.contains('\t')),
            tabs_for_spaces: pairs
                .iter()
                .any(|(n, d)| n.contains('\t') && !d.contains('\t')),
            quoted_tabs: pairs.iter().any(|(n, _)| n.contains('\t')),
            quoted_spaces: pairs.iter().any(|(n, _)| n.contains(' ')),
            blank,
        }
    }

    /// Whether lines are written exactly as the model gave them.
    pub fn is_identity(&self) -> bool {
        self.identity
    }

    /// The line as it should be written.
    pub fn apply(&self, line: &str) -> String {
        if self.identity {
            return line.to_owned();
        }
        // A whitespace-only line's whitespace is its indentation, shifted
        // like any other (a blank line a commit indents with its block),
        // when it is of a kind the quoted lines indent with: a lone tab
        // among lines quoted with spaces is no level of theirs, and stays.
        // An empty line stays empty — unless the model quoted the file's
        // blank lines here empty, and they all hold one whitespace-only
        // string: then that is what an empty line stands for.
        if line.is_empty() {
            return self.blank.clone().unwrap_or_default();
        }
        let (ind, body) = split_indent(line);
        let foreign =
            ind.contains('\t') && !self.quoted_tabs || ind.contains(' ') && !self.quoted_spaces;
        if body.is_empty() && foreign {
            return line.to_owned();
        }
        if let Some((_, s)) = self.exact.iter().find(|(n, _)| n == ind) {
            return format!("{s}{body}");
        }
        let w = indent_width(ind, self.tab);
        if let Some(s) = self.map.get(&w) {
            return format!("{s}{body}");
        }
        // The model quotes the file at its own widths, and nothing shows it
        // writing this line's kind of whitespace for the other (spaces for
        // the file's tabs, tabs for its spaces): a width no quoted line had
        // is the model's own, as written (a file that mixes tabs and spaces
        // line by line).
        let converted =
            ind.contains(' ') && self.spaces_for_tabs || ind.contains('\t') && self.tabs_for_spaces;
        if self.widths_agree && !converted {
            return line.to_owned();
        }
        if let Some((&w0, base)) = self.map.range(..w).next_back() {
            return format!("{base}{}{body}", self.render(w - w0));
        }
        let target = (w as i64 + self.offset).max(0) as usize;
        format!("{}{body}", self.render(target))
    }

    fn render(&self, width: usize) -> String {
        if self.tabs {
            format!(
                "{}{}",
                "\t".repeat(width / self.tab),
                " ".repeat(width % self.tab)
            )
        } else {
            " ".repeat(width)
        }
    }
}

/// A replacement of document lines, before it joins a [`TextEdit`](crate::edit::TextEdit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// 0-based, half-open range of document lines.
    pub range: Range<usize>,
    /// The lines that replace them.
    pub lines: Vec<String>,
    /// The endings the edit itself states for `lines`, taken as they are
    /// (see `splice::state_endings`); `None`: each takes the ending of the line it
    /// replaces, as `Document::apply` chooses.
    pub eols: Option<Vec<Eol>>,
}

impl Piece {
    /// Whether it changes `doc`: a piece that rewrites lines to themselves
    /// (a tolerant match of lines the edit keeps) is no change at all.
    pub(crate) fn changes(&self, doc: &Document) -> bool {
        self.range.len() != self.lines.len()
            || self
                .range
                .clone()
                .zip(&self.lines)
                .any(|(i, l)| doc.line(i) != l)
            || self.eols.as_ref().is_some_and(|eols| {
                // A last line without an ending gets one only through the
                // final-newline state.
                self.range
                    .clone()
                    .zip(eols)
                    .any(|(i, e)| ![*e, Eol::None].contains(&doc.eol(i)))
            })
    }
}

/// Gives `pieces` (from [`splice`], in order) the endings `eols`, one per
/// line they add, in order; nothing when the counts differ.
pub(crate) fn state_endings(pieces: &mut [Piece], eols: &[Eol]) {
    if pieces.iter().map(|p| p.lines.len()).sum::<usize>() != eols.len() {
        return;
    }
    let mut rest = eols;
    for p in pieces {
        let (mine, after) = rest.split_at(p.lines.len());
        p.eols = Some(mine.to_vec());
        rest = after;
    }
}

/// Turns `ops` over a matched needle into minimal replacements of document lines.
pub fn splice<S: AsRef<str>>(doc: &Document, needle: &[S], m: &Match, ops: &[Op]) -> Vec<Piece> {
    let reindent = Reindent::new(doc, needle, m);
    let kept: Vec<bool> = {
        let mut k = vec![false; needle.len()];
        for op in ops {
            if let Op::Keep(i) = op {
                k[*i] = true;
            }
        }
        k
    };
    // Document lines that stand for a removed needle line must go.
    let mut removed = vec![false; m.range.len()];
    for (i, di) in m.alignment.iter().enumerate() {
        if let (Some(di), false) = (*di, kept[i]) {
            removed[di - m.range.start] = true;
        }
    }
    let mut pieces = Vec::new();
    let mut cursor = m.range.start;
    let mut pending: Vec<String> = Vec::new();
    let flush = |upto: usize, pending: &mut Vec<String>, cursor: usize, pieces: &mut Vec<Piece>| {
        let touches_removed = (cursor..upto).any(|d| removed[d - m.range.start]);
        if !pending.is_empty() || touches_removed {
            pieces.push(Piece {
                range: cursor..upto,
                lines: std::mem::take(pending),
                eols: None,
            });
        }
    };
    for op in ops {
        match op {
            Op::Add(line) => pending.push(reindent.apply(line)),
            Op::Keep(i) => {
                // A kept needle line the document does not have (a spurious blank) adds nothing.
                let Some(di) = m.alignment[*i] else { continue };
                flush(di, &mut pending, cursor, &mut pieces);
                cursor = di + 1;
            }
        }
    }
    flush(m.range.end, &mut pending, cursor, &mut pieces);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A middle past the diff's bound (scattered hunks in a large file) is
    /// cut at the lines each side has once: its diff is a true diff (equal
    /// runs hold equal lines, the runs cover both sides in order), and only
    /// the changed lines, not the whole middle, are in changed runs. Lines
    /// that recur (blank ones, braces) and lines moved out of order stay
    /// correct.
    #[test]
    fn a_large_middle_is_cut_at_unique_lines() {
        let mut seed = 3u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let old: Vec<String> = (0..9000)
            .map(|i| match i % 4 {
                0 => format!("fn f{i}() {{"),
                1 => "    x();".to_owned(),
                2 => "}".to_owned(),
                _ => String::new(),
            })
            .collect();
        let mut new = old.clone();
        // Scattered changes, from the end so the indices hold: a changed
        // line, an inserted one, a removed one, and a swap of two far lines.
        let mut at: Vec<usize> = (0..40).map(|_| next(8990)).collect();
        at.sort_unstable();
        for &i in at.iter().rev() {
            match next(3) {
                0 => new[i] = format!("{} // changed", new[i]),
                1 => new.insert(i, "let inserted = 1;".to_owned()),
                _ => {
                    new.remove(i);
                }
            }
        }
        new.swap(100, 8000);
        let runs = line_diff(&old, &new);
        let (mut o, mut n, mut changed) = (0, 0, 0);
        for r in &runs {
            assert_eq!((r.old.start, r.new.start), (o, n), "{runs:?}");
            if r.equal {
                assert_eq!(r.old.len(), r.new.len());
                assert!(
                    r.old
                        .clone()
                        .zip(r.new.clone())
                        .all(|(i, j)| old[i] == new[j])
                );
            } else {
                changed += r.old.len() + r.new.len();
            }
            (o, n) = (r.old.end, r.new.end);
        }
        assert_eq!((o, n), (old.len(), new.len()));
        assert!(changed < 400, "{changed} lines in changed runs");
        // The documents' diff is the same.
        let text = |lines: &[String]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let (a, b) = (
            Document::from_text(&text(&old)),
            Document::from_text(&text(&new)),
        );
        assert_eq!(doc_line_diff(&a, &b), runs);
    }

    /// The document diff is the line diff of the documents' lines, whatever
    /// the endings, final newlines and where the texts differ.
    #[test]
    fn doc_line_diff_is_the_line_diff() {
        let pieces = ["a", "b", "\n", "\r\n", "\r", "", "ab\n", "x\n"];
        let mut seed = 11u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..3000 {
            let mut old = String::new();
            for _ in 0..next(12) {
                old.push_str(pieces[next(pieces.len())]);
            }
            // The new text: the old one with a piece replaced, inserted or cut.
            let mut new = old.clone();
            for _ in 0..next(3) {
                let at = new
                    .char_indices()
                    .map(|(i, _)| i)
                    .nth(next(new.len() + 1))
                    .unwrap_or(new.len());
                match next(3) {
                    0 => new.insert_str(at, pieces[next(pieces.len())]),
                    1 => {
                        new.truncate(at);
                    }
                    _ => new = format!("{}{}", pieces[next(pieces.len())], &new[at..]),
                }
            }
            let (a, b) = (Document::from_text(&old), Document::from_text(&new));
            let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
            assert_eq!(
                doc_line_diff(&a, &b),
                line_diff(&la, &lb),
                "{old:?} -> {new:?}"
            );
        }
        // Long shared ends, past a compare block.
        let body: String = (0..400).map(|i| format!("line {i}\n")).collect();
        let edited = body.replace("line 200\n", "line 200 changed\n");
        let (a, b) = (Document::from_text(&body), Document::from_text(&edited));
        let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
        assert_eq!(doc_line_diff(&a, &b), line_diff(&la, &lb));
    }
    use crate::matcher::{MatchOptions, locate};

    fn run(file: &str, search: &str, replace: &str) -> String {
        let doc = Document::from_text(file);
        let s: Vec<&str> = search.lines().collect();
        let r: Vec<&str> = replace.lines().collect();
        let m = locate(&doc, &s, None, &MatchOptions::default()).unwrap();
        let mut b = crate::edit::TextEditBuilder::new();
        for p in splice(&doc, &s, &m, &ops_from_diff(&s, &r)) {
            b.replace(p.range, p.lines, 0);
        }
        doc.apply(&b.finish().unwrap()).text().to_owned()
    }

    #[test]
    fn keeps_file_bytes_on_context_lines() {
        let out = run(
            "def f():  \n    a = 1   \n    b = 2\n",
            "def f():\n    a = 1\n    b = 2",
            "def f():\n    a = 1\n    b = 3",
        );
        assert_eq!(out, "def f():  \n    a = 1   \n    b = 3\n");
    }

    #[test]
    fn reindents_with_file_strings() {
        let out = run(
            "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n",
            "if x {\n    y()\n}",
            "if x {\n    y()\n    z()\n        deeper()\n}",
        );
        assert_eq!(
            out,
            "func f() {\n\tif x {\n\t\ty()\n\t\tz()\n\t\t\tdeeper()\n\t}\n}\n"
        );
    }

    #[test]
    fn alignment_spaces_survive() {
        let file = "\tcall(a,\n\t     b)\n";
        let out = run(file, "    call(a,\n         b)", "    call(x,\n         b)");
        assert_eq!(out, "\tcall(x,\n\t     b)\n");
    }

    /// Regression (found by the render→parse→apply property): `similar`'s
    /// insert ops after an equal run named an earlier index, so the inserted
    /// lines were taken from the wrong place.
    #[test]
    fn diff_positions_are_counted_not_trusted() {
        let old = ["    print(\"hi\")", "x = 1  ", ""];
        let new = ["", "", "", "", ""];
        let ops = ops_from_diff(&old, &new);
        let added = ops.iter().filter(|o| matches!(o, Op::Add(_))).count();
        let kept = ops.iter().filter(|o| matches!(o, Op::Keep(_))).count();
        assert_eq!((added, kept), (4, 1));
        let runs = line_diff(&old, &new);
        assert_eq!(runs.last().map(|r| (r.old.end, r.new.end)), Some((3, 5)));
    }

    #[test]
    fn blank_drift_is_left_alone() {
        let out = run("a\n\nb\nc\n", "a\nb\nc", "a\nb\nC");
        assert_eq!(out, "a\n\nb\nC\n");
    }
}
