//! Security: the agent's tools and permissions: ask mode that asks, deny rules that deny, prompts that cannot be spoofed, special files and bounded work in the tools (items 7, 11-13, 18).
