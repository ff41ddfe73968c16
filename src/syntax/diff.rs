//! The syntax guard's own line diff for its fast path: which lines of the
//! old file the edit left alone. Patience's anchors (the lines that occur
//! once in each file, in an order both share), each grown into the equal
//! lines around it, and between them a walk that, at each difference, looks
//! a short way ahead for where the two agree again.
//!
//! Owns only that diff; the guard's slow path (whole files, old errors
//! mapped to new lines) keeps [`splice::doc_line_diff`], the shortest diff,
//! so what it reports does not depend on this one. Invariant: the runs are
//! a valid diff — consecutive, covering both files, changed and equal runs
//! alternating, every equal run byte-for-byte the same lines, line endings
//! included (a line whose ending alone changed is changed). They need not
//! be the shortest: a gap between anchors the walk cannot get through is
//! one change. A coarser diff only makes the guard's slices larger, never
//! its verdict wrong (a slice must hold every changed line, and its text is
//! the file's).

use std::ops::Range;

use crate::splice::DiffRun;
use crate::text::Document;

/// How far apart (old lines skipped plus new lines skipped) the walk looks
/// for the two files to agree again after a difference: the search costs
/// up to `LOOK_AHEAD²/2` line comparisons, most of them a length check.
const LOOK_AHEAD: usize = 48;

/// Line `i` of `doc` with its ending.
fn line(doc: &Document, i: usize) -> &[u8] {
    &doc.text().as_bytes()[doc.byte_range(i..i + 1)]
}

/// The runs being built: adjacent runs of one kind are one run.
struct Runs(Vec<DiffRun>);

impl Runs {
    fn push(&mut self, equal: bool, old: Range<usize>, new: Range<usize>) {
        if old.is_empty() && new.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(last) if last.equal == equal => {
                last.old.end = old.end;
                last.new.end = new.end;
            }
            _ => self.0.push(DiffRun { equal, old, new }),
        }
    }
}

/// The line diff of `old` → `new` (see the module's invariant).
pub(super) fn runs(old: &Document, new: &Document) -> Vec<DiffRun> {
    let (n, m) = (old.line_count(), new.line_count());
    let eq = |i: usize, j: usize| line(old, i) == line(new, j);
    // The lines before the one holding the first byte where the texts
    // differ are the same lines (endings included) in both.
    let same = crate::splice::common_prefix(old.text().as_bytes(), new.text().as_bytes());
    let from = old.line_at(same).min(n.min(m));
    let head = from + (from..n.min(m)).take_while(|&i| eq(i, i)).count();
    // The lines after the head that start after a byte of the texts'
    // common suffix (the ending before them) are the same lines in both.
    let limit = (n - head).min(m - head);
    let (a, b) = (old.text().as_bytes(), new.text().as_bytes());
    let suffix = crate::splice::common_suffix(a, b);
    let (mut lo, mut hi) = (head, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if old.byte_range(mid..mid + 1).start > a.len() - suffix {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let known = (n - lo).min(limit);
    let tail = known
        + (known..limit)
            .take_while(|&k| eq(n - 1 - k, m - 1 - k))
            .count();
    let mut out = Runs(Vec::new());
    out.push(true, 0..head, 0..head);
    // Between the anchors, from where the last equal lines end.
    let (mut i, mut j) = (head, head);
    for (ai, aj) in anchors(old, new, head..n - tail, head..m - tail) {
        if ai < i || aj < j {
            continue;
        }
        // The anchor grown back over the equal lines before it.
        let (mut bi, mut bj) = (ai, aj);
        while bi > i && bj > j && eq(bi - 1, bj - 1) {
            (bi, bj) = (bi - 1, bj - 1);
        }
        walk(old, new, i..bi, j..bj, &mut out);
        // And forward.
        let (mut ei, mut ej) = (ai + 1, aj + 1);
        while ei < n - tail && ej < m - tail && eq(ei, ej) {
            (ei, ej) = (ei + 1, ej + 1);
        }
        out.push(true, bi..ei, bj..ej);
        (i, j) = (ei, ej);
    }
    walk(old, new, i..n - tail, j..m - tail, &mut out);
    out.push(true, n - tail..n, m - tail..m);
    slide(old, new, out.0)
}

/// Each block of lines only added (or only removed) moved down as far as
/// the same diff allows: while its first line is the line after it, that
/// line joins the equal lines above and the block takes the next line. Of
/// the places a diff may put a block of added tests (`    }`, a blank line,
/// `    #[test]`, …, `    }`), the last is where it is whole items before
/// the `}` that closes their module, which a slice can hold on its own.
fn slide(old: &Document, new: &Document, mut runs: Vec<DiffRun>) -> Vec<DiffRun> {
    let mut out = Runs(Vec::with_capacity(runs.len() + 1));
    for k in 0..runs.len() {
        let mut r = runs[k].clone();
        if let Some(next) = runs.get(k + 1).filter(|_| !r.equal) {
            let shift = if r.old.is_empty() {
                (0..next.old.len() - 1)
                    .take_while(|&s| line(new, r.new.start + s) == line(new, r.new.end + s))
                    .count()
            } else if r.new.is_empty() {
                (0..next.old.len() - 1)
                    .take_while(|&s| line(old, r.old.start + s) == line(old, r.old.end + s))
                    .count()
            } else {
                0
            };
            out.push(
                true,
                r.old.start..r.old.start + shift,
                r.new.start..r.new.start + shift,
            );
            r.old = r.old.start + shift..r.old.end + shift;
            r.new = r.new.start + shift..r.new.end + shift;
            runs[k + 1].old.start += shift;
            runs[k + 1].new.start += shift;
        }
        out.push(r.equal, r.old, r.new);
    }
    out.0
}

/// The lines of `o` (in `old`) and `n` (in `new`) that occur once in each,
/// paired, the longest run of pairs in the same order in both.
fn anchors(
    old: &Document,
    new: &Document,
    o: Range<usize>,
    n: Range<usize>,
) -> Vec<(usize, usize)> {
    if o.is_empty() || n.is_empty() {
        return Vec::new();
    }
    crate::splice::unique_anchors(
        o.len(),
        n.len(),
        |i| line(old, o.start + i),
        |j| line(new, n.start + j),
    )
    .into_iter()
    .map(|(i, j)| (o.start + i, n.start + j))
    .collect()
}

/// The runs of the gap `o` → `n` between anchors: equal lines walked
/// through, and at each difference the nearest place (fewest lines skipped)
/// where a line and the next are equal again, or the gap's end; a
/// difference longer than the look-ahead is the rest of the gap.
fn walk(old: &Document, new: &Document, o: Range<usize>, n: Range<usize>, out: &mut Runs) {
    let eq = |i: usize, j: usize| line(old, i) == line(new, j);
    let (oe, ne) = (o.end, n.end);
    let resync = |i: usize, j: usize| -> Option<(usize, usize)> {
        for d in 1..=LOOK_AHEAD {
            for k in 0..=d {
                let (a, b) = (i + k, j + d - k);
                if a > oe || b > ne {
                    continue;
                }
                if (a == oe && b == ne)
                    || (a < oe
                        && b < ne
                        && eq(a, b)
                        && (a + 1 == oe || b + 1 == ne || eq(a + 1, b + 1)))
                {
                    return Some((a, b));
                }
            }
        }
        None
    };
    let (mut i, mut j) = (o.start, n.start);
    while i < oe || j < ne {
        let (si, sj) = (i, j);
        while i < oe && j < ne && eq(i, j) {
            (i, j) = (i + 1, j + 1);
        }
        out.push(true, si..i, sj..j);
        if i == oe && j == ne {
            break;
        }
        let (a, b) = match (i < oe && j < ne).then(|| resync(i, j)).flatten() {
            Some(at) => at,
            None => (oe, ne),
        };
        out.push(false, i..a, j..b);
        (i, j) = (a, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `runs` is a valid diff of `old` → `new` (the module's invariant).
    fn valid(old: &Document, new: &Document, runs: &[DiffRun]) -> bool {
        let (mut i, mut j) = (0, 0);
        let mut last_equal: Option<bool> = None;
        for r in runs {
            if r.old.start != i || r.new.start != j || last_equal == Some(r.equal) {
                return false;
            }
            if r.equal
                && (r.old.len() != r.new.len()
                    || r.old.is_empty()
                    || r.old
                        .clone()
                        .zip(r.new.clone())
                        .any(|(a, b)| line(old, a) != line(new, b)))
            {
                return false;
            }
            if !r.equal && r.old.is_empty() && r.new.is_empty() {
                return false;
            }
            (i, j) = (r.old.end, r.new.end);
            last_equal = Some(r.equal);
        }
        i == old.line_count() && j == new.line_count()
    }

    /// Random texts from a few lines (blank ones, braces, repeats): the
    /// runs are always a valid diff, and a few scattered changes give
    /// changed runs no longer than the changes.
    #[test]
    fn runs_are_a_valid_diff() {
        let pieces = [
            "\n",
            "}\n",
            "    x\n",
            "fn a() {\n",
            "let y = 1;\n",
            "\r\n",
            "z",
            "}\r\n",
            "// c\n",
        ];
        let mut seed = 7u64;
        let mut next = |k: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % k as u64) as usize
        };
        for _ in 0..3000 {
            let len = next(40);
            let old: String = (0..len).map(|_| pieces[next(pieces.len())]).collect();
            let mut new_lines: Vec<String> = Document::from_text(&old)
                .lines()
                .map(|l| format!("{l}\n"))
                .collect();
            for _ in 0..next(5) {
                let at = next(new_lines.len() + 1);
                match next(3) {
                    0 if at < new_lines.len() => {
                        new_lines.remove(at);
                    }
                    1 => new_lines.insert(at, pieces[next(pieces.len())].to_owned()),
                    _ if at < new_lines.len() => new_lines[at] = "changed\n".to_owned(),
                    _ => {}
                }
            }
            let new: String = new_lines.concat();
            let (a, b) = (Document::from_text(&old), Document::from_text(&new));
            let r = runs(&a, &b);
            assert!(valid(&a, &b, &r), "{old:?} -> {new:?}: {r:?}");
        }
    }

    /// A long insertion among lines that recur (braces, blank lines) is
    /// placed by the unique lines around it, as the shortest diff places it.
    #[test]
    fn a_long_insertion_is_where_the_shortest_diff_puts_it() {
        let old: String = (0..40)
            .map(|i| format!("fn f{i}() {{\n    x\n}}\n\n"))
            .collect();
        let added: String = (0..30)
            .map(|i| format!("fn g{i}() {{\n    x\n}}\n\n"))
            .collect();
        let new = old.replace("fn f20() {", &format!("{added}fn f20() {{"));
        let (a, b) = (Document::from_text(&old), Document::from_text(&new));
        assert_eq!(runs(&a, &b), crate::splice::doc_line_diff(&a, &b));
    }

    /// Scattered one-line changes and insertions: one changed run each, as
    /// small as the change.
    #[test]
    fn scattered_changes_stay_small() {
        let old: String = (0..900).map(|i| format!("line {i}\n")).collect();
        let mut new = old.replace("line 100\n", "line hundred\n");
        new = new.replace("line 500\n", "line 500\nadded\nadded too\n");
        new = new.replace("line 899\n", "");
        let (a, b) = (Document::from_text(&old), Document::from_text(&new));
        let changed: Vec<_> = runs(&a, &b)
            .into_iter()
            .filter(|r| !r.equal)
            .map(|r| (r.old, r.new))
            .collect();
        assert_eq!(
            changed,
            vec![
                (100..101, 100..101),
                (501..501, 501..503),
                (899..900, 901..901)
            ]
        );
    }
}
