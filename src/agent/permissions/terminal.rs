//! Untrusted text on a person's terminal, shown as it is.
//!
//! A command, a path or a file's content may carry characters a terminal
//! acts on instead of showing: a carriage return that moves back over what
//! was written, escape sequences that erase lines or recolour them, bidi
//! overrides that reorder them. A question shown with them can say
//! `ls -la` while the command is `rm -rf ~`. [`for_terminal`] renders any
//! such text with every one of those characters as a visible escape
//! (`\r`, `\x1b`, `\u{202e}`), so what a person reads is what runs. It
//! never shortens anything.
//!
//! Owns: the rendering. Does not own: the words around it (the agent's
//! `words` module, the CLI).

use std::borrow::Cow;
use std::fmt::Write as _;

/// How text is laid out on the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Layout {
    /// On one line: every control character is escaped, newlines and tabs too
    /// (a command, a path).
    Line,
    /// A block of lines (a diff): newlines, tabs and a carriage return right
    /// before a newline (a CRLF line end) are kept, the rest is escaped.
    Block,
}

/// `text` with every character a terminal would act on rather than show
/// written as a visible escape: C0 and C1 control characters and DEL
/// (`\r`, `\t`, `\n`, `\x1b`, `\x7f`, `\u{9b}`), bidi overrides and isolates
/// (U+202A–U+202E, U+2066–U+2069) and other invisible format characters
/// (U+061C, U+200B–U+200F, U+2028, U+2029, U+2060–U+2064, U+FEFF).
/// Borrows when there is nothing to escape.
pub fn for_terminal(text: &str, layout: Layout) -> Cow<'_, str> {
    let block = layout == Layout::Block;
    let keep = |c: char, next: Option<char>| {
        block && (c == '\n' || c == '\t' || (c == '\r' && next == Some('\n')))
    };
    let mut chars = text.chars().peekable();
    let mut out: Option<String> = None;
    let mut at = 0;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        if hidden(c) && !keep(c, next) {
            let s = out.get_or_insert_with(|| text[..at].to_owned());
            let _ = match c {
                '\n' => write!(s, "\\n"),
                '\r' => write!(s, "\\r"),
                '\t' => write!(s, "\\t"),
                c if (c as u32) < 0x80 => write!(s, "\\x{:02x}", c as u32),
                c => write!(s, "\\u{{{:x}}}", c as u32),
            };
        } else if let Some(s) = out.as_mut() {
            s.push(c);
        }
        at += c.len_utf8();
    }
    match out {
        Some(s) => Cow::Owned(s),
        None => Cow::Borrowed(text),
    }
}

/// Whether a terminal acts on `c` rather than showing it.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown() {
        let spoof = "rm -rf ~/x #\r\x1b[2Kls -la";
        assert_eq!(
            for_terminal(spoof, Layout::Line),
            "rm -rf ~/x #\\r\\x1b[2Kls -la"
        );
        assert_eq!(
            for_terminal("a\tb\nc\u{7f}\u{9b}", Layout::Line),
            "a\\tb\\nc\\x7f\\u{9b}"
        );
        assert_eq!(
            for_terminal("x\u{202e}gpj.exe\u{2066}", Layout::Line),
            "x\\u{202e}gpj.exe\\u{2066}"
        );
        // A block keeps its lines, tabs and CRLF ends, not a lone CR.
        assert_eq!(
            for_terminal("-a\r\n+\tb\rc\x1b[1A\n", Layout::Block),
            "-a\r\n+\tb\\rc\\x1b[1A\n"
        );
        // Plain text, however long, is the same text.
        let long = "é".repeat(10_000);
        assert!(matches!(
            for_terminal(&long, Layout::Line),
            Cow::Borrowed(s) if s == long
        ));
    }
}
