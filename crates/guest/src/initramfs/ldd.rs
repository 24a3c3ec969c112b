//! The shared libraries a program needs, from `ldd`'s output.

use crate::error::GuestError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Something that lists a program's shared libraries (absolute paths).
pub trait Ldd: std::fmt::Debug {
    /// The libraries, the dynamic loader included; none for a static program.
    fn libraries(&self, program: &Path) -> Result<Vec<PathBuf>, GuestError>;
}

/// The system's `ldd`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLdd;

impl Ldd for SystemLdd {
    fn libraries(&self, program: &Path) -> Result<Vec<PathBuf>, GuestError> {
        let out = Command::new("ldd")
            .arg(program)
            .output()
            .map_err(|e| GuestError::Ldd {
                program: program.to_path_buf(),
                why: format!("cannot run ldd: {e}"),
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        parse_ldd(&text).map_err(|why| GuestError::Ldd {
            program: program.to_path_buf(),
            why,
        })
    }
}

/// The absolute library paths of `ldd` output: `name => /path (addr)` and
/// `/path (addr)` lines; the vDSO and "statically linked" give none; a
/// library "not found" is an error naming it.
pub fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, String> {
    let mut v = Vec::new();
    for line in text.lines().map(str::trim) {
        let target = match line.split_once("=>") {
            Some((name, rest)) => {
                let rest = rest.trim();
                if rest.starts_with("not found") {
                    return Err(format!("{} not found", name.trim()));
                }
                rest
            }
            None => line,
        };
        let path = target.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') && !path.contains("..") {
            v.push(PathBuf::from(path));
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_and_the_loader_are_found_and_the_vdso_is_not() {
        let out = "\tlinux-vdso.so.1 (0x00007f2f0478f000)
\tlibmnl.so.0 => /lib/x86_64-linux-gnu/libmnl.so.0 (0x00007f2f045fd000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2f0441b000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f2f04791000)
";
        assert_eq!(
            parse_ldd(out).unwrap(),
            [
                "/lib/x86_64-linux-gnu/libmnl.so.0",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
            .map(PathBuf::from)
        );
        assert!(parse_ldd("\tstatically linked\n").unwrap().is_empty());
        let e = parse_ldd("\tlibx.so.1 => not found\n").unwrap_err();
        assert!(e.contains("libx.so.1"), "{e}");
    }
}
