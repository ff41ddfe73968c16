//! Security: the engine and the workspace: state directories, the journal, modes, locking, special files, ownership, correctness (items 1-9, and the engine's messages and exit codes).
