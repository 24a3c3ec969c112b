//! A newc ("070701") cpio writer: the format the kernel's initramfs
//! unpacker reads (Documentation/driver-api/early-userspace/buffer-format.rst).

use crate::error::GuestError;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Where an entry's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A directory.
    Dir,
    /// A host file, read when the archive is written.
    File(PathBuf),
    /// Bytes given.
    Bytes(Vec<u8>),
    /// A symbolic link to this target.
    Symlink(String),
}

/// One member of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path inside, relative (no leading `/`).
    pub path: String,
    /// Its content.
    pub source: Source,
    /// Permission bits.
    pub mode: u32,
}

/// The archive's members; parent directories are added when written.
#[derive(Debug, Clone, Default)]
pub struct Archive {
    entries: Vec<Entry>,
}

impl Archive {
    /// A directory.
    pub fn dir(&mut self, path: &str) {
        self.push(path, Source::Dir, 0o755);
    }
    /// A host file.
    pub fn file(&mut self, path: &str, from: &Path, mode: u32) {
        self.push(path, Source::File(from.to_path_buf()), mode);
    }
    /// Given bytes.
    pub fn bytes(&mut self, path: &str, b: Vec<u8>, mode: u32) {
        self.push(path, Source::Bytes(b), mode);
    }
    /// A symbolic link.
    pub fn symlink(&mut self, path: &str, target: &str) {
        self.push(path, Source::Symlink(target.to_string()), 0o777);
    }
    fn push(&mut self, path: &str, source: Source, mode: u32) {
        let path = path.trim_start_matches('/').to_string();
        // A later member of the same path replaces the earlier one.
        self.entries.retain(|e| e.path != path);
        self.entries.push(Entry { path, source, mode });
    }
    /// The members as given.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Write the archive: the parent directories of every member first,
    /// then the members, then the trailer.
    pub fn write(&self, w: &mut impl Write) -> Result<(), GuestError> {
        let out = GuestError::io("initramfs");
        let mut dirs = BTreeSet::new();
        for e in &self.entries {
            let mut p = Path::new(&e.path).parent();
            while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
                dirs.insert(d.to_string_lossy().into_owned());
                p = d.parent();
            }
            if e.source == Source::Dir {
                dirs.insert(e.path.clone());
            }
        }
        let mut ino = 1u32;
        for d in &dirs {
            header(w, ino, 0o040_755, 2, d, 0).map_err(GuestError::io("initramfs"))?;
            ino = ino.wrapping_add(1);
        }
        for e in &self.entries {
            match &e.source {
                Source::Dir => continue,
                Source::Bytes(b) => member(w, ino, 0o100_000 | e.mode, &e.path, b),
                Source::Symlink(t) => member(w, ino, 0o120_000 | e.mode, &e.path, t.as_bytes()),
                Source::File(f) => {
                    let mut b = Vec::new();
                    std::fs::File::open(f)
                        .and_then(|mut h| h.read_to_end(&mut b))
                        .map_err(GuestError::io(f))?;
                    member(w, ino, 0o100_000 | e.mode, &e.path, &b)
                }
            }
            .map_err(GuestError::io("initramfs"))?;
            ino = ino.wrapping_add(1);
        }
        header(w, 0, 0, 1, "TRAILER!!!", 0).map_err(out)
    }
}

fn member(w: &mut impl Write, ino: u32, mode: u32, name: &str, data: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(data.len())
        .map_err(|_| std::io::Error::other(format!("{name}: larger than 4 GiB")))?;
    header(w, ino, mode, 1, name, len)?;
    w.write_all(data)?;
    pad(w, data.len())
}

fn header(
    w: &mut impl Write,
    ino: u32,
    mode: u32,
    nlink: u32,
    name: &str,
    size: u32,
) -> std::io::Result<()> {
    let namesize = name.len() + 1;
    let fields = [
        ino,
        mode,
        0,
        0,
        nlink,
        0,
        size,
        0,
        0,
        0,
        0,
        namesize as u32,
        0,
    ];
    let mut h = String::from("070701");
    for f in fields {
        h.push_str(&format!("{f:08x}"));
    }
    w.write_all(h.as_bytes())?;
    w.write_all(name.as_bytes())?;
    w.write_all(&[0])?;
    pad(w, h.len() + namesize)
}

fn pad(w: &mut impl Write, len: usize) -> std::io::Result<()> {
    let n = (4 - len % 4) % 4;
    w.write_all(&[0u8; 3][..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_4_byte_aligned_with_parents_and_a_trailer() {
        let mut a = Archive::default();
        a.bytes("/a/b/init", b"#!/bin/sh\n".to_vec(), 0o755);
        a.symlink("bin/sh", "busybox");
        let mut out = Vec::new();
        a.write(&mut out).unwrap();
        let text = String::from_utf8_lossy(&out);
        // Directories a, a/b and bin before the members.
        let pos = |s: &str| text.find(s).unwrap();
        assert!(pos("a\0") < pos("a/b\0"));
        assert!(pos("a/b\0") < pos("a/b/init\0"));
        assert!(text.contains("bin/sh\0"));
        assert!(text.ends_with("TRAILER!!!\0\0\0\0"), "{text:?}");
        assert_eq!(out.len() % 4, 0);
        // The init's header: regular file, mode 755, 10 bytes, name of 8 + 1.
        let h = pos("a/b/init\0") - 110;
        assert_eq!(&text[h..h + 6], "070701");
        assert_eq!(&text[h + 14..h + 22], "000081ed");
        assert_eq!(&text[h + 54..h + 62], "0000000a");
        assert_eq!(&text[h + 94..h + 102], "00000009");
    }

    #[test]
    fn a_missing_file_is_named() {
        let mut a = Archive::default();
        a.file("bin/nettune", Path::new("/nonexistent/nettune"), 0o755);
        let e = a.write(&mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/nettune"), "{e}");
    }
}
