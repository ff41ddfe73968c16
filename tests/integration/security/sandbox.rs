//! Security: the bash tool's OS sandbox and `lancet sandbox`.
