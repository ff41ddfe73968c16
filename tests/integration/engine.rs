//! The library API beyond what the CLI exposes: sequential mode, staleness,
//! format detection, tool-call parsing, and the no-IO core.

use lancet::apply::resolve_file;
use lancet::format::ResolveContext;
use lancet::{
    ApplyOptions, Document, EditStatus, Format, MatchOptions, Workspace, content_hash, plan,
};

fn ws_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    for (p, t) in files {
        std::fs::write(dir.path().join(p), t).unwrap();
    }
    let ws = Workspace::open(dir.path()).unwrap();
    (dir, ws)
}

const TWO_STEPS: &str = "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n\
a.py\n<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE\n";

/// Scenario 22: an edit whose text exists only after the previous edit is
/// refused in snapshot mode (with a message naming the edit it depends on)
/// and applied in sequential mode.
#[test]
fn sequential_mode_applies_dependent_edits() {
    let (dir, ws) = ws_with(&[("a.py", "x = 1\n")]);
    let patch = Format::SearchReplace.parse(TWO_STEPS).unwrap();
    let snapshot = plan(&ws, &patch, &ApplyOptions::default());
    assert!(!snapshot.report().ok);
    assert!(
        snapshot
            .report()
            .message
            .contains("only appears once edit 1 is applied")
    );
    let mut opts = ApplyOptions::default();
    opts.sequential = true;
    let report = plan(&ws, &patch, &opts).commit(&ws).unwrap();
    assert!(report.ok, "{}", report.message);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "x = 3\n"
    );
}

/// Scenario 48: a file changed since it was read is stale; after lancet's own
/// write, the hash it reports for the new content is the one on disk, so the
/// next edit is not falsely stale.
#[test]
fn staleness_by_content_hash() {
    let (dir, ws) = ws_with(&[("a.py", "x = 1\n")]);
    let read_hash = ws.read("a.py").unwrap().unwrap().hash;
    std::fs::write(dir.path().join("a.py"), "x = 1\n# formatter was here\n").unwrap();
    let patch = Format::SearchReplace
        .parse("a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 9\n>>>>>>> REPLACE\n")
        .unwrap();
    let mut opts = ApplyOptions::default();
    opts.expected_hashes.insert("a.py".into(), read_hash);
    let report = plan(&ws, &patch, &opts).into_report();
    assert_eq!(report.files[0].edits[0].status, EditStatus::Stale);
    assert!(report.message.contains("changed on disk since it was read"));
    // Read again: fresh hash, and the edit applies; the new content's hash is what is on disk.
    let fresh = ws.read("a.py").unwrap().unwrap().hash;
    opts.expected_hashes.insert("a.py".into(), fresh);
    let report = plan(&ws, &patch, &opts).commit(&ws).unwrap();
    assert!(report.ok);
    let on_disk = std::fs::read(dir.path().join("a.py")).unwrap();
    assert_eq!(
        ws.read("a.py").unwrap().unwrap().hash,
        content_hash(&on_disk)
    );
}

#[test]
fn detects_formats() {
    let sr = "prose\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n";
    assert_eq!(Format::detect(sr), Some(Format::SearchReplace));
    assert_eq!(
        Format::detect(r#"{"path": "a", "old_string": "x", "new_string": "y"}"#),
        Some(Format::SearchReplace)
    );
    // A block whose content is a diff is still a block.
    let sr_with_diff =
        "notes.md\n<<<<<<< SEARCH\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n=======\nnone\n>>>>>>> REPLACE\n";
    assert_eq!(Format::detect(sr_with_diff), Some(Format::SearchReplace));
    // A diff whose content has conflict-marker-like lines is still a diff.
    let diff_with_markers =
        "--- a/x.md\n+++ b/x.md\n@@ -1,3 +1,3 @@\n <<<<<<< SEARCH\n-=======\n+>>>>>>> REPLACE\n";
    assert_eq!(Format::detect(diff_with_markers), Some(Format::UnifiedDiff));
    assert_eq!(
        Format::detect("@@ file a.py\n@@ replace 3:ZPM\n+x\n"),
        Some(Format::Hashline)
    );
    assert_eq!(
        Format::detect(r#"{"path": "a", "edits": [{"op": "delete", "start": "1:ZZZ"}]}"#),
        Some(Format::Hashline)
    );
    assert_eq!(
        Format::detect("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch\n"),
        Some(Format::ApplyPatch)
    );
    assert_eq!(
        Format::detect(r#"{"input": "*** Begin Patch\n*** Delete File: a\n*** End Patch"}"#),
        Some(Format::ApplyPatch)
    );
    assert_eq!(
        Format::detect("src/a.py\n```python\nx = 1\n```\n"),
        Some(Format::Whole)
    );
    assert_eq!(
        Format::detect(r#"{"path": "a", "content": "x"}"#),
        Some(Format::Whole)
    );
    // The usual aider block inside a fenced path is search/replace, not a whole file.
    assert_eq!(
        Format::detect("a.py\n```python\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n```\n"),
        Some(Format::SearchReplace)
    );
    // A fenced diff with a path above it is a diff.
    assert_eq!(
        Format::detect("a.py\n```diff\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n```\n"),
        Some(Format::UnifiedDiff)
    );
    assert_eq!(Format::detect("just prose"), None);
}

/// The tool-call form: `old_string` is a literal substring; `replace_all` and
/// `expected_replacements` count occurrences; `$` sequences stay literal.
#[test]
fn tool_call_form() {
    let (dir, ws) = ws_with(&[("a.js", "let a = foo(1);\nlet b = foo(2);\n")]);
    let args = serde_json::json!({"path": "a.js", "old_string": "foo(", "new_string": "bar($1, ", "replace_all": true});
    let patch = Format::SearchReplace.parse_tool_call(&args).unwrap();
    let report = plan(&ws, &patch, &ApplyOptions::default())
        .commit(&ws)
        .unwrap();
    assert!(report.ok, "{}", report.message);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.js")).unwrap(),
        "let a = bar($1, 1);\nlet b = bar($1, 2);\n"
    );
    let args = serde_json::json!({"path": "a.js", "old_string": "bar(", "new_string": "baz(", "expected_replacements": 3});
    let patch = Format::SearchReplace.parse_tool_call(&args).unwrap();
    let report = plan(&ws, &patch, &ApplyOptions::default()).into_report();
    assert_eq!(report.files[0].edits[0].status, EditStatus::Ambiguous);
    assert!(
        report.message.contains("expected 3 replacements"),
        "{}",
        report.message
    );
    let bad = serde_json::json!({"path": "a.js", "old_string": 3});
    assert!(Format::SearchReplace.parse_tool_call(&bad).is_err());
}

/// The core is pure: resolving and applying need no workspace.
#[test]
fn resolves_without_io() {
    let doc = Document::from_text("fn main() {\r\n    println!(\"hi\");\r\n}\r\n");
    let patch = Format::SearchReplace
        .parse("<<<<<<< SEARCH\nprintln!(\"hi\");\n=======\nprintln!(\"hello\");\neprintln!(\"bye\");\n>>>>>>> REPLACE\n")
        .unwrap();
    let ops = patch.ops();
    let mut reports = vec![lancet::EditReport::new(0, 1)];
    let opts = MatchOptions::default();
    let ctx = ResolveContext::new(&opts);
    let out = resolve_file(&doc, &ops, &ctx, false, &mut reports);
    assert_eq!(reports[0].tier, Some(lancet::Tier::Indent));
    assert_eq!(
        out.text(),
        "fn main() {\r\n    println!(\"hello\");\r\n    eprintln!(\"bye\");\r\n}\r\n"
    );
}

/// The `--json` shape (DESIGN.md's contract) of a report with everything in
/// it: several files, each file and edit status, tiers, candidates of a failed
/// edit, syntax errors, warnings, a rename with a mode change, a deletion and
/// a creation. The snapshot is the contract as a program reads it.
#[cfg(all(feature = "syntax", unix))]
#[test]
fn json_report_shape() {
    const APP: &str = "def load(path):\n    with open(path) as f:\n        return f.read()\n\ndef save(path, text):\n    with open(path) as f:\n        f.write(text)\n\ndef size(path):\n    return len(load(path))\n";
    let (_dir, ws) = ws_with(&[
        ("app.py", APP),
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        ("run.sh", "#!/bin/sh\necho one\necho two\n"),
        ("gone.txt", "old\n"),
    ]);
    let block = |path: &str, search: &str, replace: &str| {
        format!("{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n")
    };
    let blocks = [
        // Applied at the indent tier, with echoed line numbers removed.
        block(
            "app.py",
            "9 |     def size(path):\n10 |         return len(load(path))\n",
            "    def size(path):\n        return len(load(path)) or 0\n",
        ),
        // Ambiguous: two places.
        block(
            "app.py",
            "    with open(path) as f:\n",
            "    with open(path, \"rb\") as f:\n",
        ),
        // Not found, with the nearest places.
        block(
            "app.py",
            "def save(path, data, mode):\n    handle = open(path, mode)\n    handle.write(data)\n",
            "def save(path, data, mode):\n    handle = open(path, mode)\n    handle.write(data + 1)\n",
        ),
        // A syntax error the edit would introduce.
        block("calc.py", "    return a + b\n", "    return (a + b\n"),
        // Already applied.
        block("calc.py", "def sub(a, b):\n", "def add(a, b):\n"),
        // A new file.
        block("new.txt", "", "fresh\n"),
    ];
    let mut patch = Format::SearchReplace.parse(&blocks.concat()).unwrap();
    let diff = "diff --git a/run.sh b/bin/run.sh\nold mode 100644\nnew mode 100755\nrename from run.sh\nrename to bin/run.sh\n--- a/run.sh\n+++ b/bin/run.sh\n@@ -3,2 +3,2 @@\n echo one\n-echo two\n+echo three\n\
diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n";
    patch
        .changes
        .extend(Format::UnifiedDiff.parse(diff).unwrap().changes);
    let report = plan(&ws, &patch, &ApplyOptions::default()).into_report();
    let json = serde_json::to_string_pretty(&lancet::feedback::json_report(&report)).unwrap();
    insta::assert_snapshot!(json);
}

/// Text in, text out: an edit in any format applied to a file's content in
/// memory, with the same report (and words) as an apply on disk.
#[test]
fn applies_to_text_in_memory() {
    use lancet::{EditStatus, FileStatus, apply_text, line_hash};
    let content = "def f():\n    return 1\n";
    let want = "def f():\n    return 2\n";
    let opts = ApplyOptions::default();
    let anchor = format!("2:{}", line_hash("    return 1"));
    let inputs = [
        (
            Format::SearchReplace,
            "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n".to_owned(),
        ),
        (
            Format::UnifiedDiff,
            "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n".to_owned(),
        ),
        (
            Format::Hashline,
            format!(r#"{{"path": "app.py", "edits": [{{"op": "replace", "start": "{anchor}", "lines": ["    return 2"]}}]}}"#),
        ),
        (
            Format::ApplyPatch,
            "*** Begin Patch\n*** Update File: ./app.py\n@@ def f():\n-    return 1\n+    return 2\n*** End Patch\n".to_owned(),
        ),
        (Format::Whole, format!("app.py\n```python\n{want}```\n")),
    ];
    for (format, input) in inputs {
        let out = apply_text(format, &input, "app.py", content, &opts).unwrap();
        assert!(out.report.ok, "{}: {}", format.name(), out.report.message);
        assert!(!out.report.written);
        assert_eq!(out.text.as_deref(), Some(want), "{}", format.name());
    }
    // A block that names no file applies to the content; the BOM and CRLF endings stay.
    let crlf = "\u{feff}a = 1\r\nb = 2\r\n";
    let bare = "<<<<<<< SEARCH\nb = 2\n=======\nb = 3\n>>>>>>> REPLACE\n";
    let out = apply_text(Format::SearchReplace, bare, "m.py", crlf, &opts).unwrap();
    assert_eq!(out.text.as_deref(), Some("\u{feff}a = 1\r\nb = 3\r\n"));
    // A failure leaves the content as it was, and says why in the usual words.
    let missing = "m.py\n<<<<<<< SEARCH\nc = 9\n=======\nc = 3\n>>>>>>> REPLACE\n";
    let out = apply_text(Format::SearchReplace, missing, "m.py", crlf, &opts).unwrap();
    assert!(!out.report.ok);
    assert_eq!(out.text.as_deref(), Some(crlf));
    assert_eq!(out.report.files[0].edits[0].status, EditStatus::NotFound);
    assert!(out.report.message.contains("SEARCH text not found in m.py"));
    // Another file is not there; a deletion of this one gives no text.
    let other = "other.py\n<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n";
    let out = apply_text(Format::SearchReplace, other, "m.py", crlf, &opts).unwrap();
    assert_eq!(out.report.files[0].edits[0].status, EditStatus::NotFound);
    assert_eq!(out.text.as_deref(), Some(crlf));
    let delete = "*** Begin Patch\n*** Delete File: m.py\n*** End Patch\n";
    let out = apply_text(Format::ApplyPatch, delete, "m.py", crlf, &opts).unwrap();
    assert_eq!(out.report.files[0].status, FileStatus::Deleted);
    assert_eq!(out.text, None);
    // Input that is not in the format is a parse error, as `Format::parse` gives it.
    assert_eq!(
        apply_text(Format::UnifiedDiff, "no diff here", "m.py", crlf, &opts).unwrap_err(),
        Format::UnifiedDiff.parse("no diff here").unwrap_err()
    );
}
