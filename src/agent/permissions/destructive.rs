//! The always-refused list: commands no mode and no rule lets run.
//!
//! A seatbelt for catastrophes (`rm -rf /`, `mkfs`, a fork bomb, a force push
//! to main), checked before any rule. Kept short on purpose: it is not a
//! sandbox, and it sees only what the shell splitter sees.
//!
//! Owns: the list and matching it against simple commands. Does not own:
//! splitting the command line (`shell`).

use std::sync::LazyLock;

use regex::Regex;

use super::shell::Simple;

/// Commands refused whatever the mode and the rules: `(what, patterns)`. A
/// simple command is refused when every pattern matches its text (words
/// joined by one space, wrappers such as `sudo` stripped), and none of the
/// `unless` patterns does. Kept short on purpose: it is a seatbelt for
/// catastrophes, not a sandbox. It cannot see through variables (`rm -rf
/// $DIR`), and `git push --force` without a branch is not caught (the branch
/// it pushes is not in the command).
pub const DESTRUCTIVE: &[(&str, &[&str], &[&str])] = &[
    (
        "rm -r of /, /*, ~ or $HOME",
        &[
            r"^rm( |$)",
            r" (-[A-Za-z]*[rR][A-Za-z]*|--recursive)( |$)",
            r" (/+|/+\*|~/?|~/\*|\$HOME/?|\$\{HOME\}/?|\$HOME/\*)( |$)",
        ],
        &[],
    ),
    (
        "mkfs (formats a filesystem)",
        &[r"^mkfs(\.[A-Za-z0-9]+)?( |$)"],
        &[],
    ),
    (
        "dd onto a device",
        &[r"^dd( |$)", r" of=/dev/"],
        &[r" of=/dev/(null|zero|stdout|stderr|fd/)"],
    ),
    (
        "shutdown or reboot",
        &[
            r"^(shutdown|reboot|halt|poweroff|systemctl (poweroff|reboot|halt|kexec)|init [06])( |$)",
        ],
        &[],
    ),
    (
        "recursive chmod or chown of / or ~",
        &[
            r"^(chmod|chown|chgrp)( |$)",
            r" (-[A-Za-z]*R[A-Za-z]*|--recursive)( |$)",
            r" (/+|/+\*|~/?|\$HOME/?)( |$)",
        ],
        &[],
    ),
    (
        "force push to main or master",
        &[
            r"^git( |$)",
            r" push( |$)",
            r" (--force|--force-with-lease|-[A-Za-z]*f[A-Za-z]*)(=[^ ]*)?( |$)",
            r" (\S+:)?(refs/heads/)?(main|master)( |$)",
        ],
        &[],
    ),
    (
        "force push to main or master",
        &[
            r"^git( |$)",
            r" push( |$)",
            r" \+(\S+:)?(refs/heads/)?(main|master)( |$)",
        ],
        &[],
    ),
    (
        "writing to a disk device",
        &[r" > /dev/(sd|hd|nvme|vd|xvd|mmcblk|disk)"],
        &[],
    ),
];

/// The fork bomb's name for the list.
const FORK_BOMB: &str = "fork bomb";

/// One [`DESTRUCTIVE`] entry, compiled: what, all of, none of.
type Compiled = (&'static str, Vec<Regex>, Vec<Regex>);

/// The destructive list, compiled.
static COMPILED: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    let compile = |ps: &[&str]| ps.iter().filter_map(|p| Regex::new(p).ok()).collect();
    DESTRUCTIVE
        .iter()
        .map(|(what, all, unless)| (*what, compile(all), compile(unless)))
        .collect()
});

/// What makes a command destructive, if anything.
pub(super) fn destructive(raw: &str, commands: &[Simple]) -> Option<&'static str> {
    if fork_bomb(raw) {
        return Some(FORK_BOMB);
    }
    commands.iter().find_map(|s| {
        let text = s.text();
        COMPILED.iter().find_map(|(what, all, unless)| {
            let hit =
                all.iter().all(|r| r.is_match(&text)) && !unless.iter().any(|r| r.is_match(&text));
            hit.then_some(*what)
        })
    })
}

/// `name(){ name|name& };name` (the classic is `:(){ :|:& };:`), spaces aside.
fn fork_bomb(raw: &str) -> bool {
    let s: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
    s.match_indices("(){").any(|(at, _)| {
        let name: String = s[..at]
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        !name.is_empty() && s[at..].contains(&format!("{name}|{name}&"))
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::rules;
    use super::super::*;

    #[test]
    fn destructive_commands_are_refused_in_auto_mode() {
        let p = Permissions::new(Mode::Auto).with(Effect::Allow, rules(&["bash"]));
        for cmd in [
            "rm -rf /",
            "rm -rf /*",
            "rm -fr ~",
            "rm -r -f $HOME",
            "rm --recursive --force /",
            "rm / -rf",
            "sudo rm -rf --no-preserve-root /",
            "cd /tmp; rm -rf ~/",
            "ls && /bin/rm -Rf \"$HOME\"",
            "echo $(rm -rf /)",
            "bash -c 'rm -rf /'",
            "mkfs.ext4 /dev/sda1",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            ":(){ :|:& };:",
            "bomb(){ bomb|bomb& }; bomb",
            "shutdown -h now",
            "sudo reboot",
            "chmod -R 777 /",
            "git push --force origin main",
            "git push -f origin master",
            "git push origin +main",
            "git push --force-with-lease origin HEAD:main",
            "cat image > /dev/sda",
        ] {
            assert!(
                matches!(
                    p.check("bash", cmd),
                    Decision::Deny(Denial::Destructive { .. })
                ),
                "{cmd}"
            );
        }
        for cmd in [
            "rm -rf target",
            "rm -rf ./build /tmp/x",
            "rm -f /",
            "echo 'rm -rf /'",
            "dd if=/dev/zero of=/dev/null count=1",
            "git push origin main",
            "git push --force origin feature",
            "chmod -R 755 src",
            "ls 2>/dev/null",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Allow, "{cmd}");
        }
    }
}
