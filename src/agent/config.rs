//! Configuration as values: layered TOML merged in order, built-in defaults
//! first, then `~/.config/lancet/config.toml`, then the project's
//! `.lancet.toml`; the binary adds the environment and the flags on top.
//!
//! This module only parses and merges; reading files and the environment is
//! the binary's job (the library reads no environment).

use std::collections::BTreeMap;

use serde::Deserialize;

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireKind {
    /// OpenAI-compatible Chat Completions (OpenAI, Ollama, llama.cpp, vLLM, LM Studio…).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// A named provider: where to send requests and how.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The wire protocol (default: OpenAI-compatible).
    pub wire: Option<WireKind>,
    /// The endpoint, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: Option<String>,
    /// The environment variable holding the key (none for local servers).
    pub api_key_env: Option<String>,
    /// The model to use with this profile.
    pub model: Option<String>,
    /// The model's context window in tokens, when the catalogue is wrong or silent.
    pub context_window: Option<u64>,
    /// Seconds the server may stay silent (before its headers, between two
    /// chunks) before the attempt counts as dropped (default 60).
    pub idle_timeout: Option<u64>,
    /// Seconds one model reply may take, retries included (default 600).
    pub turn_timeout: Option<u64>,
    /// Retries of a failed model request (default 4).
    pub max_retries: Option<u32>,
    /// The most bytes of text and tool arguments in one reply (default 4 MiB).
    pub max_reply_bytes: Option<u64>,
}

/// Permission rules, as `tool(pattern)` strings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Always allowed.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Asked about.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Always refused.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// One layer of configuration; every field optional.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// The model.
    pub model: Option<String>,
    /// The provider: `openai`, `anthropic`, or a profile name.
    pub provider: Option<String>,
    /// The endpoint (overrides the profile's).
    pub base_url: Option<String>,
    /// The edit format (`auto` or a format name).
    pub edit_format: Option<String>,
    /// `read-only`, `ask` or `auto`.
    pub permission: Option<String>,
    /// The most model turns in one run.
    pub max_turns: Option<u32>,
    /// Seconds a `bash` command may run.
    pub bash_timeout: Option<u64>,
    /// The bash tool's OS sandbox: `read-only`, `workspace-write` or `off`.
    pub sandbox: Option<String>,
    /// Whether sandboxed commands may use the network.
    pub sandbox_network: Option<bool>,
    /// More directories sandboxed commands may write beneath (absolute or
    /// `~/…`; appended across layers).
    #[serde(default)]
    pub sandbox_writable: Vec<String>,
    /// Seconds the server may stay silent (before its headers, between two
    /// chunks) before the attempt counts as dropped (default 60).
    pub idle_timeout: Option<u64>,
    /// Seconds one model reply may take, retries included (default 600).
    pub turn_timeout: Option<u64>,
    /// Retries of a failed model request (default 4).
    pub max_retries: Option<u32>,
    /// The most bytes of text and tool arguments in one reply (default 4 MiB).
    pub max_reply_bytes: Option<u64>,
    /// Named providers.
    #[serde(default)]
    pub providers: BTreeMap<String, Profile>,
    /// Permission rules (appended across layers).
    #[serde(default)]
    pub permissions: Rules,
}

/// Why a layer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct ConfigError {
    /// Which file (or "flags").
    pub source_name: String,
    /// What the TOML parser said.
    pub message: String,
}

impl Layer {
    /// Parses one TOML layer; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str) -> Result<Layer, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError {
            source_name: source_name.to_owned(),
            message: e.to_string(),
        })
    }

    /// This layer with `over` on top: its set fields win; profiles merge by
    /// name; permission rules accumulate (deny still beats ask beats allow).
    pub fn merged(mut self, over: Layer) -> Layer {
        self.model = over.model.or(self.model);
        self.provider = over.provider.or(self.provider);
        self.base_url = over.base_url.or(self.base_url);
        self.edit_format = over.edit_format.or(self.edit_format);
        self.permission = over.permission.or(self.permission);
        self.max_turns = over.max_turns.or(self.max_turns);
        self.bash_timeout = over.bash_timeout.or(self.bash_timeout);
        self.sandbox = over.sandbox.or(self.sandbox);
        self.sandbox_network = over.sandbox_network.or(self.sandbox_network);
        self.sandbox_writable.extend(over.sandbox_writable);
        self.idle_timeout = over.idle_timeout.or(self.idle_timeout);
        self.turn_timeout = over.turn_timeout.or(self.turn_timeout);
        self.max_retries = over.max_retries.or(self.max_retries);
        self.max_reply_bytes = over.max_reply_bytes.or(self.max_reply_bytes);
        for (name, p) in over.providers {
            let base = self.providers.remove(&name).unwrap_or_default();
            self.providers.insert(
                name,
                Profile {
                    wire: p.wire.or(base.wire),
                    base_url: p.base_url.or(base.base_url),
                    api_key_env: p.api_key_env.or(base.api_key_env),
                    model: p.model.or(base.model),
                    context_window: p.context_window.or(base.context_window),
                    idle_timeout: p.idle_timeout.or(base.idle_timeout),
                    turn_timeout: p.turn_timeout.or(base.turn_timeout),
                    max_retries: p.max_retries.or(base.max_retries),
                    max_reply_bytes: p.max_reply_bytes.or(base.max_reply_bytes),
                },
            );
        }
        self.permissions.allow.extend(over.permissions.allow);
        self.permissions.ask.extend(over.permissions.ask);
        self.permissions.deny.extend(over.permissions.deny);
        self
    }
}

/// The built-in defaults (the bottom layer).
pub fn defaults() -> Layer {
    Layer {
        edit_format: Some("auto".to_owned()),
        permission: Some("ask".to_owned()),
        max_turns: Some(50),
        bash_timeout: Some(120),
        ..Layer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_layers_win_and_rules_accumulate() {
        let user = Layer::parse(
            "model = \"gpt-x\"\nprovider = \"local\"\n[providers.local]\nbase_url = \"http://127.0.0.1:1/v1\"\n[permissions]\ndeny = [\"bash(git push*)\"]\n",
            "user",
        )
        .unwrap();
        let project = Layer::parse(
            "model = \"qwen3\"\n[providers.local]\ncontext_window = 32768\n[permissions]\nallow = [\"bash(cargo test*)\"]\n",
            "project",
        )
        .unwrap();
        let c = defaults().merged(user).merged(project);
        assert_eq!(c.model.as_deref(), Some("qwen3"));
        assert_eq!(c.provider.as_deref(), Some("local"));
        let local = &c.providers["local"];
        assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:1/v1"));
        assert_eq!(local.context_window, Some(32768));
        assert_eq!(c.permissions.deny, ["bash(git push*)"]);
        assert_eq!(c.permissions.allow, ["bash(cargo test*)"]);
        assert_eq!(c.max_turns, Some(50));
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = Layer::parse("modle = \"x\"\n", ".lancet.toml").unwrap_err();
        assert_eq!(e.source_name, ".lancet.toml");
    }
}
