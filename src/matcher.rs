//! The matcher cascade: find where a run of lines (the *needle*) sits in a
//! [`Document`], trying the strictest comparison first.
//!
//! Tiers, strictest first: [`Tier::Exact`] → [`Tier::Whitespace`] (trailing
//! whitespace, collapsed runs inside a line, blank lines added or missing) →
//! [`Tier::Indent`] (the whole block at a uniform indentation offset, tabs
//! counted to a tab stop of 4) → [`Tier::Unicode`] (curly quotes, dashes and
//! odd spaces folded to ASCII) → [`Tier::Fuzzy`] (character edits within lines,
//! scored by Levenshtein distance). Each tier includes the leniencies of the
//! tiers before it. The first tier with a candidate decides; candidates found
//! there are compared and **ambiguity is refused**: two candidates are an error
//! naming both, unless a line hint picks one (see [`pick_by_hint`]). The fuzzy
//! tier additionally requires the best window to beat the runner-up by a margin.
//! A needle too short for the fuzzy tier pools tiers 2–4: its candidates at
//! every tolerant tier compete (`}` a blank line short and `    }` dedented
//! are equally likely the quote).
//!
//! Owns: locating text, and the alignment of needle lines to document lines
//! that the splice step uses to keep the file's bytes on lines the edit does
//! not change. Does not own: deciding what to write (formats and
//! [`splice`](crate::splice)), or words (feedback).
//!
//! Cost stays bounded: tiers 2–4 first compare a hash of each line's
//! non-whitespace characters, so only windows whose lines agree up to
//! whitespace are examined closely; the fuzzy tier scores only windows that
//! enough needle lines vote for (or windows near a hint), and brute force is
//! used only below a fixed work budget. When the budget stops a search, the
//! failure says so instead of hanging.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use crate::text::Document;

/// How a match was found, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Tier {
    /// Byte-for-byte equal lines.
    Exact,
    /// Equal up to trailing whitespace, runs of spaces, and blank lines.
    Whitespace,
    /// Equal at a uniform indentation offset.
    Indent,
    /// Equal after folding Unicode punctuation and odd spaces to ASCII.
    Unicode,
    /// Similar enough by Levenshtein distance, and clearly better than any other place.
    Fuzzy,
    /// Located by a line anchor (hashline) rather than by text.
    Anchor,
}

impl Tier {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Exact => "exact",
            Tier::Whitespace => "whitespace",
            Tier::Indent => "indent",
            Tier::Unicode => "unicode",
            Tier::Fuzzy => "fuzzy",
            Tier::Anchor => "anchor",
        }
    }

    /// Parses a tier name as [`name`](Self::name) gives it.
    pub fn from_name(s: &str) -> Option<Tier> {
        Some(match s {
            "exact" => Tier::Exact,
            "whitespace" => Tier::Whitespace,
            "indent" => Tier::Indent,
            "unicode" => Tier::Unicode,
            "fuzzy" => Tier::Fuzzy,
            "anchor" => Tier::Anchor,
            _ => return None,
        })
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Knobs of the cascade. `Default` gives the documented behaviour.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MatchOptions {
    /// The loosest tier allowed.
    pub max_tier: Tier,
    /// Minimum similarity (0–1) of a fuzzy window.
    pub fuzzy_threshold: f64,
    /// Minimum similarity of a fuzzy window's interior lines (all but the
    /// first and last), so that matching first and last lines alone never carry
    /// a window with a different body.
    pub fuzzy_interior_threshold: f64,
    /// Character edits (Levenshtein) the interior lines may hold in all and
    /// pass whatever their similarity: two typos, a swap of neighbours
    /// counting two. On short interior lines (`}`, `.await;`) one typo is
    /// a large share of the text, yet no different body.
    pub fuzzy_interior_edits: usize,
    /// How far the best fuzzy window must lead the runner-up.
    pub fuzzy_margin: f64,
    /// Fewest non-whitespace characters a needle needs before fuzzy matching is tried.
    pub fuzzy_min_chars: usize,
    /// Levenshtein cells the fuzzy tier may spend on brute force before it gives up.
    pub work_budget: u64,
    /// Whether a failure scores the nearest places (for feedback). Callers
    /// that only probe (is this text here?) turn it off: it is the costly part
    /// of a failure.
    pub nearest: bool,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            max_tier: Tier::Fuzzy,
            fuzzy_threshold: 0.93,
            fuzzy_interior_threshold: 0.85,
            fuzzy_interior_edits: 4,
            fuzzy_margin: 0.05,
            fuzzy_min_chars: 12,
            work_budget: 40_000_000,
            nearest: true,
        }
    }
}

/// A place the needle was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// 0-based, half-open range of document lines.
    pub range: Range<usize>,
    /// The tier that found it.
    pub tier: Tier,
    /// Similarity, 1.0 for every tier but fuzzy.
    pub similarity: f64,
    /// For each needle line, the document line it corresponds to (`None`: a
    /// blank needle line the document does not have there).
    pub alignment: Vec<Option<usize>>,
    /// Whether a line hint chose this match among several.
    pub by_hint: bool,
}

/// A place that was considered: for failures and ambiguity reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// 0-based, half-open range of document lines.
    pub range: Range<usize>,
    /// Similarity to the needle (0–1).
    pub similarity: f64,
}

impl From<&Match> for Candidate {
    /// The place a match was found, as a candidate to report.
    fn from(m: &Match) -> Candidate {
        Candidate {
            range: m.range.clone(),
            similarity: m.similarity,
        }
    }
}

impl Match {
    /// Lines `range`, taken as they are: each line stands for itself (an
    /// anchor located them, or the edit covers them whole).
    pub(crate) fn at(range: Range<usize>, tier: Tier) -> Match {
        Match {
            alignment: range.clone().map(Some).collect(),
            range,
            tier,
            similarity: 1.0,
            by_hint: false,
        }
    }
}

/// Why the cascade found no single place.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MatchError {
    /// Nothing matched at any allowed tier.
    #[error("not found")]
    NotFound {
        /// The most similar places, best first (may be empty).
        nearest: Vec<Candidate>,
        /// True when the work budget cut the fuzzy search short.
        bounded: bool,
    },
    /// Several places matched equally well at `tier`.
    #[error("{} matches at the {tier} tier", candidates.len())]
    Ambiguous {
        /// The tier with several candidates.
        tier: Tier,
        /// Every candidate at that tier, in file order.
        candidates: Vec<Candidate>,
    },
    /// The needle has no non-blank line to look for.
    #[error("nothing to search for")]
    EmptyNeedle,
}

/// Finds the one place `needle` matches in `doc`, loosest tier last.
///
/// `hint` is a 0-based line number the caller believes the block starts at;
/// it only breaks ties between candidates of the same tier.
pub fn locate<S: AsRef<str>>(
    doc: &Document,
    needle: &[S],
    hint: Option<usize>,
    opts: &MatchOptions,
) -> Result<Match, MatchError> {
    let needle: Vec<&str> = needle.iter().map(AsRef::as_ref).collect();
    let mut found = candidates(doc, &needle, hint, opts, false)?;
    match found.len() {
        1 => Ok(found.remove(0)),
        _ => decide(found, hint),
    }
}

/// Finds every place `needle` matches at the first tier that has any (never
/// fuzzy: replacing "everything similar" is not a thing anyone means).
pub fn locate_all<S: AsRef<str>>(
    doc: &Document,
    needle: &[S],
    opts: &MatchOptions,
) -> Result<Vec<Match>, MatchError> {
    let needle: Vec<&str> = needle.iter().map(AsRef::as_ref).collect();
    let mut opts = opts.clone();
    opts.max_tier = opts.max_tier.min(Tier::Unicode);
    candidates(doc, &needle, None, &opts, true)
}

/// How a line hint picks one of several candidates: the candidate whose start
/// is nearest the hint wins if it is less than half as far as the runner-up
/// (a hint that sits between two candidates picks neither).
pub fn pick_by_hint(starts: &[usize], hint: usize) -> Option<usize> {
    let mut by_distance: Vec<(usize, usize)> = starts
        .iter()
        .enumerate()
        .map(|(i, &s)| (s.abs_diff(hint), i))
        .collect();
    by_distance.sort_unstable();
    match by_distance.as_slice() {
        [] => None,
        [(_, i)] => Some(*i),
        [(d1, i), (d2, _), ..] => (d1 * 2 < *d2).then_some(*i),
    }
}

fn decide(mut found: Vec<Match>, hint: Option<usize>) -> Result<Match, MatchError> {
    let tier = found[0].tier;
    if tier == Tier::Fuzzy {
        // Best first; a clear leader wins without a hint.
        found.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
    }
    if let Some(h) = hint {
        let starts: Vec<usize> = found.iter().map(|m| m.range.start).collect();
        if let Some(i) = pick_by_hint(&starts, h) {
            let mut m = found.swap_remove(i);
            m.by_hint = true;
            return Ok(m);
        }
    }
    let mut candidates: Vec<Candidate> = found.iter().map(Candidate::from).collect();
    candidates.sort_by_key(|c| c.range.start);
    Err(MatchError::Ambiguous { tier, candidates })
}

/// All candidates at the first tier that has any. With `all == false` a
/// fuzzy leader that dominates the runner-up is returned alone.
fn candidates(
    doc: &Document,
    needle: &[&str],
    hint: Option<usize>,
    opts: &MatchOptions,
    all: bool,
) -> Result<Vec<Match>, MatchError> {
    if needle.is_empty() {
        return Err(MatchError::EmptyNeedle);
    }
    let exact = exact_starts(doc, needle);
    if needle.iter().all(|l| l.trim().is_empty()) {
        // Blank lines can only be matched as they are: every tolerant tier
        // would find blank lines everywhere.
        return if exact.is_empty() {
            Err(MatchError::NotFound {
                nearest: Vec::new(),
                bounded: false,
            })
        } else {
            exact_matches(&exact, needle.len(), hint, all)
        };
    }
    if !exact.is_empty() || opts.max_tier == Tier::Exact {
        return if exact.is_empty() {
            Err(not_found(doc, needle, opts))
        } else {
            exact_matches(&exact, needle.len(), hint, all)
        };
    }
    let hay = Haystack::new(doc);
    let pin = Needle::new(needle);
    // A needle too short for the fuzzy tier (`}` / blank) says too little
    // for the tolerant tiers' order to choose: `}` at another indentation
    // and `}` with a blank line missing are equally likely the quote, so
    // their candidates are pooled and several are ambiguous.
    let pool = pin.chars() < opts.fuzzy_min_chars;
    let tolerant = tolerant_candidates(doc, &hay, &pin, opts.max_tier, hint, all, pool)?;
    if !tolerant.is_empty() {
        return Ok(tolerant);
    }
    if opts.max_tier < Tier::Fuzzy || all {
        return Err(nearest_failure(doc, &hay, &pin, hint, opts));
    }
    fuzzy(doc, &hay, &pin, hint, opts)
}

// ---------------------------------------------------------------- exact tier

/// Where every line of `needle` equals the document's, as start lines.
///
/// Anchored on the needle's longest line (the least likely to recur): only
/// its occurrences are compared further. When the needle repeats itself (n
/// identical lines against 4n), anchors are everywhere and comparing at each
/// costs n·4n; once the comparisons pass a linear budget the search restarts
/// as Knuth–Morris–Pratt over lines, which finds every start in one pass.
fn exact_starts(doc: &Document, needle: &[&str]) -> Vec<usize> {
    let (n, m) = (doc.line_count(), needle.len());
    if m == 0 || m > n {
        return Vec::new();
    }
    let (a, anchor) = needle
        .iter()
        .enumerate()
        .max_by_key(|(_, l)| l.len())
        .map(|(i, l)| (i, *l))
        .unwrap_or((0, ""));
    // With an index, only the anchor's occurrences are visited; without one,
    // a scan whose per-line cost is a length compare (most lines differ in length).
    let indexed: Vec<usize>;
    let hits: Box<dyn Iterator<Item = usize> + '_> = match doc.line_index() {
        Some(index) => {
            indexed = index.positions(xxh3_64(anchor.as_bytes())).collect();
            Box::new(indexed.iter().copied().filter(|&k| doc.line(k) == anchor))
        }
        None => Box::new(
            doc.lines()
                .enumerate()
                .filter(|(_, l)| *l == anchor)
                .map(|(k, _)| k),
        ),
    };
    let budget = 4 * (n + m) + 4096;
    let mut work = 0usize;
    let mut out = Vec::new();
    for k in hits {
        if k < a || k - a + m > n {
            continue;
        }
        let start = k - a;
        let mut equal = true;
        for (i, line) in needle.iter().enumerate() {
            work += 1;
            if doc.line(start + i) != *line {
                equal = false;
                break;
            }
        }
        if equal {
            out.push(start);
        }
        if work > budget {
            return kmp_starts(n, m, |i| doc.line(i), |j| needle[j], |a, b| a == b);
        }
    }
    out
}

/// Every start at which `needle(0..m)` occurs in `hay(0..n)` (overlapping
/// occurrences too), in O(n + m) comparisons: Knuth–Morris–Pratt.
fn kmp_starts<T: Copy>(
    n: usize,
    m: usize,
    hay: impl Fn(usize) -> T,
    needle: impl Fn(usize) -> T,
    eq: impl Fn(T, T) -> bool,
) -> Vec<usize> {
    if m == 0 || m > n {
        return Vec::new();
    }
    let mut fail = vec![0usize; m];
    let mut k = 0;
    for i in 1..m {
        while k > 0 && !eq(needle(i), needle(k)) {
            k = fail[k - 1];
        }
        if eq(needle(i), needle(k)) {
            k += 1;
        }
        fail[i] = k;
    }
    let mut out = Vec::new();
    k = 0;
    for i in 0..n {
        let x = hay(i);
        while k > 0 && !eq(x, needle(k)) {
            k = fail[k - 1];
        }
        if eq(x, needle(k)) {
            k += 1;
        }
        if k == m {
            out.push(i + 1 - m);
            k = fail[k - 1];
        }
    }
    out
}

/// How many alignment entries (candidates × needle lines) the matcher
/// builds at most: beyond it, candidates are reported by their ranges only.
const MATERIALIZE_CELLS: usize = 1 << 21;
/// How many line comparisons the tolerant tiers spend classifying candidate
/// windows (windows × needle lines) before they settle for ambiguity.
const CLASSIFY_LINES: usize = 1 << 18;

fn exact_match(start: usize, m: usize) -> Match {
    Match {
        range: start..start + m,
        tier: Tier::Exact,
        similarity: 1.0,
        alignment: (start..start + m).map(Some).collect(),
        by_hint: false,
    }
}

/// The exact tier's matches from their starts. Several matches are built
/// only while that stays within [`MATERIALIZE_CELLS`]; beyond it a single
/// place (`all == false`) is still picked by the hint, and otherwise the
/// answer is the ambiguity, every place listed by its range.
fn exact_matches(
    starts: &[usize],
    m: usize,
    hint: Option<usize>,
    all: bool,
) -> Result<Vec<Match>, MatchError> {
    if starts.len() == 1 || starts.len().saturating_mul(m) <= MATERIALIZE_CELLS {
        return Ok(starts.iter().map(|&s| exact_match(s, m)).collect());
    }
    if !all && let Some(i) = hint.and_then(|h| pick_by_hint(starts, h)) {
        let mut chosen = exact_match(starts[i], m);
        chosen.by_hint = true;
        return Ok(vec![chosen]);
    }
    Err(MatchError::Ambiguous {
        tier: Tier::Exact,
        candidates: starts
            .iter()
            .map(|&s| Candidate {
                range: s..s + m,
                similarity: 1.0,
            })
            .collect(),
    })
}

// ------------------------------------------------------------ normal forms

/// Folds Unicode punctuation and spaces to their ASCII look-alikes.
fn fold_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{FF02}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' | '\u{FE63}' | '\u{FF0D}' => "-",
        '\u{2026}' => "...",
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => " ",
        '\u{200B}' | '\u{FEFF}' => "",
        _ => return None,
    })
}

fn is_ws(c: char) -> bool {
    c.is_whitespace() || matches!(fold_char(c), Some(" " | ""))
}

/// Pushes `line`'s characters minus whitespace (folded when `fold`) into `buf`.
fn skeleton_into(line: &str, buf: &mut String) {
    for c in line.chars() {
        if is_ws(c) {
            continue;
        }
        match fold_char(c) {
            Some(f) => buf.push_str(f),
            None => buf.push(c),
        }
    }
}

fn skeleton_hash(line: &str, buf: &mut String) -> u64 {
    buf.clear();
    skeleton_into(line, buf);
    xxh3_64(buf.as_bytes())
}

/// Tab widths tried when a block's indentation is compared: files are
/// written with tabs shown 4 or 8 wide (2 is rarer), and a model retypes
/// them as that many spaces.
pub(crate) const TAB_WIDTHS: [usize; 3] = [4, 8, 2];

/// Width of leading whitespace, tabs to the next multiple of `tab`.
pub(crate) fn indent_width(ws: &str, tab: usize) -> usize {
    ws.chars().fold(0, |w, c| {
        if c == '\t' {
            w / tab * tab + tab
        } else {
            w + 1
        }
    })
}

/// Splits a line into its leading whitespace and the rest.
pub(crate) fn split_indent(line: &str) -> (&str, &str) {
    let body = line.trim_start_matches([' ', '\t']);
    (&line[..line.len() - body.len()], body)
}

/// A line's body with runs of whitespace collapsed to one space and the end trimmed.
fn collapse(body: &str, fold: bool) -> String {
    let mut out = String::with_capacity(body.len());
    let mut pending_space = false;
    for c in body.chars() {
        let c_str = if fold { fold_char(c) } else { None };
        if is_ws(c) && (fold || c.is_whitespace()) {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        match c_str {
            Some(f) => out.push_str(f),
            None => out.push(c),
        }
    }
    out
}

/// A line as the unicode and fuzzy tiers compare it: indentation dropped,
/// whitespace runs collapsed, punctuation folded.
pub(crate) fn normal_body(line: &str) -> String {
    collapse(split_indent(line).1, true)
}

/// Whether two lines are equal at the unicode tier: indentation ignored,
/// whitespace runs collapsed, punctuation folded.
pub(crate) fn same_up_to_unicode(a: &str, b: &str) -> bool {
    collapse(split_indent(a).1, true) == collapse(split_indent(b).1, true)
}

// ------------------------------------------------------------ tiers 2–4

/// The document's non-blank lines with their skeleton hashes.
struct Haystack {
    /// Document indices of non-blank lines.
    nb: Vec<usize>,
    hashes: Vec<u64>,
}

impl Haystack {
    fn new(doc: &Document) -> Haystack {
        let mut buf = String::new();
        let mut nb = Vec::with_capacity(doc.line_count());
        let mut hashes = Vec::with_capacity(doc.line_count());
        for (i, line) in doc.lines().enumerate() {
            if line.chars().all(is_ws) {
                continue;
            }
            nb.push(i);
            hashes.push(skeleton_hash(line, &mut buf));
        }
        Haystack { nb, hashes }
    }
}

/// The needle's non-blank lines with their skeleton hashes and lengths.
struct Needle<'a> {
    lines: &'a [&'a str],
    nb: Vec<usize>,
    hashes: Vec<u64>,
    skel_len: Vec<usize>,
}

impl<'a> Needle<'a> {
    fn new(lines: &'a [&'a str]) -> Needle<'a> {
        let mut buf = String::new();
        let mut nb = Vec::new();
        let mut hashes = Vec::new();
        let mut skel_len = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if line.chars().all(is_ws) {
                continue;
            }
            nb.push(i);
            hashes.push(skeleton_hash(line, &mut buf));
            skel_len.push(buf.len());
        }
        Needle {
            lines,
            nb,
            hashes,
            skel_len,
        }
    }

    fn chars(&self) -> usize {
        self.skel_len.iter().sum()
    }
}

/// Windows of the haystack (as starting indices into `hay.nb`) whose lines
/// agree with the needle's up to whitespace and Unicode folding: every
/// occurrence of the needle's skeleton hashes in the haystack's, found in
/// linear time whatever the needle repeats.
fn skeleton_windows(hay: &Haystack, pin: &Needle<'_>) -> Vec<usize> {
    kmp_starts(
        hay.hashes.len(),
        pin.hashes.len(),
        |i| hay.hashes[i],
        |j| pin.hashes[j],
        |a, b| a == b,
    )
}

/// Aligns a window (`m` needle non-blank lines starting at `hay.nb[start]`) back
/// to whole lines: the document range and, per needle line, its document line.
fn align_window(
    doc: &Document,
    hay: &Haystack,
    pin: &Needle<'_>,
    start: usize,
) -> (Range<usize>, Vec<Option<usize>>) {
    let m = pin.nb.len();
    let mut alignment = vec![None; pin.lines.len()];
    for j in 0..m {
        alignment[pin.nb[j]] = Some(hay.nb[start + j]);
    }
    let blank = |i: usize| doc.line(i).chars().all(is_ws);
    // Blank needle lines between two non-blank ones pair with blank document
    // lines in the same gap, in order.
    for j in 0..m.saturating_sub(1) {
        let (ns, ne) = (pin.nb[j] + 1, pin.nb[j + 1]);
        let (ds, de) = (hay.nb[start + j] + 1, hay.nb[start + j + 1]);
        for (k, ni) in (ns..ne).enumerate() {
            if ds + k < de {
                alignment[ni] = Some(ds + k);
            }
        }
    }
    // Leading and trailing blank needle lines take adjacent blank document lines.
    let mut first = hay.nb[start];
    for ni in (0..pin.nb[0]).rev() {
        if first > 0 && blank(first - 1) {
            first -= 1;
            alignment[ni] = Some(first);
        } else {
            break;
        }
    }
    let mut last = hay.nb[start + m - 1];
    for slot in alignment.iter_mut().skip(pin.nb[m - 1] + 1) {
        if last + 1 < doc.line_count() && blank(last + 1) {
            last += 1;
            *slot = Some(last);
        } else {
            break;
        }
    }
    (first..last + 1, alignment)
}

/// The strictest of tiers 2–4 at which every aligned line pair agrees.
fn classify(doc: &Document, pin: &Needle<'_>, alignment: &[Option<usize>]) -> Option<Tier> {
    let pairs: Vec<(&str, &str)> = pin
        .nb
        .iter()
        .filter_map(|&ni| alignment[ni].map(|di| (pin.lines[ni], doc.line(di))))
        .collect();
    let ws_equal = pairs.iter().all(|(n, d)| {
        let ((ni, nbody), (di, dbody)) = (split_indent(n), split_indent(d));
        ni == di && collapse(nbody, false) == collapse(dbody, false)
    });
    if ws_equal {
        return Some(Tier::Whitespace);
    }
    let uniform_indent = |fold: bool| {
        let bodies_equal = pairs
            .iter()
            .all(|(n, d)| collapse(split_indent(n).1, fold) == collapse(split_indent(d).1, fold));
        bodies_equal
            && TAB_WIDTHS.iter().any(|&tab| {
                let mut offset = None;
                pairs.iter().all(|(n, d)| {
                    let off = indent_width(split_indent(d).0, tab) as i64
                        - indent_width(split_indent(n).0, tab) as i64;
                    *offset.get_or_insert(off) == off
                })
            })
    };
    if uniform_indent(false) {
        Some(Tier::Indent)
    } else if uniform_indent(true) {
        Some(Tier::Unicode)
    } else {
        None
    }
}

/// The tolerant tiers' candidates: every skeleton window classified, the
/// strictest tier's kept. When classifying them all would pass
/// [`CLASSIFY_LINES`] (a needle of repeated lines against a file of them), a
/// hint may still pick one window (`all == false`); otherwise the answer is
/// the ambiguity, every window listed, at the best tier of those classified.
/// With `pool`, every tolerant tier's candidates are kept, not only the
/// strictest's (a needle too short to tell them apart).
fn tolerant_candidates(
    doc: &Document,
    hay: &Haystack,
    pin: &Needle<'_>,
    max_tier: Tier,
    hint: Option<usize>,
    all: bool,
    pool: bool,
) -> Result<Vec<Match>, MatchError> {
    let windows = skeleton_windows(hay, pin);
    let per_window = pin.lines.len().max(1);
    let affordable =
        windows.len() <= 1 || windows.len().saturating_mul(per_window) <= CLASSIFY_LINES;
    if !affordable {
        let starts: Vec<usize> = windows.iter().map(|&w| hay.nb[w]).collect();
        if !all && let Some(i) = hint.and_then(|h| pick_by_hint(&starts, h)) {
            let (range, alignment) = align_window(doc, hay, pin, windows[i]);
            if let Some(tier) = classify(doc, pin, &alignment).filter(|t| *t <= max_tier) {
                return Ok(vec![Match {
                    range,
                    tier,
                    similarity: 1.0,
                    alignment,
                    by_hint: true,
                }]);
            }
        }
        let mut tier: Option<Tier> = None;
        for &w in windows.iter().take((CLASSIFY_LINES / per_window).max(1)) {
            let (_, alignment) = align_window(doc, hay, pin, w);
            if let Some(t) = classify(doc, pin, &alignment).filter(|t| *t <= max_tier) {
                tier = Some(tier.map_or(t, |b| b.min(t)));
            }
        }
        let m = pin.nb.len();
        return match tier {
            None => Ok(Vec::new()),
            Some(tier) => Err(MatchError::Ambiguous {
                tier,
                candidates: windows
                    .iter()
                    .map(|&w| Candidate {
                        range: hay.nb[w]..hay.nb[w + m - 1] + 1,
                        similarity: 1.0,
                    })
                    .collect(),
            }),
        };
    }
    let mut best: Option<Tier> = None;
    let mut out: Vec<Match> = Vec::new();
    for start in windows {
        let (range, alignment) = align_window(doc, hay, pin, start);
        let Some(tier) = classify(doc, pin, &alignment) else {
            continue;
        };
        if tier > max_tier || !pool && best.is_some_and(|b| tier > b) {
            continue;
        }
        if !pool && best.is_some_and(|b| tier < b) {
            out.clear();
        }
        best = Some(best.map_or(tier, |b| b.min(tier)));
        out.push(Match {
            range,
            tier,
            similarity: 1.0,
            alignment,
            by_hint: false,
        });
    }
    Ok(out)
}

// ------------------------------------------------------------ fuzzy tier

/// Scores windows of the haystack against the needle by line-wise Levenshtein distance.
struct Scorer<'a> {
    doc: &'a Document,
    hay: &'a Haystack,
    pin: &'a Needle<'a>,
    /// Needle non-blank lines, indentation stripped, whitespace collapsed, Unicode folded.
    norm: Vec<String>,
    cells: u64,
}

/// A scored window.
#[derive(Debug, Clone, Copy)]
struct Score {
    start: usize,
    similarity: f64,
    interior: f64,
    /// Character edits in the interior lines.
    interior_edits: usize,
    /// Whether a needle line of [`FOREIGN_LINE_CHARS`] or more pairs with a
    /// document line it differs from in more than half its characters.
    foreign: bool,
}

/// Characters (indentation aside, whitespace runs collapsed) from which a
/// needle line paired with a line it mostly differs from is a line the file
/// does not have there, not a misspelling of the file's line. The fuzzy
/// tier pairs lines in order, so a quote with one invented line (`# keep
/// the previous behaviour for now`) can still score 95% at a window moved
/// by one line, every line after it paired with its neighbour where braces
/// make neighbours look alike, and the file's lines between them lost
/// (compare bench, ripgrep src/glob.rs). Character edits within lines are
/// what the tier is for; a whole line is not.
const FOREIGN_LINE_CHARS: usize = 12;

impl<'a> Scorer<'a> {
    fn new(doc: &'a Document, hay: &'a Haystack, pin: &'a Needle<'a>) -> Scorer<'a> {
        let norm = pin
            .nb
            .iter()
            .map(|&i| collapse(split_indent(pin.lines[i]).1, true))
            .collect();
        Scorer {
            doc,
            hay,
            pin,
            norm,
            cells: 0,
        }
    }

    fn windows(&self) -> usize {
        (self.hay.nb.len() + 1).saturating_sub(self.norm.len())
    }

    fn score(&mut self, start: usize) -> Score {
        let m = self.norm.len();
        let (mut dist, mut total, mut idist, mut itotal) = (0usize, 0usize, 0usize, 0usize);
        let mut foreign = false;
        for j in 0..m {
            let line = self.doc.line(self.hay.nb[start + j]);
            let d = collapse(split_indent(line).1, true);
            let n = &self.norm[j];
            let (ln, ld) = (n.chars().count(), d.chars().count());
            self.cells += (ln * ld) as u64;
            let e = if *n == d {
                0
            } else {
                strsim::levenshtein(n, &d)
            };
            let longest = ln.max(ld).max(1);
            foreign |= ln >= FOREIGN_LINE_CHARS && 2 * e > longest;
            dist += e;
            total += longest;
            if j > 0 && j + 1 < m {
                idist += e;
                itotal += longest;
            }
        }
        let sim = |d: usize, t: usize| {
            if t == 0 {
                1.0
            } else {
                1.0 - d as f64 / t as f64
            }
        };
        Score {
            start,
            similarity: sim(dist, total),
            interior: sim(idist, itotal),
            interior_edits: idist,
            foreign,
        }
    }

    /// Character edits per needle line at the window starting at `start`.
    fn line_edits(&self, start: usize) -> Vec<usize> {
        self.norm
            .iter()
            .enumerate()
            .map(|(j, n)| {
                let d = collapse(split_indent(self.doc.line(self.hay.nb[start + j])).1, true);
                if *n == d {
                    0
                } else {
                    strsim::levenshtein(n, &d)
                }
            })
            .collect()
    }

    fn to_match(&self, s: Score) -> Match {
        let (range, alignment) = align_window(self.doc, self.hay, self.pin, s.start);
        Match {
            range,
            tier: Tier::Fuzzy,
            similarity: s.similarity,
            alignment,
            by_hint: false,
        }
    }
}

/// The most times a line may recur in a needle and still vote for windows.
const REPEATS_THAT_VOTE: usize = 16;

/// Window starts worth scoring: those enough needle lines vote for (a needle
/// line whose skeleton equals a document line votes for the window that would
/// align them), plus every window near the hint.
fn voted_windows(
    hay: &Haystack,
    pin: &Needle<'_>,
    hint: Option<usize>,
    windows: usize,
) -> Vec<usize> {
    let m = pin.hashes.len();
    let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
    for (j, &h) in pin.hashes.iter().enumerate() {
        // Lines of one or two characters (`}`, `);`) recur everywhere and say little.
        if pin.skel_len[j] > 2 {
            by_hash.entry(h).or_default().push(j);
        }
    }
    // A line the needle itself repeats many times says little about where it
    // goes, and each of its occurrences in the file would vote that many
    // times (n·4n votes for n identical lines against 4n): it does not vote.
    by_hash.retain(|_, js| js.len() <= REPEATS_THAT_VOTE);
    let mut votes: HashMap<usize, u32> = HashMap::new();
    for (p, h) in hay.hashes.iter().enumerate() {
        if let Some(js) = by_hash.get(h) {
            for &j in js {
                if p >= j && p - j < windows {
                    *votes.entry(p - j).or_default() += 1;
                }
            }
        }
    }
    let top = votes.values().copied().max().unwrap_or(0);
    let floor = (top / 2).max(1);
    // The most-voted windows first (ties: earlier first), at most 256 of them.
    let mut ranked: Vec<(u32, usize)> = votes
        .into_iter()
        .filter(|&(_, v)| v >= floor)
        .map(|(s, v)| (v, s))
        .collect();
    ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.truncate(256);
    let mut starts: Vec<usize> = ranked.into_iter().map(|(_, s)| s).collect();
    if let Some(h) = hint {
        // Windows whose first line lies within 40 lines of the hint.
        let lo = hay.nb.partition_point(|&d| d + 40 < h);
        let hi = hay.nb.partition_point(|&d| d <= h + 40);
        starts.extend((lo..hi).filter(|&s| s < windows));
    }
    let _ = m;
    starts.sort_unstable();
    starts.dedup();
    starts
}

fn fuzzy(
    doc: &Document,
    hay: &Haystack,
    pin: &Needle<'_>,
    hint: Option<usize>,
    opts: &MatchOptions,
) -> Result<Vec<Match>, MatchError> {
    if pin.chars() < opts.fuzzy_min_chars {
        return Err(nearest_failure(doc, hay, pin, hint, opts));
    }
    let mut scorer = Scorer::new(doc, hay, pin);
    let windows = scorer.windows();
    let (scores, bounded) = score_windows(&mut scorer, hint, windows, opts);
    let mut passing: Vec<Score> = scores
        .iter()
        .copied()
        .filter(|s| {
            s.similarity >= opts.fuzzy_threshold
                && !s.foreign
                && (s.interior >= opts.fuzzy_interior_threshold
                    || s.interior_edits <= opts.fuzzy_interior_edits)
        })
        .collect();
    passing.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
    match passing.as_slice() {
        [] => Err(failure_from_scores(&scorer, scores, bounded)),
        [only] => Ok(vec![scorer.to_match(*only)]),
        [best, second, ..] if best.similarity - second.similarity >= opts.fuzzy_margin => {
            Ok(vec![scorer.to_match(*best)])
        }
        several => match dominant(&scorer, several) {
            Some(best) => Ok(vec![scorer.to_match(best)]),
            None => Ok(several.iter().map(|s| scorer.to_match(*s)).collect()),
        },
    }
}

/// Most passing windows compared line by line for a dominant one.
const DOMINANCE_WINDOWS: usize = 8;

/// The passing window, among close ones, that is at least as near the
/// needle as every other on every line, and word for word on each line
/// where it is nearer: twin blocks that differ in one line (`assert!(re…)`
/// / `assert!(!re…)`), quoted with a typo in another line, are within the
/// margin of each other, yet only one of them holds every line the quote
/// got right. Its lead is not a guess: no line of the quote speaks for the
/// other place. A line nearer one place without matching it (`create_member`
/// quoted, `create_user` and `create_admin` in the file) is a guess at
/// which place the model meant: no window dominates then.
fn dominant(scorer: &Scorer<'_>, passing: &[Score]) -> Option<Score> {
    if passing.len() > DOMINANCE_WINDOWS {
        return None;
    }
    let edits: Vec<Vec<usize>> = passing.iter().map(|s| scorer.line_edits(s.start)).collect();
    let total = |e: &Vec<usize>| e.iter().sum::<usize>();
    (0..passing.len())
        .find(|&a| {
            (0..passing.len()).all(|b| {
                b == a
                    || (edits[a]
                        .iter()
                        .zip(&edits[b])
                        .all(|(&x, &y)| x == y || x == 0)
                        && total(&edits[a]) < total(&edits[b]))
            })
        })
        .map(|a| passing[a])
}

/// Scores the voted windows, or every window when that fits the work budget.
fn score_windows(
    scorer: &mut Scorer<'_>,
    hint: Option<usize>,
    windows: usize,
    opts: &MatchOptions,
) -> (Vec<Score>, bool) {
    let avg_doc_line = (scorer.doc.text().len() / scorer.doc.line_count().max(1)).max(1) as u64;
    let needle_chars: u64 = scorer.norm.iter().map(|l| l.len() as u64).sum();
    let brute_cost = windows as u64 * needle_chars * avg_doc_line;
    let voted = voted_windows(scorer.hay, scorer.pin, hint, windows);
    let (starts, bounded): (Vec<usize>, bool) = if brute_cost <= opts.work_budget {
        ((0..windows).collect(), false)
    } else {
        (voted, true)
    };
    let mut scores = Vec::with_capacity(starts.len());
    for s in starts {
        scores.push(scorer.score(s));
        if scorer.cells > opts.work_budget.saturating_mul(4) {
            return (scores, true);
        }
    }
    (scores, bounded)
}

fn failure_from_scores(scorer: &Scorer<'_>, mut scores: Vec<Score>, bounded: bool) -> MatchError {
    scores.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
    let mut nearest: Vec<Candidate> = Vec::new();
    for s in scores {
        if nearest.len() == 3 || s.similarity < 0.3 {
            break;
        }
        let (range, _) = align_window(scorer.doc, scorer.hay, scorer.pin, s.start);
        if nearest
            .iter()
            .any(|c| c.range.start < range.end && range.start < c.range.end)
        {
            continue;
        }
        nearest.push(Candidate {
            range,
            similarity: s.similarity,
        });
    }
    MatchError::NotFound { nearest, bounded }
}

/// The failure for a needle no allowed tier found: the nearest windows, scored fuzzily.
fn nearest_failure(
    doc: &Document,
    hay: &Haystack,
    pin: &Needle<'_>,
    hint: Option<usize>,
    opts: &MatchOptions,
) -> MatchError {
    if !opts.nearest {
        return MatchError::NotFound {
            nearest: Vec::new(),
            bounded: false,
        };
    }
    if pin.nb.is_empty() {
        return MatchError::NotFound {
            nearest: Vec::new(),
            bounded: false,
        };
    }
    let mut scorer = Scorer::new(doc, hay, pin);
    let windows = scorer.windows();
    let (scores, bounded) = score_windows(&mut scorer, hint, windows, opts);
    failure_from_scores(&scorer, scores, bounded)
}

fn not_found(doc: &Document, needle: &[&str], opts: &MatchOptions) -> MatchError {
    let hay = Haystack::new(doc);
    let pin = Needle::new(needle);
    nearest_failure(doc, &hay, &pin, None, opts)
}

/// Whether the document's best approximate place for `needle` is at
/// `region`: no window elsewhere beats the best window overlapping it by the
/// fuzzy tier's dominance margin (windows scored as the fuzzy tier scores
/// them, within the same work budget; windows near `region` are always among
/// those scored). A place elsewhere must lead clearly, as a fuzzy match must
/// — unless it is a window the fuzzy tier would accept and no window at
/// `region` is more similar: then the old text fits elsewhere at least as
/// well, and the new text at `region` proves nothing (the approximate step
/// decides, or finds the place ambiguous).
///
/// "The edit is already applied" means the new text sits where the old text
/// would have matched. When the old text is closer to somewhere else (a
/// twin of the line to change, with a typo in the quoted text), the new text
/// found at `region` is a different place that merely looks done.
pub(crate) fn best_place_is<S: AsRef<str>>(
    doc: &Document,
    needle: &[S],
    region: Range<usize>,
    opts: &MatchOptions,
) -> bool {
    let needle: Vec<&str> = needle.iter().map(AsRef::as_ref).collect();
    let hay = Haystack::new(doc);
    let pin = Needle::new(&needle);
    let m = pin.nb.len();
    if m == 0 {
        return false;
    }
    let mut scorer = Scorer::new(doc, &hay, &pin);
    let windows = scorer.windows();
    if windows == 0 {
        // The file is shorter than the needle: no place competes.
        return true;
    }
    let (scores, _) = score_windows(&mut scorer, Some(region.start), windows, opts);
    let passes = |sc: &Score| {
        pin.chars() >= opts.fuzzy_min_chars
            && sc.similarity >= opts.fuzzy_threshold
            && !sc.foreign
            && (sc.interior >= opts.fuzzy_interior_threshold
                || sc.interior_edits <= opts.fuzzy_interior_edits)
    };
    let (mut inside, mut outside, mut outside_fit) = (None::<f64>, None::<f64>, None::<f64>);
    for sc in scores {
        let span = hay.nb[sc.start]..hay.nb[sc.start + m - 1] + 1;
        let slot = if span.start < region.end && region.start < span.end {
            &mut inside
        } else {
            if passes(&sc) {
                outside_fit = Some(outside_fit.map_or(sc.similarity, |b| b.max(sc.similarity)));
            }
            &mut outside
        };
        *slot = Some(slot.map_or(sc.similarity, |b| b.max(sc.similarity)));
    }
    match (inside, outside) {
        // A window elsewhere the approximate step would take, at least as
        // similar as any at `region`: the old text fits there (a twin of
        // the block with the quote's typo), so the new text at `region`
        // is not shown to be this edit's — whatever the margin.
        (Some(i), Some(_)) if outside_fit.is_some_and(|f| f >= i) => false,
        (Some(i), Some(o)) => o - i < opts.fuzzy_margin,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(s: &str) -> Document {
        Document::from_text(s)
    }

    fn at(d: &Document, needle: &str) -> Result<Match, MatchError> {
        let lines: Vec<&str> = needle.lines().collect();
        locate(d, &lines, None, &MatchOptions::default())
    }

    #[test]
    fn exact_unique() {
        let d = doc("a\nb\nc\nd\n");
        let m = at(&d, "b\nc").unwrap();
        assert_eq!((m.range, m.tier), (1..3, Tier::Exact));
    }

    #[test]
    fn exact_duplicate_is_ambiguous_unless_hinted() {
        let d = doc("x\nfoo\nbar\ny\nfoo\nbar\n");
        match at(&d, "foo\nbar") {
            Err(MatchError::Ambiguous { candidates, .. }) => {
                assert_eq!(
                    candidates.iter().map(|c| c.range.start).collect::<Vec<_>>(),
                    [1, 4]
                );
            }
            other => panic!("{other:?}"),
        }
        let m = locate(&d, &["foo", "bar"], Some(4), &MatchOptions::default()).unwrap();
        assert_eq!(m.range, 4..6);
        assert!(m.by_hint);
    }

    #[test]
    fn whitespace_tier_trailing_and_blank_drift() {
        let d = doc("fn a() {  \n    x(1,  2);\n}\n");
        let m = at(&d, "\nfn a() {\n    x(1, 2);\n}").unwrap();
        assert_eq!((m.range, m.tier), (0..3, Tier::Whitespace));
        assert_eq!(m.alignment, [None, Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn indent_tier_uniform_offset() {
        let d = doc("class A:\n    def f(self):\n        return 1\n");
        let m = at(&d, "def f(self):\n    return 1").unwrap();
        assert_eq!((m.range, m.tier), (1..3, Tier::Indent));
        // Non-uniform offsets are not an indent match.
        assert!(at(&d, "def f(self):\nreturn 1").map(|m| m.tier) != Ok(Tier::Indent));
    }

    #[test]
    fn unicode_tier() {
        let d = doc("say(\u{201C}hi\u{201D}) \u{2014} ok\n");
        let m = at(&d, "say(\"hi\") - ok").unwrap();
        assert_eq!(m.tier, Tier::Unicode);
    }

    #[test]
    fn fuzzy_finds_typos_and_refuses_weak_anchors() {
        let body: String = (0..40)
            .map(|i| format!("let value_{i} = compute({i}, {});\n", i * 3))
            .collect();
        let d = doc(&body);
        let needle = "let value_10 = compute(10, 30);\nlet valeu_11 = compute(11, 33);\nlet value_12 = compute(12, 36);";
        let m = at(&d, needle).unwrap();
        assert_eq!((m.range, m.tier), (10..13, Tier::Fuzzy));

        let d = doc("function foo() {\n  return x * y;\n}\n");
        assert!(matches!(
            at(&d, "function foo() {\n  return a + b;\n}"),
            Err(MatchError::NotFound { .. })
        ));
    }

    #[test]
    fn fuzzy_near_duplicates_are_ambiguous() {
        let d = doc(
            "def create_user(name):\n    record = build(name, role='user')\n    return save(record)\n\ndef create_admin(name):\n    record = build(name, role='admin')\n    return save(record)\n",
        );
        let r = at(
            &d,
            "def create_usr(name):\n    record = build(name, role='user')\n    return save(record)",
        );
        // Either a clear winner (the 'user' one) or ambiguity; never the admin one.
        if let Ok(m) = &r {
            assert_eq!(m.range, 0..3);
        }
        let d = doc(
            "def create_user(name):\n    record = build(name)\n    return save(record)\n\ndef create_usar(name):\n    record = build(name)\n    return save(record)\n",
        );
        let r = at(
            &d,
            "def create_usor(name):\n    record = build(name)\n    return save(record)",
        );
        match r {
            Err(MatchError::Ambiguous {
                tier: Tier::Fuzzy,
                candidates,
            }) => assert_eq!(candidates.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hint_rule() {
        assert_eq!(pick_by_hint(&[10, 50], 48), Some(1));
        assert_eq!(pick_by_hint(&[10, 50], 30), None);
        assert_eq!(pick_by_hint(&[10, 11], 10), Some(0));
    }
}
