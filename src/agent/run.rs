//! The loop: model → tool calls → results → model, until the model answers
//! without a tool call.
//!
//! Invariants: a tool failure goes back to the model as a result and never
//! ends the loop; the loop ends on an answer, at the turn limit, when the
//! model repeats the same failing call ([`REPEAT_LIMIT`] times), or when a
//! permission needs a person and there is none. Everything the caller shows
//! arrives as an [`Event`], in order; the transcript records every message.

use std::collections::HashMap;

use serde::Serialize;

use super::context;
use super::provider::Provider;
use super::recover;
use super::session::{Entry, Session};
use super::tools::{EditAttempt, Refusal, ToolOutcome, Tools};
use super::types::{Block, Message, ProviderError, Request, Role, StreamEvent, Usage};
use super::words;

pub use super::words::system_prompt;

/// The same failing call (tool and arguments) this many times ends the run.
pub const REPEAT_LIMIT: usize = 3;

/// What one run is given.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The model, as the provider names it.
    pub model: String,
    /// The system prompt (see [`system_prompt`]).
    pub system: String,
    /// The most model turns.
    pub max_turns: u32,
    /// The most tokens per reply.
    pub max_tokens: u32,
    /// The model's context window in tokens, when known: the conversation is
    /// compacted before it passes 80 % of it. Without it, compaction happens
    /// when the provider reports an overflow.
    pub context_window: Option<u64>,
}

/// Something that happened, for the caller to show.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// Reply text, as it streams.
    Text {
        /// The new text.
        text: String,
    },
    /// The model called a tool.
    ToolCall {
        /// The tool.
        name: String,
        /// Its arguments as written.
        arguments: String,
    },
    /// What the call returned to the model.
    ToolResult {
        /// The tool.
        name: String,
        /// The text the model reads.
        content: String,
        /// Whether it failed.
        is_error: bool,
        /// What an edit attempt came to, as data (`None` for other calls);
        /// not in the JSON events, whose edits are in [`Event::Edit`].
        #[serde(skip)]
        attempt: Option<EditAttempt>,
    },
    /// An edit was applied: its report and unified diff.
    Edit {
        /// The apply report, as `lancet apply --json` prints it.
        report: serde_json::Value,
        /// The change as a unified diff.
        diff: String,
    },
    /// The conversation was compacted to fit the window.
    Compacted {
        /// Estimated tokens saved by pruning old tool outputs.
        pruned: u64,
        /// The model's summary, when earlier turns were summarised.
        summary: Option<String>,
    },
    /// Tokens one model turn used.
    Usage {
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
    },
}

/// Why a run ended (the provider failing is the `Err` of [`run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// The model answered without calling a tool.
    Answered,
    /// The turn limit was reached.
    MaxTurns,
    /// The model repeated the same failing call.
    Repeating,
    /// A call needed a confirmation and nobody could be asked.
    NoTerminal,
    /// The caller asked the loop to stop before the next model turn
    /// ([`run_until`]; the benchmark, when a task's tries are used up).
    Stopped,
}

/// A finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Why it ended.
    pub ending: Ending,
    /// Model turns taken.
    pub turns: u32,
    /// Tokens used, summed over the turns.
    pub usage: Usage,
    /// The conversation at the end.
    pub messages: Vec<Message>,
}

/// Runs the loop from `messages` (the task last, or a resumed conversation).
///
/// # Errors
///
/// The provider's error once its retries are spent; the conversation up to
/// then is in the transcript.
pub async fn run(
    provider: &Provider,
    tools: &mut Tools,
    session: Option<&mut Session>,
    messages: Vec<Message>,
    config: &RunConfig,
    on_event: &mut (dyn FnMut(Event) + Send),
) -> Result<Outcome, ProviderError> {
    run_until(
        provider,
        tools,
        session,
        messages,
        config,
        on_event,
        &|| false,
    )
    .await
}

/// [`run`], asking `stop` before every model turn: when it says so, the run
/// ends ([`Ending::Stopped`]) before the model is asked again. It is asked
/// after the events of the turn before, so a caller can decide from them.
///
/// # Errors
///
/// As [`run`].
pub async fn run_until(
    provider: &Provider,
    tools: &mut Tools,
    mut session: Option<&mut Session>,
    mut messages: Vec<Message>,
    config: &RunConfig,
    on_event: &mut (dyn FnMut(Event) + Send),
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Outcome, ProviderError> {
    let mut usage = Usage::default();
    let mut failures: HashMap<(String, String), usize> = HashMap::new();
    let text_mode = tools.config().text_mode;
    let record = |session: &mut Option<&mut Session>, entry: Entry| {
        if let Some(s) = session.as_deref_mut() {
            // A transcript that cannot be written does not stop the work.
            let _ = s.record(&entry);
        }
    };
    let mut turns = 0;
    // Tokens of the last request as the provider counted them, and how many
    // messages it held (what came after is estimated).
    let mut counted: Option<(u64, usize)> = None;
    let mut overflows = 0;
    let mut proactive = true;
    let ending = loop {
        if turns >= config.max_turns {
            break Ending::MaxTurns;
        }
        if stop() {
            break Ending::Stopped;
        }
        // (A lone task cannot be compacted: there is nothing to summarise.)
        if let Some(window) = config
            .context_window
            .filter(|_| proactive && messages.len() > 1)
        {
            let used = match counted {
                Some((tokens, n)) if n <= messages.len() => {
                    tokens + context::estimate_messages("", &messages[n..])
                }
                _ => context::estimate_messages(&config.system, &messages),
            };
            let limit = window / 10 * 8;
            if used > limit {
                let pruned = context::prune(&mut messages);
                let summary = if used.saturating_sub(pruned) > limit {
                    Some(summarise(provider, config, &mut messages, &mut usage).await?)
                } else {
                    None
                };
                compacted(tools, &mut session, &messages, pruned, summary, on_event);
                // When even the restarted conversation is over the limit
                // (a system prompt too big for the window), compacting again
                // every turn cannot help: overflows from the provider still
                // compact.
                proactive = context::estimate_messages(&config.system, &messages) <= limit;
            }
        }
        turns += 1;
        let request = Request {
            model: config.model.clone(),
            system: config.system.clone(),
            messages: messages.clone(),
            // In text mode the tools lack `edit`: edits come in the reply.
            tools: tools.specs(),
            max_tokens: config.max_tokens,
        };
        let reply = provider
            .complete(&request, &mut |e| {
                if let StreamEvent::Text(text) = e {
                    on_event(Event::Text { text });
                }
            })
            .await;
        let reply = match reply {
            Ok(reply) => reply,
            // Too long for the model: prune first, then summarise, then give up.
            Err(ProviderError::ContextOverflow { .. }) if overflows < 2 => {
                overflows += 1;
                turns -= 1;
                let pruned = if overflows == 1 {
                    context::prune(&mut messages)
                } else {
                    0
                };
                let summary = if pruned == 0 {
                    Some(summarise(provider, config, &mut messages, &mut usage).await?)
                } else {
                    None
                };
                compacted(tools, &mut session, &messages, pruned, summary, on_event);
                counted = None;
                continue;
            }
            Err(e) => return Err(e),
        };
        overflows = 0;
        counted = Some((reply.usage.input_tokens, messages.len()));
        usage.input_tokens += reply.usage.input_tokens;
        usage.output_tokens += reply.usage.output_tokens;
        on_event(Event::Usage {
            input_tokens: reply.usage.input_tokens,
            output_tokens: reply.usage.output_tokens,
        });
        record(
            &mut session,
            Entry::Message {
                message: reply.message.clone(),
            },
        );
        record(&mut session, Entry::Usage { usage: reply.usage });
        let calls: Vec<(String, String, String)> = reply
            .message
            .tool_calls()
            .map(|(id, name, arguments)| (id.to_owned(), name.to_owned(), arguments.to_owned()))
            .collect();
        let text = reply.message.text();
        messages.push(reply.message);
        // A reply without native calls: calls it printed as text, else
        // (text mode) edits written in it, else it is the answer.
        let mut native = true;
        let calls = if calls.is_empty() {
            native = false;
            let names: Vec<String> = tools.specs().into_iter().map(|t| t.name).collect();
            recover::recover(&text, &names)
                .into_iter()
                .enumerate()
                .map(|(k, c)| (format!("text_call_{k}"), c.name, c.arguments))
                .collect()
        } else {
            calls
        };
        if calls.is_empty() {
            let applied = if text_mode {
                tools.apply_text(&text)
            } else {
                None
            };
            let Some(outcome) = applied else {
                break Ending::Answered;
            };
            shown(on_event, "edit", &outcome);
            // As for a refused tool call: nobody can answer, so the run stops.
            let no_terminal = outcome.refusal == Some(Refusal::NoTerminal);
            let message = Message::user(outcome.content);
            record(
                &mut session,
                Entry::Message {
                    message: message.clone(),
                },
            );
            messages.push(message);
            if no_terminal {
                break Ending::NoTerminal;
            }
            if outcome.is_error && repeated(&mut failures, "edit", &text) {
                break Ending::Repeating;
            }
            continue;
        }
        let mut results = Vec::new();
        let mut stop = None;
        for (id, name, arguments) in calls {
            on_event(Event::ToolCall {
                name: name.clone(),
                arguments: arguments.clone(),
            });
            let outcome = tools.call(&name, &arguments).await;
            shown(on_event, &name, &outcome);
            if outcome.refusal == Some(Refusal::NoTerminal) {
                stop = Some(Ending::NoTerminal);
            } else if outcome.is_error && repeated(&mut failures, &name, &arguments) {
                stop = stop.or(Some(Ending::Repeating));
            }
            results.push(if native {
                Block::ToolResult {
                    id,
                    content: outcome.content,
                    is_error: outcome.is_error,
                }
            } else {
                // No native call to answer: the result travels as text.
                Block::Text {
                    text: words::text_call_result(
                        &name,
                        &arguments,
                        &outcome.content,
                        outcome.is_error,
                    ),
                }
            });
        }
        let message = Message {
            role: Role::User,
            blocks: results,
        };
        record(
            &mut session,
            Entry::Message {
                message: message.clone(),
            },
        );
        messages.push(message);
        if let Some(ending) = stop {
            break ending;
        }
    };
    Ok(Outcome {
        ending,
        turns,
        usage,
        messages,
    })
}

/// Asks the model to summarise the conversation, and restarts it from the
/// task and that summary.
async fn summarise(
    provider: &Provider,
    config: &RunConfig,
    messages: &mut Vec<Message>,
    usage: &mut Usage,
) -> Result<String, ProviderError> {
    let request = Request {
        model: config.model.clone(),
        system: String::new(),
        messages: vec![context::summary_request(messages)],
        tools: Vec::new(),
        max_tokens: config.max_tokens,
    };
    let reply = provider.complete(&request, &mut |_| {}).await?;
    usage.input_tokens += reply.usage.input_tokens;
    usage.output_tokens += reply.usage.output_tokens;
    let summary = reply.message.text();
    *messages = context::restart(messages, &summary);
    Ok(summary)
}

/// After a compaction: reads are forgotten when turns were summarised (the
/// model must read again before editing), and the transcript and the caller
/// are told.
fn compacted(
    tools: &mut Tools,
    session: &mut Option<&mut Session>,
    messages: &[Message],
    pruned: u64,
    summary: Option<String>,
    on_event: &mut (dyn FnMut(Event) + Send),
) {
    if let Some(summary) = &summary {
        tools.forget_reads();
        if let Some(s) = session.as_deref_mut() {
            let _ = s.record(&Entry::Compacted {
                summary: summary.clone(),
                messages: messages.to_vec(),
            });
        }
    }
    on_event(Event::Compacted { pruned, summary });
}

/// Tells the caller what a call did: its edit (if any), then its result.
fn shown(on_event: &mut (dyn FnMut(Event) + Send), name: &str, outcome: &ToolOutcome) {
    if let Some(edit) = &outcome.edit {
        on_event(Event::Edit {
            report: edit.report_json.clone(),
            diff: edit.diff.clone(),
        });
    }
    on_event(Event::ToolResult {
        name: name.to_owned(),
        content: outcome.content.clone(),
        is_error: outcome.is_error,
        attempt: outcome.attempt.clone(),
    });
}

/// Counts a failing call; `true` once the same one failed [`REPEAT_LIMIT`] times.
fn repeated(failures: &mut HashMap<(String, String), usize>, name: &str, arguments: &str) -> bool {
    let n = failures
        .entry((name.to_owned(), arguments.to_owned()))
        .or_insert(0);
    *n += 1;
    *n >= REPEAT_LIMIT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_prompt_words() {
        insta::assert_snapshot!(system_prompt(
            "<the format's instructions>\n",
            false,
            Some("Run `make test` before you finish.\n")
        ));
        let text = system_prompt("<the format's instructions>", true, None);
        assert!(text.contains("write the edit in your reply"));
        assert!(!text.contains("AGENTS.md"));
    }

    #[test]
    fn the_same_failing_call_ends_the_run_at_the_limit() {
        let mut f = HashMap::new();
        assert!(!repeated(&mut f, "read", "{\"path\":\"x\"}"));
        assert!(!repeated(&mut f, "read", "{\"path\":\"y\"}"));
        assert!(!repeated(&mut f, "read", "{\"path\":\"x\"}"));
        assert!(repeated(&mut f, "read", "{\"path\":\"x\"}"));
    }
}
