//! Reading what comes from outside — exports, other agents' session files, documents, protocol
//! lines — so that no input can stall Seshat or exhaust its memory: only regular files are read
//! (a FIFO would block the reader forever, a device such as `/dev/zero` never ends), and every
//! record (one line) is bounded.
//!
//! Depends on nothing else in the crate.

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// The largest record (one line of an export, of another agent's session file, of `sessions
/// append`) read by default: 256 MiB. An import may set its own (`[store] max_record_mib`).
pub const DEFAULT_MAX_RECORD_BYTES: usize = 256 << 20;

/// Why outside input was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The path is not a regular file (a FIFO, a device, a socket, a directory).
    #[error("{path} is a {kind}, not a regular file: Seshat reads only regular files (give the file itself)")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file could not be opened or read.
    #[error("{action} {path}: {cause}")]
    Io {
        /// `cannot open`, `cannot read`.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is larger than the caller reads.
    #[error("{path} is larger than {limit} bytes")]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
}

/// What `meta` describes, in words (for a file that is not regular).
pub(crate) fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
        if t.is_socket() {
            return "socket";
        }
    }
    if t.is_dir() {
        "directory"
    } else if t.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

/// Opens `path` (following links) only if it is a regular file. It is opened without blocking,
/// so a FIFO swapped in after the check cannot hang the open, and checked again once open.
pub fn open_regular(path: &Path) -> Result<File, Error> {
    let io = |cause| Error::Io { action: "cannot open", path: path.to_path_buf(), cause };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(Error::NotRegular { path: path.to_path_buf(), kind: kind_of(&meta) });
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, rustix::fs::OFlags::NONBLOCK.bits() as i32);
    let file = options.open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(Error::NotRegular { path: path.to_path_buf(), kind: kind_of(&meta) });
    }
    Ok(file)
}

/// Reads the whole regular file at `path`, refusing one larger than `limit` bytes.
pub(crate) fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let file = open_regular(path)?;
    let io = |action| move |cause| Error::Io { action, path: path.to_path_buf(), cause };
    // Refused by its size before a byte is read; the read is bounded too (a file that grows).
    if file.metadata().map_err(io("cannot read"))?.len() > limit {
        return Err(Error::TooLarge { path: path.to_path_buf(), limit });
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io("cannot read"))?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge { path: path.to_path_buf(), limit });
    }
    Ok(bytes)
}

/// What [`next_line`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// The input has ended.
    End,
    /// One line (its newline included when it had one) is in the buffer.
    Read,
    /// The line is longer than the limit: the buffer holds its first `limit` bytes and the rest
    /// is still unread ([`skip_line`] passes over it).
    TooLong,
}

/// Reads the next line into `buf` (cleared first), keeping at most `limit` bytes of it.
pub fn next_line(input: &mut dyn BufRead, buf: &mut Vec<u8>, limit: usize) -> std::io::Result<Line> {
    buf.clear();
    loop {
        let available = fill(input)?;
        if available.is_empty() {
            return Ok(if buf.is_empty() { Line::End } else { Line::Read });
        }
        let room = limit - buf.len();
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) if i < room => (i + 1, true),
            _ if available.len() <= room => (available.len(), false),
            _ => {
                buf.extend_from_slice(&available[..room]);
                input.consume(room);
                return Ok(Line::TooLong);
            }
        };
        buf.extend_from_slice(&available[..take]);
        input.consume(take);
        if done {
            return Ok(Line::Read);
        }
    }
}

/// Passes over the rest of the current line (after [`Line::TooLong`]), holding none of it.
pub(crate) fn skip_line(input: &mut dyn BufRead) -> std::io::Result<()> {
    loop {
        let available = fill(input)?;
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = available.len();
                input.consume(n);
            }
        }
    }
}

/// What `input` has buffered, reading more when it has nothing (retried when interrupted).
fn fill(input: &mut dyn BufRead) -> std::io::Result<&[u8]> {
    loop {
        match input.fill_buf() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Re-borrowed: the loop cannot return the first borrow (a known borrow-checker limit).
            Ok(_) => return input.fill_buf(),
            Err(e) => return Err(e),
        }
    }
}

/// A limit in words (`256 MiB`, `4096 bytes`).
pub fn describe_limit(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], limit: usize) -> Vec<(Line, String)> {
        let mut reader = std::io::BufReader::with_capacity(4, input);
        let (mut out, mut buf) = (Vec::new(), Vec::new());
        loop {
            let got = next_line(&mut reader, &mut buf, limit).unwrap();
            if got == Line::End {
                return out;
            }
            out.push((got, String::from_utf8_lossy(&buf).into_owned()));
            if got == Line::TooLong {
                skip_line(&mut reader).unwrap();
            }
        }
    }

    #[test]
    fn lines_are_read_whole_up_to_the_limit_and_longer_ones_are_cut_and_skipped() {
        assert_eq!(
            lines(b"ab\nabcdefghij\nabcdef\nxyz", 6),
            vec![
                (Line::Read, "ab\n".to_string()),
                (Line::TooLong, "abcdef".to_string()),
                (Line::TooLong, "abcdef".to_string()),
                (Line::Read, "xyz".to_string()),
            ]
        );
        // A line exactly at the limit with its newline fits; without room for the newline it does not.
        assert_eq!(lines(b"abcde\n", 6), vec![(Line::Read, "abcde\n".to_string())]);
        assert_eq!(lines(b"abcdef\n", 6), vec![(Line::TooLong, "abcdef".to_string())]);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_and_a_device_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.jsonl");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let err = open_regular(&fifo).unwrap_err().to_string();
        assert!(err.contains("is a FIFO (named pipe), not a regular file"), "{err}");
        let link = dir.path().join("zero.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_regular(&link, 1 << 20).unwrap_err().to_string();
        assert!(err.contains("is a character device, not a regular file"), "{err}");
        let file = dir.path().join("ok.txt");
        std::fs::write(&file, "fine").unwrap();
        assert_eq!(read_regular(&file, 4).unwrap(), b"fine");
        assert!(matches!(read_regular(&file, 3), Err(Error::TooLarge { limit: 3, .. })));
    }
}
