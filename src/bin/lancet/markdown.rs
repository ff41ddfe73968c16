//! The model's Markdown, rendered for the terminal as it streams: headings,
//! emphasis, inline code, lists, quotes and fenced code blocks (a `diff`
//! block, and diffs generally, coloured by line), line by line.
//!
//! Text is taken in whatever pieces the stream brings and shown as it comes
//! once its line's start says what the line is (a heading, an item, a
//! quote, text); a span's text waits for its closer (so it is shown
//! styled), and code blocks and rules are shown a whole line at a time.
//! Inline spans and the block structure are read by this module, line by
//! line (see [`inline`] for why not by a Markdown crate), so streaming never
//! re-renders what was printed.
//!
//! Invariant: everything from the model is escaped ([`for_terminal`]) before
//! any escape of ours is added, so the only escapes written are this
//! module's colours (which `anstream` drops under `NO_COLOR` or off a
//! terminal). Owns: the rendering. Does not own: where it is printed.

use anstyle::{AnsiColor, Effects, Style};
use lancet::agent::permissions::{Layout, for_terminal};

const HEADING: Style = Style::new()
    .fg_color(Some(anstyle::Color::Ansi(AnsiColor::Cyan)))
    .effects(Effects::BOLD);
const CODE: Style = AnsiColor::Yellow.on_default();
const QUOTE: Style = Style::new().effects(Effects::DIMMED);
const ADDED: Style = AnsiColor::Green.on_default();
const REMOVED: Style = AnsiColor::Red.on_default();
const HUNK: Style = AnsiColor::Cyan.on_default();
const BOLD: Style = Style::new().effects(Effects::BOLD);
const ITALIC: Style = Style::new().effects(Effects::ITALIC);

/// A streaming renderer.
#[derive(Debug, Default)]
pub(crate) struct Markdown {
    /// The current line's text not shown yet (escaped).
    pending: String,
    /// Inside a fenced code block: its fence and language.
    fence: Option<(String, String)>,
    /// How the current line streams, once its start has said what it is.
    flow: Option<Flow>,
    /// The last character shown on the current line (`_` at a word's edge).
    last: Option<char>,
}

/// How a line streams.
#[derive(Debug, Clone, Copy)]
enum Flow {
    /// Text with inline spans: shown as it comes, but from a delimiter that
    /// may open a span to its closer (or the line's end).
    Inline,
    /// All in one style (a heading, a quote).
    Painted(Style),
}

impl Markdown {
    /// Takes more text; returns what can be shown of it, rendered: a line
    /// is shown as it streams once its start is known (a heading, an item,
    /// text), except code blocks and rules, shown a whole line at a time.
    pub(crate) fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        for piece in text.split_inclusive('\n') {
            let (body, ends) = match piece.strip_suffix('\n') {
                Some(body) => (body, true),
                None => (piece, false),
            };
            self.pending.push_str(&for_terminal(body, Layout::Line));
            if self.flow.is_none() && !ends {
                self.start(&mut out);
            }
            if let Some(flow) = self.flow {
                self.stream(flow, ends, &mut out);
            }
            if ends {
                if self.flow.take().is_none() {
                    let line = std::mem::take(&mut self.pending);
                    self.line(&line, &mut out);
                }
                self.last = None;
                out.push('\n');
            }
        }
        out
    }

    /// The unfinished last line, rendered (the reply ended); the state is
    /// reset for the next reply.
    pub(crate) fn finish(&mut self) -> String {
        let mut out = String::new();
        if let Some(flow) = self.flow.take() {
            self.stream(flow, true, &mut out);
            out.push('\n');
        } else if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut out);
            out.push('\n');
        }
        self.pending.clear();
        self.fence = None;
        self.last = None;
        out
    }

    /// Decides how the current line streams, when its start says so.
    fn start(&mut self, out: &mut String) {
        if self.fence.is_some() {
            return;
        }
        let trimmed = self.pending.trim_start();
        let Some(first) = trimmed.split(char::is_whitespace).next() else {
            return;
        };
        if trimmed.is_empty() || (first.len() == trimmed.len() && trimmed.len() < 8) {
            return;
        }
        // Fences, rules: a whole line at a time.
        if trimmed.starts_with("```")
            || trimmed.starts_with("~~~")
            || first.chars().all(|c| matches!(c, '-' | '*' | '_')) && first.len() >= 3
        {
            return;
        }
        let indent = self.pending[..self.pending.len() - trimmed.len()].to_owned();
        let hashes = first.len() - first.trim_start_matches('#').len();
        let (flow, prefix, skip) = if (1..=6).contains(&hashes) && hashes == first.len() {
            (Flow::Painted(HEADING), String::new(), hashes)
        } else if first == ">" {
            (Flow::Painted(QUOTE), paint(QUOTE, "│ "), 1)
        } else if matches!(first, "-" | "*" | "+") {
            (Flow::Inline, format!("{indent}• "), 1)
        } else {
            (Flow::Inline, indent.clone(), 0)
        };
        let rest = trimmed[skip..].trim_start().to_owned();
        out.push_str(&prefix);
        self.pending = rest;
        self.flow = Some(flow);
    }

    /// Shows what can be shown of the pending text (all of it at the line's end).
    fn stream(&mut self, flow: Flow, ends: bool, out: &mut String) {
        if let Flow::Painted(style) = flow {
            out.push_str(&paint(style, &self.pending));
            self.last = self.pending.chars().next_back().or(self.last);
            self.pending.clear();
            return;
        }
        let mut rest = std::mem::take(&mut self.pending);
        loop {
            let Some(at) = rest.find(['`', '*', '_', '[']) else {
                self.show(&rest, out);
                return;
            };
            let (text, from) = rest.split_at(at);
            self.show(text, out);
            let from = from.to_owned();
            if let Some((shown, after)) = span(&from, self.last) {
                out.push_str(&shown);
                self.last = from[..from.len() - after.len()].chars().next_back();
                rest = after.to_owned();
            } else if ends || !may_open(&from, self.last) {
                // Text: its first character is no delimiter after all.
                let c = from.chars().next().unwrap_or(' ');
                self.show(&c.to_string(), out);
                rest = from[c.len_utf8()..].to_owned();
            } else {
                // Held until the span closes or the line ends.
                self.pending = from;
                return;
            }
        }
    }

    /// Plain text on the current line.
    fn show(&mut self, text: &str, out: &mut String) {
        out.push_str(text);
        self.last = text.chars().next_back().or(self.last);
    }

    fn line(&mut self, raw: &str, out: &mut String) {
        let line = for_terminal(raw, Layout::Line);
        let trimmed = line.trim_start();
        if let Some((fence, lang)) = &self.fence {
            if trimmed.starts_with(fence.as_str())
                && trimmed.trim_start_matches(['`', '~']).trim().is_empty()
            {
                self.fence = None;
                out.push_str(&paint(QUOTE, &line));
            } else if lang == "diff" || lang == "patch" {
                out.push_str(&diff_line(&line));
            } else {
                out.push_str(&paint(CODE, &line));
            }
            return;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let mark = &trimmed[..1];
            let len = trimmed.len() - trimmed.trim_start_matches(mark).len();
            let lang = trimmed[len..].trim().to_ascii_lowercase();
            self.fence = Some((mark.repeat(len), lang));
            out.push_str(&paint(QUOTE, &line));
            return;
        }
        let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            out.push_str(&paint(HEADING, trimmed[hashes..].trim()));
            return;
        }
        if let Some(rest) = trimmed.strip_prefix("> ") {
            out.push_str(&paint(QUOTE, &format!("│ {}", inline(rest))));
            return;
        }
        let indent = &line[..line.len() - trimmed.len()];
        for bullet in ["- ", "* ", "+ "] {
            if let Some(rest) = trimmed.strip_prefix(bullet) {
                out.push_str(&format!("{indent}• {}", inline(rest)));
                return;
            }
        }
        if trimmed.chars().all(|c| matches!(c, '-' | '*' | '_')) && trimmed.len() >= 3 {
            out.push_str(&paint(QUOTE, "────────"));
            return;
        }
        out.push_str(indent);
        out.push_str(&inline(trimmed));
    }
}

/// `text` in `style`.
fn paint(style: Style, text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!("{style}{text}{style:#}")
}

/// One line's inline spans: `code`, **strong**, *emphasis* (`_` only
/// at word edges, so snake_case stays as written), and links with their
/// address after them. A delimiter without its closer is text.
///
/// Parsed here rather than by a Markdown crate: pulldown-cmark's table of
/// HTML entities is 68 KB of pointers the loader relocates in every start
/// of the binary, `lancet apply`'s included (measured: +20 page faults).
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let before = text[..text.len() - rest.len()].chars().next_back();
        if let Some((shown, after)) = span(rest, before) {
            out.push_str(&shown);
            rest = after;
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Whether the delimiter `rest` starts with could still open a span (its
/// closer may be yet to come): `*` or `_` not followed by a space, `_` not
/// inside a word, and any `` ` `` or `[`.
fn may_open(rest: &str, before: Option<char>) -> bool {
    let c = rest.chars().next().unwrap_or(' ');
    if matches!(c, '`' | '[') {
        return true;
    }
    let body = rest.trim_start_matches(c);
    if c == '_' && before.is_some_and(char::is_alphanumeric) {
        return false;
    }
    body.is_empty() || !body.starts_with(char::is_whitespace)
}

/// The span `rest` opens (`before`: the character ahead of it), rendered,
/// and what follows it.
fn span(rest: &str, before: Option<char>) -> Option<(String, &str)> {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    if rest.starts_with('`') {
        let ticks = rest.len() - rest.trim_start_matches('`').len();
        let fence = &rest[..ticks];
        let body = &rest[ticks..];
        let end = body.find(fence)?;
        return Some((paint(CODE, body[..end].trim()), &body[end + ticks..]));
    }
    if let Some(body) = rest.strip_prefix('[') {
        let close = body.find("](")?;
        let url_end = body[close + 2..].find(')')?;
        let label = &body[..close];
        let url = &body[close + 2..close + 2 + url_end];
        let shown = format!("{}{}", inline(label), paint(QUOTE, &format!(" ({url})")));
        return Some((shown, &body[close + 3 + url_end..]));
    }
    for (mark, style) in [("**", BOLD), ("__", BOLD), ("*", ITALIC), ("_", ITALIC)] {
        let Some(body) = rest.strip_prefix(mark) else {
            continue;
        };
        if body.starts_with(char::is_whitespace)
            || (mark.starts_with('_') && word(before))
            || (mark.len() == 1 && body.starts_with(mark))
        {
            continue;
        }
        let mut from = 0;
        while let Some(i) = body[from..].find(mark) {
            let end = from + i;
            let inside = &body[..end];
            let after = &body[end + mark.len()..];
            let open = inside.is_empty()
                || inside.ends_with(char::is_whitespace)
                || (mark.starts_with('_') && word(after.chars().next()))
                // `**` is not the end of a `*` span.
                || (mark.len() == 1 && after.starts_with(mark));
            if !open {
                return Some((paint(style, &inline(inside)), after));
            }
            from = end + mark.len();
        }
    }
    None
}

/// A diff line, coloured by its first character.
fn diff_line(line: &str) -> String {
    if line.starts_with("+++") || line.starts_with("---") {
        paint(BOLD, line)
    } else if line.starts_with('+') {
        paint(ADDED, line)
    } else if line.starts_with('-') {
        paint(REMOVED, line)
    } else if line.starts_with("@@") {
        paint(HUNK, line)
    } else {
        line.to_owned()
    }
}

/// A whole unified diff, escaped and coloured line by line.
pub(crate) fn diff(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(&diff_line(&for_terminal(line, Layout::Line)));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rendered without the escapes.
    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn streams_line_by_line() {
        let mut md = Markdown::default();
        // A heading streams as soon as its `#` is followed by a space.
        let mut out = md.push("# Tit");
        assert_eq!(plain(&out), "Tit");
        out.push_str(
            &md.push("le\nSome **bold** and `code`.\n- an item\n```diff\n-old\n+new\n```\nte"),
        );
        assert_eq!(
            plain(&out),
            "Title\nSome bold and code.\n• an item\n```diff\n-old\n+new\n```\n"
        );
        assert!(out.contains(&format!("{BOLD}bold{BOLD:#}")));
        assert!(out.contains(&format!("{ADDED}+new{ADDED:#}")));
        assert!(out.contains(&format!("{REMOVED}-old{REMOVED:#}")));
        out.push_str(&md.finish());
        assert_eq!(
            plain(&out),
            "Title\nSome bold and code.\n• an item\n```diff\n-old\n+new\n```\nte\n"
        );
    }

    #[test]
    fn a_long_line_streams_and_a_span_waits_for_its_closer() {
        let mut md = Markdown::default();
        assert_eq!(md.push("Hello wor"), "Hello wor");
        assert_eq!(md.push("ld **bo"), "ld ");
        assert_eq!(
            md.push("ld** and snake_case, 2 * 3\n"),
            format!("{BOLD}bold{BOLD:#} and snake_case, 2 * 3\n")
        );
        // An opener without its closer is text at the line's end.
        assert_eq!(md.push("an *open"), "an ");
        assert_eq!(md.finish(), "*open\n");
    }

    #[test]
    fn the_models_escapes_are_shown_not_acted_on() {
        let mut md = Markdown::default();
        let out = md.push("a\x1b[2Jb\n");
        assert!(!out.contains("\x1b[2J"));
    }

    #[test]
    fn inline_spans() {
        assert_eq!(
            inline("a **b** *c* `d` snake_case_name [e](http://x)"),
            format!(
                "a {BOLD}b{BOLD:#} {ITALIC}c{ITALIC:#} {CODE}d{CODE:#} snake_case_name e{QUOTE} (http://x){QUOTE:#}"
            )
        );
        // Without a closer, a delimiter is text.
        assert_eq!(inline("2 * 3 and `open"), "2 * 3 and `open");
        assert_eq!(inline("**x*"), format!("*{ITALIC}x{ITALIC:#}"));
    }

    #[test]
    fn numbered_items_keep_their_numbers() {
        let mut md = Markdown::default();
        assert_eq!(plain(&md.push("1. first\n")), "1. first\n");
    }
}
