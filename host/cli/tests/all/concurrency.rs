//! Several processes appending at once: nothing lost, no "database is locked", seq gap-free.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use crate::on_both_backends;
use crate::support::{append_line, text_of};

const PROCESSES: usize = 4;
const PER_SESSION: usize = 1_000;

on_both_backends! {
fn four_processes_append_to_shared_and_own_sessions(home) {
    let shared = home.session("/concurrency");
    let own: Vec<String> = (0..PROCESSES).map(|_| home.session("/concurrency")).collect();
    // Writers and readers meet here once every child has acknowledged its first append (so it
    // has started and opened the database): the rest is released together, even on a loaded
    // machine where starting a process takes longer than another's whole run.
    let barrier = Arc::new(Barrier::new(2 * PROCESSES));

    let workers: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let mut child = home
                .cmd()
                .args(["sessions", "append", &own[p]])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn seshat");
            let mut stdin = child.stdin.take().unwrap();
            let (writer_barrier, shared) = (barrier.clone(), shared.clone());
            let writer = std::thread::spawn(move || {
                for i in 0..PER_SESSION {
                    writeln!(stdin, "{}", append_line(None, &format!("p{p}-own-{i}"))).unwrap();
                    if i == 0 {
                        stdin.flush().unwrap();
                        writer_barrier.wait();
                    }
                    writeln!(stdin, "{}", append_line(Some(&shared), &format!("p{p}-shared-{i}"))).unwrap();
                }
            });
            let stdout = child.stdout.take().unwrap();
            let reader_barrier = barrier.clone();
            let reader = std::thread::spawn(move || {
                let mut times = Vec::new();
                let mut acks = Vec::new();
                for line in BufReader::new(stdout).lines() {
                    times.push(Instant::now());
                    acks.push(line.unwrap());
                    if acks.len() == 1 {
                        reader_barrier.wait();
                    }
                }
                (times, acks)
            });
            (child, writer, reader)
        })
        .collect();

    let mut spans = Vec::new();
    for (p, (mut child, writer, reader)) in workers.into_iter().enumerate() {
        writer.join().unwrap();
        let (times, acks) = reader.join().unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "process {p} failed: {stderr}");
        assert!(!stderr.to_lowercase().contains("locked"), "process {p} reported: {stderr}");
        assert!(stderr.is_empty(), "process {p} wrote to stderr: {stderr}");
        assert_eq!(acks.len(), 2 * PER_SESSION, "process {p} acknowledged too few appends");
        // From the first acknowledgement after the release.
        spans.push((times[1], *times.last().unwrap()));
    }

    // The processes really ran at the same time: every one started before any one finished.
    let latest_start = spans.iter().map(|s| s.0).max().unwrap();
    let earliest_end = spans.iter().map(|s| s.1).min().unwrap();
    assert!(latest_start < earliest_end, "the appends did not overlap in time");

    let store = home.store();
    let shared_history = store.full_history(&shared).unwrap();
    assert_eq!(shared_history.len(), PROCESSES * PER_SESSION);
    for (i, m) in shared_history.iter().enumerate() {
        assert_eq!(m.seq, i as u64 + 1, "shared session seq has a gap or repeat");
    }
    for (p, own) in own.iter().enumerate() {
        // Each process's messages to the shared session are all there, in the order it sent them.
        let mine: Vec<&str> = shared_history.iter().map(text_of).filter(|t| t.starts_with(&format!("p{p}-"))).collect();
        let expected: Vec<String> = (0..PER_SESSION).map(|i| format!("p{p}-shared-{i}")).collect();
        assert_eq!(mine, expected, "process {p}'s shared messages");

        let history = store.full_history(own).unwrap();
        let texts: Vec<&str> = history.iter().map(text_of).collect();
        let expected: Vec<String> = (0..PER_SESSION).map(|i| format!("p{p}-own-{i}")).collect();
        assert_eq!(texts, expected, "process {p}'s own session");
        assert!(history.iter().enumerate().all(|(i, m)| m.seq == i as u64 + 1));
        assert_eq!(store.session(own).unwrap().message_count, PER_SESSION as u64);
    }
    assert_eq!(store.session(&shared).unwrap().message_count, (PROCESSES * PER_SESSION) as u64);
}
}

on_both_backends! {
/// Ten processes append a hundred messages each to one session, all at once: every message is
/// stored once, each process's in the order it sent them, the seqs gap-free.
fn ten_processes_append_a_hundred_each_to_one_session(home) {
    const WRITERS: usize = 10;
    const EACH: usize = 100;
    let shared = home.session("/concurrency");
    let input: Vec<String> = (0..WRITERS)
        .map(|p| (0..EACH).map(|i| format!("{}\n", append_line(None, &format!("w{p}-{i}")))).collect())
        .collect();
    // Every child is started with its whole input ready; the pipes are written at once.
    let children: Vec<_> = input
        .into_iter()
        .map(|lines| {
            let mut child = home
                .cmd()
                .args(["sessions", "append", &shared])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn seshat");
            let mut stdin = child.stdin.take().unwrap();
            let writer = std::thread::spawn(move || stdin.write_all(lines.as_bytes()).unwrap());
            (child, writer)
        })
        .collect();
    for (p, (child, writer)) in children.into_iter().enumerate() {
        writer.join().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "writer {p}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), EACH, "writer {p}'s acknowledgements");
    }
    let history = home.store().full_history(&shared).unwrap();
    assert_eq!(history.len(), WRITERS * EACH);
    assert!(history.iter().enumerate().all(|(i, m)| m.seq == i as u64 + 1), "seq has a gap or repeat");
    for p in 0..WRITERS {
        let mine: Vec<&str> = history.iter().map(text_of).filter(|t| t.starts_with(&format!("w{p}-"))).collect();
        let sent: Vec<String> = (0..EACH).map(|i| format!("w{p}-{i}")).collect();
        assert_eq!(mine, sent, "writer {p}'s messages");
    }
}
}
