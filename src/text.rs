//! The text model: a [`Document`] holds a file's bytes faithfully.
//!
//! A file is decoded once into UTF-8 text plus a line table: where every line
//! starts, where its content ends and which ending (`\n`, `\r\n` or none) it
//! has. The byte-order mark and the presence of a final newline are part of
//! that record, so writing a document back gives the identical bytes.
//!
//! Owns: decoding (refusing binary and non-UTF-8 input with the offset that
//! gave it away), the line table, rewriting line ranges into a new document
//! (what applying a [`TextEdit`](crate::edit::TextEdit) comes down to), and
//! [`line_hash`], the short hash of a line's content that hashline anchors
//! and the feedback show. Does not own: locating text (the matcher), deciding
//! what to change (the formats), or the edit type itself (`edit`, one layer
//! up: this module imports nothing of the crate, so everything may use it).
//!
//! Invariant: bytes of lines an edit does not touch are copied, never
//! re-encoded; inserted lines take the ending of their neighbours. The final
//! newline state changes only when an edit asks for it explicitly.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use xxhash_rust::xxh3::xxh3_64;

/// The UTF-8 byte-order mark.
const BOM: &str = "\u{feff}";

/// Files from this size on are decoded while [`Document::from_vec_with`]'s
/// side work runs on another thread (starting one costs tens of
/// microseconds; a pass over this many bytes costs more).
pub(crate) const SIDE_THREAD_MIN: usize = 512 * 1024;

/// The side thread's stack.
const SIDE_THREAD_STACK: usize = 64 * 1024;

/// A line ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Eol {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
    /// The last line of a file that has no final newline.
    None,
}

impl Eol {
    /// The bytes of this ending.
    pub fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::CrLf => "\r\n",
            Eol::None => "",
        }
    }
}

/// Why bytes could not become a [`Document`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A NUL byte: the file is binary.
    #[error("binary file (NUL byte at offset {offset})")]
    Binary {
        /// Byte offset of the first NUL.
        offset: usize,
    },
    /// Bytes that are not valid UTF-8.
    #[error("not UTF-8 (invalid byte at offset {offset}, line {line})")]
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
        /// 1-based line of that byte.
        line: usize,
    },
    /// A UTF-16 byte-order mark.
    #[error("UTF-16 text ({big_endian_name})", big_endian_name = if *.big_endian { "big-endian" } else { "little-endian" })]
    Utf16 {
        /// Whether the mark was big-endian.
        big_endian: bool,
    },
}

/// Line `i` of `text` whose line starts are `starts`: where it starts,
/// where its content ends, and its ending. Only where each line starts is
/// kept (8 bytes a line, where start, end and ending took 24): the rest is
/// one or two bytes of the text away, and a large file's two line tables
/// (before and after an edit) are a large part of the memory an apply
/// touches (`benches/process_udiff.sh`, 100,000 lines).
fn span(text: &str, starts: &Starts, i: usize) -> (usize, usize, Eol) {
    let start = starts.at(i);
    let next = starts.get(i + 1).unwrap_or(text.len());
    let b = text.as_bytes();
    if next > start && b[next - 1] == b'\n' {
        if next - 1 > start && b[next - 2] == b'\r' {
            (start, next - 2, Eol::CrLf)
        } else {
            (start, next - 1, Eol::Lf)
        }
    } else {
        (start, next, Eol::None)
    }
}

/// Where each line of a text starts, as byte offsets: 32 bits each while
/// the text is under 4 GiB (every text lancet edits), widened to `usize`
/// by the first offset that does not fit. A table is a pass over the text
/// and memory touched for the first time: at half the bytes, the tables of
/// a 100,000-line file and of its edited copy touch 195 pages fewer (of
/// 1,737 page faults for a 50-hunk apply; each costs microseconds).
#[derive(Debug, Clone)]
enum Starts {
    Narrow(Vec<u32>),
    Wide(Vec<usize>),
}

impl Starts {
    fn with_capacity(n: usize) -> Starts {
        Starts::Narrow(Vec::with_capacity(n))
    }

    fn len(&self) -> usize {
        match self {
            Starts::Narrow(v) => v.len(),
            Starts::Wide(v) => v.len(),
        }
    }

    fn get(&self, i: usize) -> Option<usize> {
        match self {
            Starts::Narrow(v) => v.get(i).map(|&s| s as usize),
            Starts::Wide(v) => v.get(i).copied(),
        }
    }

    /// The start of line `i`.
    ///
    /// # Panics
    /// If `i` is out of range (as indexing would).
    fn at(&self, i: usize) -> usize {
        match self {
            Starts::Narrow(v) => v[i] as usize,
            Starts::Wide(v) => v[i],
        }
    }

    fn last(&self) -> Option<usize> {
        self.len().checked_sub(1).map(|i| self.at(i))
    }

    fn pop(&mut self) -> Option<usize> {
        match self {
            Starts::Narrow(v) => v.pop().map(|s| s as usize),
            Starts::Wide(v) => v.pop(),
        }
    }

    fn push(&mut self, start: usize) {
        match self {
            Starts::Narrow(v) => match u32::try_from(start) {
                Ok(s) => v.push(s),
                Err(_) => {
                    self.widen();
                    self.push(start);
                }
            },
            Starts::Wide(v) => v.push(start),
        }
    }

    /// Makes the table `usize`-wide (for a text of 4 GiB or more).
    fn widen(&mut self) {
        if let Starts::Narrow(v) = self {
            *self = Starts::Wide(v.iter().map(|&s| s as usize).collect());
        }
    }

    /// The number of lines that start at or before `offset`.
    fn count_at_or_before(&self, offset: usize) -> usize {
        match self {
            Starts::Narrow(v) => v.partition_point(|&s| s as usize <= offset),
            Starts::Wide(v) => v.partition_point(|&s| s <= offset),
        }
    }

    /// Appends the starts of `other`'s lines `range`, each moved by
    /// `base - from` (`from` is where line `range.start` starts in `other`).
    fn extend_shifted(&mut self, other: &Starts, range: Range<usize>, from: usize, base: usize) {
        let Some(last) = range.end.checked_sub(1).filter(|&l| l >= range.start) else {
            return;
        };
        // Starts increase: the others fit where the last one does.
        let fits = u32::try_from(other.at(last) - from + base).is_ok();
        match (&mut *self, other) {
            (Starts::Narrow(v), Starts::Narrow(o)) if fits => {
                // `from` and `base` fit in 32 bits here: so do the shifted starts.
                let (from, base) = (from as u32, base as u32);
                v.extend(o[range].iter().map(|&s| s - from + base));
            }
            _ => {
                for i in range {
                    self.push(other.at(i) - from + base);
                }
            }
        }
    }
}

impl PartialEq for Starts {
    fn eq(&self, other: &Starts) -> bool {
        self.len() == other.len() && (0..self.len()).all(|i| self.at(i) == other.at(i))
    }
}

/// A file's text with a faithful record of its line endings, BOM and final newline.
#[derive(Clone)]
pub struct Document {
    bom: bool,
    text: String,
    /// Where each line starts (see [`span`]).
    lines: Starts,
    /// Where each distinct line occurs, built on demand when many edits
    /// search one document (see [`Document::warm_index`]).
    index: OnceLock<LineIndex>,
}

/// Line positions by content hash (xxh3 of the line without its ending):
/// one sorted vector, so building it is one allocation and one sort.
#[derive(Debug, Clone, Default)]
pub(crate) struct LineIndex {
    by_hash: Vec<(u64, u32)>,
}

impl LineIndex {
    /// The lines whose content hashes to `hash` (a superset of the lines equal to it).
    pub(crate) fn positions(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let from = self.by_hash.partition_point(|&(h, _)| h < hash);
        self.by_hash[from..]
            .iter()
            .take_while(move |&&(h, _)| h == hash)
            .map(|&(_, i)| i as usize)
    }
}

impl PartialEq for Document {
    fn eq(&self, other: &Self) -> bool {
        self.bom == other.bom && self.text == other.text
    }
}

impl Eq for Document {}

impl fmt::Debug for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Document")
            .field("bom", &self.bom)
            .field("lines", &self.lines.len())
            .field("text", &self.text)
            .finish()
    }
}

impl Default for Document {
    fn default() -> Self {
        Document::from_text("")
    }
}

impl Document {
    /// Decodes a file's bytes. Binary data, UTF-16 and invalid UTF-8 are refused:
    /// lancet never writes a file back lossily.
    pub fn from_bytes(bytes: &[u8]) -> Result<Document, DecodeError> {
        if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
            return Err(DecodeError::Utf16 {
                big_endian: bytes[0] == 0xFE,
            });
        }
        if let Some(offset) = crate::scan::find(0, bytes) {
            return Err(DecodeError::Binary { offset });
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(Document::from_text(text)),
            Err(e) => {
                let offset = e.valid_up_to();
                let line = crate::scan::count(b'\n', &bytes[..offset]) + 1;
                Err(DecodeError::NotUtf8 { offset, line })
            }
        }
    }

    /// Decodes a file's bytes without copying them (see [`from_bytes`](Self::from_bytes)).
    pub fn from_vec(bytes: Vec<u8>) -> Result<Document, DecodeError> {
        // Validate first (same errors as `from_bytes`), then take the buffer as is.
        if bytes.starts_with(&[0xFF, 0xFE])
            || bytes.starts_with(&[0xFE, 0xFF])
            || crate::scan::find(0, &bytes).is_some()
        {
            return Document::from_bytes(&bytes);
        }
        match String::from_utf8(bytes) {
            Ok(mut text) => {
                let bom = text.starts_with(BOM);
                if bom {
                    text.drain(..BOM.len());
                }
                let lines = line_table(&text);
                Ok(Document {
                    bom,
                    text,
                    lines,
                    index: OnceLock::new(),
                })
            }
            Err(e) => Document::from_bytes(e.as_bytes()),
        }
    }

    /// [`from_vec`](Self::from_vec), with `side` run on the file's bytes (a
    /// BOM included) as well. For a large file it runs on a thread of its
    /// own while the line table is built: each is a pass over megabytes,
    /// and the two passes then take the time of one (a git diff's `index`
    /// line has the whole file hashed). A small file is not worth a thread.
    pub(crate) fn from_vec_with<T: Send>(
        bytes: Vec<u8>,
        side: impl Fn(&[u8]) -> T + Sync,
    ) -> (Result<Document, DecodeError>, T) {
        if bytes.len() < SIDE_THREAD_MIN
            || bytes.starts_with(&[0xFF, 0xFE])
            || bytes.starts_with(&[0xFE, 0xFF])
            || crate::scan::find(0, &bytes).is_some()
        {
            let t = side(&bytes);
            return (Document::from_vec(bytes), t);
        }
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => return (Document::from_bytes(e.as_bytes()), side(e.as_bytes())),
        };
        let bom = text.starts_with(BOM);
        let body = if bom { &text[BOM.len()..] } else { &text[..] };
        let (lines, t) = std::thread::scope(|scope| {
            // The side work needs little stack: no need to map the default.
            let worker = std::thread::Builder::new()
                .stack_size(SIDE_THREAD_STACK)
                .spawn_scoped(scope, || side(text.as_bytes()));
            let lines = line_table(body);
            // A thread that could not start, or panicked, is done over here.
            let t = worker
                .ok()
                .and_then(|w| w.join().ok())
                .unwrap_or_else(|| side(text.as_bytes()));
            (lines, t)
        });
        let mut text = text;
        if bom {
            text.drain(..BOM.len());
        }
        let doc = Document {
            bom,
            text,
            lines,
            index: OnceLock::new(),
        };
        (Ok(doc), t)
    }

    /// Builds a document from text (a leading BOM is recorded, not kept in the lines).
    pub fn from_text(text: &str) -> Document {
        let (bom, body) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let text = body.to_owned();
        let lines = line_table(&text);
        Document {
            bom,
            text,
            lines,
            index: OnceLock::new(),
        }
    }

    /// The document's bytes, exactly as they would be written.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len() + 3);
        if self.bom {
            out.extend_from_slice(BOM.as_bytes());
        }
        out.extend_from_slice(self.text.as_bytes());
        out
    }

    /// The document's bytes, exactly as [`to_bytes`](Self::to_bytes) gives
    /// them, reusing the text's buffer (no copy without a BOM).
    pub fn into_bytes(self) -> Vec<u8> {
        if self.bom {
            return self.to_bytes();
        }
        self.text.into_bytes()
    }

    /// The text without the BOM, line endings included.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the file starts with a UTF-8 BOM.
    pub fn has_bom(&self) -> bool {
        self.bom
    }

    /// Number of lines (a final newline does not start another line; an empty file has none).
    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    /// Whether the document is empty (no bytes besides a BOM).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Line `i` (0-based) without its ending.
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn line(&self, i: usize) -> &str {
        let (start, end, _) = span(&self.text, &self.lines, i);
        &self.text[start..end]
    }

    /// The ending of line `i` (0-based).
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn eol(&self, i: usize) -> Eol {
        span(&self.text, &self.lines, i).2
    }

    /// Iterates over the lines without their endings.
    pub fn lines(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.lines.len()).map(|i| self.line(i))
    }

    /// Whether the last line ends with a newline (false for an empty document).
    pub fn has_final_newline(&self) -> bool {
        self.text.ends_with('\n')
    }

    /// The ending most lines use (`\n` on a tie or when there is none).
    pub fn dominant_eol(&self) -> Eol {
        self.dominant_or(Eol::Lf)
    }

    /// The ending most lines use; `default` when no line has one (an empty or
    /// one-line file says nothing about its endings).
    fn dominant_or(&self, default: Eol) -> Eol {
        let (mut crlf, mut lf) = (0, 0);
        for i in 0..self.lines.len() {
            match self.eol(i) {
                Eol::CrLf => crlf += 1,
                Eol::Lf => lf += 1,
                Eol::None => {}
            }
        }
        match (crlf, lf) {
            (0, 0) => default,
            _ if crlf > lf => Eol::CrLf,
            _ => Eol::Lf,
        }
    }

    /// Builds the line index now, so that every search of this document after
    /// it looks lines up by hash instead of scanning (worth it from a handful
    /// of searches on).
    pub fn warm_index(&self) {
        self.index.get_or_init(|| {
            let mut by_hash: Vec<(u64, u32)> = self
                .lines()
                .enumerate()
                .map(|(i, line)| (xxh3_64(line.as_bytes()), i as u32))
                .collect();
            by_hash.sort_unstable();
            LineIndex { by_hash }
        });
    }

    /// The line that holds byte `offset` of [`text`](Self::text): the last
    /// one starting at or before it (0 for an empty document).
    #[cfg_attr(not(feature = "syntax"), allow(dead_code))]
    pub(crate) fn line_at(&self, offset: usize) -> usize {
        self.lines.count_at_or_before(offset).saturating_sub(1)
    }

    /// The line index, if it has been built.
    pub(crate) fn line_index(&self) -> Option<&LineIndex> {
        self.index.get()
    }

    /// The byte range of lines `range` in [`text`](Self::text), endings included.
    pub fn byte_range(&self, range: Range<usize>) -> Range<usize> {
        let start = self.lines.get(range.start).unwrap_or(self.text.len());
        // The end of line `range.end - 1`, ending included, is where the
        // next line starts (or the text ends).
        let end = if range.end == 0 {
            0
        } else {
            self.lines.get(range.end).unwrap_or(self.text.len())
        };
        start..end.max(start)
    }

    /// The new document with line ranges replaced: the primitive behind
    /// `Document::apply` (which lives with the edit type, in `edit`, so that
    /// this module needs nothing above it). `replacements` come sorted and
    /// disjoint; `inserted` sizes the buffer. Untouched lines keep their bytes.
    pub(crate) fn rewrite<'a>(
        &self,
        replacements: impl IntoIterator<Item = (Range<usize>, &'a [String], Option<&'a [Eol]>)>,
        final_newline_wanted: Option<bool>,
        default_eol: Option<Eol>,
        inserted: usize,
    ) -> Document {
        // The dominant ending takes a look at every line's: only an inserted
        // line with no neighbour's ending to take, or a final newline added,
        // needs it.
        let dominant_cell = std::cell::OnceCell::new();
        let dominant =
            || *dominant_cell.get_or_init(|| self.dominant_or(default_eol.unwrap_or(Eol::Lf)));
        let mut out = String::with_capacity(self.text.len() + inserted);
        // The line table of `out`, kept as it grows: the untouched lines'
        // spans are this document's, shifted, so only new text is scanned.
        let mut table = Starts::with_capacity(self.lines.len() + 8);
        let mut cursor = 0usize; // next line of `self` not yet copied
        let n = self.lines.len();
        let mut final_newline = self.has_final_newline();
        // The ending written after the last line so far: a final newline is
        // removed by its kind, so a line whose content ends in a lone `\r`
        // keeps it (`three\r` + `\n` is not `three` + `\r\n`).
        let mut tail = None;
        for (range, lines, stated) in replacements {
            if cursor < range.start {
                tail = Some(self.eol(range.start - 1));
            }
            self.append_lines(&mut out, &mut table, cursor..range.start);
            let eols = match stated {
                Some(stated) if stated.len() == lines.len() => stated.to_vec(),
                _ => self.endings_for(range.clone(), lines.len(), &dominant),
            };
            // An insertion after a last line that lacks an ending gives it one.
            if range.start == n
                && range.is_empty()
                && n > 0
                && !lines.is_empty()
                && self.eol(n - 1) == Eol::None
            {
                append(&mut out, &mut table, dominant().as_str());
            }
            for (line, eol) in lines.iter().zip(eols) {
                let from = reopen(&out, &mut table);
                out.push_str(line);
                out.push_str(eol.as_str());
                line_table_into(&out, from, &mut table);
                tail = Some(eol);
            }
            // Replacing the last line with nothing moves the "no final newline"
            // state onto the new last line: handled by the fix-up below.
            cursor = range.end;
        }
        if cursor < n {
            tail = Some(self.eol(n - 1));
        }
        self.append_lines(&mut out, &mut table, cursor..n);
        if let Some(wanted) = final_newline_wanted {
            final_newline = wanted;
        }
        if n == 0 && final_newline_wanted.is_none() {
            // A new file built from lines: end it with a newline, like every editor.
            final_newline = true;
        }
        set_final_newline(&mut out, final_newline, &dominant, tail);
        // The ending of the last line may have been added or removed: its
        // span (and that of an empty line the removal took) is scanned again.
        while table.last().is_some_and(|s| s >= out.len()) {
            table.pop();
        }
        let from = table.pop().unwrap_or(0);
        line_table_into(&out, from, &mut table);
        debug_assert!(table == line_table(&out), "line table out of step");
        Document {
            bom: self.bom,
            text: out,
            lines: table,
            index: OnceLock::new(),
        }
    }

    /// Appends lines `range` of this document, endings included, to `out`
    /// and their spans to `table` (`out`'s line table): shifted copies of
    /// this document's spans when `out` ends a line, else scanned.
    fn append_lines(&self, out: &mut String, table: &mut Starts, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        let bytes = self.byte_range(range.clone());
        if !(out.is_empty() || out.ends_with('\n')) {
            append(out, table, &self.text[bytes]);
            return;
        }
        let base = out.len();
        table.extend_shifted(&self.lines, range, bytes.start, base);
        out.push_str(&self.text[bytes]);
    }

    /// The endings for `count` lines that replace the lines in `range`: the
    /// replaced line's own ending where there was one at that position, else the
    /// ending of the nearest neighbour, else the document's dominant one.
    fn endings_for(
        &self,
        range: Range<usize>,
        count: usize,
        dominant: &dyn Fn() -> Eol,
    ) -> Vec<Eol> {
        let fallback = {
            let above = range.start.checked_sub(1).map(|i| self.eol(i));
            let below = (range.end < self.lines.len()).then(|| self.eol(range.end));
            let last_old = range.end.checked_sub(1).filter(|&i| i >= range.start);
            let pick = [last_old.map(|i| self.eol(i)), above, below]
                .into_iter()
                .flatten()
                .find(|e| *e != Eol::None);
            pick.unwrap_or_else(dominant)
        };
        (0..count)
            .map(|j| {
                let own = (range.start + j < range.end).then(|| self.eol(range.start + j));
                // The file's last line may have no ending; the final-newline state is
                // settled once for the whole text by `set_final_newline`.
                match own {
                    Some(Eol::None) | None => fallback,
                    Some(eol) => eol,
                }
            })
            .collect()
    }
}

/// Letters of a [`line_hash`], chosen not to look like hex digits or common
/// code (as oh-my-pi's v2 hashline).
const HASH_ALPHABET: &[u8; 16] = b"ZPMQVRWSNKTXJBYH";

/// The 3-letter hash of a line (its content without ending or trailing
/// whitespace): hashline's anchors (`12:ZPM`) and the views and feedback that
/// show them. 4,096 values: collisions are expected, so a hash only proves the
/// model saw the line's content, never where the line is.
pub fn line_hash(line: &str) -> String {
    let h = xxh3_64(line.trim_end().as_bytes());
    (0..3)
        .map(|k| HASH_ALPHABET[((h >> (k * 4)) & 0xF) as usize] as char)
        .collect()
}

/// Makes `text` end with a newline (of kind `eol`) or not, touching only its
/// end. `tail` is the ending written after the last line, when known: only
/// that is removed, so content ending in a lone `\r` keeps it.
fn set_final_newline(text: &mut String, wanted: bool, eol: &dyn Fn() -> Eol, tail: Option<Eol>) {
    if text.is_empty() {
        return;
    }
    let has = text.ends_with('\n');
    if wanted && !has {
        text.push_str(eol().as_str());
    } else if !wanted && has {
        text.pop();
        if tail != Some(Eol::Lf) && text.ends_with('\r') {
            text.pop();
        }
    }
}

fn line_table(text: &str) -> Starts {
    let mut lines = Starts::with_capacity(text.len() / 32 + 1);
    line_table_into(text, 0, &mut lines);
    lines
}

/// Appends to `lines` the line table of `text` from byte `from` on (a line
/// start), in `text`'s offsets.
fn line_table_into(text: &str, from: usize, lines: &mut Starts) {
    if u32::try_from(text.len()).is_err() {
        lines.widen();
    }
    match lines {
        // Every start is below the text's length, which fits in 32 bits.
        Starts::Narrow(v) => scan_lines(text.as_bytes(), from, |s| v.push(s as u32)),
        Starts::Wide(v) => scan_lines(text.as_bytes(), from, |s| v.push(s)),
    }
}

/// Gives `push` the start of every line of `bytes` from byte `from` on (a
/// line start), in order.
fn scan_lines(bytes: &[u8], from: usize, mut push: impl FnMut(usize)) {
    let mut start = from;
    let mut newline = |nl: usize| {
        push(start);
        start = nl + 1;
    };
    // Newlines found eight bytes at a time, as the zero bytes of the word
    // xor `\n` (exact: no carry crosses a byte): source lines are short,
    // and a search call per line costs more than scanning the words.
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const NEWLINES: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut words = bytes[from..].chunks_exact(8);
    let mut base = from;
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let x = u64::from_le_bytes(w) ^ NEWLINES;
        // The high bit of each byte of `x` that is zero.
        let mut zeros = !(((x & LOW7) + LOW7) | x | LOW7);
        while zeros != 0 {
            newline(base + (zeros.trailing_zeros() / 8) as usize);
            zeros &= zeros - 1;
        }
        base += 8;
    }
    for (i, &b) in words.remainder().iter().enumerate() {
        if b == b'\n' {
            newline(base + i);
        }
    }
    if start < bytes.len() {
        push(start);
    }
}

/// Appends `text` to `out`, keeping `table` the line table of `out`: only
/// the appended bytes are scanned, from the start of `out`'s last line when
/// that line is still open (no ending yet).
fn append(out: &mut String, table: &mut Starts, text: &str) {
    if text.is_empty() {
        return;
    }
    let from = reopen(out, table);
    out.push_str(text);
    line_table_into(out, from, table);
}

/// Where a scan of text appended to `out` starts: its end when it ends a
/// line (or is empty), else the start of its open last line, whose span
/// (`table`'s last) is dropped to be scanned again.
fn reopen(out: &str, table: &mut Starts) -> usize {
    if out.is_empty() || out.ends_with('\n') {
        return out.len();
    }
    table.pop().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::TextEditBuilder;

    /// A table stays 32 bits wide while offsets fit and widens, keeping
    /// every start, at the first that does not (a text of 4 GiB or more,
    /// too large to build in a test: the table is driven directly).
    #[test]
    fn starts_widen_past_four_gib() {
        let big = u32::MAX as usize;
        let mut t = Starts::with_capacity(4);
        t.push(0);
        t.push(10);
        assert!(matches!(t, Starts::Narrow(_)));
        t.push(big + 5);
        assert!(matches!(t, Starts::Wide(_)));
        assert_eq!(
            (0..t.len()).map(|i| t.at(i)).collect::<Vec<_>>(),
            [0, 10, big + 5]
        );
        assert_eq!(t.count_at_or_before(big), 2);
        assert_eq!(t.pop(), Some(big + 5));
        assert_eq!(t.last(), Some(10));

        // Shifted copies: within 32 bits, and past them (widened on the way).
        let mut src = Starts::with_capacity(4);
        for s in [0, 4, 9, 20] {
            src.push(s);
        }
        let mut narrow = Starts::with_capacity(4);
        narrow.extend_shifted(&src, 1..4, 4, 100);
        assert!(matches!(narrow, Starts::Narrow(_)));
        assert_eq!(
            (0..3).map(|i| narrow.at(i)).collect::<Vec<_>>(),
            [100, 105, 116]
        );
        let mut wide = Starts::with_capacity(4);
        wide.push(0);
        wide.extend_shifted(&src, 1..4, 4, big);
        assert_eq!(
            (0..4).map(|i| wide.at(i)).collect::<Vec<_>>(),
            [0, big, big + 5, big + 16]
        );
        let mut same = Starts::with_capacity(0);
        same.extend_shifted(&src, 2..2, 9, 0);
        assert_eq!(same.len(), 0);
        assert_eq!(wide, {
            let mut w = Starts::Wide(Vec::new());
            for s in [0, big, big + 5, big + 16] {
                w.push(s);
            }
            w
        });
    }

    #[test]
    fn hash_is_three_letters_of_the_alphabet() {
        let h = line_hash("    return x  ");
        assert_eq!(h.len(), 3);
        assert_eq!(h, line_hash("    return x"));
        assert!(h.bytes().all(|b| HASH_ALPHABET.contains(&b)));
    }

    fn edit(doc: &Document, range: Range<usize>, lines: &[&str]) -> Document {
        let mut b = TextEditBuilder::new();
        b.replace(range, lines.iter().map(|s| s.to_string()).collect(), 0);
        doc.apply(&b.finish().unwrap())
    }

    /// The word-at-a-time line table is the plain one: every `\n` ends a
    /// line, a `\r` right before it makes it CRLF, wherever the word edges fall.
    #[test]
    fn line_table_matches_a_plain_scan() {
        fn plain(text: &str) -> Vec<(usize, usize, Eol)> {
            let b = text.as_bytes();
            let mut out = Vec::new();
            let mut start = 0;
            for (i, &c) in b.iter().enumerate() {
                if c == b'\n' {
                    let cr = i > start && b[i - 1] == b'\r';
                    let end = if cr { i - 1 } else { i };
                    let eol = if cr { Eol::CrLf } else { Eol::Lf };
                    out.push((start, end, eol));
                    start = i + 1;
                }
            }
            if start < b.len() {
                out.push((start, b.len(), Eol::None));
            }
            out
        }
        let pieces = ["a", "\n", "\r\n", "\r", "xyz", "\u{e9}", "", "\n\n"];
        let mut seed = 7u64;
        for len in 0..200 {
            let mut text = String::new();
            for _ in 0..len {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            let table = line_table(&text);
            let spans: Vec<_> = (0..table.len()).map(|i| span(&text, &table, i)).collect();
            assert_eq!(spans, plain(&text), "{text:?}");
        }
    }

    /// A rewritten document's line table (kept as the text grows) is the
    /// table of its text, whatever the endings, the lines put in (a `\r` at
    /// their end, a `\n` inside) and the final newline asked for.
    #[test]
    fn rewritten_line_tables_are_the_texts() {
        let texts = [
            "",
            "a",
            "a\n",
            "a\r\nb\n",
            "a\nb",
            "a\r\nb\r\nc",
            "\n\n",
            "x\r",
        ];
        let new = ["", "n", "n\r", "m\nm", "\r"];
        let mut seed = 5u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..2000 {
            let doc = Document::from_text(texts[next(texts.len())]);
            let n = doc.line_count();
            let a = next(n + 1);
            let b = a + next(n - a + 1);
            let lines: Vec<String> = (0..next(3))
                .map(|_| new[next(new.len())].to_owned())
                .collect();
            let mut edit = TextEditBuilder::new();
            edit.replace(a..b, lines, 0);
            match next(3) {
                0 => {}
                1 => {
                    edit.set_final_newline(true, 0);
                }
                _ => {
                    edit.set_final_newline(false, 0);
                }
            }
            let Ok(edit) = edit.finish() else { continue };
            let after = doc.apply(&edit);
            assert_eq!(after.lines, line_table(after.text()), "{:?}", after.text());
        }
    }

    /// A file decoded with side work (on a thread of its own when large) is
    /// the document `from_vec` makes, BOM and errors alike, and the side
    /// work sees the file's bytes as read, BOM included.
    #[test]
    fn decoding_with_side_work_is_decoding() {
        let body = "fn f() {}\r\n// é\n".repeat(SIDE_THREAD_MIN / 10);
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for text in [&body[..], "", "small\n"] {
            cases.push(text.as_bytes().to_vec());
            cases.push([BOM.as_bytes(), text.as_bytes()].concat());
        }
        let mut bad = body.as_bytes().to_vec();
        bad[SIDE_THREAD_MIN - 3] = 0xff;
        cases.push(bad.clone());
        bad[SIDE_THREAD_MIN - 3] = 0;
        cases.push(bad);
        for bytes in cases {
            let (doc, seen) = Document::from_vec_with(bytes.clone(), |b| b.to_vec());
            assert_eq!(seen, bytes);
            let plain = Document::from_vec(bytes);
            assert_eq!(doc, plain);
            if let (Ok(doc), Ok(plain)) = (doc, plain) {
                assert_eq!(doc.lines, plain.lines);
            }
        }
    }

    #[test]
    fn round_trips_bytes() {
        for s in ["", "a", "a\n", "a\r\nb\nc", "\u{feff}x\r\n", "\n\n", "\r\n"] {
            let d = Document::from_text(s);
            assert_eq!(d.to_bytes(), s.as_bytes(), "{s:?}");
            assert_eq!(d.into_bytes(), s.as_bytes(), "{s:?}");
        }
    }

    #[test]
    fn mixed_endings_keep_their_own() {
        let d = Document::from_text("one\r\ntwo\nthree\r\nfour\n");
        assert_eq!(
            edit(&d, 2..3, &["THREE"]).text(),
            "one\r\ntwo\nTHREE\r\nfour\n"
        );
    }

    #[test]
    fn no_final_newline_survives() {
        let d = Document::from_text("a\nb\nc");
        assert_eq!(edit(&d, 1..2, &["B"]).text(), "a\nB\nc");
        assert_eq!(edit(&d, 2..3, &["C", "D"]).text(), "a\nb\nC\nD");
        assert_eq!(edit(&d, 3..3, &["d"]).text(), "a\nb\nc\nd");
        assert_eq!(edit(&d, 2..3, &[]).text(), "a\nb");
    }

    /// Security item 9: a lone `\r` is content, never half of an ending;
    /// the last one of a file without a final newline survives an edit.
    #[test]
    fn lone_cr_at_the_end_survives() {
        let d = Document::from_text("one\rtwo\rthree\r");
        assert_eq!(
            edit(&d, 0..1, &["ONE\rtwo\rthree\r"]).text(),
            "ONE\rtwo\rthree\r"
        );
        let d = Document::from_text("a\nb\r");
        assert_eq!(edit(&d, 0..1, &["A"]).text(), "A\nb\r");
        assert_eq!(edit(&d, 1..2, &["B\r"]).text(), "a\nB\r");
        // A real CRLF ending still goes when the final newline is dropped.
        let d = Document::from_text("a\r\nb");
        assert_eq!(edit(&d, 1..2, &[]).text(), "a");
    }

    #[test]
    fn inserted_lines_take_neighbour_endings() {
        let d = Document::from_text("a\r\nb\r\n");
        assert_eq!(edit(&d, 1..1, &["x", "y"]).text(), "a\r\nx\r\ny\r\nb\r\n");
        assert_eq!(edit(&d, 2..2, &["z"]).text(), "a\r\nb\r\nz\r\n");
    }

    #[test]
    fn refuses_binary_and_bad_utf8() {
        assert_eq!(
            Document::from_bytes(b"ab\0c"),
            Err(DecodeError::Binary { offset: 2 })
        );
        assert_eq!(
            Document::from_bytes(b"ok\nd\xe9j\xe0"),
            Err(DecodeError::NotUtf8 { offset: 4, line: 2 })
        );
        assert!(matches!(
            Document::from_bytes(b"\xff\xfea\0"),
            Err(DecodeError::Utf16 { big_endian: false })
        ));
    }
}
