//! An MCP tool's result as the text the model reads: text as it is, images
//! and audio as a placeholder line, resource links and embedded resources as
//! lines (an embedded text resource with its text), the structured content
//! when there is no text, and the whole cut head and tail like bash output.
//!
//! Owns: converting a `CallToolResult` and clipping. Does not own: the
//! words of each line (`words::mcp`) or whether the call failed (the hub).
//! Invariant: every content block gives at least one line; nothing a server
//! sends is dropped silently (an unknown kind is named).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::agent::words;

/// The model's text for a result, at most `max` bytes (head and tail kept).
pub(crate) fn render(result: &CallToolResult, max: usize) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut texts = 0;
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                texts += 1;
                parts.push(t.text.clone());
            }
            ContentBlock::Image(i) => {
                parts.push(words::mcp::image(&i.mime_type, base64_len(&i.data)));
            }
            ContentBlock::Audio(a) => {
                parts.push(words::mcp::audio(&a.mime_type, base64_len(&a.data)));
            }
            ContentBlock::ResourceLink(r) => parts.push(words::mcp::resource_link(
                &r.name,
                &r.uri,
                r.mime_type.as_deref(),
                r.description.as_deref(),
            )),
            ContentBlock::Resource(e) => match &e.resource {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => {
                    texts += 1;
                    parts.push(words::mcp::embedded_text(uri, mime_type.as_deref(), text));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => parts.push(words::mcp::embedded_blob(
                    uri,
                    mime_type.as_deref(),
                    base64_len(blob),
                )),
                _ => parts.push(words::mcp::unknown_content()),
            },
            #[allow(unreachable_patterns)]
            _ => parts.push(words::mcp::unknown_content()),
        }
    }
    if texts == 0
        && let Some(structured) = &result.structured_content
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    if parts.is_empty() {
        parts.push(words::mcp::empty_result());
    }
    clip(&parts.join("\n"), max)
}

/// The bytes a base64 text decodes to (without decoding it).
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let pad = data.bytes().rev().take_while(|b| *b == b'=').count();
    let chars = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    (chars * 3 / 4).saturating_sub(pad)
}

/// `text` cut to about `max` bytes, half from the start and half from the
/// end, on character boundaries, with the cut said (as bash output is).
pub(crate) fn clip(text: &str, max: usize) -> String {
    match crate::agent::context::middle_cut(text, max) {
        Some((head, cut, tail)) => format!("{head}{}{tail}", words::output_cut(cut)),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Resource;

    #[test]
    fn every_kind_becomes_a_line() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::ResourceLink(Resource::new("file:///a.txt", "a.txt")),
            ContentBlock::embedded_text("file:///b.txt", "bee"),
        ]);
        result.structured_content = Some(serde_json::json!({"x": 1}));
        let text = render(&result, 10_000);
        assert_eq!(
            text,
            "hello\n[image: image/png, 8 bytes]\n[resource link: a.txt <file:///a.txt>]\n[resource: file:///b.txt (text/plain)]\nbee"
        );
        // Structured content shows when there is no text.
        let mut only = CallToolResult::success(vec![]);
        only.structured_content = Some(serde_json::json!({"sum": 5}));
        assert_eq!(render(&only, 10_000), "{\n  \"sum\": 5\n}");
        assert_eq!(
            render(&CallToolResult::success(vec![]), 100),
            words::mcp::empty_result()
        );
    }

    #[test]
    fn big_results_keep_head_and_tail() {
        let text = format!("{}{}", "a".repeat(600), "é".repeat(300));
        let clipped = clip(&text, 100);
        assert!(clipped.starts_with(&"a".repeat(50)));
        assert!(clipped.ends_with(&"é".repeat(25)));
        assert!(clipped.contains("bytes cut"));
        assert_eq!(clip("short", 100), "short");
    }
}
