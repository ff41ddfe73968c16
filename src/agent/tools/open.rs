//! Opening files the way every tool does: regular files only, never
//! blocking, in bounded memory.
//!
//! A workspace is hostile: any path in it may be a FIFO (opening it for
//! reading blocks until someone writes), a device (`/dev/zero` reads for
//! ever), or a 1 GB log. [`open_regular`] opens a file through the
//! [`Workspace`] (`Workspace::open_file`: one real directory at a time from
//! the root's handle, the type checked before the open and again on the
//! descriptor, `O_NOFOLLOW | O_NONBLOCK`), so a path swapped meanwhile can
//! neither block nor lead outside the root, and sorts what it found for the
//! tools' words. [`read_capped`] reads at most a given size; [`Page::read`]
//! reads one page of lines from a file of any size, scanning at most
//! [`STREAM_SCAN_MAX`] bytes.
//!
//! Owns: what the tools make of a path they read, and the bounded reads.
//! Does not own: confinement and the file-type checks (the workspace) or
//! what a tool shows (the tool and the words module).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use super::types::{STREAM_SCAN_MAX, Special};
use crate::workspace::{FileKind, Workspace, WorkspaceError};

/// What a path held when a tool went to read it.
#[derive(Debug)]
pub(super) enum Opened {
    /// A regular file, opened, and its size when opened.
    File(File, u64),
    /// Nothing.
    Missing,
    /// A directory.
    Directory,
    /// Something that is not a regular file; it was not opened.
    Special(Special),
}

/// What a path holds, without following a final symlink (the workspace
/// resolved the path already, so a symlink here was swapped in since).
pub(super) fn kind_of(meta: &std::fs::Metadata) -> Option<Special> {
    let t = meta.file_type();
    if t.is_file() || t.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some(Special::Fifo);
        }
        if t.is_char_device() || t.is_block_device() {
            return Some(Special::Device);
        }
        if t.is_socket() {
            return Some(Special::Socket);
        }
    }
    Some(Special::Other)
}

/// Opens `rel` for reading through the workspace when it is a regular file.
pub(super) fn open_regular(ws: &Workspace, rel: &str) -> Result<Opened, WorkspaceError> {
    match ws.open_file(rel) {
        Ok(Some((file, size))) => Ok(Opened::File(file, size)),
        Ok(None) => Ok(Opened::Missing),
        Err(WorkspaceError::IsDirectory { .. }) => Ok(Opened::Directory),
        Err(WorkspaceError::NotRegular { found, .. }) => Ok(Opened::Special(special(found))),
        Err(e) => Err(e),
    }
}

/// The tools' name for what the workspace found instead of a regular file.
fn special(kind: FileKind) -> Special {
    match kind {
        FileKind::Fifo => Special::Fifo,
        FileKind::CharDevice | FileKind::BlockDevice => Special::Device,
        FileKind::Socket => Special::Socket,
        _ => Special::Other,
    }
}

/// The file's bytes, or `None` when it holds more than `max` (it grew
/// since it was measured).
pub(super) fn read_capped(file: File, size: u64, max: u64) -> io::Result<Option<Vec<u8>>> {
    let cap = usize::try_from(size.min(max)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(cap);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// One line of a page, cut to what a tool shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PageLine {
    /// The start of the line (at most the `keep` bytes asked for), without
    /// its line ending.
    pub(super) head: Vec<u8>,
    /// Characters of the line after `head` (counted, not kept).
    pub(super) cut_chars: usize,
}

/// A page of lines from a file too large to read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Page {
    /// The lines from the offset on.
    pub(super) lines: Vec<PageLine>,
    /// Whether the file goes on after the page.
    pub(super) more: bool,
    /// When the offset lies past the end: how many lines the file has.
    pub(super) total: Option<usize>,
    /// Whether the scan budget ran out before the page was complete.
    pub(super) stopped: bool,
}

/// How the first bytes of a file show it is not text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotText {
    /// A NUL byte at this offset.
    Binary(usize),
    /// A UTF-16 byte-order mark (big-endian when true).
    Utf16(bool),
}

impl Page {
    /// Reads lines `start..start + limit` (0-based) of `file`, keeping at
    /// most `keep` bytes of each, scanning at most [`STREAM_SCAN_MAX`] bytes.
    /// Memory stays bounded by the buffer and `limit × keep`, whatever the
    /// file's size or its lines' length.
    pub(super) fn read(
        file: File,
        start: usize,
        limit: usize,
        keep: usize,
    ) -> io::Result<Result<Page, NotText>> {
        let mut r = BufReader::with_capacity(64 << 10, file);
        // Binary or UTF-16 shows in the first bytes, as it does for grep.
        let head = r.fill_buf()?;
        if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
            return Ok(Err(NotText::Utf16(head[0] == 0xFE)));
        }
        if let Some(at) = memchr::memchr(0, &head[..head.len().min(8000)]) {
            return Ok(Err(NotText::Binary(at)));
        }
        let mut budget = STREAM_SCAN_MAX;
        let mut page = Page {
            lines: Vec::new(),
            more: false,
            total: None,
            stopped: false,
        };
        // Skip to the first line of the page.
        let mut line = 0;
        while line < start {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                page.total = Some(line);
                return Ok(Ok(page));
            }
            let take = buf.len().min(usize::try_from(budget).unwrap_or(usize::MAX));
            if take == 0 {
                page.stopped = true;
                return Ok(Ok(page));
            }
            let (used, found) = match memchr::memchr(b'\n', &buf[..take]) {
                Some(i) => (i + 1, true),
                None => (take, false),
            };
            r.consume(used);
            budget -= used as u64;
            if found {
                line += 1;
            } else if r.fill_buf()?.is_empty() {
                // A last line without a final newline still counts.
                page.total = Some(line + 1);
                return Ok(Ok(page));
            }
        }
        // The page's lines.
        while page.lines.len() < limit {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                if page.lines.is_empty() {
                    page.total = Some(line);
                }
                return Ok(Ok(page));
            }
            let mut l = PageLine {
                head: Vec::new(),
                cut_chars: 0,
            };
            loop {
                let buf = r.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                let take = buf.len().min(usize::try_from(budget).unwrap_or(usize::MAX));
                if take == 0 {
                    page.stopped = true;
                    page.lines.push(l);
                    return Ok(Ok(page));
                }
                let (body, used, end) = match memchr::memchr(b'\n', &buf[..take]) {
                    Some(i) => {
                        let body = &buf[..i];
                        (body.strip_suffix(b"\r").unwrap_or(body), i + 1, true)
                    }
                    None => (&buf[..take], take, false),
                };
                let room = keep.saturating_sub(l.head.len()).min(body.len());
                l.head.extend_from_slice(&body[..room]);
                l.cut_chars += body[room..].iter().filter(|b| (**b & 0xC0) != 0x80).count();
                r.consume(used);
                budget -= used as u64;
                if end {
                    break;
                }
            }
            if l.head.last() == Some(&b'\r') && l.cut_chars == 0 {
                l.head.pop();
            }
            page.lines.push(l);
            line += 1;
        }
        page.more = !r.fill_buf()?.is_empty();
        Ok(Ok(page))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        let f = File::open(&p).unwrap();
        (dir, f)
    }

    fn texts(page: &Page) -> Vec<(String, usize)> {
        page.lines
            .iter()
            .map(|l| (String::from_utf8_lossy(&l.head).into_owned(), l.cut_chars))
            .collect()
    }

    #[test]
    fn pages_lines_and_cuts_long_ones() {
        let (_d, f) = file_with(b"one\r\ntwo\nthree is long\nfour");
        let page = Page::read(f, 1, 2, 5).unwrap().unwrap();
        assert_eq!(
            texts(&page),
            [("two".to_owned(), 0), ("three".to_owned(), 8)]
        );
        assert!(page.more && page.total.is_none() && !page.stopped);
        let (_d, f) = file_with(b"one\r\ntwo\nthree is long\nfour");
        let page = Page::read(f, 0, 10, 100).unwrap().unwrap();
        assert_eq!(page.lines.len(), 4);
        assert_eq!(texts(&page)[0].0, "one");
        assert_eq!(texts(&page)[3].0, "four");
        assert!(!page.more);
    }

    #[test]
    fn past_the_end_counts_the_lines() {
        for (text, total) in [(&b"a\nb\n"[..], 2), (b"a\nb", 2), (b"", 0)] {
            let (_d, f) = file_with(text);
            let page = Page::read(f, 5, 1, 10).unwrap().unwrap();
            assert_eq!(page.total, Some(total), "{text:?}");
        }
        let (_d, f) = file_with(b"a\nb\n");
        let page = Page::read(f, 2, 1, 10).unwrap().unwrap();
        assert_eq!(page.total, Some(2));
    }

    #[test]
    fn binary_and_utf16_are_not_text() {
        let (_d, f) = file_with(b"ab\0c");
        assert_eq!(Page::read(f, 0, 1, 10).unwrap(), Err(NotText::Binary(2)));
        let (_d, f) = file_with(&[0xFF, 0xFE, b'a', 0]);
        assert_eq!(Page::read(f, 0, 1, 10).unwrap(), Err(NotText::Utf16(false)));
    }

    #[test]
    fn capped_reads_refuse_what_grew() {
        let (_d, f) = file_with(b"12345");
        assert_eq!(read_capped(f, 5, 5).unwrap(), Some(b"12345".to_vec()));
        let (_d, f) = file_with(b"123456");
        assert_eq!(read_capped(f, 5, 5).unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        assert!(matches!(
            open_regular(&ws, "fifo").unwrap(),
            Opened::Special(Special::Fifo)
        ));
        assert!(matches!(
            open_regular(&ws, "none").unwrap(),
            Opened::Missing
        ));
        assert!(matches!(
            open_regular(&ws, "sub").unwrap(),
            Opened::Directory
        ));
        // Opened through the workspace's handles: never blocks on the FIFO,
        // whose type is checked before the open and on the descriptor.
        assert!(matches!(
            ws.open_file("fifo"),
            Err(WorkspaceError::NotRegular {
                found: FileKind::Fifo,
                ..
            })
        ));
    }
}
