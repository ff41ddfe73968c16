//! The data-driven fixture driver: every folder under
//! `tests/fixtures/<format>/{ok,err}/NNN_name/` is one case, run through the
//! real `lancet apply` binary in a temporary copy of the case's `input/`.
//!
//! A case holds:
//! - `input/` — the files before (absent: an empty root);
//! - `edit.txt` (model output) or `edit.json` (tool-call arguments);
//! - `args` — optional extra command-line arguments, whitespace-separated;
//! - `expected/` — `ok` cases: the files after, byte for byte;
//! - `expect.toml` — optional for `ok`, required for `err`:
//!   `exit` (default 0 for ok, 1 for err), `statuses` (per edit, in input
//!   order), `tiers`, `message_contains`, `warnings_contain`, `written`
//!   (whether files change; `err` default false), `scenario` (the
//!   EDIT-SCENARIOS.md number it pins) and `about` (one line).
//!
//! An `err` case (unless `written = true`) must leave every input file
//! byte-identical. The driver runs every case and reports all failures at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    exit: Option<i32>,
    statuses: Option<Vec<String>>,
    tiers: Option<Vec<String>>,
    #[serde(default)]
    message_contains: Vec<String>,
    #[serde(default)]
    warnings_contain: Vec<String>,
    written: Option<bool>,
    #[serde(default)]
    scenario: Vec<u32>,
    about: Option<String>,
}

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let p = entry.unwrap().path();
            let rel = p
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel == ".lancet" {
                continue;
            }
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let dest = to.join(&rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, bytes).unwrap();
    }
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

fn diff_trees(got: &BTreeMap<String, Vec<u8>>, want: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, bytes) in want {
        match got.get(path) {
            None => problems.push(format!("missing file {path}")),
            Some(g) if g != bytes => {
                problems.push(format!(
                    "{path} differs:\n      got:  {}\n      want: {}",
                    show(g),
                    show(bytes)
                ));
            }
            _ => {}
        }
    }
    for path in got.keys().filter(|p| !want.contains_key(*p)) {
        problems.push(format!("unexpected file {path}"));
    }
    problems
}

/// Runs one case; returns its problems (empty: passed).
fn run_case(case: &Path, ok_kind: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let expect: Expect = match std::fs::read_to_string(case.join("expect.toml")) {
        Ok(t) => match toml::from_str(&t) {
            Ok(e) => e,
            Err(e) => return vec![format!("expect.toml: {e}")],
        },
        Err(_) => Expect::default(),
    };
    let _ = (&expect.scenario, &expect.about);
    let dir = tempfile::tempdir().unwrap();
    let input = case.join("input");
    copy_tree(&input, dir.path());
    let before = tree(dir.path());
    let edit = ["edit.txt", "edit.json"]
        .iter()
        .map(|n| case.join(n))
        .find(|p| p.exists())
        .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lancet"));
    cmd.arg("apply").arg("--json").arg("-C").arg(dir.path());
    if let Ok(args) = std::fs::read_to_string(case.join("args")) {
        cmd.args(args.split_whitespace());
    }
    cmd.arg(&edit);
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    let want_exit = expect.exit.unwrap_or(if ok_kind { 0 } else { 1 });
    let stdout = String::from_utf8_lossy(&out.stdout);
    if code != want_exit {
        problems.push(format!(
            "exit {code}, want {want_exit}\n      stdout: {stdout}\n      stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let report: serde_json::Value = match serde_json::from_str(stdout.trim()) {
        Ok(v) => v,
        Err(e) => {
            problems.push(format!("stdout is not one JSON object ({e}): {stdout}"));
            serde_json::Value::Null
        }
    };
    let mut edits: Vec<&serde_json::Value> = report["files"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .flat_map(|f| f["edits"].as_array().into_iter().flatten())
                .collect()
        })
        .unwrap_or_default();
    edits.sort_by_key(|e| e["index"].as_u64());
    let field = |name: &str| -> Vec<String> {
        edits
            .iter()
            .map(|e| e[name].as_str().unwrap_or("null").to_owned())
            .collect()
    };
    if let Some(want) = &expect.statuses {
        let got = field("status");
        if &got != want {
            problems.push(format!("statuses {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = &expect.tiers {
        let got = field("tier");
        if &got != want {
            problems.push(format!("tiers {got:?}, want {want:?}"));
        }
    }
    let message = report["message"].as_str().unwrap_or("");
    for needle in &expect.message_contains {
        if !message.contains(needle.as_str()) {
            problems.push(format!("message lacks {needle:?}:\n{message}"));
        }
    }
    let warnings: Vec<String> = edits
        .iter()
        .flat_map(|e| e["warnings"].as_array().into_iter().flatten())
        .filter_map(|w| w.as_str().map(str::to_owned))
        .collect();
    for needle in &expect.warnings_contain {
        if !warnings.iter().any(|w| w.contains(needle.as_str())) {
            problems.push(format!("no warning contains {needle:?}: {warnings:?}"));
        }
    }
    let after = tree(dir.path());
    let written = expect.written.unwrap_or(ok_kind);
    if ok_kind || written {
        let expected_dir = case.join("expected");
        if expected_dir.is_dir() {
            problems.extend(diff_trees(&after, &tree(&expected_dir)));
        } else if !written {
            problems.extend(diff_trees(&after, &before));
        }
    } else {
        // Nothing is lost: every file is as it was.
        problems.extend(
            diff_trees(&after, &before)
                .into_iter()
                .map(|p| format!("input changed: {p}")),
        );
    }
    problems
}

fn cases(format: &str, kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format)
        .join(kind);
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn run_all(format: &str) {
    let mut failures = Vec::new();
    let mut count = 0;
    for kind in ["ok", "err"] {
        for case in cases(format, kind) {
            count += 1;
            let problems = run_case(&case, kind == "ok");
            if !problems.is_empty() {
                let name = case
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&case)
                    .display()
                    .to_string();
                failures.push(format!("{name}:\n    {}", problems.join("\n    ")));
            }
        }
    }
    assert!(count > 0, "no fixture cases for {format}");
    assert!(
        failures.is_empty(),
        "{} of {count} {format} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn search_replace_fixtures() {
    run_all("search-replace");
}

#[test]
fn unified_diff_fixtures() {
    run_all("unified-diff");
}

#[test]
fn hashline_fixtures() {
    run_all("hashline");
}

#[test]
fn apply_patch_fixtures() {
    run_all("apply-patch");
}

#[test]
fn whole_fixtures() {
    run_all("whole");
}

#[test]
fn syntax_fixtures() {
    run_all("syntax");
}
