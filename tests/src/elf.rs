//! Section sizes of an ELF64 little-endian executable, enough to tell whether a daemon was
//! linked with its code order (`service/link/text-order.ld` makes a `.text.hot` section).

use std::path::Path;

use anyhow::{bail, Context, Result};

/// The size in bytes of each section of the executable at `path`, by name.
pub fn section_sizes(path: &Path) -> Result<Vec<(String, u64)>> {
    let b = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        bail!("{}: not a 64-bit little-endian ELF file", path.display());
    }
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]]));
    let u32_at = |o: usize| {
        b.get(o..o + 4)
            .and_then(|s| s.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let u64_at = |o: usize| {
        b.get(o..o + 8)
            .and_then(|s| s.try_into().ok())
            .map(u64::from_le_bytes)
    };
    let bad = || anyhow::anyhow!("{}: section headers out of the file", path.display());
    let shoff = usize::try_from(u64_at(0x28).ok_or_else(bad)?)?;
    let shentsize = usize::from(u16_at(0x3a).ok_or_else(bad)?);
    let shnum = usize::from(u16_at(0x3c).ok_or_else(bad)?);
    let shstrndx = usize::from(u16_at(0x3e).ok_or_else(bad)?);
    let header = |i: usize| shoff + i * shentsize;
    let names_at = usize::try_from(u64_at(header(shstrndx) + 0x18).ok_or_else(bad)?)?;
    let mut out = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let name_off = names_at + u32_at(header(i)).ok_or_else(bad)? as usize;
        let name = b
            .get(name_off..)
            .and_then(|s| s.split(|&c| c == 0).next())
            .ok_or_else(bad)?;
        let size = u64_at(header(i) + 0x20).ok_or_else(bad)?;
        out.push((String::from_utf8_lossy(name).into_owned(), size));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_program_has_code_and_names_its_sections() {
        let exe = std::env::current_exe().expect("own path");
        let sections = section_sizes(&exe).expect("an ELF file");
        let text = sections.iter().find(|(n, _)| n == ".text").expect(".text");
        assert!(text.1 > 0);
        assert!(sections.iter().any(|(n, _)| n == ".data" || n == ".rodata"));
    }

    #[test]
    fn a_file_that_is_not_elf_is_an_error() {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(f.path(), b"#!/bin/sh\necho not elf\n").expect("write");
        assert!(section_sizes(f.path()).is_err());
    }
}
