//! `mutate:DIR[:N]`: generated bug-fix tasks. The generator through the
//! library (determinism, `after/` bytes, each operator, rejections, trees
//! with nothing to mutate) and through the real binary with `sim:perfect`
//! (every format, both modes), on the fixture tree `tests/bench/mutate-src/`
//! and on this repository's own `src/`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lancet::agent::bench::mutate::{self, Generated, MutateError, Operator};
use lancet::agent::bench::{Task, TaskError};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bench/mutate-src")
}

fn repo_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `lancet bench ARGS` in `cwd`, with no user configuration, no keys from
/// the environment and no terminal (the bench tests' one runner).
fn bench(cwd: &Path, args: &[&str]) -> Output {
    super::bench::bench(cwd, None, args)
}

use super::bench::show;

/// `sim:perfect` on `mutate:SPEC` in every format and both modes: every job
/// passes at the first try. Returns the task ids.
fn sim_perfect_passes(spec: &str, tasks: usize) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = bench(
        dir.path(),
        &[
            "-t",
            spec,
            "-m",
            "sim:perfect",
            "-f",
            "all",
            "--mode",
            "both",
            "-j",
            "2",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{spec}: {tasks} tasks from")),
        "{stderr}"
    );
    let records: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), tasks * 5 * 2, "{}", show(&output));
    let failed: Vec<&Value> = records
        .iter()
        .filter(|r| r["pass"] != true || r["tries"] != 1)
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    for r in &records {
        assert_eq!(r["source"], "mutate");
    }
    records
        .iter()
        .map(|r| r["task"].as_str().unwrap().to_owned())
        .collect()
}

/// Every generated task of the fixture tree passes under `sim:perfect` in
/// every format and mode, through the real run path (CRLF, BOM and tab
/// files included).
#[test]
fn sim_perfect_passes_generated_tasks_in_every_format_and_mode() {
    let spec = format!("mutate:{}:24", fixture().display());
    let ids = sim_perfect_passes(&spec, 24);
    assert_eq!(ids.len(), 24);
    assert!(ids.iter().all(|id| id.starts_with("mutate/")), "{ids:?}");
    let files: BTreeSet<&str> = ids.iter().map(|id| id.split('/').nth(1).unwrap()).collect();
    assert!(files.len() >= 3, "spread over files: {files:?}");
}

/// The same on a larger, real tree: this repository's `src/`.
#[test]
fn sim_perfect_passes_tasks_generated_from_this_repository() {
    let spec = format!("mutate:{}:20", repo_src().display());
    let ids = sim_perfect_passes(&spec, 20);
    let ops: BTreeSet<&str> = ids
        .iter()
        .map(|id| id.rsplit('/').nth(1).unwrap())
        .collect();
    assert_eq!(ops.len(), Operator::ALL.len(), "{ops:?}");
}

fn generate(dir: &Path, n: usize, seed: u64) -> Generated {
    mutate::generate(dir, n, seed).unwrap()
}

/// Two generations with one seed are equal; another seed picks other tasks;
/// an id names the same task under every seed.
#[test]
fn generation_is_deterministic_for_a_seed() {
    for dir in [fixture(), repo_src()] {
        let a = generate(&dir, 30, 1);
        let b = generate(&dir, 30, 1);
        assert_eq!(a.tasks, b.tasks);
        assert_eq!(a.stats, b.stats);
        let c = generate(&dir, 30, 2);
        assert_ne!(a.tasks, c.tasks, "{}", dir.display());
        let by_id: BTreeMap<&str, &Task> = a.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
        for t in &c.tasks {
            if let Some(same) = by_id.get(t.id.as_str()) {
                assert_eq!(*same, t);
            }
        }
        let ids: HashSet<&str> = a.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.len(), a.tasks.len(), "ids are unique");
    }
}

/// Every task is one file: `after/` the original bytes as they are on disk,
/// `before/` different, same path; the BOM and CRLF file keeps both.
#[test]
fn every_after_is_the_original_file() {
    for dir in [fixture(), repo_src()] {
        let g = generate(&dir, 400, 7);
        assert!(!g.tasks.is_empty());
        for t in &g.tasks {
            let after = t.after.as_ref().unwrap();
            assert_eq!(after.len(), 1, "{}", t.id);
            assert_eq!(t.before.len(), 1, "{}", t.id);
            let (rel, bytes) = after.iter().next().unwrap();
            assert_eq!(*bytes, std::fs::read(dir.join(rel)).unwrap(), "{}", t.id);
            assert_ne!(t.before[rel], *bytes, "{}", t.id);
            assert_eq!(t.files, std::slice::from_ref(rel));
            assert!(t.id.starts_with(&format!("mutate/{rel}/")), "{}", t.id);
            assert!(
                t.instruction.contains(&format!("`{rel}`")),
                "{}",
                t.instruction
            );
        }
    }
    let g = generate(&fixture(), 400, 7);
    let bom: Vec<&Task> = g
        .tasks
        .iter()
        .filter(|t| t.files[0] == "scripts/bom_tool.py")
        .collect();
    assert!(!bom.is_empty());
    for t in bom {
        let before = &t.before["scripts/bom_tool.py"];
        assert!(before.starts_with(b"\xef\xbb\xbf"));
        let text = std::str::from_utf8(before).unwrap();
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "{text}"
        );
    }
    assert!(g.tasks.iter().any(|t| t.files[0] == "src/crlf_words.rs"));
}

/// The changed region of a task: (before's, after's), common prefix and
/// suffix removed.
fn changed(t: &Task) -> (String, String) {
    let (b, a) = texts(t);
    let p = b.bytes().zip(a.bytes()).take_while(|(x, y)| x == y).count();
    let s = b[p..]
        .bytes()
        .rev()
        .zip(a[p..].bytes().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (b[p..b.len() - s].to_owned(), a[p..a.len() - s].to_owned())
}

/// A task's (before, after) text.
fn texts(t: &Task) -> (String, String) {
    let rel = &t.files[0];
    (
        String::from_utf8(t.before[rel].clone()).unwrap(),
        String::from_utf8(t.after.as_ref().unwrap()[rel].clone()).unwrap(),
    )
}

/// The whole lines `before/` lacks: after's lines are before's with one
/// contiguous run added.
fn removed_lines(t: &Task) -> Vec<String> {
    let (b, a) = texts(t);
    let lb: Vec<&str> = b.split_inclusive('\n').collect();
    let la: Vec<&str> = a.split_inclusive('\n').collect();
    assert!(la.len() > lb.len(), "{}", t.id);
    let p = lb.iter().zip(&la).take_while(|(x, y)| x == y).count();
    let k = la.len() - lb.len();
    assert_eq!(la[p + k..], lb[p..], "{}: not one run of whole lines", t.id);
    la[p..p + k].iter().map(|l| (*l).to_owned()).collect()
}

fn sorted(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.sort_unstable();
    v
}

/// Each operator makes at least one task on the fixture tree, and its
/// `before/` differs from `after/` the way the operator says.
#[test]
fn every_operator_makes_tasks_that_change_what_it_says() {
    let g = generate(&fixture(), 1000, 1);
    for op in Operator::ALL {
        assert!(
            g.stats.per_operator.get(op).copied().unwrap_or(0) > 0,
            "{op:?}: {:?}",
            g.stats
        );
    }
    for t in &g.tasks {
        let op = t.id.rsplit('/').nth(1).unwrap();
        let (b, a) = changed(t);
        let is_ident =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        match op {
            // `<=` → `<` leaves only `=` (or nothing) in one of them.
            "comparison" => assert!(
                matches!(
                    (b.as_str(), a.as_str()),
                    ("=", "") | ("", "=") | ("<", ">") | (">", "<")
                ),
                "{}: {b:?} {a:?}",
                t.id
            ),
            "equality" => assert!(
                matches!((b.as_str(), a.as_str()), ("=", "!") | ("!", "=")),
                "{}: {b:?} {a:?}",
                t.id
            ),
            "off-by-one" => {
                let (tb, ta) = texts(t);
                let p = tb
                    .bytes()
                    .zip(ta.bytes())
                    .take_while(|(x, y)| x == y)
                    .count();
                // The whole literal: from the first digit before the change.
                let start = tb[..p]
                    .rfind(|c: char| !c.is_ascii_digit())
                    .map_or(0, |i| i + 1);
                let num = |s: &str| {
                    s[start..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                        .parse::<i64>()
                        .unwrap()
                };
                assert_eq!((num(&tb) - num(&ta)).abs(), 1, "{}: {b:?} {a:?}", t.id);
            }
            "boolean" => assert!(
                matches!(
                    (b.to_lowercase().as_str(), a.to_lowercase().as_str()),
                    ("true", "false") | ("false", "true") | ("tru", "fals") | ("fals", "tru")
                ),
                "{}: {b:?} {a:?}",
                t.id
            ),
            "guard" => {
                let run = removed_lines(t);
                assert!(run[0].trim_start().starts_with("if "), "{}: {run:?}", t.id);
            }
            "delete-statement" => {
                let run = removed_lines(t);
                assert!(
                    !run[0].trim().is_empty() && !run[0].trim_start().starts_with("if "),
                    "{}: {run:?}",
                    t.id
                );
            }
            "swap-args" | "swap-branches" => {
                assert_eq!(sorted(&b), sorted(&a), "{}: {b:?} {a:?}", t.id);
                assert_ne!(b, a);
            }
            "rename-use" => assert!(is_ident(&b) || is_ident(&a), "{}: {b:?} {a:?}", t.id),
            other => panic!("unknown operator {other} in {}", t.id),
        }
    }
}

/// Mutations that change nothing, break the parse, make a line occur twice,
/// or repeat an earlier task's file are counted, and never emitted.
#[test]
fn rejected_mutations_are_counted_and_never_emitted() {
    let dir = tempfile::tempdir().unwrap();
    let code = concat!(
        // Swapping `a` and `a` changes nothing.
        "def same(a):\n    return max(a, a)\n\n\n",
        // Removing the only statement of a body leaves no body.
        "def only(x):\n    if x:\n        return 1\n\n\n",
        // `<` → `<=` makes a line that `lte` already has.
        "def lt(a, b):\n    return a < b\n\n\n",
        "def lte(a, b):\n    return a <= b\n\n\n",
        // Deleting either of two equal statements gives one file.
        "def twice(xs):\n    xs.sort()\n    xs.sort()\n    return xs\n",
    );
    std::fs::write(dir.path().join("r.py"), code).unwrap();
    let g = generate(dir.path(), 1000, 1);
    let r = g.stats.rejected;
    assert!(r.unchanged > 0, "{r:?}");
    assert!(r.unparsable > 0, "{r:?}");
    assert!(r.ambiguous > 0, "{r:?}");
    assert!(r.duplicate > 0, "{r:?}");
    assert_eq!(
        g.tasks.len() + r.total(),
        g.stats.sites,
        "every site was tried once"
    );
    let mut seen = HashSet::new();
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .unwrap();
    for t in &g.tasks {
        let before = &t.before["r.py"];
        assert_ne!(before, &t.after.as_ref().unwrap()["r.py"], "{}", t.id);
        assert!(seen.insert(before.clone()), "{} repeats a task", t.id);
        let tree = parser.parse(before, None).unwrap();
        assert!(!tree.root_node().has_error(), "{}", t.id);
        let text = String::from_utf8(before.clone()).unwrap();
        assert!(text.matches("return a <= b").count() <= 1, "{}", t.id);
    }
}

/// A tree with no Python or Rust file (those under hidden, build and vendored
/// directories do not count) is an error that says so; through the binary,
/// a usage error (exit 2) that writes nothing.
#[test]
fn a_tree_without_python_or_rust_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    for (rel, text) in [
        ("README.md", "# nothing here\n"),
        ("app.js", "let x = 1 < 2;\n"),
        (".hidden/a.py", "x = 1 < 2\n"),
        ("target/b.rs", "fn f() -> bool { 1 < 2 }\n"),
        ("node_modules/c.py", "x = 1 < 2\n"),
        ("vendor/d.rs", "fn f() -> bool { 1 < 2 }\n"),
    ] {
        let p = tree.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    match mutate::generate(&tree, 10, 1) {
        Err(MutateError::NoSources { dir, skipped }) => {
            assert_eq!(dir, tree);
            assert_eq!(skipped, mutate::SkippedFiles::default());
        }
        other => panic!("{other:?}"),
    }
    let spec = format!("mutate:{}", tree.display());
    let out = bench(dir.path(), &["-t", &spec, "-m", "sim:perfect"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no Python (.py) or Rust (.rs) file to mutate"),
        "{err}"
    );
    assert!(!dir.path().join(".lancet").exists());
    // A directory that is not there is an error naming it.
    let missing = dir.path().join("nowhere");
    assert!(matches!(
        lancet::agent::bench::task::load(
            &lancet::agent::bench::Source::Mutate(missing, None),
            None
        ),
        Err(TaskError::Mutate(MutateError::Io { .. }))
    ));
}

/// Files too large, not UTF-8, with syntax errors, or not regular files (a
/// symlink, a FIFO) are left out and counted; the FIFO does not hang the walk.
#[cfg(unix)]
#[test]
fn unusable_files_are_left_out_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path();
    std::fs::write(tree.join("good.py"), "def f(a, b):\n    return a < b\n").unwrap();
    std::fs::write(tree.join("large.py"), "x = 1\n".repeat(50_000)).unwrap();
    std::fs::write(tree.join("latin1.py"), b"s = '\xe9'\n").unwrap();
    std::fs::write(tree.join("broken.rs"), "fn f( {\n").unwrap();
    std::os::unix::fs::symlink(tree.join("good.py"), tree.join("link.py")).unwrap();
    let fifo = tree.join("pipe.py");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let g = generate(tree, 10, 1);
    let s = g.stats.skipped;
    assert_eq!(
        (s.large, s.not_utf8, s.unparsable, s.unreadable),
        (1, 1, 1, 2),
        "{s:?}"
    );
    assert_eq!(g.stats.files, 1);
    assert!(g.tasks.iter().all(|t| t.files == ["good.py"]));
    assert!(!g.tasks.is_empty());
}

/// `--limit` and N both bound the count; fewer valid sites than N is said.
#[test]
fn the_count_is_bounded_and_a_short_tree_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("t");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("one.py"), "def f(a, b):\n    return a < b\n").unwrap();
    let out_dir = dir.path().join("out");
    let spec = format!("mutate:{}:5", tree.display());
    let out = bench(
        dir.path(),
        &[
            "-t",
            &spec,
            "-m",
            "sim:perfect",
            "-f",
            "udiff",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{spec}: 1 tasks from 1 files")),
        "{err}"
    );
    assert!(err.contains("fewer than the 5 asked for"), "{err}");
    let lines = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 1);
    assert_eq!(generate(&fixture(), 7, 3).tasks.len(), 7);
    let (limited, _) = lancet::agent::bench::task::load_seeded(
        &lancet::agent::bench::Source::Mutate(fixture(), Some(9)),
        Some(4),
        3,
    )
    .unwrap();
    assert_eq!(limited, generate(&fixture(), 9, 3).tasks[..4]);
}
