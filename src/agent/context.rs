//! Keeping the conversation inside the model's window.
//!
//! Two steps, cheapest first: old tool outputs are pruned (their text
//! replaced by a short note; the calls stay, so the conversation keeps its
//! shape), then, if that is not enough, the model summarises the work so far
//! and the conversation restarts from the task and that summary. Token counts
//! come from the provider's usage; before the first reply (or for text added
//! since) they are estimated at four bytes a token.

use super::types::{Block, Message, Role};
use super::words;

pub(crate) use super::words::PRUNED;

/// Tool outputs in the most recent messages are never pruned.
pub(crate) const KEEP_RECENT: usize = 4;

/// Outputs shorter than this are not worth pruning.
const PRUNE_OVER: usize = 400;

/// A rough token count for text: four bytes a token.
pub(crate) fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The estimated tokens of a conversation and its system prompt.
pub(crate) fn estimate_messages(system: &str, messages: &[Message]) -> u64 {
    estimate(system)
        + messages
            .iter()
            .flat_map(|m| &m.blocks)
            .map(|b| match b {
                Block::Text { text } => estimate(text),
                Block::ToolCall {
                    name, arguments, ..
                } => estimate(name) + estimate(arguments),
                Block::ToolResult { content, .. } => estimate(content),
            })
            .sum::<u64>()
}

/// Replaces long tool outputs older than the last [`KEEP_RECENT`] messages
/// with [`PRUNED`]; returns the estimated tokens saved.
pub(crate) fn prune(messages: &mut [Message]) -> u64 {
    let old = messages.len().saturating_sub(KEEP_RECENT);
    let mut saved = 0;
    for m in &mut messages[..old] {
        for b in &mut m.blocks {
            if let Block::ToolResult { content, .. } = b
                && content.len() > PRUNE_OVER
            {
                saved += estimate(content) - estimate(PRUNED);
                *content = PRUNED.to_owned();
            }
        }
    }
    saved
}

/// The request that asks the model for a summary: the conversation as plain
/// text (so it fits any wire's rules on message order), then the question.
pub(crate) fn summary_request(messages: &[Message]) -> Message {
    let mut text = String::from(words::TRANSCRIPT_INTRO);
    for m in messages {
        for b in &m.blocks {
            let line = match b {
                Block::Text { text } => words::transcript_text(m.role, text),
                Block::ToolCall {
                    name, arguments, ..
                } => words::transcript_call(m.role, name, &clip(arguments, 2000)),
                Block::ToolResult { content, .. } => words::transcript_result(&clip(content, 2000)),
            };
            text.push_str(&line);
            text.push('\n');
        }
    }
    text.push_str(words::SUMMARY_QUESTION);
    Message::user(text)
}

/// The conversation after a summary: the task (the first user message, and
/// the latest one if it differs), then the summary.
pub(crate) fn restart(messages: &[Message], summary: &str) -> Vec<Message> {
    let plain = |m: &&Message| {
        m.role == Role::User && m.blocks.iter().all(|b| matches!(b, Block::Text { .. }))
    };
    let mut out: Vec<Message> = messages.iter().find(plain).cloned().into_iter().collect();
    if let Some(last) = messages.iter().rev().find(plain)
        && out.first() != Some(last)
    {
        out.push(last.clone());
    }
    out.push(Message::user(words::restart(summary)));
    out
}

/// `text` as its first and last `max / 2` bytes (on character
/// boundaries) and the number of bytes between them, or `None` when it is
/// no longer than `max`: how a long tool output, MCP result or sub-agent
/// answer keeps its start and its end.
pub(crate) fn middle_cut(text: &str, max: usize) -> Option<(&str, usize, &str)> {
    if text.len() <= max {
        return None;
    }
    let half = max / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Some((&text[..head], tail - head, &text[tail..]))
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    words::clipped(&s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: &str) -> Message {
        Message {
            role: Role::User,
            blocks: vec![Block::ToolResult {
                id: "c".into(),
                content: content.into(),
                is_error: false,
            }],
        }
    }

    #[test]
    fn prune_spares_recent_and_short_outputs() {
        let long = "x".repeat(1000);
        let mut m = vec![
            Message::user("task"),
            result(&long),
            result("short"),
            result(&long),
            result(&long),
            result(&long),
            result(&long),
        ];
        let saved = prune(&mut m);
        assert_eq!(
            saved,
            estimate(&long) - estimate(PRUNED),
            "one old output pruned"
        );
        let texts: Vec<String> = m
            .iter()
            .map(|m| match &m.blocks[0] {
                Block::ToolResult { content, .. } => content.clone(),
                Block::Text { text } => text.clone(),
                Block::ToolCall { .. } => String::new(),
            })
            .collect();
        assert_eq!(texts[1], PRUNED);
        assert_eq!(texts[2], "short");
        assert_eq!(texts[3], long, "the last four messages keep their outputs");
        assert_eq!(prune(&mut m), 0, "pruning twice saves nothing more");
    }

    #[test]
    fn restart_keeps_the_task_and_the_summary() {
        let m = vec![
            Message::user("fix the parser"),
            result("…"),
            Message::user("also add a test"),
        ];
        let r = restart(&m, "Found the bug in parse().");
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].text(), "fix the parser");
        assert_eq!(r[1].text(), "also add a test");
        assert!(r[2].text().contains("Found the bug in parse()."));
        assert!(summary_request(&m).text().contains("RESULT: …"));
    }
}
