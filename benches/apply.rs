//! The in-memory apply pipeline for one search/replace block on a 1 MB file:
//! decode the file, parse the model's text, resolve and apply the edit, and
//! encode the result. No workspace and no disk, so the figure is the engine's
//! own cost; `benches/process.sh` measures the whole `lancet apply` process.
//!
//! The file is synthetic Rust-like code from a seeded PRNG (a smaller copy of
//! the generator in `benches/matcher.rs`: each bench is its own crate), so
//! that the block's lines are distinct from the rest of the file.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
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
];
const METHODS: &[&str] = &["push", "insert", "get", "find", "map", "resolve", "apply"];

/// About `bytes` bytes of Rust-like code: functions of a few statements.
fn source(seed: u64, bytes: usize) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::with_capacity(bytes + 100);
    let mut n = 0;
    while out.len() < bytes {
        n += 1;
        out.push_str(&format!(
            "pub fn {}_{n}(input: &str) -> usize {{\n",
            rng.pick(WORDS)
        ));
        for _ in 0..rng.below(12) + 2 {
            let (a, b, m) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(METHODS));
            match rng.below(4) {
                0 => out.push_str(&format!("    // {m} the {a} of each {b}\n")),
                1 => out.push('\n'),
                _ => out.push_str(&format!(
                    "    let {a}_{} = {b}.{m}({});\n",
                    rng.below(100),
                    rng.below(10_000)
                )),
            }
        }
        out.push_str("    0\n}\n\n");
    }
    out
}

fn apply(c: &mut Criterion) {
    let text = source(0xA991, 1 << 20);
    let bytes = text.as_bytes().to_vec();
    let doc = Document::from_text(&text);
    // Ten lines about three quarters into the file, starting at a function.
    let mut start = doc.line_count() * 3 / 4;
    while !doc.line(start).starts_with("pub fn") {
        start += 1;
    }
    let search: Vec<&str> = (start..start + 10).map(|i| doc.line(i)).collect();
    let replace: Vec<String> = search
        .iter()
        .map(|l| l.replace("let ", "let mut "))
        .collect();
    let block = format!(
        "src/big.rs\n<<<<<<< SEARCH\n{}\n=======\n{}\n>>>>>>> REPLACE\n",
        search.join("\n"),
        replace.join("\n")
    );
    let matching = MatchOptions::default();
    let ctx = ResolveContext::new(&matching);

    let run = |doc: &Document| {
        let Ok(patch) = Format::SearchReplace.parse(black_box(&block)) else {
            panic!("the bench's block does not parse");
        };
        let ops: Vec<&EditOp> = patch.ops();
        let mut reports: Vec<EditReport> = ops
            .iter()
            .enumerate()
            .map(|(index, op)| EditReport::new(index, op.source_line()))
            .collect();
        let after = resolve_file(doc, &ops, &ctx, false, &mut reports);
        (after, reports)
    };

    // Outside the timed loop: the block applies, where it should.
    let (after, reports) = run(&doc);
    assert!(
        reports.len() == 1 && reports[0].status == EditStatus::Applied,
        "apply setup: {reports:?}"
    );
    assert_eq!(reports[0].lines, Some(start..start + 10), "apply setup");
    let expected = text.replacen(&search.join("\n"), &replace.join("\n"), 1);
    assert!(after.text() == expected, "apply setup: wrong result");

    let mut g = c.benchmark_group("apply");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    // Bytes in, bytes out: decode, parse, resolve, apply, encode.
    g.bench_function("1MB", |b| {
        b.iter(|| {
            let Ok(doc) = Document::from_bytes(black_box(&bytes)) else {
                panic!("the bench's file does not decode");
            };
            run(&doc).0.to_bytes()
        })
    });
    // Parse and resolve only, on a document already built.
    g.bench_function("1MB_resolve", |b| b.iter(|| run(black_box(&doc))));
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    apply(&mut c);
    c.final_summary();
}
