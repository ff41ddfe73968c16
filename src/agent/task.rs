//! Sub-agents: the `task` tool. The model delegates a side task; a child
//! agent runs the same loop ([`run::run`]) with a fresh context — the
//! parent's system prompt (the format's instructions, the project's
//! AGENTS.md, the sandbox note) plus a note saying it is a sub-agent, and
//! the call's prompt as its only message — and its final answer comes back
//! as the call's result.
//!
//! - Tools: the ones the call names, each one the parent has (never `task`:
//!   no recursion), else read-only ones (read, grep, glob, list). They are
//!   [`Tools::child`]: the same workspace, engine, undo journal,
//!   permissions (so the parent's mode) and prompter; read records of its
//!   own; a lock on every file it edits, held until it ends, so two children
//!   never edit one file (the second is refused, naming the first).
//! - Limits: its own turn limit (`[task] max_turns`, which a call may only
//!   lower); the calls of one reply run at once, at most `[task] parallel`
//!   at a time, their results in call order.
//! - Endings: an answer is the result (cut in the middle past the bash
//!   tool's output limit, saying so); a turn limit, a loop or a provider
//!   failure is an error result with what the child had written. One
//!   child's failure is its own result only.
//! - Roll-up: its tokens add into the parent's [`Outcome`](run::Outcome);
//!   its events reach the parent's caller wrapped in [`Event::Agent`],
//!   between an [`Event::TaskStart`] and an [`Event::TaskEnd`].
//! - Transcript: its own, beside the parent's ([`Session::child`]), linked
//!   from the parent's by an [`Entry::Task`].
//!
//! Children are futures polled inside the parent's turn, never spawned
//! tasks: when the caller drops the turn (Ctrl-C), every child and every
//! command it runs goes with it.
//!
//! Owns: running a group of task calls. Does not own: the words
//! (`words::task`), the loop (which hands it the calls), or the shared
//! state of the agents' tools (`tools::agents`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};

use futures_util::stream::{self, StreamExt as _};
use serde::Deserialize;

use super::provider::Provider;
use super::run::{self, Ending, Event, RunConfig};
use super::session::{Entry, Session};
use super::tools::{ToolOutcome, Tools};
use super::types::{Message, Role, Usage};
use super::words;

/// The lines `lancet run` and the session show for a sub-agent.
pub use super::words::task::{call_line, ended_line, started_line};

/// The tool's name.
pub const NAME: &str = "task";
/// Sub-agents of one reply that run at once, by default.
pub const DEFAULT_PARALLEL: usize = 4;
/// A sub-agent's turn limit, by default.
pub const DEFAULT_MAX_TURNS: u32 = 25;

/// The `task` tool's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskConfig {
    /// Sub-agents that run at once (at least 1).
    pub parallel: usize,
    /// A sub-agent's most model turns (a call may ask for fewer).
    pub max_turns: u32,
}

impl Default for TaskConfig {
    fn default() -> TaskConfig {
        TaskConfig {
            parallel: DEFAULT_PARALLEL,
            max_turns: DEFAULT_MAX_TURNS,
        }
    }
}

/// A call's arguments.
#[derive(Debug, Deserialize)]
struct TaskArgs {
    description: String,
    prompt: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    max_turns: Option<u32>,
}

/// What one task call came to.
#[derive(Debug)]
pub(crate) struct Done {
    /// The call's result.
    pub(crate) outcome: ToolOutcome,
    /// The child's tokens.
    pub(crate) usage: Usage,
    /// Whether the child wrote an edit.
    pub(crate) edited: bool,
}

/// A checked call, ready to run.
struct Child {
    agent: String,
    description: String,
    prompt: String,
    tools: Tools,
    config: RunConfig,
    session: Option<Session>,
}

/// The parent's event sink, shared by its children.
type Sink<'a> = Mutex<&'a mut (dyn FnMut(Event) + Send)>;

/// Runs the task calls of one reply (their arguments, in call order) at
/// once, at most `parallel` at a time, and gives their results in order.
/// The links go into the parent's transcript, in order, after all ended.
///
/// (Boxed: the loop runs children, which run the loop, so the future needs
/// a size, and a type the loop's own can be `Send` through.)
pub(crate) fn run_tasks<'a>(
    provider: &'a Provider,
    tools: &'a mut Tools,
    session: Option<&'a mut Session>,
    config: &'a RunConfig,
    calls: &'a [String],
    on_event: &'a mut (dyn FnMut(Event) + Send),
) -> Pin<Box<dyn Future<Output = Vec<Done>> + Send + 'a>> {
    Box::pin(group(provider, tools, session, config, calls, on_event))
}

/// [`run_tasks`], unboxed.
async fn group(
    provider: &Provider,
    tools: &mut Tools,
    mut session: Option<&mut Session>,
    config: &RunConfig,
    calls: &[String],
    on_event: &mut (dyn FnMut(Event) + Send),
) -> Vec<Done> {
    let limits = tools.tasks().unwrap_or_default();
    let max_output = tools.config().max_output;
    let prepared: Vec<Result<Child, String>> = calls
        .iter()
        .map(|arguments| prepare(tools, session.as_deref(), config, &limits, arguments))
        .collect();
    let sink: Sink<'_> = Mutex::new(on_event);
    let sink = &sink;
    let ran: Vec<(Done, Option<Entry>)> = stream::iter(prepared)
        .map(|p| async move {
            match p {
                Err(content) => (
                    Done {
                        outcome: ToolOutcome::error(content),
                        usage: Usage::default(),
                        edited: false,
                    },
                    None,
                ),
                Ok(child) => child.run(provider, sink, max_output).await,
            }
        })
        .buffered(limits.parallel.max(1))
        .collect()
        .await;
    let mut done = Vec::with_capacity(ran.len());
    for (d, link) in ran {
        if let (Some(s), Some(link)) = (session.as_deref_mut(), link) {
            // A transcript that cannot be written does not stop the work.
            let _ = s.record(&link);
        }
        done.push(d);
    }
    done
}

/// Checks a call and makes its child, or says why not (the call's result).
fn prepare(
    tools: &mut Tools,
    session: Option<&Session>,
    config: &RunConfig,
    limits: &TaskConfig,
    arguments: &str,
) -> Result<Child, String> {
    let mut value: serde_json::Value =
        serde_json::from_str(arguments).map_err(|e| words::task::bad_arguments(&e.to_string()))?;
    // Arguments encoded twice are read (as the other tools' are).
    if let Some(inner) = value.as_str() {
        value =
            serde_json::from_str(inner).map_err(|e| words::task::bad_arguments(&e.to_string()))?;
    }
    let args: TaskArgs =
        serde_json::from_value(value).map_err(|e| words::task::bad_arguments(&e.to_string()))?;
    let own: Vec<String> = tools
        .specs()
        .into_iter()
        .map(|s| s.name)
        .filter(|n| n != NAME)
        .collect();
    let names: Vec<String> = match args.tools {
        Some(names) => {
            let mut unique: Vec<String> = Vec::new();
            for n in names {
                if !unique.contains(&n) {
                    unique.push(n);
                }
            }
            unique
        }
        None => words::task::DEFAULT_TOOLS
            .iter()
            .map(|t| (*t).to_owned())
            .filter(|t| own.contains(t))
            .collect(),
    };
    let unknown: Vec<String> = names.iter().filter(|n| !own.contains(n)).cloned().collect();
    if !unknown.is_empty() {
        let allowed: Vec<&str> = own.iter().map(String::as_str).collect();
        return Err(words::task::bad_tools(&unknown, &allowed));
    }
    let agent = tools.next_task();
    let who = words::task::asked_by(&agent, &args.description);
    let child_tools = tools.child(&agent, who, names);
    let max_turns = args
        .max_turns
        .map_or(limits.max_turns, |n| n.clamp(1, limits.max_turns));
    let mut child_config = config.clone();
    child_config.system = format!("{}{}", config.system, words::task::child_note(&agent));
    child_config.max_turns = max_turns;
    Ok(Child {
        session: session.and_then(|s| s.child(&agent).ok()),
        agent,
        description: args.description,
        prompt: args.prompt,
        tools: child_tools,
        config: child_config,
    })
}

/// Hands one event to the parent's caller.
fn emit(sink: &Sink<'_>, event: Event) {
    let mut on_event = sink.lock().unwrap_or_else(PoisonError::into_inner);
    (*on_event)(event);
}

/// What the parent saw of a child while it ran (for a child whose
/// provider failed, which leaves no [`Outcome`]).
#[derive(Default)]
struct Seen {
    usage: Usage,
    turns: u32,
    /// The text of its latest reply that had text.
    said: String,
    /// Whether the next text starts a new reply.
    fresh: bool,
    edited: bool,
}

impl Seen {
    fn note(&mut self, e: &Event) {
        match e {
            Event::Text { text } => {
                if self.fresh {
                    self.said.clear();
                    self.fresh = false;
                }
                self.said.push_str(text);
            }
            Event::Usage {
                input_tokens,
                output_tokens,
            } => {
                self.usage.input_tokens += input_tokens;
                self.usage.output_tokens += output_tokens;
                self.turns += 1;
                self.fresh = true;
            }
            Event::Looping { .. } => self.turns += 1,
            Event::Edit { .. } => self.edited = true,
            _ => {}
        }
    }
}

/// The last text the model wrote in `messages`.
fn last_said(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .map(Message::text)
        .find(|t| !t.trim().is_empty())
        .unwrap_or_default()
}

/// `text` cut in the middle to at most about `max` bytes, saying so.
fn concise(text: String, max: usize) -> String {
    match super::context::middle_cut(&text, max) {
        Some((head, cut, tail)) => words::task::cut(head, cut, tail),
        None => text,
    }
}

impl Child {
    async fn run(
        self,
        provider: &Provider,
        sink: &Sink<'_>,
        max_output: usize,
    ) -> (Done, Option<Entry>) {
        let Child {
            agent,
            description,
            prompt,
            mut tools,
            config,
            mut session,
        } = self;
        emit(
            sink,
            Event::TaskStart {
                agent: agent.clone(),
                description: description.clone(),
            },
        );
        let task = Message::user(prompt.clone());
        if let Some(s) = session.as_mut() {
            let _ = s.record(&Entry::Start {
                model: config.model.clone(),
                format: tools.config().format.name().to_owned(),
                task: prompt,
            });
            let _ = s.record(&Entry::Message {
                message: task.clone(),
            });
        }
        let mut seen = Seen::default();
        let result = {
            let mut on_event = |e: Event| {
                seen.note(&e);
                emit(
                    sink,
                    Event::Agent {
                        agent: agent.clone(),
                        event: Box::new(e),
                    },
                );
            };
            run::run(
                provider,
                &mut tools,
                session.as_mut(),
                vec![task],
                &config,
                &mut on_event,
            )
            .await
        };
        // Its file locks go with its tools.
        drop(tools);
        let (ending, turns, usage, content, is_error) = match result {
            Ok(o) => {
                let said = last_said(&o.messages);
                let (content, is_error) = match o.ending {
                    Ending::Answered => (words::task::answered(&said), false),
                    Ending::MaxTurns => (words::task::turn_limit(o.turns, &said), true),
                    Ending::Repeating | Ending::Looping => (words::task::looping(&said), true),
                    Ending::Truncated => (words::task::truncated(&said), true),
                    Ending::NoTerminal => (words::task::no_terminal(&said), true),
                    Ending::Stopped => (words::task::stopped(&said), true),
                };
                (o.ending.name(), o.turns, o.usage, content, is_error)
            }
            Err(e) => (
                "provider_failed",
                seen.turns,
                seen.usage,
                words::task::provider_failed(&e.to_string(), &seen.said),
                true,
            ),
        };
        emit(
            sink,
            Event::TaskEnd {
                agent: agent.clone(),
                ending: ending.to_owned(),
                turns,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                transcript: session.as_ref().map(|s| format!("{}.jsonl", s.id())),
            },
        );
        let link = Entry::Task {
            agent,
            description,
            transcript: session.as_ref().map(|s| format!("{}.jsonl", s.id())),
            ending: ending.to_owned(),
            turns,
            usage,
        };
        let content = concise(content, max_output);
        let outcome = if is_error {
            ToolOutcome::error(content)
        } else {
            ToolOutcome::ok(content)
        };
        (
            Done {
                outcome,
                usage,
                edited: seen.edited,
            },
            Some(link),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_answer_is_cut_in_the_middle() {
        let text = format!("{}{}", "a".repeat(60), "é".repeat(30));
        let cut = concise(text.clone(), 40);
        assert!(cut.starts_with(&"a".repeat(20)), "{cut}");
        assert!(cut.ends_with(&"é".repeat(10)), "{cut}");
        assert!(cut.contains("bytes of the sub-agent's answer cut here"));
        assert_eq!(concise("short".to_owned(), 40), "short");
    }
}
