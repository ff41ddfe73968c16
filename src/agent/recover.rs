//! Tool calls a model printed as text instead of calling natively (local
//! models behind servers without tool parsing do this), recovered only when
//! unambiguous.
//!
//! Recognised: `<tool_call>{…}</tool_call>` blocks (Hermes/Qwen style), and a
//! reply that is nothing but one JSON object, bare or in a code fence. The
//! object must name a tool the model was offered (`name`) and carry its
//! arguments as an object (`arguments` or `parameters`). Anything else — a
//! JSON example inside prose, an unknown tool name, unparsable JSON — is not a
//! call: the reply stays an answer.

use serde_json::Value;

/// A recovered call: the tool's name and its arguments as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextCall {
    /// The tool.
    pub name: String,
    /// The arguments, as JSON text.
    pub arguments: String,
}

/// The calls `reply` holds, if it unambiguously holds any; `tools` are the
/// names the model was offered.
pub(crate) fn recover(reply: &str, tools: &[String]) -> Vec<TextCall> {
    let tagged = tagged(reply);
    if !tagged.is_empty() {
        // Every tagged block must be a call: one bad block means none are taken.
        let calls: Option<Vec<TextCall>> = tagged.iter().map(|b| call(b, tools)).collect();
        return calls.unwrap_or_default();
    }
    let body = unfenced(reply.trim());
    if body.starts_with('{') && body.ends_with('}') {
        return call(body, tools).into_iter().collect();
    }
    Vec::new()
}

/// The insides of `<tool_call>…</tool_call>` blocks.
fn tagged(reply: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = reply;
    while let Some(start) = rest.find("<tool_call>") {
        let after = &rest[start + "<tool_call>".len()..];
        let Some(end) = after.find("</tool_call>") else {
            out.push(after.trim());
            break;
        };
        out.push(after[..end].trim());
        rest = &after[end + "</tool_call>".len()..];
    }
    out
}

/// The text inside one code fence that is the whole reply, else the reply.
fn unfenced(text: &str) -> &str {
    let Some(first) = text.lines().next() else {
        return text;
    };
    if !first.starts_with("```") || !text.ends_with("```") || text.len() < first.len() + 3 {
        return text;
    }
    text[first.len()..text.len() - 3].trim()
}

fn call(json: &str, tools: &[String]) -> Option<TextCall> {
    let v: Value = serde_json::from_str(json).ok()?;
    let name = v.get("name")?.as_str()?;
    if !tools.iter().any(|t| t == name) {
        return None;
    }
    let args = v.get("arguments").or_else(|| v.get("parameters"))?;
    let arguments = match args {
        Value::Object(_) => args.to_string(),
        // Some models send the arguments as JSON text.
        Value::String(s) if serde_json::from_str::<Value>(s).is_ok_and(|a| a.is_object()) => {
            s.clone()
        }
        _ => return None,
    };
    Some(TextCall {
        name: name.to_owned(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<String> {
        ["read", "bash"].map(String::from).to_vec()
    }

    #[test]
    fn tagged_calls_are_recovered() {
        let r = "I'll look.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.py\"}}\n</tool_call>\n<tool_call>{\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}</tool_call>";
        let calls = recover(r, &tools());
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "read");
        assert_eq!(calls[0].arguments, r#"{"path":"a.py"}"#);
        assert_eq!(calls[1].arguments, r#"{"command": "ls"}"#);
    }

    #[test]
    fn a_bare_or_fenced_object_is_a_call() {
        let bare = r#"{"name": "read", "parameters": {"path": "x"}}"#;
        assert_eq!(recover(bare, &tools()).len(), 1);
        let fenced = format!("```json\n{bare}\n```");
        assert_eq!(recover(&fenced, &tools()).len(), 1);
    }

    #[test]
    fn anything_ambiguous_is_an_answer() {
        // JSON inside prose, an unknown tool, broken JSON, one bad tagged block.
        let prose = r#"Call it like {"name": "read", "arguments": {"path": "x"}} next time."#;
        assert!(recover(prose, &tools()).is_empty());
        assert!(recover(r#"{"name": "write", "arguments": {}}"#, &tools()).is_empty());
        assert!(recover(r#"{"name": "read", "arguments": {"#, &tools()).is_empty());
        let mixed = "<tool_call>{\"name\":\"read\",\"arguments\":{}}</tool_call><tool_call>oops</tool_call>";
        assert!(recover(mixed, &tools()).is_empty());
    }
}
