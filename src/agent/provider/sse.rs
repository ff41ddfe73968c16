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
//!   byte would stall the stream and grow that buffer without end.
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
use crate::agent::types::ProviderError;

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
/// ([`ProviderError::Connection`]), both retryable.
pub(super) fn events<S, B, E>(
    bytes: S,
    idle: Duration,
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
                    if !text.is_empty() {
                        return Some(Ok(text));
                    }
                }
            }
        }
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

    /// The events of a stream that delivers `pieces` in order, then closes.
    fn events_in(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let chunks: Vec<Result<Vec<u8>, Infallible>> =
            pieces.iter().map(|p| Ok(p.to_vec())).collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(
            super::events(futures_util::stream::iter(chunks), Duration::from_secs(60))
                .map(|e| e.unwrap())
                .collect(),
        )
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
}
