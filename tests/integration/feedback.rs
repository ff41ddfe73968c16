//! Snapshot tests of every message kind `lancet::feedback` writes (insta).
//!
//! The words a model reads are part of the product: a change of wording shows
//! up here as a snapshot diff to review (`cargo insta review`), never as a
//! silent change. Messages come from real applies in temporary workspaces
//! where a real input can produce them, and from the feedback functions
//! directly for the rest (I/O failures, parse errors).

use lancet::{ApplyOptions, EditError, Format, ParseError, Workspace, feedback, plan};

const APP: &str = "\
def create_user(name):
    record = build(name)
    return save(record)

def create_usar(name):
    record = build(name)
    return save(record)

def total(items):
    \"\"\"Sum the items\u{2019} prices \u{2014} in cents.\"\"\"
    result = 0
    for item in items:
        result += item.price
    return result
";

/// Applies `edits` to a workspace holding `app.py` = [`APP`] and returns the message.
fn message_with(edits: &str, opts: &ApplyOptions) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), APP).unwrap();
    std::fs::write(dir.path().join("bin.dat"), b"\x00\x01binary").unwrap();
    std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    let patch = Format::SearchReplace.parse(edits).unwrap();
    plan(&ws, &patch, opts).into_report().message
}

fn message(edits: &str) -> String {
    message_with(edits, &ApplyOptions::default())
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n")
}

#[test]
fn applied_at_each_tier() {
    let exact = block("app.py", "    result = 0\n", "    result = 0.0\n");
    let whitespace = block("app.py", "    result  =  0   \n", "    result = 0.0\n");
    let indent = block(
        "app.py",
        "for item in items:\n    result += item.price\n",
        "for item in items:\n    if item:\n        result += item.price\n",
    );
    let unicode = block(
        "app.py",
        "    \"\"\"Sum the items' prices - in cents.\"\"\"\n    result = 0\n",
        "    \"\"\"Sum the items' prices - in cents.\"\"\"\n    result = 1\n",
    );
    let fuzzy = block(
        "app.py",
        "    for itme in items:\n        result += item.price\n    return result\n",
        "    for item in items:\n        result += item.cost\n    return result\n",
    );
    insta::assert_snapshot!("applied_exact", message(&exact));
    insta::assert_snapshot!("applied_whitespace", message(&whitespace));
    insta::assert_snapshot!("applied_indent", message(&indent));
    insta::assert_snapshot!("applied_unicode", message(&unicode));
    insta::assert_snapshot!("applied_fuzzy", message(&fuzzy));
}

#[test]
fn already_applied_and_noop() {
    let already = block("app.py", "    return 0\n", "    result = 0\n");
    let noop = block("app.py", "    result = 0\n", "    result = 0\n");
    insta::assert_snapshot!("already_applied", message(&already));
    insta::assert_snapshot!("noop", message(&noop));
}

#[test]
fn not_found_with_nearest_lines() {
    let edit = block(
        "app.py",
        "def total(things):\n    result = 0\n    for thing in things:\n",
        "def total(things):\n    result = 1\n    for thing in things:\n",
    );
    insta::assert_snapshot!("not_found_nearest", message(&edit));
    let nothing = block(
        "app.py",
        "class Unrelated:\n    pass\n",
        "class Unrelated:\n    x = 1\n",
    );
    insta::assert_snapshot!("not_found_nothing_similar", message(&nothing));
}

#[test]
fn not_found_after_another_edit() {
    let edits = [
        block("app.py", "    result = 0\n", "    result = start\n"),
        block(
            "app.py",
            "    result = start\n",
            "    result = start or 0\n",
        ),
    ]
    .concat();
    insta::assert_snapshot!("not_found_depends_on_earlier", message(&edits));
}

#[test]
fn ambiguous_and_conflict() {
    let ambiguous = block(
        "app.py",
        "    record = build(name)\n    return save(record)\n",
        "    record = build(name, 1)\n    return save(record)\n",
    );
    insta::assert_snapshot!("ambiguous", message(&ambiguous));
    let conflict = [
        block(
            "app.py",
            "    result = 0\n    for item in items:\n",
            "    result = 1\n    for item in items:\n",
        ),
        block("app.py", "    result = 0\n", "    result = 2\n"),
    ]
    .concat();
    // Overlapping SEARCH text that changes different lines is not a conflict.
    let disjoint = [
        block(
            "app.py",
            "    result = 0\n    for item in items:\n",
            "    result = 1\n    for item in items:\n",
        ),
        block(
            "app.py",
            "    for item in items:\n        result += item.price\n",
            "    for item in items:\n        result -= item.price\n",
        ),
    ]
    .concat();
    insta::assert_snapshot!("overlapping_search_disjoint_changes", message(&disjoint));
    insta::assert_snapshot!("conflict", message(&conflict));
}

#[test]
fn refusals() {
    insta::assert_snapshot!(
        "lazy_placeholder",
        message(&block(
            "app.py",
            "    result = 0\n",
            "    # ... existing code ...\n    result = 1\n"
        ))
    );
    insta::assert_snapshot!(
        "empty_search_on_existing",
        message(&block("app.py", "", "new\n"))
    );
    insta::assert_snapshot!("blank_search", message(&block("app.py", "   \n", "x\n")));
    insta::assert_snapshot!(
        "elision_mismatch",
        message(&block(
            "app.py",
            "def total(items):\n...\n    return result\n",
            "def total(items):\n    return 0\n"
        ))
    );
    insta::assert_snapshot!(
        "elided_piece_ambiguous",
        message(&block(
            "app.py",
            "    record = build(name)\n...\n",
            "    record = build(name, 2)\n...\n"
        ))
    );
    insta::assert_snapshot!(
        "no_path",
        message("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n")
    );
    insta::assert_snapshot!(
        "file_missing",
        message(&block("missing.py", "x = 1\n", "x = 2\n"))
    );
    insta::assert_snapshot!(
        "path_refused",
        message(&block("../escape.py", "x = 1\n", "x = 2\n"))
    );
    insta::assert_snapshot!("binary_file", message(&block("bin.dat", "x\n", "y\n")));
    insta::assert_snapshot!("not_utf8", message(&block("latin1.txt", "caf\n", "cafe\n")));
}

#[test]
fn batch_summaries() {
    let edits = [
        block("app.py", "    result = 0\n", "    result = 1\n"),
        block("app.py", "    return nothing\n", "    return None\n"),
        block("app.py", "    return result\n", "    return result * 2\n"),
    ]
    .concat();
    insta::assert_snapshot!("nothing_written", message(&edits));
    let mut partial = ApplyOptions::default();
    partial.partial = true;
    insta::assert_snapshot!("partial", message_with(&edits, &partial));
}

#[test]
fn warnings() {
    let numbered = block(
        "app.py",
        "10 |     result = 0\n11 |     for item in items:\n",
        "10 |     result = 1\n11 |     for item in items:\n",
    );
    insta::assert_snapshot!("warning_stripped_line_numbers", message(&numbered));
    let hinted = "app.py\n<<<<<<< SEARCH\n:start_line: 6\n-------\n    record = build(name)\n=======\n    record = build(name, admin=True)\n>>>>>>> REPLACE\n";
    insta::assert_snapshot!("warning_chosen_by_hint", message(hinted));
    // SEARCH stops after `for`, mid-line: substring semantics.
    let partial_line = block(
        "app.py",
        "    result = 0\n    for\n",
        "    result = 0.0\n    for\n",
    );
    insta::assert_snapshot!("warning_partial_line", message(&partial_line));
    let elided = block(
        "app.py",
        "def total(items):\n...\n    return result\n",
        "def total(items):\n...\n    return round(result, 2)\n",
    );
    insta::assert_snapshot!("warning_elided", message(&elided));
}

#[test]
fn direct_messages() {
    let stale = feedback::edit_error("app.py", &EditError::Stale, None, lancet::EditKind::Block);
    let unreadable = feedback::edit_error(
        "app.py",
        &EditError::Unreadable {
            kind: std::io::ErrorKind::PermissionDenied,
        },
        None,
        lancet::EditKind::Block,
    );
    let bounded = feedback::edit_error(
        "big.py",
        &EditError::NotFound {
            nearest: Vec::new(),
            bounded: true,
            after_edit: None,
        },
        None,
        lancet::EditKind::Block,
    );
    let count = feedback::edit_error(
        "app.py",
        &EditError::CountMismatch {
            expected: 3,
            found: 2,
            candidates: Vec::new(),
        },
        None,
        lancet::EditKind::Block,
    );
    let divider = feedback::edit_error(
        "notes.md",
        &EditError::AmbiguousDivider { lines: vec![4, 7] },
        None,
        lancet::EditKind::Block,
    );
    let utf16 = feedback::edit_error(
        "w.txt",
        &EditError::Undecodable(lancet::DecodeError::Utf16 { big_endian: false }),
        None,
        lancet::EditKind::Block,
    );
    insta::assert_snapshot!(
        "direct_errors",
        [stale, unreadable, bounded, count, divider, utf16].join("\n---\n")
    );
    let parse: Vec<String> = [
        ParseError::Unterminated { line: 3 },
        ParseError::MissingDivider { line: 7 },
        ParseError::StrayMarker { line: 9 },
        ParseError::NoEdits,
        ParseError::BadArguments {
            field: "old_string".into(),
            expected: "a string",
        },
        ParseError::Unrecognised,
    ]
    .iter()
    .map(|e| feedback::parse_error(e, Some("search-replace")))
    .collect();
    insta::assert_snapshot!("parse_errors", parse.join("\n---\n"));
}

/// Applies `input` (any format, detected) to a workspace holding `files`; the message.
fn message_in(files: &[(&str, &str)], input: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (p, t) in files {
        std::fs::write(dir.path().join(p), t).unwrap();
    }
    let ws = Workspace::open(dir.path()).unwrap();
    let format = Format::detect(input).unwrap();
    let patch = format.parse(input).unwrap();
    plan(&ws, &patch, &ApplyOptions::default())
        .into_report()
        .message
}

const TWINS: &str = "a\nb\nx = 1\nc\nd\ne\nf\ng\nh\nx = 1\ni\n";

#[test]
fn unified_diff_messages() {
    let shifted = "--- a/app.py\n+++ b/app.py\n@@ -3,3 +3,3 @@ def total(items):\n     result = 0\n-    for item in items:\n+    for item in sorted(items):\n         result += item.price\n";
    insta::assert_snapshot!("udiff_offset", message_in(&[("app.py", APP)], shifted));
    let fuzz = "--- a/app.py\n+++ b/app.py\n@@ -11,4 +11,4 @@\n     result = 1\n     for item in items:\n-        result += item.price\n+        result += item.cost\n     return result\n";
    insta::assert_snapshot!("udiff_fuzz", message_in(&[("app.py", APP)], fuzz));
    let ambiguous = "--- a/t.txt\n+++ b/t.txt\n@@ -20,1 +20,1 @@\n-x = 1\n+x = 2\n";
    insta::assert_snapshot!(
        "udiff_ambiguous",
        message_in(&[("t.txt", TWINS)], ambiguous)
    );
    let missing = "--- a/t.txt\n+++ b/t.txt\n@@ -1,2 +1,2 @@\n a\n-nope\n+yes\n";
    insta::assert_snapshot!("udiff_not_found", message_in(&[("t.txt", TWINS)], missing));
    let unplaceable = "--- a/t.txt\n+++ b/t.txt\n@@ -2,0 +3,1 @@\n+new\n";
    insta::assert_snapshot!(
        "udiff_unplaceable",
        message_in(&[("t.txt", TWINS)], unplaceable)
    );
    let files = "diff --git a/t.txt b/u.txt\nsimilarity index 100%\nrename from t.txt\nrename to u.txt\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
    insta::assert_snapshot!(
        "udiff_move_and_delete",
        message_in(&[("t.txt", TWINS), ("gone.txt", "bye\n")], files)
    );
    let exists = "--- /dev/null\n+++ b/t.txt\n@@ -0,0 +1 @@\n+other\n";
    insta::assert_snapshot!(
        "udiff_create_over_existing",
        message_in(&[("t.txt", TWINS)], exists)
    );
    let leaves = "diff --git a/t.txt b/t.txt\ndeleted file mode 100644\n--- a/t.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n";
    insta::assert_snapshot!(
        "udiff_delete_leaves_content",
        message_in(&[("t.txt", TWINS)], leaves)
    );
}

#[test]
fn hashline_messages() {
    let doc = lancet::Document::from_text(TWINS);
    let anchor = |i: usize| format!("{}:{}", i + 1, lancet::line_hash(doc.line(i)));
    let stale = "@@ file t.txt\n@@ replace 3:ZZZ\n+x = 3\n";
    insta::assert_snapshot!("hashline_stale", message_in(&[("t.txt", TWINS)], stale));
    let moved = format!("@@ file t.txt\n@@ replace {}|c\n+C\n", anchor(3)).replace("4:", "2:");
    insta::assert_snapshot!(
        "hashline_relocated",
        message_in(&[("t.txt", TWINS)], &moved)
    );
    let echoed = format!(
        "@@ file t.txt\n@@ replace {} {}\n+{}|a\n+B\n+{}|x = 1\n",
        anchor(1),
        anchor(1),
        anchor(0),
        anchor(2)
    );
    insta::assert_snapshot!(
        "hashline_stripped_and_echo",
        message_in(&[("t.txt", TWINS)], &echoed)
    );
    let reversed = format!(
        "@@ file t.txt\n@@ replace {} {}\n+z\n",
        anchor(4),
        anchor(2)
    );
    insta::assert_snapshot!(
        "hashline_reversed_range",
        message_in(&[("t.txt", TWINS)], &reversed)
    );
    let missing = "@@ file none.txt\n@@ replace 1:ZZZ\n+x\n@@ file gone.txt\n@@ delete file\n";
    insta::assert_snapshot!(
        "hashline_missing_files",
        message_in(&[("t.txt", TWINS)], missing)
    );
}

/// Hashline: an edit whose anchors fit a moved file at several places, that
/// nothing in the call tells apart, is refused naming the places and showing
/// fresh anchors around each (spec §5.1, 5; §10).
#[test]
fn hashline_ambiguous_anchor_message() {
    let file = "# one\n# two\ndef f():\n    return 1\ndef g():\n    return 1\n]\n";
    let h = lancet::line_hash;
    let edits = format!(
        "@@ file a.txt\n@@ replace 4:{}|    return 1\n+    return 10\n@@ insert after 5:{}|]\n+# after\n",
        h("    return 1"),
        h("]")
    );
    insta::assert_snapshot!(
        "hashline_ambiguous_anchor",
        message_in(&[("a.txt", file)], &edits)
    );
}

#[test]
fn apply_patch_and_whole_messages() {
    let sloppy =
        "apply_patch <<'EOF'\n  *** Begin Patch\n*** Update File: t.txt\n@@ c\n-d\n+D\nEOF\n";
    insta::assert_snapshot!("apply_patch_notes", message_in(&[("t.txt", TWINS)], sloppy));
    let no_anchor =
        "*** Begin Patch\n*** Update File: t.txt\n@@ class Missing:\n-d\n+D\n*** End Patch\n";
    insta::assert_snapshot!(
        "apply_patch_anchor_not_found",
        message_in(&[("t.txt", TWINS)], no_anchor)
    );
    let big: String = (0..20).map(|i| format!("line {i}\n")).collect();
    let truncated = "big.txt\n```\nline 0\n// ... rest unchanged ...\n```\n";
    insta::assert_snapshot!(
        "whole_truncated",
        message_in(&[("big.txt", &big)], truncated)
    );
    let placeholder = format!("big.txt\n```\n{}// ... rest unchanged ...\n```\n", big);
    insta::assert_snapshot!(
        "whole_placeholder_written",
        message_in(&[("big.txt", &big)], &placeholder)
    );
}

#[test]
fn more_parse_errors() {
    let parse: Vec<String> = [
        ParseError::BadHunkHeader { line: 4 },
        ParseError::BadHunkLine { line: 6 },
        ParseError::EmptyHunk { line: 5 },
        ParseError::BinaryPatch { line: 3 },
        ParseError::Unsupported {
            line: 2,
            what: "copies",
        },
        ParseError::BadDirective { line: 1 },
        ParseError::BadPatchLine { line: 8 },
    ]
    .iter()
    .map(|e| feedback::parse_error(e, None))
    .collect();
    insta::assert_snapshot!("parse_errors_other_formats", parse.join("\n---\n"));
}

/// Each format's model-facing prompt, as `lancet formats NAME` prints it.
#[test]
fn prompts() {
    for f in Format::ALL {
        insta::assert_snapshot!(format!("prompt_{}", f.name()), f.instructions());
    }
}

/// The outline names what each line of a message speaks for (so the CLI can
/// tint lines by status, not by words): one subject per line, a failed
/// edit's detail lines under that edit, the closing sentence as the summary.
#[test]
fn the_outline_has_a_subject_per_line() {
    use feedback::Subject;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), APP).unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    let edits = "app.py\n```\n<<<<<<< SEARCH\n    result = 0\n=======\n    result = 1\n>>>>>>> REPLACE\n```\napp.py\n```\n<<<<<<< SEARCH\n    return totl\n=======\n    return total\n>>>>>>> REPLACE\n```\n";
    let patch = Format::SearchReplace.parse(edits).unwrap();
    let planned = plan(&ws, &patch, &ApplyOptions::default());
    let outline = planned.outline().to_vec();
    let message = planned.into_report().message;
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(outline.len(), lines.len(), "{message}");
    assert_eq!(outline[0], Subject::Edit(0), "{message}");
    assert_eq!(outline[1], Subject::Edit(1), "{message}");
    assert!(lines.len() > 3, "the failure has detail lines: {message}");
    let detail = &outline[2..lines.len() - 1];
    assert!(detail.iter().all(|s| *s == Subject::Edit(1)), "{outline:?}");
    assert_eq!(outline.last(), Some(&Subject::Summary));
}

/// A zero-context insertion whose `index` line names another version of the
/// file: the same words as without one, which name what would place it (a
/// matching blob id) instead of claiming the file is another one.
#[test]
fn udiff_unplaceable_with_a_stale_index() {
    let stale = "diff --git a/t.txt b/t.txt\nindex 5e5101e..c4e5f60 100644\n--- a/t.txt\n+++ b/t.txt\n@@ -2,0 +3,1 @@\n+new\n";
    insta::assert_snapshot!(
        "udiff_unplaceable_stale_index",
        message_in(&[("t.txt", TWINS)], stale)
    );
}

/// A whole file's fence closed early by a backtick line of its own content:
/// the words name the line that closed it and the fence to use.
#[test]
fn whole_fence_closed_early() {
    let e = ParseError::FenceClosedEarly {
        open: 2,
        closed_by: 4,
        fence: 4,
        needed: 6,
    };
    insta::assert_snapshot!("whole_fence_closed_early", feedback::parse_error(&e, None));
}

const CONFIG: &str =
    "DEBUG = False\nHOST = \"0.0.0.0\"\nPORT = 8000\nWORKERS = 4\nTIMEOUT = 30\nRETRIES = 3\n";

/// Issue 10, one locate policy: a rewritten line that names another value
/// (`WORKERS = 6` where the file has 4) is refused alike in search/replace,
/// a unified diff and apply_patch, each quoting the nearest place; a typo
/// in it (`WORKRES = 4`) is applied alike.
#[test]
fn locate_rewritten_line_with_another_value() {
    let sr = "config.py\n<<<<<<< SEARCH\nHOST = \"0.0.0.0\"\nPORT = 8000\nWORKERS = 6\nTIMEOUT = 30\n=======\nHOST = \"0.0.0.0\"\nPORT = 8000\nWORKERS = 8\nTIMEOUT = 30\n>>>>>>> REPLACE\n";
    let ud = "--- a/config.py\n+++ b/config.py\n@@ -2,4 +2,4 @@\n HOST = \"0.0.0.0\"\n PORT = 8000\n-WORKERS = 6\n+WORKERS = 8\n TIMEOUT = 30\n";
    let ap = "*** Begin Patch\n*** Update File: config.py\n HOST = \"0.0.0.0\"\n PORT = 8000\n-WORKERS = 6\n+WORKERS = 8\n TIMEOUT = 30\n*** End Patch\n";
    let all = [sr, ud, ap]
        .iter()
        .map(|e| message_in(&[("config.py", CONFIG)], e))
        .collect::<Vec<_>>()
        .join("\n---\n");
    insta::assert_snapshot!("locate_rewritten_line_another_value", all);
    let typo = [sr, ud, ap]
        .iter()
        .map(|e| e.replace("WORKERS = 6", "WORKRES = 4"))
        .map(|e| message_in(&[("config.py", CONFIG)], &e))
        .collect::<Vec<_>>()
        .join("\n---\n");
    insta::assert_snapshot!("locate_rewritten_line_typo", typo);
}

/// Issue 10: an apply_patch `@@` line found nowhere in the file (a typo too
/// short to place) is passed over with a note naming it.
#[test]
fn locate_anchor_passed_over() {
    let file = "def main():\n    cfg = load(\"config.json\")\n    cfg[\"runs\"] += 1\n    save(\"config.json\", cfg)\n";
    let patch = "*** Begin Patch\n*** Update File: app.py\n@@ def mai():\n     cfg = load(\"config.json\")\n-    cfg[\"runs\"] += 1\n+    cfg[\"runs\"] += 2\n     save(\"config.json\", cfg)\n*** End Patch\n";
    insta::assert_snapshot!(
        "locate_anchor_passed_over",
        message_in(&[("app.py", file)], patch)
    );
}

/// A reply cut off mid-hunk (issue 10, `sim:truncated`): the words for a
/// unified diff's hunk that ends short of its counts and for an apply_patch
/// chunk cut without its end marker, each from a real parse.
#[test]
fn cut_off_hunk_and_chunk() {
    let diff = "--- a/app.py\n+++ b/app.py\n@@ -1,7 +1,7 @@\n def create_user(name):\n-    record = build(name)\n";
    let e = Format::UnifiedDiff.parse(diff).unwrap_err();
    insta::assert_snapshot!("udiff_hunk_cut_off", feedback::parse_error(&e, None));
    let patch = "*** Begin Patch\n*** Update File: app.py\n@@\n def create_user(name):\n-    record = build(name)\n";
    let e = Format::ApplyPatch.parse(patch).unwrap_err();
    insta::assert_snapshot!("apply_patch_chunk_cut_off", feedback::parse_error(&e, None));
}

/// A whole-file block under a bare name the root has no file of: not
/// written, and the note says so and how to name the file (`./NAME`).
#[test]
fn whole_bare_name_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), APP).unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    let reply = "app.py\n```python\nX = 1\n```\n\nbenchsuite\n```sh\n#!/bin/sh\ncargo bench\n```\n";
    let patch = Format::Whole.parse(reply).unwrap();
    insta::assert_snapshot!(
        plan(&ws, &patch, &ApplyOptions::default())
            .into_report()
            .message
    );
}
