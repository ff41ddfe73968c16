//! Edits written to a wrong place: a result that changed lines the expected
//! change leaves alone — another file, or another part of the right file.
//!
//! This is the failure the engine exists to prevent (an edit that quotes
//! text found twice, or found only approximately, landing on the wrong
//! copy), and the one a user cannot see from a pass rate; the report shows
//! it prominently when it is not zero. It is judged against `after/`: the
//! lines `before → result` changes must each touch (overlap or border) a
//! region `before → after` changes. A model that edits the wrong function
//! by its own mistake counts too: the figure is an upper bound on the
//! engine's share, and zero means neither happened.
//!
//! Owns: that judgement. Does not own: judging a pass (the runner).
//!
//! Invariant: a result equal to `after/`, or equal to `before/`, is never
//! at a wrong place; neither is a task without `after/`.

use std::ops::Range;

use super::task::Files;

/// Lines of `text`, each with its newline.
fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|&b| b == b'\n').collect()
}

/// The line ranges of `old` that turning it into `new` changes (an
/// insertion is an empty range at its position).
fn changed(old: &[u8], new: &[u8]) -> Vec<Range<usize>> {
    let (a, b) = (lines(old), lines(new));
    similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b)
        .into_iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .map(|op| op.old_range())
        .collect()
}

/// Whether `x` overlaps or borders `y` (an empty range borders what is
/// next to it).
fn touches(x: &Range<usize>, y: &Range<usize>) -> bool {
    x.start <= y.end && y.start <= x.end
}

/// Whether `result` changed something the expected change (`before →
/// after`) leaves alone.
pub fn wrong_place(before: &Files, after: Option<&Files>, result: &Files) -> bool {
    let Some(after) = after else { return false };
    if result == after || result == before {
        return false;
    }
    let empty = Vec::new();
    let paths = before.keys().chain(result.keys()).chain(after.keys());
    for path in paths {
        let b = before.get(path).unwrap_or(&empty);
        let r = result.get(path).unwrap_or(&empty);
        if r == b && before.contains_key(path) == result.contains_key(path) {
            continue;
        }
        let a = after.get(path).unwrap_or(&empty);
        if a == b && before.contains_key(path) == after.contains_key(path) {
            // A file the task does not change was changed (or made, or removed).
            return true;
        }
        let expected = changed(b, a);
        if changed(b, r)
            .iter()
            .any(|got| !expected.iter().any(|want| touches(got, want)))
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> Files {
        pairs
            .iter()
            .map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec()))
            .collect()
    }

    const BEFORE: &str = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";

    #[test]
    fn the_right_place_wrong_text_is_not_a_wrong_place() {
        let before = files(&[("calc.py", BEFORE), ("other.py", "x = 1\n")]);
        let after = files(&[
            ("calc.py", &BEFORE.replacen("a - b", "a + b", 1)),
            ("other.py", "x = 1\n"),
        ]);
        assert!(!wrong_place(&before, Some(&after), &after));
        assert!(!wrong_place(&before, Some(&after), &before));
        let wrong_text = files(&[
            ("calc.py", &BEFORE.replacen("a - b", "a * b", 1)),
            ("other.py", "x = 1\n"),
        ]);
        assert!(!wrong_place(&before, Some(&after), &wrong_text));
        assert!(!wrong_place(&before, None, &wrong_text));
    }

    #[test]
    fn the_other_copy_or_another_file_is_a_wrong_place() {
        let before = files(&[("calc.py", BEFORE), ("other.py", "x = 1\n")]);
        let after = files(&[
            ("calc.py", &BEFORE.replacen("a - b", "a + b", 1)),
            ("other.py", "x = 1\n"),
        ]);
        // The same fix, on `sub`'s identical line instead of `add`'s.
        let other_copy = files(&[
            (
                "calc.py",
                "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n",
            ),
            ("other.py", "x = 1\n"),
        ]);
        assert_ne!(other_copy, before);
        assert!(wrong_place(&before, Some(&after), &other_copy));
        // The right fix, and a file the task leaves alone changed too.
        let mut also = after.clone();
        also.insert("other.py".into(), b"x = 2\n".to_vec());
        assert!(wrong_place(&before, Some(&after), &also));
        // A new file the task does not make.
        let mut made = after.clone();
        made.insert("new.py".into(), Vec::new());
        assert!(wrong_place(&before, Some(&after), &made));
    }
}
