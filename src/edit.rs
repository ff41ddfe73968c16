//! [`TextEdit`]: the one change type every format resolves to.
//!
//! A `TextEdit` is a list of line-range replacements that is sorted and
//! disjoint by construction: the only way to make one is
//! [`TextEditBuilder::finish`], which refuses overlapping replacements with a
//! [`Conflict`] naming both edits. Applying it ([`Document::apply`], defined
//! here because the text model sits below the edit type) is then a single
//! pass that copies untouched lines verbatim.
//!
//! Owns: ordering and the disjointness check. Does not own: where a
//! replacement goes (the matcher and the formats decide) or line endings (the
//! [`Document`] decides, unless a replacement states them: a unified diff
//! made from the very file).

use std::ops::Range;

use crate::text::{Document, Eol};

impl Document {
    /// Applies an edit, giving the new document. Untouched lines keep their bytes.
    pub fn apply(&self, edit: &TextEdit) -> Document {
        self.rewrite(
            edit.replacements
                .iter()
                .map(|r| (r.range.clone(), r.lines.as_slice(), r.eols.as_deref())),
            edit.final_newline,
            edit.default_eol,
            edit.inserted_len(),
        )
    }
}

/// One replacement: lines `range` of the original become `lines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    range: Range<usize>,
    lines: Vec<String>,
    eols: Option<Vec<Eol>>,
    origin: usize,
}

impl Replacement {
    /// The 0-based, half-open range of original lines replaced (empty: an insertion before `range.start`).
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// The new lines, without line endings.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The endings the edit states for [`lines`](Self::lines), one each,
    /// taken as they are; `None`: each new line takes the ending of the line
    /// it replaces, else of its neighbours, else the file's usual one.
    pub fn eols(&self) -> Option<&[Eol]> {
        self.eols.as_deref()
    }

    /// Index of the edit (in the input) this replacement came from.
    pub fn origin(&self) -> usize {
        self.origin
    }
}

/// Two edits want to change the same lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("edits {first} and {second} overlap at lines {}..{}", lines.start + 1, lines.end)]
pub struct Conflict {
    /// The edit that comes first in the input.
    pub first: usize,
    /// The other edit.
    pub second: usize,
    /// The 0-based, half-open range of original lines both touch.
    pub lines: Range<usize>,
}

/// A sorted, disjoint set of line replacements, plus an optional final-newline change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextEdit {
    replacements: Vec<Replacement>,
    final_newline: Option<bool>,
    default_eol: Option<Eol>,
}

impl TextEdit {
    /// The replacements in file order.
    pub fn replacements(&self) -> &[Replacement] {
        &self.replacements
    }

    /// `Some(state)` when the edit sets whether the file ends with a newline.
    pub fn final_newline(&self) -> Option<bool> {
        self.final_newline
    }

    /// The line ending for new lines when the document has none to copy
    /// (an empty or one-line file).
    pub fn default_eol(&self) -> Option<Eol> {
        self.default_eol
    }

    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        self.replacements.is_empty() && self.final_newline.is_none()
    }

    /// Bytes of new text (without endings), for sizing buffers.
    pub(crate) fn inserted_len(&self) -> usize {
        self.replacements
            .iter()
            .flat_map(|r| r.lines.iter())
            .map(|l| l.len() + 2)
            .sum()
    }
}

/// Collects replacements in any order; [`finish`](Self::finish) sorts them and checks they are disjoint.
#[derive(Debug, Default)]
pub struct TextEditBuilder {
    replacements: Vec<Replacement>,
    final_newline: Option<(bool, usize)>,
    default_eol: Option<Eol>,
}

impl TextEditBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces original lines `range` with `lines`, on behalf of edit `origin`.
    pub fn replace(&mut self, range: Range<usize>, lines: Vec<String>, origin: usize) -> &mut Self {
        self.replace_ending(range, lines, None, origin)
    }

    /// [`replace`](Self::replace), with the endings of `lines` stated (one
    /// each; `None` as in `replace`).
    pub fn replace_ending(
        &mut self,
        range: Range<usize>,
        lines: Vec<String>,
        eols: Option<Vec<Eol>>,
        origin: usize,
    ) -> &mut Self {
        let eols = eols.filter(|e| e.len() == lines.len());
        self.replacements.push(Replacement {
            range,
            lines,
            eols,
            origin,
        });
        self
    }

    /// Sets whether the result ends with a newline, on behalf of edit `origin`.
    pub fn set_final_newline(&mut self, wanted: bool, origin: usize) -> &mut Self {
        self.final_newline = Some((wanted, origin));
        self
    }

    /// The ending new lines get when the document has none to copy.
    pub fn set_default_eol(&mut self, eol: Eol) -> &mut Self {
        self.default_eol = Some(eol);
        self
    }

    /// Sorts the replacements and checks that no two overlap.
    ///
    /// Two replacements conflict when their ranges share a line, or when both
    /// insert at the same point (their order would be a guess). An insertion at
    /// the edge of another edit's range does not conflict: it goes before or
    /// after it.
    pub fn finish(self) -> Result<TextEdit, Conflict> {
        let mut reps = self.replacements;
        // Insertions sort before a replacement starting at the same line.
        reps.sort_by_key(|r| (r.range.start, r.range.end, r.origin));
        for pair in reps.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let both_insert_here =
                a.range.is_empty() && b.range.is_empty() && a.range.start == b.range.start;
            if b.range.start < a.range.end || both_insert_here {
                let lines = b.range.start..a.range.end.min(b.range.end);
                let (first, second) = (a.origin.min(b.origin), a.origin.max(b.origin));
                return Err(Conflict {
                    first,
                    second,
                    lines,
                });
            }
        }
        // Drop no-op replacements that insert nothing and remove nothing.
        reps.retain(|r| !(r.range.is_empty() && r.lines.is_empty()));
        Ok(TextEdit {
            replacements: reps,
            final_newline: self.final_newline.map(|(w, _)| w),
            default_eol: self.default_eol,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(b: &mut TextEditBuilder, r: Range<usize>, o: usize) {
        b.replace(r, vec!["x".into()], o);
    }

    #[test]
    fn sorts_and_accepts_disjoint() {
        let mut b = TextEditBuilder::new();
        rep(&mut b, 5..7, 0);
        rep(&mut b, 1..2, 1);
        rep(&mut b, 2..2, 2);
        rep(&mut b, 7..7, 3);
        let e = b.finish().unwrap();
        let starts: Vec<_> = e.replacements().iter().map(|r| r.range().start).collect();
        assert_eq!(starts, [1, 2, 5, 7]);
    }

    #[test]
    fn refuses_overlap_naming_both() {
        let mut b = TextEditBuilder::new();
        rep(&mut b, 3..6, 2);
        rep(&mut b, 5..8, 0);
        let c = b.finish().unwrap_err();
        assert_eq!((c.first, c.second), (0, 2));
        assert_eq!(c.lines, 5..6);
    }

    #[test]
    fn refuses_two_insertions_at_one_point() {
        let mut b = TextEditBuilder::new();
        rep(&mut b, 4..4, 0);
        rep(&mut b, 4..4, 1);
        assert!(b.finish().is_err());
    }
}
