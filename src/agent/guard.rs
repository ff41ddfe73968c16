//! The repetition guard: notices a reply whose streamed text has fallen into
//! a loop (the same chunk of text, over and over) so that the loop can stop
//! the stream instead of waiting for `max_tokens`.
//!
//! Owns only the detection, on the text as it streams; stopping the stream,
//! the ending and the words are the loop's (`run`). Invariant: the guard
//! fires when, and only when, the text seen so far ends with at least
//! `repeats` back-to-back copies of one chunk and that periodic tail spans at
//! least [`LOOP_MIN_BYTES`] bytes, as seen at its looks (one per
//! [`LOOP_CHECK_EVERY`] bytes of new text: a loop that goes on is found at
//! most that late); the work of a look is bounded by [`LOOP_WINDOW`]
//! whatever the reply's length.

/// The most bytes of a reply's end the guard looks at: a chunk longer than
/// `LOOP_WINDOW / repeats` is not seen repeating.
pub const LOOP_WINDOW: usize = 4096;

/// The fewest bytes a repeating tail must span before it counts as a loop,
/// whatever the chunk: short runs that real text holds (a row of `-`, a
/// column of `0, `, a few identical lines of code) stay well below it.
pub const LOOP_MIN_BYTES: usize = 256;

/// How much new text the guard waits for between two looks: a loop goes on,
/// so looking every so many bytes finds it at most this late, and a long
/// reply costs `len / LOOP_CHECK_EVERY` passes over the window instead of
/// one per streamed piece (the loop's per-turn overhead stays small).
pub const LOOP_CHECK_EVERY: usize = 128;

/// The default number of back-to-back copies of one chunk that is a loop.
pub const DEFAULT_LOOP_REPEATS: u32 = 12;

/// What the guard saw when it fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Looped {
    /// The repeating chunk (lossy UTF-8: it may start mid-character).
    pub chunk: String,
    /// Back-to-back copies of it at the end of the text.
    pub repeats: usize,
}

/// One reply's text, watched for a loop.
#[derive(Debug, Clone)]
pub struct LoopGuard {
    repeats: usize,
    tail: Vec<u8>,
    /// Bytes pushed since the last look.
    since: usize,
    /// Scratch for the failure function, kept to avoid an allocation per piece.
    border: Vec<usize>,
}

impl LoopGuard {
    /// A guard that fires at `repeats` copies; `0` (or `1`) turns it off.
    pub fn new(repeats: u32) -> LoopGuard {
        LoopGuard {
            repeats: usize::try_from(repeats).unwrap_or(usize::MAX),
            tail: Vec::new(),
            since: 0,
            border: Vec::new(),
        }
    }

    /// Takes the next piece of streamed text; `Some` once the text ends in a loop.
    pub fn push(&mut self, piece: &str) -> Option<Looped> {
        if self.repeats < 2 {
            return None;
        }
        self.tail.extend_from_slice(piece.as_bytes());
        if self.tail.len() > LOOP_WINDOW {
            let cut = self.tail.len() - LOOP_WINDOW;
            self.tail.drain(..cut);
        }
        self.since += piece.len();
        if self.tail.len() < LOOP_MIN_BYTES || self.since < LOOP_CHECK_EVERY {
            return None;
        }
        self.since = 0;
        // The failure function of the reversed tail: for its prefix of
        // length L (the text's suffix of length L), L - border is that
        // suffix's smallest period p; L >= repeats * p means the text ends
        // with `repeats` copies of its last p bytes.
        let n = self.tail.len();
        let at = |i: usize| self.tail[n - 1 - i];
        self.border.clear();
        self.border.resize(n, 0);
        let mut best: Option<(usize, usize)> = None;
        for i in 1..n {
            let mut k = self.border[i - 1];
            while k > 0 && at(i) != at(k) {
                k = self.border[k - 1];
            }
            if at(i) == at(k) {
                k += 1;
            }
            self.border[i] = k;
            let len = i + 1;
            let period = len - k;
            if len >= LOOP_MIN_BYTES && len >= self.repeats.saturating_mul(period) {
                best = Some((period, len));
            }
        }
        best.map(|(period, len)| Looped {
            chunk: String::from_utf8_lossy(&self.tail[n - period..]).into_owned(),
            repeats: len / period,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(repeats: u32, text: &str, piece: usize) -> Option<Looped> {
        let mut g = LoopGuard::new(repeats);
        let bytes = text.as_bytes();
        let mut fired = None;
        for c in bytes.chunks(piece) {
            if let Some(l) = g.push(std::str::from_utf8(c).unwrap()) {
                fired.get_or_insert(l);
            }
        }
        fired
    }

    #[test]
    fn a_sentence_said_over_and_over_is_a_loop() {
        let text = format!("Sure.\n{}", "I will fix the bug now. ".repeat(20));
        let l = fed(12, &text, 5).expect("a loop");
        assert_eq!(l.chunk.len(), "I will fix the bug now. ".len());
        assert!(l.repeats >= 12);
    }

    #[test]
    fn ordinary_text_and_short_runs_are_not() {
        let code = "def f(x):\n    return x + 1\n\n".repeat(3)
            + &"-".repeat(120)
            + "\n"
            + &"0, ".repeat(60)
            + "\nThe end of a perfectly normal reply, with some words in it.";
        assert_eq!(fed(12, &code, 7), None);
        // Fewer copies than asked for, however long.
        let line = "a line that is long enough to span the window. ";
        assert_eq!(fed(12, &line.repeat(11), 9), None);
        // A loop that goes on is found at the next look.
        assert!(fed(11, &line.repeat(15), 9).is_some());
    }

    #[test]
    fn zero_turns_it_off_and_the_window_bounds_the_chunk() {
        assert_eq!(fed(0, &"loop ".repeat(500), 3), None);
        // A chunk longer than the window / repeats cannot be seen.
        let long: Vec<String> = (0..120).map(|i| i.to_string()).collect();
        let long = long.join(",") + ".\n";
        assert!(long.len() > LOOP_WINDOW / 12);
        assert_eq!(fed(12, &long.repeat(14), 64), None);
        assert!(fed(8, &long.repeat(14), 64).is_some());
    }
}
