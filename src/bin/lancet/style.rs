//! Terminal colour for human output: on a terminal only, and never when
//! `NO_COLOR` is set (no-color.org). The words themselves come from
//! `lancet::feedback`; this only tints status words.

pub(crate) struct Style {
    colour: bool,
}

const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

impl Style {
    pub(crate) fn for_stream(is_terminal: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            colour: is_terminal && !no_color,
        }
    }

    /// Tints the status word of each `edit N: …` line of a feedback message.
    pub(crate) fn message(&self, text: &str) -> String {
        if !self.colour {
            return text.to_owned();
        }
        text.lines()
            .map(|line| {
                let tint = if line.contains(" failed: ") || line.starts_with("Nothing was written")
                {
                    Some(RED)
                } else if line.contains(": already applied") || line.contains("identical") {
                    Some(YELLOW)
                } else if line.contains(": applied ") {
                    Some(GREEN)
                } else {
                    None
                };
                match tint {
                    Some(c) => format!("{c}{line}{RESET}"),
                    None => line.to_owned(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
