//! Link settings that make the `lancet` binary start faster: `lancet apply`
//! on a small edit is a short process, and most of it is start-up.
//!
//! On Linux with glibc, two settings, each probed with the host's C compiler
//! first (a toolchain without one builds the binary as before):
//! - the unwinder linked statically (`libgcc_eh.a`, as `gcc -static-libgcc`
//!   does) instead of loading `libgcc_s.so.1`: one shared object fewer to
//!   map and relocate, and no run of its constructor, which executes a dozen
//!   CPUID instructions (each traps to the hypervisor in a virtual machine:
//!   15–40 µs apiece). Rust links `-lgcc_s` itself, so the binary's link
//!   looks first in a directory holding a `libgcc_s.so` that is a linker
//!   script naming `libgcc_eh.a`. glibc stays dynamic (static NSS and a
//!   static C library were ruled out), and so does the position-independent
//!   executable (ASLR).
//! - packed relative relocations (`-z pack-relative-relocs`, DT_RELR): the
//!   table the dynamic loader walks at start-up shrinks from 13,500 24-byte
//!   entries to a few kilobytes.
//!
//! And, with any target whose linker is LLD (Rust's own, the default on
//! x86_64 Linux), probed by linking a trivial Rust program the way the
//! binary is linked: the functions a short process runs (`link/startup.order`,
//! written by `benches/process_order.sh`) placed together at the start of
//! `.text` (`--symbol-ordering-file`). The kernel maps code on first touch,
//! 16 pages a fault; an apply's few hundred functions, spread over 3 MB as
//! the compiler emits them, cost 43 such faults, and 6 once together. A name
//! the build no longer has is skipped, silently: a stale list only places
//! fewer functions.
//!
//! Owns: the `lancet` binary's link arguments (`rustc-link-arg-bins`; the
//! library, tests and benches link as they would without this file). Does
//! not own: profiles (Cargo.toml).
//!
//! Invariant: nothing here changes what the binary does, only how it is
//! loaded; a probe that fails leaves its setting out.

use std::env;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    println!("cargo:rerun-if-changed={ORDER}");
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    symbol_ordering(&out);
    let var = |k: &str| env::var(k).unwrap_or_default();
    // The probes ask the host's compiler, so only a native build is tuned.
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
    {
        return;
    }
    let cc = env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned());
    static_unwinder(&cc, &out);
    packed_relocations(&cc, &out);
}

/// The list of functions to place first (see the module doc).
const ORDER: &str = "link/startup.order";

/// Asks the linker to place [`ORDER`]'s functions first, if a trivial Rust
/// program links with that request: with the target, flags and linker this
/// build uses, silently (LLD takes it; the GNU linkers refuse the option).
fn symbol_ordering(out: &Path) {
    let Some(dir) = env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return;
    };
    let order = dir.join(ORDER);
    let Some(order_text) = order.to_str() else {
        return;
    };
    // A comma would split the linker argument.
    if !order.is_file() || order_text.contains([',', '\n']) {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={order_text}"),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
    ];
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let src = out.join("order_probe.rs");
    let exe = out.join("order_probe");
    if std::fs::write(&src, "fn main() {}\n").is_err() {
        return;
    }
    let mut probe = Command::new(rustc);
    probe.arg(&src).arg("-o").arg(&exe);
    if let Ok(target) = env::var("TARGET") {
        probe.args(["--target", &target]);
    }
    // The build's own flags (a linker chosen there, say) apply to the probe.
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        probe.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    for a in &args {
        probe.arg(format!("-Clink-arg={a}"));
    }
    let linked = probe
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    let _ = std::fs::remove_file(&exe);
    if linked {
        for a in &args {
            println!("cargo:rustc-link-arg-bins={a}");
        }
    }
}

/// Links `libgcc_eh.a` where Rust asks for `-lgcc_s` (see the module doc).
fn static_unwinder(cc: &str, out: &Path) {
    let Ok(found) = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .stderr(Stdio::null())
        .output()
    else {
        return;
    };
    // The compiler prints the bare name when it has no such file.
    let archive = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
    let Some(archive_text) = archive.to_str() else {
        return;
    };
    if !found.status.success() || !archive.is_absolute() || !archive.is_file() {
        return;
    }
    if archive_text.contains(['"', '\n']) {
        return;
    }
    let dir = out.join("static-unwinder");
    let script = format!(
        "/* -lgcc_s for lancet: the static unwinder (build.rs) */\nINPUT(\"{archive_text}\")\n"
    );
    if std::fs::create_dir_all(&dir).is_err()
        || std::fs::write(dir.join("libgcc_s.so"), script).is_err()
    {
        return;
    }
    let search = format!("-L{}", dir.display());
    if probe(cc, out, &[&search, "-lgcc_s"]) {
        println!("cargo:rustc-link-arg-bins={search}");
    }
}

/// Packs relative relocations (DT_RELR) when the linker and the C library
/// both support it: an older linker warns and ignores the flag, an older C
/// library lacks the `GLIBC_ABI_DT_RELR` version the linker then requires.
fn packed_relocations(cc: &str, out: &Path) {
    let flag = "-Wl,-z,pack-relative-relocs";
    if probe(cc, out, &["-pie", "-fPIE", flag]) {
        println!("cargo:rustc-link-arg-bins={flag}");
    }
}

/// Whether a trivial C program links with `args`, silently (a linker that
/// ignores an option it does not know says so on stderr).
fn probe(cc: &str, out: &Path, args: &[&str]) -> bool {
    let exe = out.join("probe");
    let child = Command::new(cc)
        .args(["-x", "c", "-", "-o"])
        .arg(&exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"int main(void) { return 0; }\n");
    }
    let Ok(result) = child.wait_with_output() else {
        return false;
    };
    let _ = std::fs::remove_file(&exe);
    result.status.success() && result.stderr.is_empty()
}
