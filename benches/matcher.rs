//! Matcher benches: how fast the cascade finds a block, and how fast a
//! document is built, on large synthetic source files.
//!
//! The text comes from a small seeded PRNG that writes Rust-like code with
//! nesting, comments and blank lines of varied length, so that most lines are
//! distinct, as in real files. (A constant repeated line would make every
//! window ambiguous and measure the refusal path instead of a search.) The
//! same seed gives the same text on every run and machine.
//!
//! Goals, checked by reading `cargo bench` output rather than asserted (the
//! machines are shared and noisy): `exact/10MB` ≥ 1 GB/s, `fuzzy/10k` ≤ 10 ms,
//! `fuzzy/100k` ≤ 100 ms. Each bench first checks, outside the timed loop,
//! that the search succeeds where it should, so a speed-up can never come
//! from failing early.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use lancet::matcher::locate;
use lancet::{Document, MatchOptions, Tier};

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
    "window", "needle", "source", "target", "length", "hash", "query", "span", "block", "chunk",
];
const TYPES: &[&str] = &[
    "Config",
    "Buffer",
    "Token",
    "Node",
    "Entry",
    "Span",
    "Document",
    "Match",
    "Vec<u8>",
    "String",
    "usize",
    "Option<u64>",
];
const METHODS: &[&str] = &[
    "push",
    "insert",
    "extend",
    "get",
    "len",
    "split_at",
    "find",
    "map",
    "clone",
    "resolve",
    "apply",
    "contains",
    "starts_with",
    "as_str",
    "iter",
];

fn ident(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => rng.pick(WORDS).to_owned(),
        1 => format!("{}_{}", rng.pick(WORDS), rng.below(100)),
        _ => format!("{}_{}", rng.pick(WORDS), rng.pick(WORDS)),
    }
}

fn args(rng: &mut Rng) -> String {
    let n = rng.below(4);
    (0..n)
        .map(|_| match rng.below(3) {
            0 => rng.below(10_000).to_string(),
            _ => ident(rng),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `lines` lines of Rust-like code, ending with a newline.
fn source(seed: u64, lines: usize) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::with_capacity(lines * 40);
    let mut depth = 0usize;
    for _ in 0..lines {
        let pad = "    ".repeat(depth);
        let line = if depth == 0 {
            match rng.below(6) {
                0 => String::new(),
                1 => format!(
                    "// {} {} {}",
                    ident(&mut rng),
                    rng.pick(WORDS),
                    ident(&mut rng)
                ),
                2 => format!("use crate::{}::{};", rng.pick(WORDS), rng.pick(TYPES)),
                _ => {
                    depth = 1;
                    format!(
                        "pub fn {}({}: &{}, {}: usize) -> Result<{}, Error> {{",
                        ident(&mut rng),
                        rng.pick(WORDS),
                        rng.pick(TYPES),
                        ident(&mut rng),
                        rng.pick(TYPES)
                    )
                }
            }
        } else {
            match rng.below(12) {
                0 | 1 => {
                    depth -= 1;
                    format!("{}}}", "    ".repeat(depth))
                }
                2 if depth < 4 => {
                    depth += 1;
                    format!("{pad}if {} > {} {{", ident(&mut rng), rng.below(1000))
                }
                3 if depth < 4 => {
                    depth += 1;
                    format!(
                        "{pad}for {} in {}.iter() {{",
                        rng.pick(WORDS),
                        ident(&mut rng)
                    )
                }
                4 => String::new(),
                5 => format!(
                    "{pad}// {} the {} before {}",
                    rng.pick(METHODS),
                    ident(&mut rng),
                    rng.pick(WORDS)
                ),
                6 => format!(
                    "{pad}return Ok({}.{}({}));",
                    ident(&mut rng),
                    rng.pick(METHODS),
                    args(&mut rng)
                ),
                7 => format!(
                    "{pad}{}.{}({});",
                    ident(&mut rng),
                    rng.pick(METHODS),
                    args(&mut rng)
                ),
                _ => format!(
                    "{pad}let {} = {}.{}({});",
                    ident(&mut rng),
                    ident(&mut rng),
                    rng.pick(METHODS),
                    args(&mut rng)
                ),
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Whole lines of code, `bytes` bytes or just under.
fn source_bytes(seed: u64, bytes: usize) -> String {
    // Lines average well over 20 bytes, so this overshoots; cut at a line end.
    let mut text = source(seed, bytes / 20);
    assert!(text.len() > bytes, "the generator's lines got shorter");
    let cut = text[..bytes].rfind('\n').map_or(0, |i| i + 1);
    text.truncate(cut);
    text
}

/// A block of `len` lines starting near line `at` whose first and last lines
/// are not blank (so its range is unambiguous): returns its start and lines.
fn block(doc: &Document, at: usize, len: usize) -> (usize, Vec<String>) {
    let mut start = at;
    while doc.line(start).trim().is_empty() || doc.line(start + len - 1).trim().is_empty() {
        start += 1;
    }
    let lines = (start..start + len)
        .map(|i| doc.line(i).to_owned())
        .collect();
    (start, lines)
}

/// Changes one letter of the first line at or after `i` that has one in its body.
fn typo(lines: &mut [String], mut i: usize) {
    loop {
        let line = &lines[i];
        let at = line
            .char_indices()
            .skip_while(|(_, c)| *c == ' ')
            .find(|(_, c)| c.is_ascii_lowercase())
            .map(|(k, _)| k);
        if let Some(k) = at {
            let old = line.as_bytes()[k];
            let new = if old == b'q' { 'z' } else { 'q' };
            lines[i].replace_range(k..k + 1, new.encode_utf8(&mut [0; 4]));
            return;
        }
        i += 1;
    }
}

fn exact(c: &mut Criterion) {
    let text = source_bytes(0x5EED, 10 << 20);
    let doc = Document::from_text(&text);
    let (start, needle) = block(&doc, doc.line_count() - 200, 20);
    let opts = MatchOptions::default();
    let m = locate(&doc, &needle, None, &opts);
    assert!(
        matches!(&m, Ok(m) if m.tier == Tier::Exact && m.range == (start..start + 20)),
        "exact setup: {m:?}"
    );
    let mut g = c.benchmark_group("exact");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("10MB", |b| {
        b.iter(|| locate(black_box(&doc), black_box(&needle), None, &opts))
    });
    g.finish();
}

fn fuzzy(c: &mut Criterion) {
    let mut g = c.benchmark_group("fuzzy");
    for (name, lines) in [("10k", 10_000), ("100k", 100_000)] {
        let text = source(0xF022 + lines as u64, lines);
        let doc = Document::from_text(&text);
        let (start, mut needle) = block(&doc, lines * 7 / 10, 30);
        typo(&mut needle, 7);
        typo(&mut needle, 21);
        let opts = MatchOptions::default();
        let m = locate(&doc, &needle, None, &opts);
        assert!(
            matches!(&m, Ok(m) if m.tier == Tier::Fuzzy && m.range == (start..start + 30)),
            "fuzzy/{name} setup: {m:?}"
        );
        g.throughput(Throughput::Bytes(text.len() as u64));
        if lines >= 100_000 {
            g.sample_size(20);
        }
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| locate(black_box(&doc), black_box(&needle), None, &opts))
        });
    }
    g.finish();
}

fn parse_doc(c: &mut Criterion) {
    let text = source_bytes(0x5EED, 10 << 20);
    let mut g = c.benchmark_group("parse_doc");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("10MB", |b| b.iter(|| Document::from_text(black_box(&text))));
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    exact(&mut c);
    fuzzy(&mut c);
    parse_doc(&mut c);
    c.final_summary();
}
