//! The loop: model → tool calls → results → model, until the model answers
//! without a tool call.
//!
//! Invariants: a tool failure goes back to the model as a result and never
//! ends the loop; the loop ends on an answer, at the turn limit, when the
//! model repeats the same failing call ([`REPEAT_LIMIT`] times), when a
//! permission needs a person and there is none, on a reply cut off at
//! `max_tokens` with nothing in it to act on ([`Ending::Truncated`]), or on
//! a reply the repetition guard stopped ([`Ending::Looping`]). Everything the
//! caller shows arrives as an [`Event`], in order; the transcript records
//! every message.
//!
//! Honest endings (what a reply cut off at `max_tokens` does):
//!
//! - Every cut-off reply is announced ([`Event::Truncated`]).
//! - The last tool call of a cut-off reply is not run, nor is any whose
//!   arguments are not a whole JSON object: the model gets an error result
//!   saying its reply was cut off and asking for a smaller step (the turn
//!   counts). The last call is refused even when its arguments parse,
//!   because the reply may have ended inside it and a server may close
//!   partial JSON before sending it (llama.cpp's tool-call parser repairs
//!   partial JSON): a `write` of half a file would look whole. Calls before it were followed by more of the reply, so
//!   they are whole, and run as usual.
//! - In text mode, a cut-off reply that holds edit syntax is not applied
//!   (a cut-off whole file or hunk would write a truncated file); the model
//!   is told so, as for a cut-off call.
//! - A cut-off reply with neither ends the run as [`Ending::Truncated`],
//!   never as an answer.
//! - In text mode, a complete reply without an edit while the run has
//!   changed nothing ends the run as an answer, with an [`Event::NoEdit`]
//!   warning for the person (and the JSON stream). The model is not asked
//!   again: a reply without an edit is also how a model answers a question,
//!   and a reminder would cost every such task a turn; the benchmark, whose
//!   tasks all ask for an edit, records the job as `no_edit`.
//! - The repetition guard ([`guard`](super::guard)) watches the streamed
//!   text: when it fires the stream is dropped (the server stops generating)
//!   and the run ends as [`Ending::Looping`]. The stream's usage never
//!   arrived, so that turn's tokens are not counted. A turn's wall-clock
//!   limit is the provider's (`turn_timeout`: [`ProviderError::LimitReached`]).

use std::collections::HashMap;

use serde::Serialize;

use super::context;
use super::guard::{LoopGuard, Looped};
use super::provider::Provider;
use super::recover;
use super::session::{Entry, Session};
use super::task;
use super::tools::{EditAttempt, Refusal, ToolOutcome, Tools};
use super::types::{Block, Message, ProviderError, Request, Role, StopReason, StreamEvent, Usage};
use super::words;

pub use super::words::{ending_looping, ending_truncated, system_prompt};

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
    /// Back-to-back copies of one chunk of streamed text that stop a reply
    /// as a loop ([`guard`](super::guard); 0 turns the guard off; default
    /// [`DEFAULT_LOOP_REPEATS`](super::guard::DEFAULT_LOOP_REPEATS)).
    pub loop_repeats: u32,
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
    /// The model's reply was cut off at its `max_tokens` (what happens
    /// next: see the module docs).
    Truncated {
        /// The limit it hit.
        max_tokens: u32,
    },
    /// The repetition guard stopped the reply's stream.
    Looping {
        /// The chunk that repeated.
        chunk: String,
        /// How many times in a row.
        repeats: usize,
    },
    /// Text mode: a reply without an edit while nothing has been changed.
    NoEdit {
        /// The warning, for the person.
        warning: String,
    },
    /// Tokens one model turn used.
    Usage {
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
    },
    /// A sub-agent started (the `task` tool, [`super::task`]).
    TaskStart {
        /// Its id (`task-1`), which its events carry.
        agent: String,
        /// The call's description.
        description: String,
    },
    /// A sub-agent ended.
    TaskEnd {
        /// Its id.
        agent: String,
        /// How: an [`Ending`]'s name, or `provider_failed`.
        ending: String,
        /// Its model turns.
        turns: u32,
        /// Its prompt tokens (counted in the parent's usage too).
        input_tokens: u64,
        /// Its completion tokens (likewise).
        output_tokens: u64,
        /// Its transcript's file name, beside the parent's.
        transcript: Option<String>,
    },
    /// Something a sub-agent did: its own event, with its id. In JSON, the
    /// event's fields with `"agent": "task-1"` beside them.
    #[serde(untagged, serialize_with = "agent_event")]
    Agent {
        /// The sub-agent's id.
        agent: String,
        /// Its event.
        event: Box<Event>,
    },
}

/// A sub-agent's event in JSON: the event's own fields, and `agent`.
/// (Through a `Value`: a flattened `Event` inside `Event` would make serde
/// instantiate serializers without end.)
fn agent_event<S: serde::Serializer>(
    agent: &str,
    event: &Event,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut value = serde_json::to_value(event).map_err(serde::ser::Error::custom)?;
    if let Some(fields) = value.as_object_mut() {
        fields.insert("agent".to_owned(), agent.into());
    }
    value.serialize(serializer)
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
    /// The last reply was cut off at `max_tokens` with nothing in it to act
    /// on (no complete call, no edit): not an answer.
    Truncated,
    /// The repetition guard stopped the last reply.
    Looping,
}

impl Ending {
    /// The name in JSON (`answered`, `max_turns`, `truncated`, …).
    pub fn name(self) -> &'static str {
        match self {
            Ending::Answered => "answered",
            Ending::MaxTurns => "max_turns",
            Ending::Repeating => "repeating",
            Ending::NoTerminal => "no_terminal",
            Ending::Stopped => "stopped",
            Ending::Truncated => "truncated",
            Ending::Looping => "looping",
        }
    }
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
    // Whether an edit has been written in this run.
    let mut changed = false;
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
        let reply = match guarded(provider, &request, config.loop_repeats, on_event).await {
            Ok(reply) => reply,
            Err((looped, text)) => {
                // What streamed before the guard fired is the model's turn.
                let message = Message {
                    role: Role::Assistant,
                    blocks: vec![Block::Text { text }],
                };
                on_event(Event::Looping {
                    chunk: looped.chunk,
                    repeats: looped.repeats,
                });
                record(
                    &mut session,
                    Entry::Message {
                        message: message.clone(),
                    },
                );
                messages.push(message);
                break Ending::Looping;
            }
        };
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
        let cut = reply.stop == StopReason::MaxTokens;
        messages.push(reply.message);
        if cut {
            on_event(Event::Truncated {
                max_tokens: config.max_tokens,
            });
        }
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
            let applied = if !text_mode {
                None
            } else if cut {
                // A cut-off edit is not applied (module docs).
                tools
                    .holds_edit(&text)
                    .then(|| tools.cut_off("edit", words::edit_cut_off(config.max_tokens)))
            } else {
                tools.apply_text(&text)
            };
            let Some(outcome) = applied else {
                if cut {
                    break Ending::Truncated;
                }
                if text_mode && !changed {
                    on_event(Event::NoEdit {
                        warning: words::NO_EDIT_WARNING.to_owned(),
                    });
                }
                break Ending::Answered;
            };
            changed |= outcome.edit.is_some();
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
        let last = calls.len().saturating_sub(1);
        // The call a cut-off reply ended in is not run (module docs).
        let refused = |k: usize, arguments: &str| cut && (k == last || !whole_object(arguments));
        let tasks = tools.tasks().is_some();
        let mut k = 0;
        while k < calls.len() {
            // Consecutive task calls run at once (`task`); every other
            // call runs alone, in order.
            let is_task = |j: usize| {
                let (_, name, arguments): &(String, String, String) = &calls[j];
                tasks && name == task::NAME && !refused(j, arguments)
            };
            let mut end = k + 1;
            let outcomes: Vec<ToolOutcome> = if is_task(k) {
                while end < calls.len() && is_task(end) {
                    end += 1;
                }
                for (_, name, arguments) in &calls[k..end] {
                    on_event(Event::ToolCall {
                        name: name.clone(),
                        arguments: arguments.clone(),
                    });
                }
                let arguments: Vec<String> = calls[k..end].iter().map(|c| c.2.clone()).collect();
                let done = task::run_tasks(
                    provider,
                    tools,
                    session.as_deref_mut(),
                    config,
                    &arguments,
                    on_event,
                )
                .await;
                done.into_iter()
                    .map(|d| {
                        usage.input_tokens += d.usage.input_tokens;
                        usage.output_tokens += d.usage.output_tokens;
                        changed |= d.edited;
                        d.outcome
                    })
                    .collect()
            } else {
                let (_, name, arguments) = &calls[k];
                on_event(Event::ToolCall {
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
                vec![if refused(k, arguments) {
                    tools.cut_off(name, words::call_cut_off(name, config.max_tokens))
                } else {
                    tools.call(name, arguments).await
                }]
            };
            for ((id, name, arguments), outcome) in calls[k..end].iter().zip(outcomes) {
                changed |= outcome.edit.is_some();
                shown(on_event, name, &outcome);
                if outcome.refusal == Some(Refusal::NoTerminal) {
                    stop = Some(Ending::NoTerminal);
                } else if outcome.is_error && repeated(&mut failures, name, arguments) {
                    stop = stop.or(Some(Ending::Repeating));
                }
                results.push(if native {
                    Block::ToolResult {
                        id: id.clone(),
                        content: outcome.content,
                        is_error: outcome.is_error,
                    }
                } else {
                    // No native call to answer: the result travels as text.
                    Block::Text {
                        text: words::text_call_result(
                            name,
                            arguments,
                            &outcome.content,
                            outcome.is_error,
                        ),
                    }
                });
            }
            k = end;
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

/// One model turn with the repetition guard watching its text: the reply
/// (or the provider's error), or — when the guard fired and the stream was
/// dropped — what it saw and the text streamed until then.
async fn guarded(
    provider: &Provider,
    request: &Request,
    repeats: u32,
    on_event: &mut (dyn FnMut(Event) + Send),
) -> Result<Result<super::types::Reply, ProviderError>, (Looped, String)> {
    let mut guard = LoopGuard::new(repeats);
    let mut text = String::new();
    let mut looped: Option<Looped> = None;
    let fired = tokio::sync::Notify::new();
    let result = {
        let mut on_stream = |e: StreamEvent| {
            let StreamEvent::Text(piece) = e else { return };
            if looped.is_some() {
                return;
            }
            if let Some(l) = guard.push(&piece) {
                looped = Some(l);
                fired.notify_one();
            }
            text.push_str(&piece);
            on_event(Event::Text { text: piece });
        };
        let complete = provider.complete(request, &mut on_stream);
        tokio::select! {
            biased;
            () = fired.notified() => None,
            r = complete => Some(r),
        }
    };
    match (result, looped) {
        (_, Some(l)) => Err((l, text)),
        (Some(r), None) => Ok(r),
        // `fired` is only notified with `looped` set.
        (None, None) => Err((
            Looped {
                chunk: String::new(),
                repeats: 0,
            },
            text,
        )),
    }
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

/// Whether a call's arguments are a whole JSON object (a call cut off
/// mid-arguments, as sent without repair, is not).
fn whole_object(arguments: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(arguments).is_ok_and(|v| v.is_object())
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

    /// Issue 14: a sub-agent's events carry its id beside their own fields.
    #[test]
    fn a_sub_agents_event_carries_its_id() {
        let e = Event::Agent {
            agent: "task-1".to_owned(),
            event: Box::new(Event::ToolCall {
                name: "grep".to_owned(),
                arguments: "{}".to_owned(),
            }),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"event": "tool_call", "agent": "task-1", "name": "grep", "arguments": "{}"})
        );
        let e = Event::TaskStart {
            agent: "task-1".to_owned(),
            description: "find".to_owned(),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"event": "task_start", "agent": "task-1", "description": "find"})
        );
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
