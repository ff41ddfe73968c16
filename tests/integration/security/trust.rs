//! Security: trust: a project's configuration is not the user's; AGENTS.md and config files read like any file (items 10, 14).
