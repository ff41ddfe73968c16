//! CLI tests: the real binary in temporary directories.
