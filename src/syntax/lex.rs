//! The syntax guard's lexical scan: for each line of a whole file, whether
//! it starts in code (not inside a string or a comment), the bracket depth
//! there, the lowest depth the line reaches, and its last code byte.
//!
//! Owns only this per-line table (for Rust and for Python); what makes a line
//! a slice boundary is [`super::slice`]'s business, and no parse happens
//! here. Invariant: one pass over the old file's bytes and one over the new
//! file's where it differs from the old one ([`tables`]; the rest of its
//! table is the old one's, the same as a whole scan gives); a wrong answer on
//! odd input only makes a slice fail to parse or not be tried, never makes
//! the guard pass a breakage (both texts are still parsed).

use crate::splice;
use crate::text::Document;

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
    /// The lexer's whole state at the start of the line (which string or
    /// comment it is in), encoded: with `depth`, what the lines after it
    /// depend on, so a scan can be resumed here.
    state: u32,
}

impl LineLex {
    fn start(code: bool, cont: bool, depth: i32, state: u32) -> LineLex {
        LineLex {
            code,
            cont,
            depth,
            min: depth,
            last: 0,
            state,
        }
    }

    /// Whether a scan at the start of this line and of `other` is in the
    /// same state (what the lines hold is not compared).
    fn same_start(&self, other: &LineLex) -> bool {
        (self.code, self.cont, self.depth, self.state)
            == (other.code, other.cont, other.depth, other.state)
    }

    /// This line's start, with nothing of the line seen yet.
    fn restart(&self) -> LineLex {
        LineLex::start(self.code, self.cont, self.depth, self.state)
    }
}

/// A language's scan, resumable: from byte `from` of `bytes` (a line start)
/// whose line starts as `first`, push one entry per line (and one for the
/// end) to `out`. Before scanning each line after the first, `stop` is given
/// where it starts and its start entry; when it says so, the scan ends there
/// (that entry not pushed).
pub(super) type Lexer =
    fn(&[u8], usize, LineLex, &mut Vec<LineLex>, &mut dyn FnMut(usize, &LineLex) -> bool);

/// The table of a whole text.
fn whole(lexer: Lexer, text: &str) -> Vec<LineLex> {
    let mut out = Vec::with_capacity(text.len() / 32 + 2);
    lexer(
        text.as_bytes(),
        0,
        LineLex::start(true, false, 0, 0),
        &mut out,
        &mut |_, _| false,
    );
    out
}

/// The tables of `before` and of `after`, each what [`whole`] gives; only
/// the parts of `after` that differ are scanned. `runs` is a line diff of the
/// two (equal runs the same lines, endings aside): a line of an equal run
/// that starts in the same state as its old line has the old line's entry,
/// and so has every line after it in the run, so the scan of `after` runs
/// from each changed run only until it meets such a line.
pub(super) fn tables(
    lexer: Lexer,
    before: &Document,
    after: &Document,
    runs: &[splice::DiffRun],
) -> (Vec<LineLex>, Vec<LineLex>) {
    let old = whole(lexer, before.text());
    let b = after.text().as_bytes();
    let n_new = after.line_count();
    let mut new = Vec::with_capacity(n_new + 2);
    // A last line without a newline is scanned, never shared: the same
    // line with a newline after it leaves another state (a Python string).
    let old_cap = before
        .line_count()
        .saturating_sub(usize::from(!before.has_final_newline()));
    let new_cap = n_new.saturating_sub(usize::from(!after.has_final_newline()));
    // The old line of new line `j` when an equal run holds it, and the end
    // of the old lines whose entries new lines from `j` on share.
    let old_of = |k: &mut usize, j: usize| {
        while runs.get(*k).is_some_and(|r| r.new.end <= j) {
            *k += 1;
        }
        let r = runs.get(*k).filter(|r| r.equal && r.new.contains(&j))?;
        let o = r.old.start + (j - r.new.start);
        let end = r.old.end.min(old_cap).min(o + new_cap.saturating_sub(j));
        (o < end).then_some((o, end))
    };
    let mut k = 0;
    // The next line to fill and its start.
    let (mut j, mut next) = (0, LineLex::start(true, false, 0, 0));
    while j < n_new {
        if let Some((o, end)) = old_of(&mut k, j)
            && old.get(o).is_some_and(|l| l.same_start(&next))
            && let Some(rest) = old.get(o..end)
            && let Some(after_run) = old.get(end)
        {
            new.extend_from_slice(rest);
            j += rest.len();
            next = after_run.restart();
            continue;
        }
        // Scan from line `j` until a line of an equal run starts as its old
        // line did (or to the end).
        let from = after.byte_range(j..j).start;
        let (mut line, mut resumed) = (j, None);
        lexer(b, from, next, &mut new, &mut |_, entry| {
            line += 1;
            let same = line < n_new
                && old_of(&mut k, line)
                    .is_some_and(|(o, _)| old.get(o).is_some_and(|l| l.same_start(entry)));
            if same {
                resumed = Some(*entry);
            }
            same
        });
        match resumed {
            Some(entry) => (j, next) = (line, entry),
            None => return (old, new),
        }
    }
    new.push(next);
    (old, new)
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

impl Rs {
    fn encode(self) -> u32 {
        match self {
            Rs::Code => 0,
            Rs::Str => 1,
            // A file under the guard's size limit has far fewer `#` in a row.
            Rs::Raw(h) => (u32::try_from(h).unwrap_or(u32::MAX) << 2) | 2,
            Rs::Block(n) => (n << 2) | 3,
        }
    }

    fn decode(state: u32) -> Rs {
        match state & 3 {
            0 => Rs::Code,
            1 => Rs::Str,
            2 => Rs::Raw((state >> 2) as usize),
            _ => Rs::Block(state >> 2),
        }
    }
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

/// Byte classes of Rust code: most bytes only become the line's last code
/// byte, blanks do nothing, and the rest need a look.
const PLAIN: u8 = 0;
const BLANK: u8 = 1;
const SPECIAL: u8 = 2;

static RS_CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    t[b' ' as usize] = BLANK;
    t[b'\t' as usize] = BLANK;
    t[b'\r' as usize] = BLANK;
    let special = b"\n/\"'()[]{}";
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = SPECIAL;
        i += 1;
    }
    t
};

/// The table for a Rust text: `"…"` with escapes, raw strings of any `#`
/// count, byte and C strings, character literals (`'a'`, `'\n'`, `'\u{…}'`)
/// told from lifetimes and labels (`'a`), `//` comments and nested `/* */`.
#[cfg(test)]
pub(super) fn rust(text: &str) -> Vec<LineLex> {
    whole(rust_from, text)
}

/// [`rust`] as a [`Lexer`]. Plain code is run through a byte at a time with
/// a class table; strings and comments skip to their next interesting byte.
pub(super) fn rust_from(
    bytes: &[u8],
    from: usize,
    first: LineLex,
    out: &mut Vec<LineLex>,
    stop: &mut dyn FnMut(usize, &LineLex) -> bool,
) {
    let n = bytes.len();
    let mut state = Rs::decode(first.state);
    let mut depth = first.depth;
    let mut line = first;
    let mut k = from;
    while k < n {
        if bytes[k] == b'\n' {
            out.push(line);
            k += 1;
            line = LineLex::start(state == Rs::Code, false, depth, state.encode());
            if stop(k, &line) {
                return;
            }
            continue;
        }
        match state {
            Rs::Code => {
                // Plain bytes and blanks: only the last plain one counts.
                let run = &bytes[k..];
                let end = run
                    .iter()
                    .position(|&c| RS_CLASS[usize::from(c)] == SPECIAL)
                    .unwrap_or(run.len());
                if let Some(&c) = run[..end]
                    .iter()
                    .rev()
                    .find(|&&c| RS_CLASS[usize::from(c)] == PLAIN)
                {
                    line.last = c;
                }
                k += end;
                let Some(&b) = bytes.get(k) else {
                    break;
                };
                match b {
                    b'\n' => continue,
                    b'/' if bytes.get(k + 1) == Some(&b'/') => {
                        k = crate::scan::find(b'\n', &bytes[k..]).map_or(n, |p| k + p);
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
                                while k < n && !matches!(bytes[k], b'\'' | b'\n') {
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
                    _ => line.last = b,
                }
                k += 1;
            }
            Rs::Str => {
                let Some(p) = crate::scan::find3(b'"', b'\\', b'\n', &bytes[k..]) else {
                    break;
                };
                k += p;
                match bytes[k] {
                    // An escaped character is skipped; an escaped newline
                    // still ends the line.
                    b'\\' if bytes.get(k + 1) != Some(&b'\n') => k += 2,
                    b'\\' => k += 1,
                    b'"' => {
                        state = Rs::Code;
                        line.last = b'"';
                        k += 1;
                    }
                    _ => {}
                }
            }
            Rs::Raw(h) => {
                let Some(p) = crate::scan::find2(b'"', b'\n', &bytes[k..]) else {
                    break;
                };
                k += p;
                if bytes[k] == b'"' {
                    if bytes[k + 1..]
                        .iter()
                        .take(h)
                        .filter(|&&c| c == b'#')
                        .count()
                        == h
                    {
                        state = Rs::Code;
                        line.last = b'"';
                        k += 1 + h;
                    } else {
                        k += 1;
                    }
                }
            }
            Rs::Block(d) => {
                let Some(p) = crate::scan::find3(b'*', b'/', b'\n', &bytes[k..]) else {
                    break;
                };
                k += p;
                match (bytes[k], bytes.get(k + 1)) {
                    (b'*', Some(b'/')) => {
                        state = if d == 1 { Rs::Code } else { Rs::Block(d - 1) };
                        k += 2;
                    }
                    (b'/', Some(b'*')) => {
                        state = Rs::Block(d + 1);
                        k += 2;
                    }
                    (b'\n', _) => {}
                    _ => k += 1,
                }
            }
        }
    }
    out.push(line);
    if n > from && bytes[n - 1] != b'\n' {
        out.push(LineLex::start(
            state == Rs::Code,
            false,
            depth,
            state.encode(),
        ));
    }
}

/// Python's open string, encoded: its quote and whether it is triple.
fn py_encode(string: Option<(u8, bool)>) -> u32 {
    string.map_or(0, |(q, triple)| {
        1 | (u32::from(triple) << 1) | (u32::from(q) << 8)
    })
}

fn py_decode(state: u32) -> Option<(u8, bool)> {
    (state & 1 == 1).then_some(((state >> 8) as u8, state & 2 != 0))
}

/// The table for a Python text: strings in `'` and `"`, single or triple,
/// with any prefix (`r`, `b`, `f`, `u` and pairs: a backslash escapes the
/// next character for the tokenizer in all of them), `#` comments, brackets,
/// and `\` line continuations.
pub(super) fn python(text: &str) -> Vec<LineLex> {
    whole(python_from, text)
}

/// [`python`] as a [`Lexer`].
pub(super) fn python_from(
    bytes: &[u8],
    from: usize,
    first: LineLex,
    out: &mut Vec<LineLex>,
    stop: &mut dyn FnMut(usize, &LineLex) -> bool,
) {
    let n = bytes.len();
    // An open string: its quote and whether it is triple.
    let mut string = py_decode(first.state);
    let mut depth = first.depth;
    let mut line = first;
    let mut backslash = false;
    let mut k = from;
    while k < n {
        let b = bytes[k];
        if b == b'\n' {
            if string.is_some_and(|(_, triple)| !triple) && !backslash {
                // An unclosed one-line string: the tokenizer's error; the
                // next line starts afresh.
                string = None;
            }
            out.push(line);
            line = LineLex::start(
                string.is_none(),
                string.is_none() && (depth > 0 || backslash),
                depth,
                py_encode(string),
            );
            backslash = false;
            k += 1;
            if stop(k, &line) {
                return;
            }
            continue;
        }
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
                    k = crate::scan::find(b'\n', &bytes[k..]).map_or(n, |p| k + p);
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
    out.push(line);
    if n > from && bytes[n - 1] != b'\n' {
        out.push(LineLex::start(
            string.is_none(),
            depth > 0 || backslash,
            depth,
            py_encode(string),
        ));
    }
}

/// The scans as they were first written, a byte at a time over the whole
/// text: the fast and resumable ones must give the same tables.
#[cfg(test)]
mod reference {
    use super::raw_prefix;

    /// A table entry without the resumable state.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct L {
        pub(super) code: bool,
        pub(super) cont: bool,
        pub(super) depth: i32,
        pub(super) min: i32,
        pub(super) last: u8,
    }

    impl L {
        fn start(code: bool, cont: bool, depth: i32) -> L {
            L {
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

    /// The table for a Rust text: `"…"` with escapes, raw strings of any `#`
    /// count, byte and C strings, character literals (`'a'`, `'\n'`, `'\u{…}'`)
    /// told from lifetimes and labels (`'a`), `//` comments and nested `/* */`.
    pub(super) fn rust(text: &str) -> Vec<L> {
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len() / 32 + 2);
        out.push(L::start(true, false, 0));
        let mut state = Rs::Code;
        let mut depth = 0i32;
        let mut k = 0;
        while k < bytes.len() {
            let b = bytes[k];
            if b == b'\n' {
                out.push(L::start(state == Rs::Code, false, depth));
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
            out.push(L::start(state == Rs::Code, false, depth));
        }
        out
    }

    /// The table for a Python text: strings in `'` and `"`, single or triple,
    /// with any prefix (`r`, `b`, `f`, `u` and pairs: a backslash escapes the
    /// next character for the tokenizer in all of them), `#` comments, brackets,
    /// and `\` line continuations.
    pub(super) fn python(text: &str) -> Vec<L> {
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len() / 32 + 2);
        out.push(L::start(true, false, 0));
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
                out.push(L::start(
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
            out.push(L::start(string.is_none(), depth > 0 || backslash, depth));
        }
        out
    }
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

    /// Pieces of Rust and Python that change a scan's state, and plain code.
    const PIECES: &[&str] = &[
        "\n",
        "\r\n",
        " ",
        "\t",
        "x",
        "fn f",
        "é",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ";",
        "/",
        "//",
        "/*",
        "*/",
        "*",
        "\"",
        "\\",
        "'",
        "'a'",
        "'\\''",
        "'{'",
        "'a",
        "r\"",
        "r#\"",
        "\"#",
        "br##\"",
        "\"##",
        "#",
        "b\"",
        "c\"",
        "'''",
        "\"\"\"",
        "#x",
        "\\\n",
        "\\\r\n",
        "'\\u{e9}'",
        "ar\"",
        "\r",
        "\u{c}",
    ];

    /// A text of `picks` (indices into [`PIECES`]).
    fn text_of(picks: &[usize]) -> String {
        picks.iter().map(|&i| PIECES[i % PIECES.len()]).collect()
    }

    /// A whole-text scan.
    type Whole = fn(&str) -> Vec<LineLex>;

    /// The fields the reference scans fill.
    fn plain(table: &[LineLex]) -> Vec<reference::L> {
        table
            .iter()
            .map(|l| reference::L {
                code: l.code,
                cont: l.cont,
                depth: l.depth,
                min: l.min,
                last: l.last,
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The fast scans give the tables the byte-at-a-time scans give.
        #[test]
        fn the_fast_scans_are_the_reference_scans(
            picks in proptest::collection::vec(0usize..1000, 0..60),
        ) {
            let text = text_of(&picks);
            proptest::prop_assert_eq!(plain(&rust(&text)), reference::rust(&text), "{:?}", text);
            proptest::prop_assert_eq!(plain(&python(&text)), reference::python(&text), "{:?}", text);
        }

        /// The tables of an edit's two sides, the new one scanned only where
        /// it differs, are the whole scans of both texts, whatever the edit
        /// does to the states of the lines after it.
        #[test]
        fn the_tables_of_an_edit_are_the_whole_scans(
            picks in proptest::collection::vec(0usize..1000, 0..60),
            at in 0usize..1000,
            cut in 0usize..4,
            insert in proptest::collection::vec(0usize..1000, 0..4),
        ) {
            let old = text_of(&picks);
            let k = if picks.is_empty() { 0 } else { at % (picks.len() + 1) };
            let end = (k + cut).min(picks.len());
            let new: String = [text_of(&picks[..k]), text_of(&insert), text_of(&picks[end..])].concat();
            let (before, after) = (Document::from_text(&old), Document::from_text(&new));
            let lexers: [(Lexer, Whole); 2] = [(rust_from, rust), (python_from, python)];
            for (lexer, full) in lexers {
                let (o, n) = tables(lexer, &before, &after, &splice::doc_line_diff(&before, &after));
                proptest::prop_assert_eq!(&o, &full(before.text()), "{:?}", old);
                proptest::prop_assert_eq!(&n, &full(after.text()), "{:?} -> {:?}", old, new);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// The same for edits of several hunks, with the guard's own line
        /// diff (the scan of the new text resumes and stops at each hunk).
        #[test]
        fn the_tables_of_a_many_hunk_edit_are_the_whole_scans(
            picks in proptest::collection::vec(0usize..1000, 0..80),
            hunks in proptest::collection::vec(
                (0usize..1000, 0usize..3, proptest::collection::vec(0usize..1000, 0..3)),
                1..6,
            ),
        ) {
            let mut parts: Vec<usize> = picks.clone();
            let mut at: Vec<(usize, usize, Vec<usize>)> = hunks
                .iter()
                .map(|(a, cut, insert)| (a % (picks.len() + 1), *cut, insert.clone()))
                .collect();
            at.sort_by_key(|h| std::cmp::Reverse(h.0));
            for (k, cut, insert) in at {
                let end = (k + cut).min(parts.len());
                parts.splice(k..end, insert);
            }
            let (old, new) = (text_of(&picks), text_of(&parts));
            let (before, after) = (Document::from_text(&old), Document::from_text(&new));
            let runs = crate::syntax::diff::runs(&before, &after);
            let lexers: [(Lexer, Whole); 2] = [(rust_from, rust), (python_from, python)];
            for (lexer, full) in lexers {
                let (o, n) = tables(lexer, &before, &after, &runs);
                proptest::prop_assert_eq!(&o, &full(before.text()), "{:?}", old);
                proptest::prop_assert_eq!(&n, &full(after.text()), "{:?} -> {:?}", old, new);
            }
        }
    }

    /// A one-line change in a long file: the new table is the whole scan's,
    /// whether the change leaves the state of the lines after it alone, opens
    /// a comment that a later line closes, or opens one to the end.
    #[test]
    fn an_edit_rejoins_the_old_table() {
        let line = "    let x = f(\"a\", 'b');\n";
        let old = format!("fn f() {{\n{}}}\n", line.repeat(50));
        let edits = [
            old.replacen("f(\"a\"", "f(\"z\"", 1),
            old.replacen("'b');\n", "'b'); /*\n", 1)
                .replacen("'b');\n", "'b'); */\n", 2),
            old.replacen("'b');\n", "'b'); /*\n", 1),
        ];
        for new in edits {
            let (before, after) = (Document::from_text(&old), Document::from_text(&new));
            let (o, n) = tables(
                rust_from,
                &before,
                &after,
                &splice::doc_line_diff(&before, &after),
            );
            assert_eq!(o, rust(&old));
            assert_eq!(n, rust(&new), "{new}");
        }
    }
}
