//! The syntax guard's lexical scan: for each line of a whole file, whether
//! it starts in code (not inside a string or a comment), the bracket depth
//! there, the lowest depth the line reaches, and its last code byte.
//!
//! Owns only this per-line table (for Rust and for Python); what makes a line
//! a slice boundary is [`super::slice`]'s business, and no parse happens
//! here. Invariant: one pass over the bytes, one allocation (the table, one
//! entry per line plus one for the end of the file); a wrong answer on odd
//! input only makes a slice fail to parse or not be tried, never makes the
//! guard pass a breakage (both texts are still parsed).

/// The state at the start of one line, and what the line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LineLex {
    /// The line starts in code: not inside a string or a comment.
    pub(super) code: bool,
    /// Python: the line continues a logical line (inside brackets or after
    /// a `\`). Always false for Rust.
    pub(super) cont: bool,
    /// Bracket depth at the start of the line.
    pub(super) depth: i32,
    /// The lowest bracket depth anywhere on the line.
    pub(super) min: i32,
    /// The line's last byte of code (a bracket, an operator, the end of a
    /// word or of a string or character literal); 0 when the line has none.
    pub(super) last: u8,
}

impl LineLex {
    fn start(code: bool, cont: bool, depth: i32) -> LineLex {
        LineLex {
            code,
            cont,
            depth,
            min: depth,
            last: 0,
        }
    }
}

/// Rust's lexical states that span lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rs {
    Code,
    /// `"…"`, `b"…"`, `c"…"`: backslash escapes.
    Str,
    /// `r#"…"#` with this many `#`.
    Raw(usize),
    /// `/* … */`, nested this deep.
    Block(u32),
}

fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Whether the `"` at `k` ends a raw string prefix (`r`, `br`, `cr`, then
/// `hashes` `#`): the prefix starts a token.
fn raw_prefix(bytes: &[u8], k: usize, hashes: usize) -> bool {
    let Some(r) = k.checked_sub(hashes + 1) else {
        return false;
    };
    if bytes[r] != b'r' {
        return false;
    }
    let before = |i: usize| i.checked_sub(1).map(|j| bytes[j]);
    match before(r) {
        Some(b'b' | b'c') => before(r - 1).is_none_or(|p| !ident_byte(p)),
        Some(p) => !ident_byte(p),
        None => true,
    }
}

/// The table for a Rust text: `"…"` with escapes, raw strings of any `#`
/// count, byte and C strings, character literals (`'a'`, `'\n'`, `'\u{…}'`)
/// told from lifetimes and labels (`'a`), `//` comments and nested `/* */`.
pub(super) fn rust(text: &str) -> Vec<LineLex> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 32 + 2);
    out.push(LineLex::start(true, false, 0));
    let mut state = Rs::Code;
    let mut depth = 0i32;
    let mut k = 0;
    while k < bytes.len() {
        let b = bytes[k];
        if b == b'\n' {
            out.push(LineLex::start(state == Rs::Code, false, depth));
            k += 1;
            continue;
        }
        let Some(line) = out.last_mut() else {
            break;
        };
        match state {
            Rs::Code => match b {
                b'/' if bytes.get(k + 1) == Some(&b'/') => {
                    while k < bytes.len() && bytes[k] != b'\n' {
                        k += 1;
                    }
                    continue;
                }
                b'/' if bytes.get(k + 1) == Some(&b'*') => {
                    state = Rs::Block(1);
                    k += 2;
                    continue;
                }
                b'"' => {
                    let hashes = bytes[..k].iter().rev().take_while(|&&c| c == b'#').count();
                    state = if raw_prefix(bytes, k, hashes) {
                        Rs::Raw(hashes)
                    } else {
                        Rs::Str
                    };
                    line.last = b'"';
                }
                b'\'' => {
                    line.last = b'\'';
                    match bytes.get(k + 1) {
                        // An escaped character: to the closing quote.
                        Some(b'\\') => {
                            k += 2;
                            if bytes.get(k).is_some_and(|&c| c != b'\n') {
                                k += 1;
                            }
                            while k < bytes.len() && !matches!(bytes[k], b'\'' | b'\n') {
                                k += 1;
                            }
                            if bytes.get(k) == Some(&b'\'') {
                                k += 1;
                            }
                            continue;
                        }
                        Some(&c) if c != b'\n' => {
                            let len = match c {
                                0xF0.. => 4,
                                0xE0.. => 3,
                                0xC0.. => 2,
                                _ => 1,
                            };
                            if bytes.get(k + 1 + len) == Some(&b'\'') {
                                // A character literal; otherwise a lifetime or label.
                                k += len + 2;
                                continue;
                            }
                        }
                        _ => {}
                    }
                }
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    line.last = b;
                }
                b')' | b']' | b'}' => {
                    depth -= 1;
                    line.min = line.min.min(depth);
                    line.last = b;
                }
                b' ' | b'\t' | b'\r' => {}
                _ => line.last = b,
            },
            Rs::Str => match b {
                // An escaped character is skipped; an escaped newline still
                // ends the line.
                b'\\' if bytes.get(k + 1) != Some(&b'\n') => k += 1,
                b'"' => {
                    state = Rs::Code;
                    line.last = b'"';
                }
                _ => {}
            },
            Rs::Raw(h) => {
                if b == b'"'
                    && bytes[k + 1..]
                        .iter()
                        .take(h)
                        .filter(|&&c| c == b'#')
                        .count()
                        == h
                {
                    state = Rs::Code;
                    line.last = b'"';
                    k += 1 + h;
                    continue;
                }
            }
            Rs::Block(n) => {
                if b == b'*' && bytes.get(k + 1) == Some(&b'/') {
                    state = if n == 1 { Rs::Code } else { Rs::Block(n - 1) };
                    k += 2;
                    continue;
                }
                if b == b'/' && bytes.get(k + 1) == Some(&b'*') {
                    state = Rs::Block(n + 1);
                    k += 2;
                    continue;
                }
            }
        }
        k += 1;
    }
    if !bytes.is_empty() && !text.ends_with('\n') {
        out.push(LineLex::start(state == Rs::Code, false, depth));
    }
    out
}

/// The table for a Python text: strings in `'` and `"`, single or triple,
/// with any prefix (`r`, `b`, `f`, `u` and pairs: a backslash escapes the
/// next character for the tokenizer in all of them), `#` comments, brackets,
/// and `\` line continuations.
pub(super) fn python(text: &str) -> Vec<LineLex> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 32 + 2);
    out.push(LineLex::start(true, false, 0));
    // An open string: its quote and whether it is triple.
    let mut string: Option<(u8, bool)> = None;
    let mut depth = 0i32;
    let mut backslash = false;
    let mut k = 0;
    while k < bytes.len() {
        let b = bytes[k];
        if b == b'\n' {
            if string.is_some_and(|(_, triple)| !triple) && !backslash {
                // An unclosed one-line string: the tokenizer's error; the
                // next line starts afresh.
                string = None;
            }
            out.push(LineLex::start(
                string.is_none(),
                string.is_none() && (depth > 0 || backslash),
                depth,
            ));
            backslash = false;
            k += 1;
            continue;
        }
        let Some(line) = out.last_mut() else {
            break;
        };
        // A `\` counts only right before the line's end (`\r` skipped).
        backslash = false;
        match string {
            Some((q, triple)) => match b {
                b'\\' => match bytes.get(k + 1) {
                    Some(b'\n') => backslash = true,
                    Some(b'\r') if bytes.get(k + 2) == Some(&b'\n') => {
                        backslash = true;
                        k += 1;
                    }
                    _ => k += 1,
                },
                _ if b == q && !triple => {
                    string = None;
                    line.last = q;
                }
                _ if b == q && bytes.get(k + 1..k + 3) == Some(&[q, q]) => {
                    string = None;
                    line.last = q;
                    k += 3;
                    continue;
                }
                _ => {}
            },
            None => match b {
                b'#' => {
                    while k < bytes.len() && bytes[k] != b'\n' {
                        k += 1;
                    }
                    continue;
                }
                b'\'' | b'"' => {
                    line.last = b;
                    if bytes.get(k + 1..k + 3) == Some(&[b, b]) {
                        string = Some((b, true));
                        k += 3;
                        continue;
                    }
                    string = Some((b, false));
                }
                b'\\' => {
                    backslash = true;
                    if bytes.get(k + 1..k + 3) == Some(b"\r\n") {
                        k += 1;
                    }
                }
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    line.last = b;
                }
                b')' | b']' | b'}' => {
                    depth -= 1;
                    line.min = line.min.min(depth);
                    line.last = b;
                }
                b' ' | b'\t' | b'\r' | b'\x0c' => {}
                _ => line.last = b,
            },
        }
        k += 1;
    }
    if !bytes.is_empty() && !text.ends_with('\n') {
        out.push(LineLex::start(
            string.is_none(),
            depth > 0 || backslash,
            depth,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (starts in code, depth) per line, the end of the file included.
    fn states(table: &[LineLex]) -> Vec<(bool, i32)> {
        table.iter().map(|l| (l.code, l.depth)).collect()
    }

    #[test]
    fn rust_strings_raw_strings_and_escapes() {
        let text = "let a = \"x { \\\" y\n} z\";\nlet b = r##\"a \"# {\n\"##;\nlet c = br#\"{\"#; let d = b\"\\\\\";\nlet e = c\"{\\\n\";\nf();\n";
        assert_eq!(
            states(&rust(text)),
            vec![
                (true, 0),
                (false, 0),
                (true, 0),
                (false, 0),
                (true, 0),
                (true, 0),
                (false, 0),
                (true, 0),
                (true, 0),
            ]
        );
    }

    #[test]
    fn rust_raw_identifiers_and_words_ending_in_r_are_not_raw_strings() {
        // `r#type` is a raw identifier; `bar"` is no raw prefix.
        let table = rust("let r#type = 1;\nlet s = ar\"{\";\nx();\n");
        assert_eq!(
            states(&table),
            vec![(true, 0), (true, 0), (true, 0), (true, 0)]
        );
    }

    #[test]
    fn rust_nested_block_comments_and_line_comments() {
        let text = "/* a /* b */ { still\n*/ fn f() {\n// } \"\n}\n";
        assert_eq!(
            states(&rust(text)),
            vec![(true, 0), (false, 0), (true, 1), (true, 1), (true, 0)]
        );
        // `/*` inside a string opens nothing; `"` inside a comment neither.
        let text = "let s = \"/*\";\n/* \" */\nx();\n";
        assert_eq!(states(&rust(text)), vec![(true, 0); 4]);
    }

    #[test]
    fn rust_character_literals_and_lifetimes() {
        let text = "fn f<'a>(x: &'a str) -> char {\n    let q = '\"'; let b = '{'; let u = '\\u{7b}'; let e = '\\'';\n    'outer: loop { break 'outer; }\n    let m = '\u{e9}';\n    '}'\n}\n";
        let table = rust(text);
        assert_eq!(
            states(&table),
            vec![
                (true, 0),
                (true, 1),
                (true, 1),
                (true, 1),
                (true, 1),
                (true, 1),
                (true, 0)
            ]
        );
        assert_eq!(table[0].last, b'{');
        assert_eq!(table[1].last, b';');
        assert_eq!(table[5].min, 0);
    }

    #[test]
    fn rust_depth_minimum_and_last_code_byte() {
        let table = rust("fn f() {\n    } else { // {\n    a\n}");
        assert_eq!(table.len(), 5);
        assert_eq!((table[1].depth, table[1].min, table[1].last), (1, 0, b'{'));
        assert_eq!(table[2].last, b'a');
        assert_eq!((table[4].code, table[4].depth), (true, 0));
    }

    #[test]
    fn python_strings_of_every_kind() {
        let text = "a = '''x\n\"\"\" (\n'''\nb = rb\"\\\"(\" + f'{x}' + u\"#\"\nc = \"\"\"\nunindented ' \"\n\"\"\"\nd = 'it\\'s ('\n";
        assert_eq!(
            states(&python(text)),
            vec![
                (true, 0),
                (false, 0),
                (false, 0),
                (true, 0),
                (true, 0),
                (false, 0),
                (false, 0),
                (true, 0),
                (true, 0),
            ]
        );
    }

    #[test]
    fn python_comments_continuations_and_brackets() {
        let text = "x = [  # ( ' \"\"\"\n    1,\n]\ny = 1 + \\\n    2\ns = 'a\\\nb'\nz = 3\n";
        let table = python(text);
        let cont: Vec<bool> = table.iter().map(|l| l.cont).collect();
        assert_eq!(
            cont,
            vec![false, true, true, false, true, false, false, false, false]
        );
        // The line after a backslash inside a one-line string is in it.
        assert!(!table[6].code);
        assert!(table[7].code);
        assert_eq!(table[1].depth, 1);
        assert_eq!(table[2].min, 0);
    }
}
