//! The syntax guard's added time: one search/replace block changing one line
//! in the middle of a 10,000-line Python file and of a 10,000-line Rust file,
//! inside a method of a 2,000-line `impl` and inside a function of a
//! 2,000-line `mod tests` (where the enclosing top-level item is the file),
//! through the library's apply planning (`lancet::plan` on a patch parsed
//! once: read the file from a workspace on disk, locate, apply, check; nothing
//! is written), once with `SyntaxPolicy::Reject` and once with
//! `SyntaxPolicy::Off`. The difference between the two is the guard's cost
//! (target: at most 15 ms per file).
//!
//! The files are synthetic but valid code from a seeded PRNG (each bench is its
//! own crate, so the generator is local): Python classes and functions with
//! docstrings, comments, strings, loops and conditionals; Rust structs, impls,
//! functions, matches, closures and comments. Outside the timed loop the bench
//! checks that each file is valid as a whole, that the guard runs on it (a
//! broken variant of the edit is refused) and that it finds nothing in the
//! valid edit.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::Criterion;
use lancet::{ApplyOptions, EditStatus, Format, Patch, SyntaxPolicy, Warning, Workspace, plan};

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

    /// Two different words (parameter names must differ).
    fn two<'a>(&mut self, words: &[&'a str]) -> (&'a str, &'a str) {
        let a = self.below(words.len());
        let b = (a + 1 + self.below(words.len() - 1)) % words.len();
        (words[a], words[b])
    }
}

const WORDS: &[&str] = &[
    "config", "buffer", "index", "parser", "token", "node", "value", "count", "offset", "result",
    "state", "entry", "path", "line", "range", "cache", "writer", "reader", "limit", "score",
];
const TYPES: &[&str] = &[
    "Config", "Buffer", "Index", "Parser", "Token", "Node", "Cache", "Writer", "Reader", "Limit",
];
const METHODS: &[&str] = &["push", "insert", "get", "find", "map", "resolve", "apply"];

/// The number of lines the generated files have (at least).
const LINES: usize = 10_000;

/// One Python statement at `indent`, with a unique variable (`k`).
fn py_statement(rng: &mut Rng, out: &mut String, indent: &str, k: &mut usize) {
    let (a, b, m) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(METHODS));
    *k += 1;
    match rng.below(9) {
        0 => writeln!(out, "{indent}# {m} the {a} of each {b}"),
        1 => writeln!(out, "{indent}{a}_{k} = {b}.{m}({})", rng.below(10_000)),
        2 => writeln!(out, "{indent}{a}_{k} = f\"{{{b}!r}} -> {m}\""),
        3 => writeln!(out, "{indent}{a}_{k} = {{\"{b}\": {}, \"{m}\": [{a}, {b}]}}", rng.below(100)),
        4 => writeln!(
            out,
            "{indent}if {a} is not None and len({b}) > {}:\n{indent}    {a}_{k} = {b}[{a}:]\n{indent}else:\n{indent}    {a}_{k} = None",
            rng.below(50)
        ),
        5 => writeln!(
            out,
            "{indent}for {a}_{k} in {b}:\n{indent}    self_{m} = {a}_{k}.{m}('{b}')"
        ),
        6 => writeln!(
            out,
            "{indent}{a}_{k} = [x * {} for x in {b} if x % 3 == 0]",
            rng.below(9) + 1
        ),
        7 => writeln!(out, "{indent}{a}_{k} = {b}.{m}(\"{a}, {b}\", key=lambda v: v[{}])", rng.below(4)),
        _ => writeln!(out, "{indent}assert {a} != {b}, \"{a} must differ from {b}\""),
    }
    .unwrap_or_default();
}

/// At least `lines` lines of valid Python.
fn python(seed: u64, lines: usize) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::from(
        "\"\"\"Synthetic module for the syntax guard bench.\"\"\"\n\nimport os\nimport re\nfrom dataclasses import dataclass\n\n\n",
    );
    let mut k = 0;
    let mut n = 0;
    while out.lines().count() < lines {
        n += 1;
        let t = rng.pick(TYPES);
        let (a, b) = rng.two(WORDS);
        if rng.below(3) == 0 {
            writeln!(out, "@dataclass\nclass {t}{n}:").unwrap_or_default();
            writeln!(out, "    \"\"\"Holds the {a} and the {b}.\n\n    Multi-line docstring: (brackets] and 'quotes\" are text here.\n    \"\"\"\n").unwrap_or_default();
            writeln!(out, "    {a}: int = 0\n    {b}: str = \"\"\n").unwrap_or_default();
            for j in 0..rng.below(3) + 1 {
                let m = rng.pick(METHODS);
                writeln!(out, "    def {m}_{j}(self, {a}, {b}=None):").unwrap_or_default();
                for _ in 0..rng.below(6) + 2 {
                    py_statement(&mut rng, &mut out, "        ", &mut k);
                }
                writeln!(out, "        return self.{a}\n").unwrap_or_default();
            }
            out.push('\n');
        } else {
            writeln!(out, "def {a}_{n}({a}, {b}, *args, **kwargs):").unwrap_or_default();
            writeln!(out, "    \"\"\"Computes the {a} from the {b}.\"\"\"").unwrap_or_default();
            for _ in 0..rng.below(10) + 2 {
                py_statement(&mut rng, &mut out, "    ", &mut k);
            }
            writeln!(out, "    return ({a}, {b})\n\n").unwrap_or_default();
        }
    }
    out
}

/// One Rust statement, with a unique variable (`k`).
fn rs_statement(rng: &mut Rng, out: &mut String, k: &mut usize) {
    let (a, b, m) = (rng.pick(WORDS), rng.pick(WORDS), rng.pick(METHODS));
    *k += 1;
    match rng.below(8) {
        0 => writeln!(out, "        // {m} the {a} of each {b}"),
        1 => writeln!(out, "        let {a}_{k} = {b}.{m}({});", rng.below(10_000)),
        2 => writeln!(out, "        let {a}_{k} = format!(\"{{}} -> {{:?}} {{{{braces}}}}\", {a}, \"{b}\");"),
        3 => writeln!(
            out,
            "        let {a}_{k}: Vec<usize> = {b}.iter().map(|x| x * {}).filter(|x| x % 3 == 0).collect();",
            rng.below(9) + 1
        ),
        4 => writeln!(
            out,
            "        if {a}.len() > {} {{\n            {b}.{m}({a}.clone());\n        }} else {{\n            return None;\n        }}",
            rng.below(50)
        ),
        5 => writeln!(
            out,
            "        let {a}_{k} = match {b}.get({}) {{\n            Some(v) if *v > 0 => v + 1,\n            Some(_) => 0,\n            None => usize::MAX,\n        }};",
            rng.below(100)
        ),
        6 => writeln!(
            out,
            "        for {a}_{k} in {b}.iter_mut() {{\n            *{a}_{k} += 1;\n        }}"
        ),
        _ => writeln!(out, "        let {a}_{k} = r#\"raw {{ \"{b}\" ( text\"#;"),
    }
    .unwrap_or_default();
}

/// At least `lines` lines of valid Rust.
fn rust(seed: u64, lines: usize) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::from(
        "//! Synthetic crate for the syntax guard bench.\n\nuse std::collections::HashMap;\n\n",
    );
    let mut k = 0;
    let mut n = 0;
    while out.lines().count() < lines {
        n += 1;
        let t = rng.pick(TYPES);
        let (a, b) = rng.two(WORDS);
        writeln!(
            out,
            "/// A {a} with its {b}.\n#[derive(Debug, Clone, Default)]\npub struct {t}{n} {{\n    pub {a}: Vec<usize>,\n    {b}: HashMap<String, usize>,\n}}\n"
        )
        .unwrap_or_default();
        writeln!(out, "impl {t}{n} {{").unwrap_or_default();
        for j in 0..rng.below(3) + 1 {
            let m = rng.pick(METHODS);
            writeln!(
                out,
                "    /// {m}s the {a}.\n    pub fn {m}_{j}(&mut self, {a}: &[usize], {b}: &mut Vec<usize>) -> Option<usize> {{"
            )
            .unwrap_or_default();
            for _ in 0..rng.below(8) + 2 {
                rs_statement(&mut rng, &mut out, &mut k);
            }
            writeln!(out, "        Some({a}.len() + {b}.len())\n    }}\n").unwrap_or_default();
        }
        writeln!(out, "}}\n").unwrap_or_default();
    }
    out
}

/// At least `lines` lines of valid Rust in one `impl` block (methods only):
/// an edit inside a method is inside the impl, which is the whole file.
fn rust_one_impl(seed: u64, lines: usize) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::from(
        "//! Synthetic impl for the syntax guard bench.\n\nuse std::collections::HashMap;\n\n#[derive(Debug, Default)]\npub struct Big {\n    map: HashMap<String, usize>,\n}\n\nimpl Big {\n",
    );
    let mut k = 0;
    let mut n = 0;
    while out.lines().count() < lines {
        n += 1;
        let (a, b) = rng.two(WORDS);
        let m = rng.pick(METHODS);
        writeln!(
            out,
            "    /// {m}s the {a}.\n    pub fn {m}_{n}(&mut self, {a}: &[usize], {b}: &mut Vec<usize>) -> Option<usize> {{"
        )
        .unwrap_or_default();
        for _ in 0..rng.below(8) + 2 {
            rs_statement(&mut rng, &mut out, &mut k);
        }
        writeln!(
            out,
            "        Some({a}.len() + {b}.len() + self.map.len())\n    }}\n"
        )
        .unwrap_or_default();
    }
    out.push_str("}\n");
    out
}

/// At least `lines` lines of valid Rust: a few functions, then a test
/// module of `lines` lines of test functions (the edit lands in one).
fn rust_mod_tests(seed: u64, lines: usize) -> String {
    let mut rng = Rng(seed | 1);
    let mut out = String::from(
        "//! Synthetic tests for the syntax guard bench.\n\npub fn answer() -> usize {\n    42\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n",
    );
    let mut k = 0;
    let mut n = 0;
    while out.lines().count() < lines {
        n += 1;
        let (a, b) = rng.two(WORDS);
        writeln!(
            out,
            "    #[test]\n    fn case_{n}() {{\n        let mut {a}: Vec<usize> = vec![answer()];\n        let mut {b}: Vec<usize> = Vec::new();"
        )
        .unwrap_or_default();
        for _ in 0..rng.below(8) + 2 {
            rs_statement(&mut rng, &mut out, &mut k);
        }
        writeln!(out, "        assert!({a}.len() + {b}.len() > 0);\n    }}\n").unwrap_or_default();
    }
    out.push_str("}\n");
    out
}

/// The one-line edit: the first line at or after the middle that calls a
/// method with a number (unique: its variable is), `1 + ` put before the
/// number (or, `broken`, an unclosed `(`).
fn middle_edit(path: &str, text: &str, broken: bool) -> (String, String, String) {
    let lines: Vec<&str> = text.lines().collect();
    let Some(line) = lines[lines.len() / 2..].iter().copied().find(|l| {
        let t = l.trim_end_matches(';');
        let number_arg = t
            .split_once('(')
            .is_some_and(|(_, rest)| rest.starts_with(|c: char| c.is_ascii_digit()));
        t.contains(" = ") && number_arg && t.ends_with(')') && text.matches(*l).count() == 1
    }) else {
        panic!("no line to edit in {path}");
    };
    let replacement = if broken {
        // An unclosed bracket: new breakage the guard must refuse.
        line.replacen('(', "((", 1)
    } else {
        line.replacen('(', "(1 + ", 1)
    };
    let block =
        format!("{path}\n<<<<<<< SEARCH\n{line}\n=======\n{replacement}\n>>>>>>> REPLACE\n");
    (line.to_owned(), replacement, block)
}

fn parse(block: &str) -> Patch {
    match Format::SearchReplace.parse(block) {
        Ok(p) => p,
        Err(e) => panic!("the bench's block does not parse: {e:?}"),
    }
}

fn options(syntax: SyntaxPolicy) -> ApplyOptions {
    let mut o = ApplyOptions::default();
    o.syntax = syntax;
    o
}

/// Outside the timed loop: the generated file is valid as a whole, the valid
/// edit applies with the guard on and no syntax warning, and the broken one is
/// refused (the guard does run on this file).
fn check_setup(ws: &Workspace, root: &Path, path: &str, text: &str) {
    let (line, replacement, block) = middle_edit(path, text, false);
    for policy in [SyntaxPolicy::Reject, SyntaxPolicy::Warn, SyntaxPolicy::Off] {
        let report = plan(ws, &parse(&block), &options(policy)).report().clone();
        assert!(report.ok, "{path} ({policy:?}): {}", report.message);
        let edits: Vec<_> = report.edits().collect();
        assert!(
            edits.len() == 1 && edits[0].status == EditStatus::Applied,
            "{path} ({policy:?}): {edits:?}"
        );
        assert!(
            !edits[0]
                .warnings
                .iter()
                .any(|w| matches!(w, Warning::SyntaxBroken { .. } | Warning::SyntaxSkipped)),
            "{path} ({policy:?}): the guard found errors in valid code: {:?}",
            edits[0].warnings
        );
    }
    // The generated file itself parses without error: created as a new file
    // (no old tree), any error in it would count as new and be refused.
    let create = format!("fresh_{path}\n<<<<<<< SEARCH\n=======\n{text}>>>>>>> REPLACE\n");
    let report = plan(ws, &parse(&create), &options(SyntaxPolicy::Reject))
        .report()
        .clone();
    assert!(
        report.ok
            && report
                .edits()
                .all(|e| e.status == EditStatus::Applied && e.warnings.is_empty()),
        "{path}: the generated code is not valid: {}",
        report.message
    );
    let (_, _, broken) = middle_edit(path, text, true);
    let report = plan(ws, &parse(&broken), &options(SyntaxPolicy::Reject))
        .report()
        .clone();
    let refused = report
        .edits()
        .next()
        .is_some_and(|e| e.status == EditStatus::SyntaxError);
    assert!(
        refused,
        "{path}: the guard did not refuse an unclosed bracket: {}",
        report.message
    );
    // Planning writes nothing.
    assert!(std::fs::read_to_string(root.join(path)).is_ok_and(|t| t == text));
    eprintln!(
        "syntax bench {path}: {} lines, {} bytes; edit line {:?} -> {:?}; guard ok (file valid, valid edit clean, broken edit refused)",
        text.lines().count(),
        text.len(),
        line.trim(),
        replacement.trim()
    );
}

fn guard(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else {
        panic!("no temporary directory");
    };
    let files = [
        ("big.py", python(0x5EED_0001, LINES)),
        ("big.rs", rust(0x5EED_0002, LINES)),
        ("impl.rs", rust_one_impl(0x5EED_0003, 2_000)),
        ("tests.rs", rust_mod_tests(0x5EED_0004, 2_000)),
    ];
    for (path, text) in &files {
        if let Err(e) = std::fs::write(dir.path().join(path), text) {
            panic!("writing {path}: {e}");
        }
    }
    let ws = match Workspace::open(dir.path()) {
        Ok(ws) => ws,
        Err(e) => panic!("workspace: {e:?}"),
    };
    for (path, text) in &files {
        check_setup(&ws, dir.path(), path, text);
    }

    let mut g = c.benchmark_group("syntax");
    for (path, text) in &files {
        let name = match *path {
            "big.py" => "python_10k_lines",
            "big.rs" => "rust_10k_lines",
            "impl.rs" => "rust_method_in_2k_line_impl",
            _ => "rust_fn_in_2k_line_mod_tests",
        };
        let patch = parse(&middle_edit(path, text, false).2);
        for (policy_name, policy) in [("guard", SyntaxPolicy::Reject), ("off", SyntaxPolicy::Off)] {
            let opts = options(policy);
            g.bench_function(format!("{name}/{policy_name}"), |b| {
                b.iter(|| plan(black_box(&ws), black_box(&patch), &opts))
            });
        }
    }
    g.finish();
}

fn main() {
    if !cfg!(feature = "syntax") {
        eprintln!("syntax bench: skipped (built without the `syntax` feature)");
        return;
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    guard(&mut c);
    c.final_summary();
}
