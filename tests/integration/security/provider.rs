//! Security: providers and streams: credentials stay with their origin, bounded replies and turns, honest connection messages (items 15, 17).
