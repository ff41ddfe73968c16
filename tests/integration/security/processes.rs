//! Security: processes: nothing a command starts outlives its timeout or lancet (item 16).
