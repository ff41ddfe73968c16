//! The mistakes simulated models make (`sim:<mistake>` and
//! `sim:<mistake>-stubborn`): each a seeded change to the format's own
//! rendering of a task's real change, modelled on what real models were
//! seen doing, and each with the outcome it claims through the real path.
//!
//! Where each was observed (the same mistakes the engine's comparison bench
//! `benches/compare_mistakes.py` injects, PEERS.md's survey and
//! /work/shared/EDIT-SCENARIOS.md's numbered scenarios):
//!
//! | mistake | what the model does | seen in |
//! |---|---|---|
//! | `indent-drift` | quotes the changed block one indentation level too shallow (and writes its replacement at that level), dropping edge context lines that sit shallower | aider `test_replace_part_with_missing_leading_whitespace`; scenarios 3, 4; compare bench `dedent` |
//! | `trailing-space` | adds trailing whitespace to one quoted line | Roo #2188; scenario 37; compare bench `whitespace` |
//! | `elided-lines` | writes unchanged lines as a lazy `... existing code ...` placeholder | aider #350; Cline #14; Continue's truncation guard; scenarios 27, 28, 45 |
//! | `stale-line-numbers` | line numbers from before earlier edits (a diff's `@@` starts, hashline anchors' numbers) | git t4105 "big offset"; scenarios 17, 31; pi-hashline-edit-pro #32 |
//! | `wrong-hunk-counts` | `@@` counts off by one or two | scenario 19 (git `--recount`); compare bench `counts` |
//! | `typo-in-quote` | one character wrong in one quoted line | compare bench `typo`; OpenCode's fuzzy replacers (PEERS.md) |
//! | `invented-context` | a context line the file does not have | opencode #14046, #14632 (hallucinated middles); scenario 35 |
//! | `echoed-anchors` | hashline payload lines keep the `LINE:HASH\|` prefix of the read view | pi-hashline-readmap #126; scenario 29 |
//! | `truncated` | the reply stops halfway (the output limit): text cut, tool arguments cut mid-JSON | Cline #9555; scenario 45 |
//! | `ambiguous-quote` | quotes only the changed lines, which occur more than once | aider #2050, #3883; scenarios 1, 53 |
//!
//! **Where a mistake does not exist** (no hunk counts in search/replace, no
//! quoted text in hashline or whole file), or the task's change gives it no
//! place (no indented line, a changed line that occurs once), the profile
//! writes the perfect edit: the format is immune to that mistake, and the
//! pass rate says so. [`claim`] says which pairs these are.
//!
//! **The retry.** After the engine's feedback on a failed edit, a profile
//! corrects itself and sends the perfect edit (what models mostly do after a
//! precise error); the `-stubborn` variant sends the same mistaken edit again.
//!
//! **Seeds.** Where the mistake lands (which line, which character, how far
//! the line numbers are off) is drawn from a generator seeded by `--seed`,
//! the mistake and the task's content, so a run is reproducible and a task
//! gets the same mistake whatever else is in the run.
//!
//! Owns: the mistakes and their claims. Does not own: serving the turns
//! (`sim`) or judging them (`runner`).
//!
//! Invariant: a mistake never changes what the edit means to write except
//! through the mistake itself; when it cannot be made, the rendering is
//! returned unchanged (`None`).

use std::ops::Range;

use super::{FailureKind, Mode};
use crate::Format;
use crate::Tier;

/// A mistake a simulated model makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mistake {
    /// The quoted block one indentation level too shallow.
    IndentDrift,
    /// Trailing whitespace on one quoted line.
    TrailingSpace,
    /// Unchanged lines written as a lazy placeholder.
    ElidedLines,
    /// Line numbers off by a few lines.
    StaleLineNumbers,
    /// `@@` counts off by one or two.
    WrongHunkCounts,
    /// One character wrong in one quoted line.
    TypoInQuote,
    /// A context line the file does not have.
    InventedContext,
    /// Hashline payload lines keep their `LINE:HASH|` prefix.
    EchoedAnchors,
    /// The reply stops halfway.
    Truncated,
    /// Only the changed lines quoted, which occur more than once.
    AmbiguousQuote,
}

impl Mistake {
    /// Every mistake.
    pub const ALL: &'static [Mistake] = &[
        Mistake::IndentDrift,
        Mistake::TrailingSpace,
        Mistake::ElidedLines,
        Mistake::StaleLineNumbers,
        Mistake::WrongHunkCounts,
        Mistake::TypoInQuote,
        Mistake::InventedContext,
        Mistake::EchoedAnchors,
        Mistake::Truncated,
        Mistake::AmbiguousQuote,
    ];

    /// The profile's name after `sim:`.
    pub fn name(self) -> &'static str {
        match self {
            Mistake::IndentDrift => "indent-drift",
            Mistake::TrailingSpace => "trailing-space",
            Mistake::ElidedLines => "elided-lines",
            Mistake::StaleLineNumbers => "stale-line-numbers",
            Mistake::WrongHunkCounts => "wrong-hunk-counts",
            Mistake::TypoInQuote => "typo-in-quote",
            Mistake::InventedContext => "invented-context",
            Mistake::EchoedAnchors => "echoed-anchors",
            Mistake::Truncated => "truncated",
            Mistake::AmbiguousQuote => "ambiguous-quote",
        }
    }

    /// The name of the variant that repeats the mistake on every try.
    pub fn stubborn_name(self) -> &'static str {
        match self {
            Mistake::IndentDrift => "indent-drift-stubborn",
            Mistake::TrailingSpace => "trailing-space-stubborn",
            Mistake::ElidedLines => "elided-lines-stubborn",
            Mistake::StaleLineNumbers => "stale-line-numbers-stubborn",
            Mistake::WrongHunkCounts => "wrong-hunk-counts-stubborn",
            Mistake::TypoInQuote => "typo-in-quote-stubborn",
            Mistake::InventedContext => "invented-context-stubborn",
            Mistake::EchoedAnchors => "echoed-anchors-stubborn",
            Mistake::Truncated => "truncated-stubborn",
            Mistake::AmbiguousQuote => "ambiguous-quote-stubborn",
        }
    }

    /// The formats the mistake exists in (elsewhere the profile is perfect).
    pub fn exists_in(self, format: Format) -> bool {
        use Format::{ApplyPatch, Hashline, SearchReplace, UnifiedDiff, Whole};
        match self {
            Mistake::IndentDrift
            | Mistake::TrailingSpace
            | Mistake::TypoInQuote
            | Mistake::InventedContext
            | Mistake::AmbiguousQuote => matches!(format, SearchReplace | UnifiedDiff | ApplyPatch),
            Mistake::ElidedLines => {
                matches!(format, SearchReplace | UnifiedDiff | ApplyPatch | Whole)
            }
            Mistake::StaleLineNumbers => matches!(format, UnifiedDiff | Hashline),
            Mistake::WrongHunkCounts => format == UnifiedDiff,
            Mistake::EchoedAnchors => format == Hashline,
            Mistake::Truncated => true,
        }
    }
}

/// Where a profile's first attempt lands, on a task that gives its mistake
/// a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The mistake does not exist in the format: the edit is perfect.
    Perfect,
    /// The engine recovers: the first attempt applies the right change,
    /// located at this matcher tier at the loosest (a stricter one when
    /// the task lets it: a drifted one-line quote is still a substring of
    /// its line, which the edit tool tries first).
    Recovered(Tier),
    /// The first attempt fails with this kind. When the engine's answer
    /// says it failed (every kind but `wrong_result` and `no_edit`, where
    /// the edit applied or none was seen), the profile's retry passes and
    /// the stubborn variant's fails the same way again.
    Fails(FailureKind),
}

/// What `sim:<mistake>` claims for a format and mode: asserted for every
/// pair by the integration tests (`bench_sim`), through the loopback
/// server, the provider, the loop and the engine.
pub fn claim(mistake: Mistake, format: Format, mode: Mode) -> Claim {
    use Format::{Hashline, SearchReplace, UnifiedDiff, Whole};
    if !mistake.exists_in(format) {
        return Claim::Perfect;
    }
    match (mistake, format) {
        // The cascade's tiers: re-indented, whitespace-tolerant, Levenshtein.
        (Mistake::IndentDrift, _) => Claim::Recovered(Tier::Indent),
        (Mistake::TrailingSpace, _) => Claim::Recovered(Tier::Whitespace),
        (Mistake::TypoInQuote, _) => Claim::Recovered(Tier::Fuzzy),
        // The placeholder is refused (search/replace's REPLACE, a whole
        // file that drops lines); a diff's reader passes over it as loose
        // outer context; apply_patch's does not find it.
        (Mistake::ElidedLines, SearchReplace | Whole) => Claim::Fails(FailureKind::Parse),
        (Mistake::ElidedLines, UnifiedDiff) => Claim::Recovered(Tier::Exact),
        (Mistake::ElidedLines, _) => Claim::Fails(FailureKind::NotFound),
        // A diff's line numbers are a hint; a hashline anchor's are checked.
        (Mistake::StaleLineNumbers, Hashline) => Claim::Fails(FailureKind::Stale),
        (Mistake::StaleLineNumbers, _) => Claim::Recovered(Tier::Exact),
        // Counts are recounted from the body.
        (Mistake::WrongHunkCounts, _) => Claim::Recovered(Tier::Exact),
        // A line in the middle of the quote that the file lacks.
        (Mistake::InventedContext, _) => Claim::Fails(FailureKind::NotFound),
        // The echoed prefixes are stripped.
        (Mistake::EchoedAnchors, _) => Claim::Recovered(Tier::Anchor),
        // Cut mid-JSON, a tool call cannot be read; in text, what the cut
        // leaves depends on the format: an unclosed block or fence is a
        // parse error, a hashline header with no directive reads as no
        // edit at all, and a diff or patch cut inside its hunk is refused
        // as cut off (unified-diff.md §1.4, apply-patch.md §1.3; before
        // issue 10 it was recounted and applied: a wrong result).
        (Mistake::Truncated, _) if mode == Mode::Tool => Claim::Fails(FailureKind::Parse),
        (Mistake::Truncated, Hashline) => Claim::Fails(FailureKind::NoEdit),
        (Mistake::Truncated, _) => Claim::Fails(FailureKind::Parse),
        (Mistake::AmbiguousQuote, _) => Claim::Fails(FailureKind::Ambiguous),
    }
}

/// A small deterministic generator (SplitMix64), seeded per mistake and task.
#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

impl Rng {
    /// Seeded by the run's seed, the mistake and the task's content.
    pub(super) fn new(seed: u64, mistake: Mistake, content: &[&str]) -> Rng {
        let mut h = xxhash_rust::xxh3::xxh3_64(mistake.name().as_bytes()) ^ seed;
        for part in content {
            h = xxhash_rust::xxh3::xxh3_64_with_seed(part.as_bytes(), h);
        }
        Rng(h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// What a line of a rendering is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Headers, markers, fences, paths.
    Other,
    /// A hunk's or block's first line (`@@ …`, `<<<<<<< SEARCH`).
    Header,
    /// A quoted line of the old text only (search/replace SEARCH, a diff's `-`).
    Old,
    /// A written line of the new text only (REPLACE, `+`).
    New,
    /// A diff's context line: quoted and kept.
    Context,
    /// search/replace's `=======`.
    Sep,
    /// `\ No newline at end of file`.
    NoEol,
}

/// A rendering, line by line, with each line's role.
#[derive(Debug, Clone)]
struct Render {
    lines: Vec<String>,
    roles: Vec<Role>,
    /// Whether the text ended with a line break.
    final_break: bool,
}

/// `@@ -a,b +c,d @@` as numbers.
fn udiff_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let pair = |s: &str| -> Option<(usize, usize)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (a, b) = pair(old)?;
    let (c, d) = pair(new)?;
    Some((a, b, c, d))
}

fn write_udiff_header(line: &str, h: (usize, usize, usize, usize)) -> String {
    let tail = line
        .strip_prefix("@@ -")
        .and_then(|r| r.split_once(" @@"))
        .map_or("", |(_, t)| t);
    format!("@@ -{},{} +{},{} @@{tail}", h.0, h.1, h.2, h.3)
}

impl Render {
    fn parse(format: Format, text: &str) -> Render {
        let final_break = text.ends_with('\n');
        let lines: Vec<String> = text
            .strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .map(str::to_owned)
            .collect();
        let mut roles = vec![Role::Other; lines.len()];
        match format {
            Format::SearchReplace => {
                let mut state = 0;
                for (l, role) in lines.iter().zip(roles.iter_mut()) {
                    *role = match (state, l.as_str()) {
                        (0, "<<<<<<< SEARCH") => {
                            state = 1;
                            Role::Header
                        }
                        (1, "=======") => {
                            state = 2;
                            Role::Sep
                        }
                        (2, ">>>>>>> REPLACE") => {
                            state = 0;
                            Role::Other
                        }
                        (1, _) => Role::Old,
                        (2, _) => Role::New,
                        _ => Role::Other,
                    };
                }
            }
            Format::UnifiedDiff => {
                let mut left = (0usize, 0usize);
                let mut in_hunk = false;
                for (l, role) in lines.iter().zip(roles.iter_mut()) {
                    if left != (0, 0) {
                        *role = match l.chars().next() {
                            Some('-') => {
                                left.0 = left.0.saturating_sub(1);
                                Role::Old
                            }
                            Some('+') => {
                                left.1 = left.1.saturating_sub(1);
                                Role::New
                            }
                            Some('\\') => Role::NoEol,
                            _ => {
                                left = (left.0.saturating_sub(1), left.1.saturating_sub(1));
                                Role::Context
                            }
                        };
                        continue;
                    }
                    if in_hunk && l.starts_with('\\') {
                        *role = Role::NoEol;
                        continue;
                    }
                    in_hunk = false;
                    if let Some((_, b, _, d)) = udiff_header(l) {
                        *role = Role::Header;
                        left = (b, d);
                        in_hunk = true;
                    }
                }
            }
            Format::ApplyPatch => {
                let mut in_hunk = false;
                for (l, role) in lines.iter().zip(roles.iter_mut()) {
                    if l.starts_with("***") {
                        in_hunk = false;
                        continue;
                    }
                    if l.starts_with("@@") {
                        *role = Role::Header;
                        in_hunk = true;
                        continue;
                    }
                    *role = match l.chars().next() {
                        Some('+') => Role::New,
                        Some('-') if in_hunk => Role::Old,
                        Some(' ') if in_hunk => Role::Context,
                        None if in_hunk => Role::Context,
                        _ => Role::Other,
                    };
                }
            }
            Format::Hashline => {
                for (l, role) in lines.iter().zip(roles.iter_mut()) {
                    *role = if l.starts_with("@@ replace ") {
                        Role::Header
                    } else if l.starts_with('+') {
                        Role::New
                    } else {
                        Role::Other
                    };
                }
            }
            _ => {}
        }
        Render {
            lines,
            roles,
            final_break,
        }
    }

    fn text(&self) -> String {
        let mut out = self.lines.join("\n");
        if self.final_break {
            out.push('\n');
        }
        out
    }

    /// Each hunk's (or block's) body: the lines after its header, up to the
    /// next line that is no part of one.
    fn hunks(&self) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.lines.len() {
            if self.roles[i] == Role::Header {
                let start = i + 1;
                let mut end = start;
                while end < self.lines.len()
                    && !matches!(self.roles[end], Role::Other | Role::Header)
                {
                    end += 1;
                }
                out.push(start..end);
                i = end;
            } else {
                i += 1;
            }
        }
        out
    }

    /// The text of a body line without its diff prefix.
    fn body(&self, i: usize, format: Format) -> &str {
        let l = &self.lines[i];
        match (format, self.roles[i]) {
            (Format::SearchReplace, _) | (_, Role::Other | Role::Header | Role::Sep) => l,
            _ => l.get(1..).unwrap_or(""),
        }
    }

    fn set_body(&mut self, i: usize, format: Format, text: &str) {
        let prefix = match (format, self.roles[i]) {
            (Format::SearchReplace, _) => "",
            (_, Role::Old) => "-",
            (_, Role::New) => "+",
            (_, Role::Context) => " ",
            _ => "",
        };
        self.lines[i] = format!("{prefix}{text}");
    }

    fn remove(&mut self, i: usize) {
        self.lines.remove(i);
        self.roles.remove(i);
    }

    fn insert(&mut self, i: usize, line: String, role: Role) {
        self.lines.insert(i, line);
        self.roles.insert(i, role);
    }

    /// Rewrites every unified diff header's counts from its body (the
    /// starts are kept).
    fn recount(&mut self) {
        for h in self.hunks() {
            let head = h.start - 1;
            let Some((a, _, c, _)) = udiff_header(&self.lines[head]) else {
                continue;
            };
            let count = |r: &[Role], k: Role| {
                r.iter()
                    .filter(|x| **x == k || **x == Role::Context)
                    .count()
            };
            let roles = &self.roles[h.clone()];
            let (b, d) = (count(roles, Role::Old), count(roles, Role::New));
            self.lines[head] = write_udiff_header(&self.lines[head], (a, b, c, d));
        }
    }
}

fn indent_of(s: &str) -> &str {
    &s[..s.len() - s.trim_start_matches([' ', '\t']).len()]
}

fn common_indent<'a>(lines: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut common: Option<String> = None;
    for l in lines.filter(|l| !l.trim().is_empty()) {
        let ind = indent_of(l);
        common = Some(match common {
            None => ind.to_owned(),
            Some(c) => c
                .chars()
                .zip(ind.chars())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common
}

/// The comment that starts a line in a file of this name.
fn comment_for(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "py" | "sh" | "rb" | "toml" | "yaml" | "yml" | "pl" | "r" | "bash" => "#",
        _ => "//",
    }
}

/// The file's text as a line list (no breaks).
fn file_lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Makes `mistake` in one file's rendering (`rendered`, the format's own
/// rendering of `before` → `after` of `path`); `None` when the mistake has
/// no place in it. Truncation is not made here (it cuts the whole reply).
pub(super) fn inject(
    mistake: Mistake,
    format: Format,
    path: &str,
    before: &str,
    after: &str,
    rendered: &str,
    rng: &mut Rng,
) -> Option<String> {
    if !mistake.exists_in(format) {
        return None;
    }
    if format == Format::Whole {
        return match mistake {
            Mistake::ElidedLines => {
                elide_whole(path, before, after).map(|a| format.render(path, before, &a))
            }
            _ => None,
        };
    }
    let mut r = Render::parse(format, rendered);
    let made = match mistake {
        Mistake::IndentDrift => indent_drift(&mut r, format),
        Mistake::TrailingSpace => trailing_space(&mut r, format, rng),
        Mistake::ElidedLines => elide(&mut r, format, path),
        Mistake::StaleLineNumbers => stale_numbers(&mut r, format, before, rng),
        Mistake::WrongHunkCounts => wrong_counts(&mut r, rng),
        Mistake::TypoInQuote => typo(&mut r, format, before, rng),
        Mistake::InventedContext => invent(&mut r, format, path, rng),
        Mistake::EchoedAnchors => echo_anchors(&mut r, before),
        Mistake::AmbiguousQuote => ambiguous(&mut r, format, before),
        Mistake::Truncated => false,
    };
    // The quote must still say where the edit goes (apart from the mistake
    // itself): a drifted quote trimmed to a line that recurs, or what is
    // left of an elided one, would be a second mistake, ambiguity.
    let determined = match mistake {
        Mistake::IndentDrift => {
            unique_quote(&r, format, before, &|l| l.trim_start().to_owned(), "")
        }
        Mistake::ElidedLines => unique_quote(&r, format, before, &|l| l.to_owned(), ELIDED),
        _ => true,
    };
    (made && determined).then(|| r.text())
}

/// The words of the placeholder an elided run of lines becomes.
const ELIDED: &str = "... existing code ...";

/// Whether each hunk's quoted lines (those containing `skip` aside, when
/// it is not empty), normalised by `norm`, occur exactly once in the file.
fn unique_quote(
    r: &Render,
    format: Format,
    before: &str,
    norm: &dyn Fn(&str) -> String,
    skip: &str,
) -> bool {
    let file: Vec<String> = file_lines(before).into_iter().map(norm).collect();
    r.hunks().iter().all(|h| {
        let quote: Vec<String> = h
            .clone()
            .filter(|&i| matches!(r.roles[i], Role::Old | Role::Context))
            .map(|i| r.body(i, format))
            .filter(|l| skip.is_empty() || !l.contains(skip))
            .map(norm)
            .collect();
        !quote.is_empty()
            && file
                .windows(quote.len())
                .filter(|w| *w == quote.as_slice())
                .count()
                == 1
    })
}

/// The quoted lines one may misquote: SEARCH lines, a diff's `-` and
/// context lines; not blank.
fn quoted(r: &Render, format: Format) -> Vec<usize> {
    (0..r.lines.len())
        .filter(|&i| matches!(r.roles[i], Role::Old | Role::Context))
        .filter(|&i| !r.body(i, format).trim().is_empty())
        .collect()
}

/// A search/replace block's SEARCH and REPLACE line indices.
fn block_sides(r: &Render, h: &Range<usize>) -> (Vec<usize>, Vec<usize>) {
    let old = h.clone().filter(|&i| r.roles[i] == Role::Old).collect();
    let new = h.clone().filter(|&i| r.roles[i] == Role::New).collect();
    (old, new)
}

/// How many leading and trailing lines SEARCH and REPLACE share.
fn shared_edges(r: &Render, old: &[usize], new: &[usize]) -> (usize, usize) {
    let eq = |a: usize, b: usize| r.lines[a] == r.lines[b];
    let p = old
        .iter()
        .zip(new)
        .take_while(|(a, b)| eq(**a, **b))
        .count();
    let room = old.len().min(new.len()) - p;
    let s = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(room)
        .take_while(|(a, b)| eq(**a, **b))
        .count();
    (p, s)
}

/// Removes the edge context (search/replace: lines SEARCH and REPLACE
/// share; diffs: context lines) for which `drop` holds, hunk by hunk from
/// the last; a diff's header is moved past removed leading lines and
/// recounted.
fn trim_edges(r: &mut Render, format: Format, drop: &dyn Fn(&Render, usize) -> bool) -> bool {
    let mut trimmed = false;
    for h in r.hunks().into_iter().rev() {
        if format == Format::SearchReplace {
            let (old, new) = block_sides(r, &h);
            let (p, s) = shared_edges(r, &old, &new);
            let mut gone = Vec::new();
            let mut front = 0;
            while front < p && drop(r, old[front]) {
                gone.extend([old[front], new[front]]);
                front += 1;
            }
            let mut back = 0;
            while back < s && front + back < old.len().min(new.len()) {
                let (o, n) = (old[old.len() - 1 - back], new[new.len() - 1 - back]);
                if !drop(r, o) {
                    break;
                }
                gone.extend([o, n]);
                back += 1;
            }
            gone.sort_unstable();
            for i in gone.into_iter().rev() {
                r.remove(i);
                trimmed = true;
            }
            continue;
        }
        let ctx = |r: &Render, i: usize| r.roles[i] == Role::Context;
        let mut end = h.end;
        while end > h.start && r.roles[end - 1] == Role::NoEol {
            end -= 1;
        }
        let mut last = end;
        while last > h.start && ctx(r, last - 1) && drop(r, last - 1) {
            last -= 1;
        }
        for i in (last..end).rev() {
            r.remove(i);
            trimmed = true;
        }
        let mut lead = 0;
        while h.start + lead < last && ctx(r, h.start + lead) && drop(r, h.start + lead) {
            lead += 1;
        }
        for _ in 0..lead {
            r.remove(h.start);
            trimmed = true;
        }
        if format == Format::UnifiedDiff && lead > 0 {
            let head = h.start - 1;
            if let Some((a, b, c, d)) = udiff_header(&r.lines[head]) {
                r.lines[head] = write_udiff_header(&r.lines[head], (a + lead, b, c + lead, d));
            }
        }
    }
    if format == Format::UnifiedDiff {
        r.recount();
    }
    trimmed
}

/// The changed lines' (not context) texts in a hunk.
fn changed_in(r: &Render, format: Format, h: &Range<usize>) -> Vec<usize> {
    if format == Format::SearchReplace {
        let (old, new) = block_sides(r, h);
        let (p, s) = shared_edges(r, &old, &new);
        let mut out: Vec<usize> = old[p..old.len() - s].to_vec();
        out.extend(&new[p..new.len() - s]);
        return out;
    }
    h.clone()
        .filter(|&i| matches!(r.roles[i], Role::Old | Role::New))
        .collect()
}

fn indent_drift(r: &mut Render, format: Format) -> bool {
    // The indentation every changed line shares, hunk by hunk.
    let targets: Vec<Option<String>> = r
        .hunks()
        .iter()
        .map(|h| {
            let changed = changed_in(r, format, h);
            common_indent(changed.iter().map(|&i| r.body(i, format))).filter(|c| !c.is_empty())
        })
        .collect();
    if targets.iter().all(Option::is_none) {
        return false;
    }
    // Edge context shallower than the changed lines is left out (a model
    // quoting the inner block does not quote the lines around it).
    let hunks = r.hunks();
    let owner = |i: usize| hunks.iter().position(|h| h.contains(&i));
    let drop = |r: &Render, i: usize| {
        owner(i)
            .and_then(|k| targets[k].as_deref())
            .is_some_and(|t| !r.body(i, format).starts_with(t))
    };
    trim_edges(r, format, &drop);
    let mut made = false;
    for h in r.hunks() {
        let Some(common) = common_indent(
            h.clone()
                .filter(|&i| r.roles[i] != Role::Sep && r.roles[i] != Role::NoEol)
                .map(|i| r.body(i, format)),
        ) else {
            continue;
        };
        let cut: String = if common.starts_with('\t') {
            "\t".to_owned()
        } else {
            common.chars().take_while(|c| *c == ' ').take(4).collect()
        };
        if cut.is_empty() {
            continue;
        }
        for i in h {
            if matches!(r.roles[i], Role::Sep | Role::NoEol) {
                continue;
            }
            if let Some(rest) = r.body(i, format).strip_prefix(cut.as_str()) {
                let rest = rest.to_owned();
                r.set_body(i, format, &rest);
                made = true;
            }
        }
    }
    made
}

fn trailing_space(r: &mut Render, format: Format, rng: &mut Rng) -> bool {
    let q = quoted(r, format);
    if q.is_empty() {
        return false;
    }
    let i = q[rng.below(q.len())];
    r.lines[i].push_str(["  ", " ", "\t"][rng.below(3)]);
    true
}

fn typo(r: &mut Render, format: Format, before: &str, rng: &mut Rng) -> bool {
    let file: Vec<&str> = file_lines(before);
    // A changed line (one the engine cannot pass over as outer context),
    // long enough that one wrong character leaves it recognisable.
    let q: Vec<usize> = r
        .hunks()
        .iter()
        .flat_map(|h| changed_in(r, format, h))
        .filter(|&i| r.roles[i] == Role::Old)
        .filter(|&i| r.body(i, format).trim().len() >= 12)
        .collect();
    if q.is_empty() {
        return false;
    }
    let i = q[rng.below(q.len())];
    let body: Vec<char> = r.body(i, format).chars().collect();
    // A letter or digit past the indentation, swapped for another.
    let spots: Vec<usize> = (0..body.len())
        .filter(|&k| body[k].is_ascii_alphanumeric())
        .collect();
    if spots.is_empty() {
        return false;
    }
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    for _ in 0..8 {
        let k = spots[rng.below(spots.len())];
        let mut c = char::from(ALPHABET[rng.below(ALPHABET.len())]);
        if c == body[k] {
            c = if c == 'q' { 'x' } else { 'q' };
        }
        let mut new = body.clone();
        new[k] = c;
        let new: String = new.into_iter().collect();
        if !file.contains(&new.as_str()) {
            r.set_body(i, format, &new);
            return true;
        }
    }
    false
}

fn invent(r: &mut Render, format: Format, path: &str, rng: &mut Rng) -> bool {
    const INVENTED: &[&str] = &[
        "keep in sync with the caller",
        "validated by the caller",
        "see the tests for the edge cases",
    ];
    // In the middle of the quote, just before the first changed line, where
    // no tolerance for loose outer context can pass over it.
    let Some(h) = r.hunks().into_iter().next() else {
        return false;
    };
    let Some(&first) = changed_in(r, format, &h)
        .iter()
        .find(|&&i| r.roles[i] == Role::Old)
    else {
        return false;
    };
    // A diff's reader may pass over two lines of loose outer context: the
    // invented line goes after at least two true ones, so it is a line in
    // the middle of the quote.
    let before_it = (h.start..first)
        .filter(|&i| r.roles[i] == Role::Context)
        .count();
    if format == Format::UnifiedDiff && before_it < 2 {
        return false;
    }
    let line = format!(
        "{}{} {}",
        indent_of(r.body(first, format)),
        comment_for(path),
        INVENTED[rng.below(INVENTED.len())]
    );
    match format {
        Format::SearchReplace => {
            // The same place in REPLACE: as many lines after its start.
            let (old, new) = block_sides(r, &h);
            let k = old.iter().position(|&i| i == first).unwrap_or(0);
            let Some(&at) = new.get(k).or(new.last()) else {
                return false;
            };
            r.insert(at, line.clone(), Role::New);
            r.insert(first, line, Role::Old);
        }
        _ => {
            r.insert(first, format!(" {line}"), Role::Context);
            if format == Format::UnifiedDiff {
                r.recount();
            }
        }
    }
    true
}

fn elide(r: &mut Render, format: Format, path: &str) -> bool {
    let Some(h) = r.hunks().into_iter().next() else {
        return false;
    };
    let marker = |indent: &str| format!("{indent}{} {ELIDED}", comment_for(path));
    if format == Format::SearchReplace {
        // REPLACE keeps its leading shared lines as a placeholder.
        let (old, new) = block_sides(r, &h);
        let (p, _) = shared_edges(r, &old, &new);
        if p == 0 {
            return false;
        }
        let indent = indent_of(&r.lines[new[0]]).to_owned();
        for &i in new[..p].iter().rev() {
            r.remove(i);
        }
        r.insert(new[0], marker(&indent), Role::New);
        return true;
    }
    // A diff: the leading context lines become one placeholder context line.
    let lead = h
        .clone()
        .take_while(|&i| r.roles[i] == Role::Context)
        .count();
    if lead == 0 {
        return false;
    }
    let indent = indent_of(r.body(h.start, format)).to_owned();
    for _ in 0..lead {
        r.remove(h.start);
    }
    r.insert(h.start, format!(" {}", marker(&indent)), Role::Context);
    if format == Format::UnifiedDiff {
        r.recount();
    }
    true
}

/// Whole file: the longest run (two lines or more) of unchanged lines
/// becomes one placeholder line.
fn elide_whole(path: &str, before: &str, after: &str) -> Option<String> {
    let diff = similar::TextDiff::from_lines(before, after);
    let mut best: Option<Range<usize>> = None;
    for op in diff.ops() {
        if op.tag() == similar::DiffTag::Equal {
            let r = op.new_range();
            if r.len() >= 2 && best.as_ref().is_none_or(|b| r.len() > b.len()) {
                best = Some(r);
            }
        }
    }
    let best = best?;
    let lines: Vec<&str> = after.split_inclusive('\n').collect();
    let indent = indent_of(lines[best.start]);
    let mut out = String::new();
    for (k, l) in lines.iter().enumerate() {
        if k == best.start {
            out.push_str(&format!("{indent}{} {ELIDED}\n", comment_for(path)));
        } else if !best.contains(&k) {
            out.push_str(l);
        }
    }
    Some(out)
}

fn stale_numbers(r: &mut Render, format: Format, before: &str, rng: &mut Rng) -> bool {
    let mut made = false;
    match format {
        Format::UnifiedDiff => {
            let shift = 3 + rng.below(5);
            for i in 0..r.lines.len() {
                if r.roles[i] != Role::Header {
                    continue;
                }
                if let Some((a, b, c, d)) = udiff_header(&r.lines[i]) {
                    r.lines[i] = write_udiff_header(&r.lines[i], (a + shift, b, c + shift, d));
                    made = true;
                }
            }
        }
        Format::Hashline => {
            // The same hashes, the numbers a few lines off (as after an
            // earlier edit the model did not re-read).
            let n = file_lines(before).len();
            let shift = 1 + rng.below(3);
            for i in 0..r.lines.len() {
                if r.roles[i] != Role::Header {
                    continue;
                }
                let parts: Vec<String> = r.lines[i]
                    .split(' ')
                    .map(|w| match w.split_once(':') {
                        Some((num, hash)) if num.parse::<usize>().is_ok() => {
                            let line: usize = num.parse().unwrap_or(1);
                            let moved = if line + shift <= n {
                                line + shift
                            } else {
                                line.saturating_sub(shift).max(1)
                            };
                            format!("{moved}:{hash}")
                        }
                        _ => w.to_owned(),
                    })
                    .collect();
                r.lines[i] = parts.join(" ");
                made = true;
            }
        }
        _ => {}
    }
    made
}

fn wrong_counts(r: &mut Render, rng: &mut Rng) -> bool {
    let mut made = false;
    for i in 0..r.lines.len() {
        if r.roles[i] != Role::Header {
            continue;
        }
        let Some((a, b, c, d)) = udiff_header(&r.lines[i]) else {
            continue;
        };
        // A count of 0 says where a pure insertion or deletion goes: left alone.
        if b == 0 || d == 0 {
            continue;
        }
        let delta = [1isize, 2, -1, -2][rng.below(4)];
        let off = |n: usize| {
            let m = n as isize + delta;
            if m > 0 {
                m as usize
            } else {
                n + delta.unsigned_abs()
            }
        };
        let (b, d) = match rng.below(3) {
            0 => (off(b), d),
            1 => (b, off(d)),
            _ => (off(b), off(d)),
        };
        r.lines[i] = write_udiff_header(&r.lines[i], (a, b, c, d));
        made = true;
    }
    made
}

fn echo_anchors(r: &mut Render, before: &str) -> bool {
    let file = file_lines(before);
    let mut made = false;
    let mut next: Option<usize> = None;
    for i in 0..r.lines.len() {
        match r.roles[i] {
            Role::Header => {
                // `@@ replace A B`: the payload echoes A's number onward.
                next = r.lines[i]
                    .split(' ')
                    .nth(2)
                    .and_then(|a| a.split_once(':'))
                    .and_then(|(n, _)| n.parse::<usize>().ok());
            }
            Role::New => {
                let Some(n) = next else { continue };
                let text = r.lines[i][1..].to_owned();
                let hash = file.get(n - 1).map_or_else(
                    || crate::text::line_hash(&text),
                    |l| crate::text::line_hash(l),
                );
                r.lines[i] = format!("+{n}:{hash}|{text}");
                next = Some(n + 1);
                made = true;
            }
            _ => next = None,
        }
    }
    made
}

fn ambiguous(r: &mut Render, format: Format, before: &str) -> bool {
    // Every context line goes; the quote is the changed lines alone.
    let all = |_: &Render, _: usize| true;
    trim_edges(r, format, &all);
    let file = file_lines(before);
    let Some(h) = r.hunks().into_iter().next() else {
        return false;
    };
    let old: Vec<&str> = h
        .clone()
        .filter(|&i| matches!(r.roles[i], Role::Old | Role::Context))
        .map(|i| r.body(i, format))
        .collect();
    if old.is_empty() || r.hunks().len() != 1 {
        return false;
    }
    file.windows(old.len())
        .filter(|w| *w == old.as_slice())
        .count()
        > 1
}

/// Cuts a reply halfway: text by lines (at least one line goes), tool
/// arguments mid-JSON.
pub(super) fn truncate_text(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let keep = (lines.len() / 2).min(lines.len().saturating_sub(1)).max(1);
    lines[..keep.min(lines.len())].concat()
}

/// Cuts a tool call's JSON arguments halfway (at a character boundary).
pub(super) fn truncate_json(args: &str) -> String {
    let mut at = args.len() / 2;
    while at > 0 && !args.is_char_boundary(at) {
        at -= 1;
    }
    args[..at].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udiff_headers_round_trip() {
        assert_eq!(udiff_header("@@ -2,7 +2,8 @@"), Some((2, 7, 2, 8)));
        assert_eq!(udiff_header("@@ -3 +3 @@ fn x"), Some((3, 1, 3, 1)));
        assert_eq!(
            write_udiff_header("@@ -3 +3 @@ fn x", (4, 1, 4, 2)),
            "@@ -4,1 +4,2 @@ fn x"
        );
    }

    #[test]
    fn the_generator_is_seeded_by_seed_and_content() {
        let a = Rng::new(1, Mistake::TypoInQuote, &["x"]).next();
        assert_eq!(a, Rng::new(1, Mistake::TypoInQuote, &["x"]).next());
        assert_ne!(a, Rng::new(2, Mistake::TypoInQuote, &["x"]).next());
        assert_ne!(a, Rng::new(1, Mistake::TypoInQuote, &["y"]).next());
    }

    /// A changed line long enough for a typo but without a letter or digit
    /// to misspell gives the typo no place (it panicked, indexing nothing).
    #[test]
    fn a_typo_needs_a_letter_or_digit() {
        let before = "x = 1\n\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\u{2014}\ny = 2\n";
        let after = "x = 1\n== == == == == ==\ny = 2\n";
        for &format in &[
            Format::SearchReplace,
            Format::UnifiedDiff,
            Format::ApplyPatch,
        ] {
            let rendered = format.render("notes.md", before, after);
            let mut rng = Rng::new(1, Mistake::TypoInQuote, &[before]);
            let made = inject(
                Mistake::TypoInQuote,
                format,
                "notes.md",
                before,
                after,
                &rendered,
                &mut rng,
            );
            assert_eq!(made, None, "{format:?}");
        }
    }

    #[test]
    fn names_round_trip_and_differ() {
        let mut seen = std::collections::HashSet::new();
        for m in Mistake::ALL {
            assert!(seen.insert(m.name()));
            assert!(seen.insert(m.stubborn_name()));
        }
    }
}
