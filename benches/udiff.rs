//! Unified diffs at scale, library level: a 1,000-hunk git diff (every 100th
//! line of a 100,000-line document changed, 3 lines of context per hunk)
//! parsed, then resolved against the document. The library resolves without
//! the git blob check (`ResolveContext::new`: not verified), so every hunk is
//! placed by content, its stated line only breaking ties.
//!
//! - `udiff/parse_1000_hunks`: `Format::UnifiedDiff.parse` alone.
//! - `udiff/1000_hunks_100k_lines`: parse + `resolve_file` on a fresh
//!   document (target ≤ 50 ms); the line index the resolver builds for a
//!   batch of edits is part of the time, as in one `lancet apply`.
//! - `udiff/1000_hunks_100k_lines_shifted`: the same with 7 lines inserted
//!   above line 1, so every line number is stale (offset learned hunk by hunk).
//! - `udiff/1000_hunks_100k_lines_indexed`: the same document every
//!   iteration, its line index built once: placement alone.
//!
//! The document is synthetic Rust-like code from a seeded xorshift generator:
//! functions, `let` statements, calls, comments, blank lines and closing
//! braces, so short lines like `}` and blank lines recur as in real code.
//! Outside the timed loops the setup checks that every hunk is `Applied` and
//! that the result equals the expected post-image. `cargo test --benches`
//! runs each bench once.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use lancet::apply::resolve_file;
use lancet::format::{EditOp, ResolveContext};
use lancet::{Document, EditReport, EditStatus, Format, MatchOptions};

/// xorshift64*: tiny, seeded, and good enough to vary synthetic code.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len())]
    }
}

const WORDS: &[&str] = &[
    "config", "buffer", "index", "parser", "token", "node", "value", "count", "offset", "result",
    "state", "entry", "path", "line", "range", "cache", "writer", "reader", "limit", "score",
    "hunk", "edit", "span", "table", "queue", "frame", "block", "field", "input", "output",
];
const METHODS: &[&str] = &[
    "push",
    "insert",
    "get",
    "find",
    "map",
    "resolve",
    "apply",
    "len",
    "clone",
    "extend",
    "take",
    "split_at",
    "to_owned",
    "unwrap_or",
    "iter",
];
const TYPES: &[&str] = &[
    "usize",
    "String",
    "&str",
    "Vec<u8>",
    "Option<usize>",
    "bool",
    "u64",
];

const LINES: usize = 100_000;
const EVERY: usize = 100;
const CONTEXT: usize = 3;

/// `n` lines of Rust-like code (no line endings).
fn document(seed: u64, n: usize) -> Vec<String> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::with_capacity(n + 32);
    let mut f = 0;
    while out.len() < n {
        f += 1;
        let (name, ty) = (rng.pick(WORDS), rng.pick(TYPES));
        if rng.below(3) == 0 {
            out.push(format!(
                "/// {} the {} of a {name}.",
                rng.pick(METHODS),
                rng.pick(WORDS)
            ));
        }
        out.push(format!(
            "pub fn {name}_{f}({}: {ty}, {}: &mut {}) -> {} {{",
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.pick(TYPES),
            rng.pick(TYPES)
        ));
        for _ in 0..rng.below(14) + 2 {
            let (a, b, m) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(METHODS));
            let line = match rng.below(10) {
                0 => format!("    // {m} the {a} of each {b}"),
                1 => String::new(),
                2 => format!("    if {a}.{m}() > {} {{", rng.below(1000)),
                3 => "    }".to_owned(),
                4 => format!("    for {a} in {b}.iter() {{"),
                5 => format!("        {a}.{m}({b}_{});", rng.below(100)),
                6 => format!("    {a}.{m}(&{b}, {});", rng.below(10_000)),
                _ => format!(
                    "    let {a}_{} = {b}.{m}({});",
                    rng.below(100),
                    rng.below(10_000)
                ),
            };
            out.push(line);
        }
        out.push(format!("    {}_{}", rng.pick(WORDS), rng.below(100)));
        out.push("}".to_owned());
        out.push(String::new());
    }
    out.truncate(n);
    out
}

fn join(lines: &[String]) -> String {
    let mut s = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// git's blob id, for a realistic `index` line.
fn blob_id(text: &str) -> String {
    use sha1::Digest;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", text.len()).as_bytes());
    h.update(text.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The document, its post-image and the git diff between them: line
/// `k * EVERY + EVERY / 2` changed for every k, `CONTEXT` lines each side.
fn fixture() -> (String, String, String, usize) {
    let before = document(0x5EED_D1FF, LINES);
    let mut after = before.clone();
    let mut changed = Vec::new();
    for (k, i) in (EVERY / 2..LINES).step_by(EVERY).enumerate() {
        after[i] = if before[i].trim().is_empty() {
            format!("    // edit {k}")
        } else {
            format!("{} // edit {k}", before[i].replace("let ", "let mut "))
        };
        changed.push(i);
    }
    let (old, new) = (join(&before), join(&after));
    let mut diff = String::with_capacity(changed.len() * 400);
    let (a, b) = (blob_id(&old), blob_id(&new));
    let _ = write!(
        diff,
        "diff --git a/src/big.rs b/src/big.rs\nindex {}..{} 100644\n--- a/src/big.rs\n+++ b/src/big.rs\n",
        &a[..7],
        &b[..7]
    );
    for &i in &changed {
        let (from, to) = (i - CONTEXT, i + CONTEXT + 1);
        let n = to - from;
        let _ = writeln!(diff, "@@ -{},{n} +{},{n} @@", from + 1, from + 1);
        for j in from..to {
            if j == i {
                let _ = writeln!(diff, "-{}", before[j]);
                let _ = writeln!(diff, "+{}", after[j]);
            } else {
                let _ = writeln!(diff, " {}", before[j]);
            }
        }
    }
    (old, new, diff, changed.len())
}

fn udiff(c: &mut Criterion) {
    let (old, expected, diff, hunks) = fixture();
    let doc = Document::from_text(&old);
    let matching = MatchOptions::default();
    let ctx = ResolveContext::new(&matching);

    let run = |doc: &Document| {
        let Ok(patch) = Format::UnifiedDiff.parse(black_box(&diff)) else {
            panic!("the bench's diff does not parse");
        };
        let ops: Vec<&EditOp> = patch.ops();
        let mut reports: Vec<EditReport> = (0..ops.len()).map(|i| EditReport::new(i, 0)).collect();
        let after = resolve_file(doc, &ops, &ctx, false, &mut reports);
        (after, reports)
    };

    // The same document with 7 lines inserted above line 1: every hunk's line
    // number is stale, and the offset is learned from the hunks before it.
    let filler: String = (0..7).map(|k| format!("// inserted line {k}\n")).collect();
    let shifted_old = format!("{filler}{old}");
    let shifted_expected = format!("{filler}{expected}");
    let shifted = Document::from_text(&shifted_old);

    // Outside the timed loops: every hunk applies, and the result is the post-image.
    for (name, doc, expected) in [
        ("exact", &doc, &expected),
        ("shifted", &shifted, &shifted_expected),
    ] {
        let fresh = doc.clone();
        let (after, reports) = run(&fresh);
        assert_eq!(
            reports.len(),
            hunks,
            "udiff setup ({name}): one report per hunk"
        );
        if let Some(r) = reports.iter().find(|r| r.status != EditStatus::Applied) {
            panic!(
                "udiff setup ({name}): hunk {} is {:?}: {r:?}",
                r.index + 1,
                r.status
            );
        }
        assert!(
            after.text() == *expected,
            "udiff setup ({name}): wrong result"
        );
    }

    let mut g = c.benchmark_group("udiff");
    g.throughput(Throughput::Elements(hunks as u64));
    g.bench_function("parse_1000_hunks", |b| {
        b.iter(|| Format::UnifiedDiff.parse(black_box(&diff)))
    });
    // A fresh document per iteration (built outside the clock), as in one
    // `lancet apply`: the line index the resolver builds is part of the cost.
    g.bench_function("1000_hunks_100k_lines", |b| {
        b.iter_batched_ref(
            || Document::from_text(&old),
            |doc| run(black_box(doc)),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("1000_hunks_100k_lines_shifted", |b| {
        b.iter_batched_ref(
            || Document::from_text(&shifted_old),
            |doc| run(black_box(doc)),
            BatchSize::LargeInput,
        )
    });
    // The same document every iteration: its line index is built once and
    // kept, so this is placement alone.
    g.bench_function("1000_hunks_100k_lines_indexed", |b| {
        b.iter(|| run(black_box(&doc)))
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sample_size(30)
        .configure_from_args();
    udiff(&mut c);
    c.final_summary();
}
