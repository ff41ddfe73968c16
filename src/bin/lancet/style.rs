//! Terminal colour for human output, chosen by the status a value carries.
//!
//! The words come from `lancet::feedback` and the agent; this module only
//! picks a tint for a line from the report it speaks for (an edit's
//! [`EditStatus`] and warnings, a file's [`FileStatus`], whether anything
//! was written), never from the line's text. Escapes are written through
//! `anstream`, which drops them where colour is unwanted: not a terminal,
//! `NO_COLOR`, `CLICOLOR=0` (and keeps them under `CLICOLOR_FORCE`).

use std::collections::HashMap;

use anstyle::{AnsiColor, Style};
use lancet::feedback::Subject;
use lancet::{ApplyReport, EditStatus, FileStatus};

/// Done as asked.
pub(crate) const GOOD: Style = AnsiColor::Green.on_default();
/// Done, but worth a look (already applied, a warning, a partial write).
pub(crate) const NOTICE: Style = AnsiColor::Yellow.on_default();
/// Beside the point: the session's tool lines and status line.
#[cfg(feature = "agent")]
pub(crate) const DIM: Style = Style::new().effects(anstyle::Effects::DIMMED);
/// Not done.
pub(crate) const BAD: Style = AnsiColor::Red.on_default();

/// `text` in `style` (anstream strips the escapes where colour is off).
pub(crate) fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// The tint of each edit's headline, by the edit's index in the input:
/// built once per report (a lookup per line that searched every file's
/// edits made the summary of a 1,000-hunk diff quadratic: about 3.5 M
/// instructions, a tenth of that apply's write path).
fn edit_tints(report: &ApplyReport) -> HashMap<usize, Style> {
    let mut tints = HashMap::new();
    for edit in report.files.iter().flat_map(|f| &f.edits) {
        let tint = match edit.status {
            EditStatus::Applied if edit.warnings.is_empty() => GOOD,
            EditStatus::Applied | EditStatus::AlreadyApplied | EditStatus::Noop => NOTICE,
            _ => BAD,
        };
        // The first report of an index speaks for it, as a search would find it.
        tints.entry(edit.index).or_insert(tint);
    }
    tints
}

/// The tint of a file's line.
fn file_tint(report: &ApplyReport, index: usize) -> Option<Style> {
    match report.files.get(index)?.status {
        FileStatus::Failed => Some(BAD),
        FileStatus::Unchanged => None,
        _ => Some(GOOD),
    }
}

/// The human summary of an apply: `report.message`, the first line of what
/// each subject says tinted by that subject's status (detail lines, such as
/// quoted file lines, stay plain). Without `colour` it is the same lines
/// untinted: the caller prints it as it is, in one write, instead of through
/// `anstream`, which would strip the escapes again byte by byte and write
/// each line apart (a thousand `write`s for a thousand hunks).
pub(crate) fn message(report: &ApplyReport, outline: &[Subject], colour: bool) -> String {
    if !colour {
        return report.message.lines().collect::<Vec<_>>().join("\n");
    }
    let edit_tints = edit_tints(report);
    let mut previous = None;
    let lines: Vec<String> = report
        .message
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let subject = outline.get(i).copied();
            // Notes are one line each; anything else may run on over
            // detail lines that belong to the same subject.
            let headline = subject != previous || subject == Some(Subject::Note);
            previous = subject;
            let tint = match subject.filter(|_| headline) {
                Some(Subject::Note) => Some(NOTICE),
                Some(Subject::File(f)) => file_tint(report, f),
                Some(Subject::Edit(e)) => edit_tints.get(&e).copied(),
                Some(Subject::Summary) if report.written => Some(NOTICE),
                Some(Subject::Summary) => Some(BAD),
                _ => None,
            };
            match tint {
                Some(style) => paint(style, line),
                None => line.to_owned(),
            }
        })
        .collect();
    lines.join("\n")
}
