//! Locate recall (issue 10): one real change to real source text, rendered
//! as search/replace, as a unified diff and as apply_patch, with the model's
//! typical mistakes injected into the quoted old lines, applied through
//! `lancet::apply_text`; counted per format × kind of mistake as correct,
//! refused, wrong or undetermined.
//!
//! The text is the project's own `src/**/*.rs` and the Python under
//! `tests/fixtures`, read at test time. A case is one block of a file: up to
//! three context lines, one or two lines changed, inserted or deleted, up to
//! three context lines. The same noisy old lines go into all three formats
//! (search/replace quotes context lines on both sides, as a diff does).
//!
//! **Determined** (the input fixes the answer): the block as the file has it
//! occurs exactly once in the file, its non-blank lines hold at least 12
//! non-space characters, and the noisy block's most similar place — scored
//! here, independently of the matcher, as 1 − Σ edit distance / Σ longest
//! line over windows of as many non-blank lines, each line compared without
//! indentation and with whitespace runs collapsed — is the real one, at least
//! 0.93 similar and ahead of every other window by at least 0.05; and its
//! lines do not mix tab and space indentation (then where a new line's
//! indentation goes, tab or spaces, is a choice the input does not make).
//! Only determined cases count; the floor is 98.5 % of them correct, and no
//! case may be wrong (a file changed to anything but the real change, or a
//! claim that it already is). On an undetermined case two results are
//! readings of the input, not wrong: the real change with new lines indented
//! otherwise (one line lost its indentation and too few kept theirs, or the
//! block mixes tabs and spaces), and the edit applied literally where its
//! quoted old lines stand word for word (a lost indentation that made the
//! quote another block's, such as `    }` / `}`).
//!
//! By hand: `LOCATE_CASES=1000` measures more cases per kind,
//! `LOCATE_DEBUG=1` prints every determined case refused, and
//! `LOCATE_DUMP=DIR` writes each wrong case's file, edit and expected result
//! to `DIR` (to replay with `lancet apply`).

use std::path::{Path, PathBuf};

use lancet::{ApplyOptions, Format, apply_text};
use proptest::prelude::*;

/// The text the cases are cut from: (path relative to the crate, lines).
fn corpus() -> Vec<(String, Vec<String>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(&root.join("src"), "rs", &mut files);
    collect(&root.join("tests/fixtures"), "py", &mut files);
    files.sort();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        // Fixtures repeat their inputs as expectations: each text once.
        if text.lines().count() < 12 || !seen.insert(text.clone()) {
            continue;
        }
        let rel = f
            .strip_prefix(&root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        out.push((rel, text.lines().map(str::to_owned).collect()));
    }
    out
}

fn collect(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// The kinds of mistake injected into the quoted old lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mistake {
    /// 1–2 one-character typos in 1–2 quoted lines (context or removed).
    Typo,
    /// Trailing spaces, a leading tab retyped as spaces (or spaces as a tab),
    /// a doubled inner space, in 1–2 context lines.
    Whitespace,
    /// The block's common indentation dropped (every line, new ones too), or
    /// one context line's indentation lost.
    Indent,
}

const MISTAKES: [Mistake; 3] = [Mistake::Typo, Mistake::Whitespace, Mistake::Indent];
/// The formats measured; apply_patch twice: bare chunks, and chunks under
/// an `@@` anchor naming the block's enclosing header (with a typo of its
/// own in one typo case of four).
const FORMATS: [(Format, bool); 4] = [
    (Format::SearchReplace, false),
    (Format::UnifiedDiff, false),
    (Format::ApplyPatch, false),
    (Format::ApplyPatch, true),
];

/// Raw choices; [`build`] turns them into a case against the corpus.
#[derive(Debug, Clone)]
pub(super) struct Raw {
    file: usize,
    at: usize,
    before: usize,
    after: usize,
    change: usize,
    changed: usize,
    noise: Vec<(usize, usize, usize)>,
}

fn arb_raw() -> impl Strategy<Value = Raw> {
    (
        any::<usize>(),
        any::<usize>(),
        0usize..=3,
        0usize..=3,
        0usize..3,
        1usize..=2,
        prop::collection::vec((any::<usize>(), any::<usize>(), any::<usize>()), 4),
    )
        .prop_map(|(file, at, before, after, change, changed, noise)| Raw {
            file,
            at,
            before: before.max(1),
            after: after.max(1),
            change,
            changed,
            noise,
        })
}

/// One body line of a change: context, removed or added.
#[derive(Debug, Clone, PartialEq)]
enum L {
    Ctx(String),
    Del(String),
    Add(String),
}

/// A built case: the file, the real result, and the model's (noisy) body.
struct Case {
    path: String,
    content: String,
    expected: String,
    /// Where the clean block starts in the file (0-based) and how many old lines it has.
    start: usize,
    old_len: usize,
    new_len: usize,
    /// The body as the model writes it.
    body: Vec<L>,
    /// The clean old lines (for the determination).
    clean_old: Vec<String>,
    /// One quoted line lost its indentation while the others kept theirs:
    /// where new lines go is shown only by a majority, two kept lines at least.
    lone_indent_loss: bool,
    /// The enclosing header above the block, as an `@@` anchor (maybe with a typo).
    anchor: Option<String>,
}

fn marker_like(l: &str) -> bool {
    let t = l.trim();
    [
        "<<<<<<<", "=======", ">>>>>>>", "***", "@@", "---", "+++", "\\ ",
    ]
    .iter()
    .any(|m| t.starts_with(m))
        || t.contains("<<<<<<<")
        || t.contains(">>>>>>>")
        || t.contains("=======")
        || t == "..."
        || t.contains("...")
        || t.contains('\r')
}

fn build(raw: &Raw, corpus: &[(String, Vec<String>)], mistake: Mistake) -> Option<Case> {
    let (path, lines) = &corpus[raw.file % corpus.len()];
    let n = lines.len();
    let python = path.ends_with(".py");
    let comment = if python { "# " } else { "// " };
    let changed = if raw.change == 1 { 0 } else { raw.changed };
    let at = raw.at % n;
    let lo = at.saturating_sub(raw.before);
    let mid_end = (at + changed).min(n);
    let hi = (mid_end + raw.after).min(n);
    if hi - lo < 2 {
        return None;
    }
    // The change.
    let mut body: Vec<L> = Vec::new();
    for l in &lines[lo..at] {
        body.push(L::Ctx(l.clone()));
    }
    let next_indent = |k: usize| -> Option<String> {
        let l = lines.get(k).or(lines.get(k.saturating_sub(1)))?;
        Some(l[..l.len() - l.trim_start().len()].to_owned())
    };
    match raw.change {
        0 => {
            for l in &lines[at..mid_end] {
                body.push(L::Del(l.clone()));
                let new = if l.trim().is_empty() {
                    format!(
                        "{}{comment}edited",
                        next_indent(mid_end).unwrap_or_default()
                    )
                } else {
                    format!("{l} {comment}edited")
                };
                body.push(L::Add(new));
            }
        }
        1 => {
            let ind = next_indent(at).unwrap_or_default();
            for j in 0..raw.changed {
                body.push(L::Add(format!("{ind}{comment}inserted note {j}")));
            }
        }
        _ => {
            for l in &lines[at..mid_end] {
                body.push(L::Del(l.clone()));
            }
        }
    }
    for l in &lines[mid_end..hi] {
        body.push(L::Ctx(l.clone()));
    }
    let texts = || {
        body.iter().map(|l| match l {
            L::Ctx(t) | L::Del(t) | L::Add(t) => t,
        })
    };
    if texts().any(|t| marker_like(t)) {
        return None;
    }
    let clean_old: Vec<String> = body
        .iter()
        .filter_map(|l| match l {
            L::Ctx(t) | L::Del(t) => Some(t.clone()),
            L::Add(_) => None,
        })
        .collect();
    let new: Vec<String> = body
        .iter()
        .filter_map(|l| match l {
            L::Ctx(t) | L::Add(t) => Some(t.clone()),
            L::Del(_) => None,
        })
        .collect();
    if clean_old.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let mut want: Vec<String> = lines[..lo].to_vec();
    want.extend(new.iter().cloned());
    want.extend(lines[hi..].iter().cloned());
    let content = format!("{}\n", lines.join("\n"));
    let expected = format!("{}\n", want.join("\n"));
    let noisy = add_noise(&body, &raw.noise, mistake)?;
    // A mistake that turns the quote into other text of the file verbatim
    // (a block's closing braces, dedented, are the file's outer ones) is no
    // mistake any reader could see: the quote names that other place, and
    // applying it there is what it says. Such a case judges nothing.
    let noisy_old = old_side(&noisy);
    if !noisy_old.is_empty()
        && noisy_old != old_side(&body)
        && lines
            .windows(noisy_old.len())
            .any(|w| w.iter().map(String::as_str).eq(noisy_old.iter().copied()))
    {
        return None;
    }
    let lone_indent_loss = mistake == Mistake::Indent
        && old_side(&noisy)
            .iter()
            .zip(&clean_old)
            .filter(|(n, c)| **n != c.as_str())
            .count()
            == 1
        && new_side(&noisy).len() == new_side(&body).len()
        && new_side(&noisy)
            .iter()
            .zip(new_side(&body))
            .filter(|(n, c)| **n != *c)
            .count()
            <= 1;
    // The nearest line above the block indented less than all its lines,
    // when it opens a block (ends with `{` or `:`).
    let least = lines[lo..hi]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let anchor = (0..lo)
        .rev()
        .map(|i| &lines[i])
        .find(|l| !l.trim().is_empty() && l.len() - l.trim_start().len() < least)
        .filter(|l| l.trim_end().ends_with('{') || l.trim_end().ends_with(':'))
        .filter(|l| !marker_like(l))
        .map(|l| {
            if mistake == Mistake::Typo && raw.noise[3].0.is_multiple_of(4) {
                typo(l.trim(), raw.noise[3].1, raw.noise[3].2, raw.noise[3].0 / 4)
            } else {
                l.trim().to_owned()
            }
        });
    Some(Case {
        anchor,
        path: path.clone(),
        content,
        expected,
        start: lo,
        old_len: clean_old.len(),
        new_len: new.len(),
        body: noisy,
        clean_old,
        lone_indent_loss,
    })
}

/// The body with `mistake` injected; `None` when the block offers no place for it.
fn add_noise(body: &[L], noise: &[(usize, usize, usize)], mistake: Mistake) -> Option<Vec<L>> {
    let mut body = body.to_vec();
    // Quoted old lines that can carry the mistake.
    let old_idx: Vec<usize> = body
        .iter()
        .enumerate()
        .filter(|(_, l)| match (mistake, l) {
            (Mistake::Typo, L::Ctx(t) | L::Del(t)) => t.trim().chars().count() >= 2,
            (Mistake::Whitespace, L::Ctx(t)) => !t.trim().is_empty(),
            (Mistake::Indent, L::Ctx(t)) => t.starts_with([' ', '\t']) && !t.trim().is_empty(),
            _ => false,
        })
        .map(|(i, _)| i)
        .collect();
    match mistake {
        Mistake::Typo => {
            if old_idx.is_empty() {
                return None;
            }
            let count = 1 + noise[0].0 % 2;
            let first = old_idx[noise[0].1 % old_idx.len()];
            let second = old_idx[noise[1].1 % old_idx.len()];
            for k in 0..count {
                let target = if k == 0 || noise[1].0.is_multiple_of(2) {
                    first
                } else {
                    second
                };
                let (L::Ctx(t) | L::Del(t) | L::Add(t)) = &mut body[target];
                *t = typo(t, noise[2 + k].0, noise[2 + k].1, noise[2 + k].2);
            }
        }
        Mistake::Whitespace => {
            if old_idx.is_empty() {
                return None;
            }
            let count = 1 + noise[0].0 % 2;
            for k in 0..count {
                let target = old_idx[noise[k].1 % old_idx.len()];
                let (L::Ctx(t) | L::Del(t) | L::Add(t)) = &mut body[target];
                *t = drift(t, noise[2 + k].0);
            }
        }
        Mistake::Indent => {
            let common = body
                .iter()
                .map(|l| match l {
                    L::Ctx(t) | L::Del(t) | L::Add(t) => t,
                })
                .filter(|t| !t.trim().is_empty())
                .map(|t| t.len() - t.trim_start().len())
                .min()
                .unwrap_or(0);
            if noise[0].0.is_multiple_of(2) && common > 0 {
                for l in &mut body {
                    let (L::Ctx(t) | L::Del(t) | L::Add(t)) = l;
                    if !t.trim().is_empty() {
                        *t = t[common..].to_owned();
                    }
                }
            } else {
                if old_idx.is_empty() {
                    return None;
                }
                let target = old_idx[noise[1].1 % old_idx.len()];
                let (L::Ctx(t) | L::Del(t) | L::Add(t)) = &mut body[target];
                *t = t.trim_start().to_owned();
            }
        }
    }
    Some(body)
}

/// One character typo in the line's text (not its indentation): a letter
/// substituted, dropped, doubled or swapped with its neighbour.
fn typo(line: &str, kind: usize, pos: usize, letter: usize) -> String {
    let ind = line.len() - line.trim_start().len();
    let (head, text) = line.split_at(ind);
    let mut cs: Vec<char> = text.chars().collect();
    let spots: Vec<usize> = (0..cs.len()).filter(|&i| !cs[i].is_whitespace()).collect();
    if spots.is_empty() {
        return line.to_owned();
    }
    let i = spots[pos % spots.len()];
    let l = (b'a' + (letter % 26) as u8) as char;
    match kind % 4 {
        0 => cs[i] = if cs[i] == l { 'q' } else { l },
        1 => {
            cs.remove(i);
        }
        2 => cs.insert(i, l),
        _ => {
            if i + 1 < cs.len() && cs[i] != cs[i + 1] {
                cs.swap(i, i + 1);
            } else {
                cs[i] = if cs[i] == l { 'q' } else { l };
            }
        }
    }
    format!("{head}{}", cs.into_iter().collect::<String>())
}

/// Whitespace drift: trailing spaces, a leading tab ↔ four spaces, or a doubled inner space.
fn drift(line: &str, kind: usize) -> String {
    match kind % 3 {
        0 => format!("{line}  "),
        1 => {
            if let Some(rest) = line.strip_prefix('\t') {
                format!("    {rest}")
            } else if let Some(rest) = line.strip_prefix("    ") {
                format!("\t{rest}")
            } else {
                format!("{line} ")
            }
        }
        _ => match line.trim_start().find(' ') {
            Some(k) => {
                let ind = line.len() - line.trim_start().len();
                let (a, b) = line.split_at(ind + k);
                format!("{a} {b}")
            }
            None => format!("{line}\t"),
        },
    }
}

// ------------------------------------------------------------ rendering

fn old_side(body: &[L]) -> Vec<&str> {
    body.iter()
        .filter_map(|l| match l {
            L::Ctx(t) | L::Del(t) => Some(t.as_str()),
            L::Add(_) => None,
        })
        .collect()
}

fn new_side(body: &[L]) -> Vec<&str> {
    body.iter()
        .filter_map(|l| match l {
            L::Ctx(t) | L::Add(t) => Some(t.as_str()),
            L::Del(_) => None,
        })
        .collect()
}

fn render((format, anchored): (Format, bool), case: &Case) -> String {
    let lines = |v: Vec<&str>| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    let body = || {
        case.body
            .iter()
            .map(|l| match l {
                L::Ctx(t) => format!(" {t}\n"),
                L::Del(t) => format!("-{t}\n"),
                L::Add(t) => format!("+{t}\n"),
            })
            .collect::<String>()
    };
    match format {
        Format::SearchReplace => format!(
            "{}\n<<<<<<< SEARCH\n{}=======\n{}>>>>>>> REPLACE\n",
            case.path,
            lines(old_side(&case.body)),
            lines(new_side(&case.body))
        ),
        Format::UnifiedDiff => format!(
            "--- a/{p}\n+++ b/{p}\n@@ -{},{} +{},{} @@\n{}",
            case.start + 1,
            case.old_len,
            case.start + 1,
            case.new_len,
            body(),
            p = case.path
        ),
        _ => format!(
            "*** Begin Patch\n*** Update File: {}\n{}{}*** End Patch\n",
            case.path,
            match (&case.anchor, anchored) {
                (Some(a), true) => format!("@@ {a}\n"),
                _ => String::new(),
            },
            body()
        ),
    }
}

// ------------------------------------------------------------ determination

fn norm(l: &str) -> String {
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the input determines the answer (see the module's doc).
fn determined(lines: &[String], case: &Case) -> bool {
    let clean = &case.clean_old;
    let m = clean.len();
    let occurrences = lines.windows(m).filter(|w| *w == clean.as_slice()).count();
    if occurrences != 1 {
        return false;
    }
    let needle: Vec<String> = old_side(&case.body)
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| norm(l))
        .collect();
    let chars: usize = needle.iter().map(|l| l.replace(' ', "").len()).sum();
    if chars < 12 || needle.is_empty() {
        return false;
    }
    // One line's indentation lost: the others must outvote it.
    if case.lone_indent_loss && needle.len() < 3 {
        return false;
    }
    if mixed_indentation(case) {
        return false;
    }
    let nb: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i, norm(l)))
        .collect();
    let k = needle.len();
    if nb.len() < k {
        return false;
    }
    // The real window: the first non-blank line of the clean block.
    let first_nb = (case.start..case.start + m).find(|&i| !lines[i].trim().is_empty());
    let Some(first_nb) = first_nb else {
        return false;
    };
    let mut real = None;
    let mut others = f64::MIN;
    for s in 0..=nb.len() - k {
        let (mut d, mut t) = (0usize, 0usize);
        for j in 0..k {
            let (a, b) = (&needle[j], &nb[s + j].1);
            d += if a == b { 0 } else { strsim::levenshtein(a, b) };
            t += a.chars().count().max(b.chars().count()).max(1);
        }
        let sim = 1.0 - d as f64 / t as f64;
        if nb[s].0 == first_nb {
            real = Some(sim);
        } else {
            others = others.max(sim);
        }
    }
    real.is_some_and(|r| r >= 0.93 && r - others >= 0.05)
}

// ------------------------------------------------------------ the run

/// Whether the block's lines mix tab and space indentation.
fn mixed_indentation(case: &Case) -> bool {
    let starts = |c: char| case.clean_old.iter().any(|l| l.starts_with(c));
    starts('\t') && starts(' ')
}

/// Whether `got` is the edit applied literally where its quoted old lines
/// stand word for word in the file.
fn literal_reading(case: &Case, got: &str) -> bool {
    let lines: Vec<&str> = case.content.lines().collect();
    let (old, new) = (old_side(&case.body), new_side(&case.body));
    let got: Vec<&str> = got.lines().collect();
    !old.is_empty()
        && lines.len() >= old.len()
        && (0..=lines.len() - old.len()).any(|p| {
            lines[p..p + old.len()] == old[..] && {
                let mut out = lines[..p].to_vec();
                out.extend(&new);
                out.extend(&lines[p + old.len()..]);
                out == got
            }
        })
}

fn same_but_indentation(a: &str, b: &str) -> bool {
    a.lines().count() == b.lines().count()
        && a.lines()
            .zip(b.lines())
            .all(|(x, y)| x.trim_start() == y.trim_start())
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    pub(super) correct: usize,
    pub(super) refused: usize,
    pub(super) wrong: usize,
    pub(super) undetermined: usize,
}

/// `Err((why, got))` for a wrong result.
fn run_case(
    column: (Format, bool),
    case: &Case,
    opts: &ApplyOptions,
) -> Result<bool, (String, String)> {
    let text = render(column, case);
    let format = column.0;
    let out = apply_text(format, &text, &case.path, &case.content, opts)
        .map_err(|e| (format!("parse error {e:?} in\n{text}"), String::new()))?;
    if !out.report.ok {
        return Ok(false);
    }
    if out.text.as_deref() == Some(case.expected.as_str()) {
        Ok(true)
    } else {
        let got = out.text.unwrap_or_default();
        let first = got
            .lines()
            .zip(case.expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let show = |t: &str| -> String {
            t.lines()
                .skip(first.saturating_sub(2))
                .take(6)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let why = format!(
            "{format:?} wrong on {}:\n{text}\nreport: {}\ngot (from line {}):\n{}\nwant:\n{}",
            case.path,
            out.report.message,
            first.saturating_sub(2) + 1,
            show(&got),
            show(&case.expected)
        );
        Err((why, got))
    }
}

/// Runs `n` cases per kind of mistake over all three formats; returns the
/// tallies, `[format][mistake]`, and the first wrong case of each.
pub(super) fn measure(n: usize) -> ([[Tally; 3]; 4], Vec<String>) {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let corpus = corpus();
    assert!(corpus.len() > 20, "the corpus was not found");
    let mut opts = ApplyOptions::default();
    opts.syntax = lancet::SyntaxPolicy::Off;
    let mut tally = [[Tally::default(); 3]; 4];
    let mut wrongs = Vec::new();
    for (k, &mistake) in MISTAKES.iter().enumerate() {
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[10 + k as u8; 32]),
        );
        let strategy = arb_raw();
        let mut done = 0;
        while done < n {
            let Ok(tree) = strategy.new_tree(&mut runner) else {
                continue;
            };
            let Some(case) = build(&tree.current(), &corpus, mistake) else {
                continue;
            };
            done += 1;
            let lines = &corpus[tree.current().file % corpus.len()].1;
            let det = determined(lines, &case);
            for (f, &column) in FORMATS.iter().enumerate() {
                let t = &mut tally[f][k];
                match run_case(column, &case, &opts) {
                    // One line lost its indentation and too few kept theirs
                    // to outvote it: new lines indented either way is a
                    // reading of the input, not a wrong result.
                    Err((_, got))
                        if !det
                            && ((case.lone_indent_loss || mixed_indentation(&case))
                                && same_but_indentation(&got, &case.expected)
                                || literal_reading(&case, &got)) =>
                    {
                        t.undetermined += 1
                    }
                    Err((why, _)) => {
                        t.wrong += 1;
                        if let Ok(d) = std::env::var("LOCATE_DUMP") {
                            let k = t.wrong;
                            let _ = std::fs::write(format!("{d}/w{f}{k}.content"), &case.content);
                            let _ =
                                std::fs::write(format!("{d}/w{f}{k}.edit"), render(column, &case));
                            let _ = std::fs::write(format!("{d}/w{f}{k}.expected"), &case.expected);
                        }
                        if t.wrong <= 3 {
                            wrongs.push(format!("[{mistake:?}] {why}"));
                        }
                    }
                    Ok(_) if !det => t.undetermined += 1,
                    Ok(true) => t.correct += 1,
                    Ok(false) => {
                        t.refused += 1;
                        if std::env::var("LOCATE_DEBUG").is_ok() {
                            let text = render(column, &case);
                            let out = apply_text(column.0, &text, &case.path, &case.content, &opts);
                            let msg = out.map(|o| o.report.message).unwrap_or_default();
                            eprintln!("REFUSED {column:?} {mistake:?}:\n{text}\n{msg}\n");
                        }
                    }
                }
            }
        }
    }
    for (f, (format, anchored)) in FORMATS.iter().enumerate() {
        let format = format!("{format:?}{}", if *anchored { " @@" } else { "" });
        for (k, mistake) in MISTAKES.iter().enumerate() {
            let t = tally[f][k];
            let det = t.correct + t.refused;
            eprintln!(
                "locate recall {format} × {mistake:?}: {} correct, {} refused, {} wrong, {} undetermined \
                 ({:.1} % of {det} determined)",
                t.correct,
                t.refused,
                t.wrong,
                t.undetermined,
                100.0 * t.correct as f64 / det.max(1) as f64
            );
        }
    }
    (tally, wrongs)
}
