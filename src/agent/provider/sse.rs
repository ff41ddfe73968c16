//! The event stream: a reply's bytes in, server-sent events out.
//!
//! Parsing is the `eventsource-stream` crate's (comments, `data:` lines
//! joined with `\n`, `event:` names, a BOM, events split anywhere across
//! chunks). In front of it sits a thin guard of our own that does what the
//! crate does not:
//!
//! - **the idle timeout**: every chunk must arrive within it, keep-alive
//!   comments included (they prove the server is there);
//! - **line endings**: `\r\n` and a lone `\r` become `\n` before the crate
//!   sees them. The crate must wait for the byte after a `\r` to tell `\r`
//!   from `\r\n`, so an event ended by `\r\r` would be held back until more
//!   bytes came, and lost when the stream closed right after it;
//! - **invalid UTF-8** becomes U+FFFD. The crate keeps every byte after an
//!   invalid sequence in a buffer, waiting for it to become valid, so one bad
//!   byte would stall the stream and grow that buffer without end;
//! - **the size of one event**: the crate buffers an event until its blank
//!   line, so a server that never sends one (an endless line, endless `data:`
//!   lines) would grow that buffer without end. The bytes since the last
//!   blank line are counted, and more than the reply size cap ends the
//!   stream with [`Limit::ReplyBytes`]: an event larger than a whole reply
//!   may be is no part of one.
//!
//! Not here: what the events mean (the wires' decoders), retries, and
//! `id:` / `retry:` fields (a retry repeats the whole request, never resumes
//! a stream). Invariant: an event cut off by the end of the stream is never
//! emitted, as the SSE specification says: it most likely cut its JSON too.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{EventStream, EventStreamError};
use futures_util::{Stream, StreamExt};

use super::{Failure, error_chain};
use crate::agent::types::{Limit, ProviderError};

/// One server-sent event: its `event:` name, if any, and its `data:` lines
/// joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event:` field; `None` when absent (the crate's default name,
    /// `message`, also reads as absent: no wire gives it a meaning).
    pub(super) event: Option<String>,
    /// The `data:` lines.
    pub(super) data: String,
}

/// The events of `bytes`, a reply's body as it arrives. Ends with the
/// stream; fails (and then ends) when a chunk takes longer than `idle`
/// ([`ProviderError::Timeout`]) or the connection breaks
/// ([`ProviderError::Connection`]), both retryable, or when one event grows
/// past `max_event` bytes ([`Limit::ReplyBytes`], fatal).
pub(super) fn events<S, B, E>(
    bytes: S,
    idle: Duration,
    max_event: usize,
) -> impl Stream<Item = Result<SseEvent, Failure>> + Send
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: std::error::Error + Send + 'static,
{
    let guard = Guard {
        bytes: Box::pin(bytes),
        idle,
        after_cr: false,
        partial: Vec::new(),
        max_event,
        in_event: 0,
        after_lf: true,
        done: false,
    };
    let text = futures_util::stream::unfold(guard, |mut guard| async move {
        let item = guard.next().await?;
        Some((item, guard))
    });
    EventStream::new(text).map(|item| match item {
        Ok(event) => Ok(SseEvent {
            event: Some(event.event).filter(|name| name != "message"),
            data: event.data,
        }),
        Err(EventStreamError::Transport(failure)) => Err(failure),
        // The guard hands over valid UTF-8 with `\n` line endings, which
        // the SSE grammar accepts whole; these are here for completeness.
        Err(EventStreamError::Utf8(e)) => Err(malformed(e.to_string())),
        Err(EventStreamError::Parser(e)) => Err(malformed(e.to_string())),
    })
}

fn malformed(what: String) -> Failure {
    Failure::Fatal(ProviderError::Malformed(what))
}

/// The byte stream as the crate gets it: timed, normalised, valid UTF-8.
struct Guard<S> {
    bytes: Pin<Box<S>>,
    idle: Duration,
    /// The last chunk ended in `\r`: a `\n` opening the next one belongs to it.
    after_cr: bool,
    /// The start of a UTF-8 sequence the last chunk cut (at most 3 bytes).
    partial: Vec<u8>,
    /// The most bytes between two blank lines.
    max_event: usize,
    /// Bytes passed on since the last blank line.
    in_event: usize,
    /// The text passed on so far ends with `\n` (or nothing was passed on):
    /// a `\n` opening the next piece ends a blank line.
    after_lf: bool,
    /// A failure or the end was reported; nothing more comes.
    done: bool,
}

impl<S, B, E> Guard<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
{
    /// The next piece of text, a failure, or `None` at the end. A piece that
    /// comes out empty (a lone `\n` after a `\r`, a cut UTF-8 sequence) is
    /// not passed on, but it did reset the idle timer.
    async fn next(&mut self) -> Option<Result<String, Failure>> {
        if self.done {
            return None;
        }
        loop {
            let chunk = match tokio::time::timeout(self.idle, self.bytes.next()).await {
                Err(_) => Err(ProviderError::Timeout),
                Ok(Some(Err(e))) => Err(ProviderError::Connection(error_chain(&e))),
                // A UTF-8 sequence still cut at the close belongs to an
                // event the close cut too.
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Ok(Some(Ok(chunk))) => Ok(chunk),
            };
            match chunk {
                Err(error) => {
                    self.done = true;
                    return Some(Err(Failure::retry(error)));
                }
                Ok(chunk) => {
                    let text = self.text(chunk.as_ref());
                    if text.is_empty() {
                        continue;
                    }
                    if !self.fits(&text) {
                        self.done = true;
                        let limit = Limit::ReplyBytes(self.max_event);
                        return Some(Err(Failure::Fatal(ProviderError::LimitReached(limit))));
                    }
                    return Some(Ok(text));
                }
            }
        }
    }

    /// Counts `text` into the events it continues, ends and starts; `false`
    /// once one passes `max_event` bytes (its blank line included). An
    /// event ends at a blank line (`\n\n`, the line endings being `\n` by
    /// now), which may straddle two pieces.
    fn fits(&mut self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let mut start = 0;
        if self.after_lf && bytes.first() == Some(&b'\n') {
            start = 1;
            if self.in_event.saturating_add(1) > self.max_event {
                return false;
            }
            self.in_event = 0;
        }
        let base = start;
        for at in memchr::memmem::find_iter(&bytes[base..], b"\n\n") {
            let end = base + at + 2;
            if self.in_event.saturating_add(end - start) > self.max_event {
                return false;
            }
            self.in_event = 0;
            start = end;
        }
        self.in_event = self.in_event.saturating_add(bytes.len() - start);
        self.after_lf = bytes.last() == Some(&b'\n');
        self.in_event <= self.max_event
    }

    /// `chunk` with `\n` line endings, as text; an invalid sequence becomes
    /// U+FFFD, a sequence cut at the end waits for the next chunk.
    fn text(&mut self, mut chunk: &[u8]) -> String {
        if self.after_cr
            && let Some((&first, rest)) = chunk.split_first()
        {
            self.after_cr = false;
            if first == b'\n' {
                chunk = rest;
            }
        }
        let plain = self.partial.is_empty() && memchr::memchr(b'\r', chunk).is_none();
        if plain && let Ok(text) = std::str::from_utf8(chunk) {
            return text.to_owned();
        }
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.reserve(chunk.len());
        let mut rest = chunk.iter().copied().peekable();
        while let Some(b) = rest.next() {
            if b != b'\r' {
                bytes.push(b);
                continue;
            }
            bytes.push(b'\n');
            match rest.peek() {
                Some(b'\n') => {
                    rest.next();
                }
                Some(_) => {}
                None => self.after_cr = true,
            }
        }
        let mut text = String::with_capacity(bytes.len());
        let mut pieces = bytes.utf8_chunks().peekable();
        while let Some(piece) = pieces.next() {
            text.push_str(piece.valid());
            let invalid = piece.invalid();
            if invalid.is_empty() {
                continue;
            }
            let cut = pieces.peek().is_none()
                && std::str::from_utf8(invalid).is_err_and(|e| e.error_len().is_none());
            if cut {
                self.partial = invalid.to_vec();
            } else {
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
        text
    }
}

/// An event, for the wires' tests.
#[cfg(test)]
pub(super) fn ev(event: Option<&str>, data: &str) -> SseEvent {
    SseEvent {
        event: event.map(str::to_owned),
        data: data.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;

    /// The events and the failure, if any, of a stream that delivers
    /// `pieces` in order and closes, with events of at most `max_event` bytes.
    fn read(pieces: &[&[u8]], max_event: usize) -> (Vec<SseEvent>, Option<Failure>) {
        let chunks: Vec<Result<Vec<u8>, Infallible>> =
            pieces.iter().map(|p| Ok(p.to_vec())).collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let all: Vec<Result<SseEvent, Failure>> = runtime.block_on(
            super::events(
                futures_util::stream::iter(chunks),
                Duration::from_secs(60),
                max_event,
            )
            .collect(),
        );
        let mut events = Vec::new();
        let mut failure = None;
        for item in all {
            match item {
                Ok(e) => events.push(e),
                Err(f) => failure = Some(f),
            }
        }
        (events, failure)
    }

    /// The events of a stream that delivers `pieces` in order, then closes.
    fn events_in(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let (events, failure) = read(pieces, usize::MAX);
        assert_eq!(failure, None);
        events
    }

    /// The events of `input` sent in one piece.
    fn events(input: &str) -> Vec<SseEvent> {
        events_in(&[input.as_bytes()])
    }

    #[test]
    fn sse_reads_lf_crlf_and_cr_line_endings() {
        for input in [
            "data: a\n\ndata: b\n\n",
            "data: a\r\n\r\ndata: b\r\n\r\n",
            "data: a\r\rdata: b\r\r",
        ] {
            assert_eq!(
                events(input),
                vec![ev(None, "a"), ev(None, "b")],
                "{input:?}"
            );
        }
    }

    #[test]
    fn sse_joins_data_lines_skips_comments_and_keeps_event_names() {
        let input =
            ": keep-alive\n\nevent: ping\ndata: {}\n\ndata:one\ndata: two\nid: 7\nretry: 10\n\n";
        assert_eq!(
            events(input),
            vec![ev(Some("ping"), "{}"), ev(None, "one\ntwo")]
        );
    }

    #[test]
    fn sse_event_name_without_data_is_dropped_and_does_not_leak() {
        assert_eq!(events("event: x\n\ndata: y\n\n"), vec![ev(None, "y")]);
    }

    #[test]
    fn sse_gives_the_same_events_however_the_bytes_are_split() {
        let input =
            "event: a\r\ndata: {\"t\":\"é…\"}\r\n\r\n: c\ndata: 1\ndata: 2\n\ndata: [DONE]\r\r";
        let expected = events(input);
        assert_eq!(expected.len(), 3);
        let bytes = input.as_bytes();
        for cut in 0..=bytes.len() {
            for cut2 in cut..=bytes.len() {
                let got = events_in(&[&bytes[..cut], &bytes[cut..cut2], &bytes[cut2..]]);
                assert_eq!(got, expected, "cut at {cut}, {cut2}");
            }
        }
    }

    #[test]
    fn sse_discards_an_event_cut_off_by_the_end() {
        assert_eq!(
            events("data: {\"a\":1}\n\ndata: {\"b\""),
            vec![ev(None, "{\"a\":1}")]
        );
        assert_eq!(events("\n\n"), vec![]);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_does_not_stall_the_stream() {
        let got = events_in(&[b"data: a\xff", b"b\n\ndata: c\n\n"]);
        assert_eq!(got, vec![ev(None, "a\u{FFFD}b"), ev(None, "c")]);
    }

    fn capped(pieces: &[&str], max_event: usize) -> (Vec<SseEvent>, Option<Failure>) {
        let pieces: Vec<&[u8]> = pieces.iter().map(|p| p.as_bytes()).collect();
        read(&pieces, max_event)
    }

    fn over(n: usize) -> Option<Failure> {
        Some(Failure::Fatal(ProviderError::LimitReached(
            Limit::ReplyBytes(n),
        )))
    }

    #[test]
    fn events_within_the_cap_pass_however_many_there_are() {
        let event = "data: 0123456789\n\n"; // 18 bytes
        let many = vec![event; 1000];
        let (events, failure) = capped(&many, 18);
        assert_eq!((events.len(), failure), (1000, None));
        // A blank line split across two pieces still ends the event.
        let (events, failure) = capped(&["data: 0123456789\n", "\ndata: 0123456789\n\n"], 18);
        assert_eq!((events.len(), failure), (2, None));
        // Keep-alive comments are events of their own as far as size goes.
        let (events, failure) = capped(&vec![": keep-alive\n\n"; 1000], 14);
        assert_eq!((events.len(), failure), (0, None));
    }

    #[test]
    fn an_event_that_never_ends_is_cut_at_the_cap() {
        // One endless line.
        let line = ["data: ", &"x".repeat(100), &"x".repeat(100)];
        assert_eq!(capped(&line, 150), (vec![], over(150)));
        // Endless data lines without a blank one.
        let lines = vec!["data: x\n"; 100];
        assert_eq!(capped(&lines, 500), (vec![], over(500)));
        // What came before the endless event still came out.
        let (events, failure) = capped(&["data: a\n\n", "data: ", &"y".repeat(50)], 40);
        assert_eq!((events, failure), (vec![ev(None, "a")], over(40)));
    }
}
