//! SIGKILL at a random moment loses no acknowledged append and leaves a database that opens.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use rand::{RngExt, SeedableRng};

use crate::on_both_backends;
use crate::support::{append_line, text_of};

const ROUNDS: usize = 100;

on_both_backends! {
fn sigkill_mid_append_loses_no_acknowledged_message(home) {
    let seed: u64 = std::env::var("SESHAT_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("crash test seed: {seed} (rerun with SESHAT_TEST_SEED={seed})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

    let id = home.session("/crash");
    let mut acknowledged: Vec<(u64, String)> = Vec::new();

    for round in 0..ROUNDS {
        let mut child = home
            .cmd()
            .args(["sessions", "append", &id])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn seshat");
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            for i in 0..1_000_000 {
                if writeln!(stdin, "{}", append_line(None, &format!("r{round}-m{i}"))).is_err() {
                    break;
                }
            }
        });
        let mut acks = BufReader::new(child.stdout.take().unwrap()).lines();
        // The kill lands after a random number of acknowledgements, while the child is still
        // writing (its input never runs out): ordered by events, not by a clock.
        let kill_after = rng.random_range(1..=60);
        let mut this_round = Vec::new();
        while this_round.len() < kill_after {
            this_round.push(acks.next().expect("an ack before the kill").expect("read ack"));
        }
        // Keep reading while the kill lands, so the child never blocks on a full pipe.
        let reader = std::thread::spawn(move || acks.map_while(Result::ok).collect::<Vec<_>>());
        child.kill().expect("SIGKILL");
        let status = child.wait().unwrap();
        assert!(!status.success(), "round {round}: the child finished before it was killed");
        this_round.extend(reader.join().unwrap());
        writer.join().unwrap();

        for (k, line) in this_round.iter().enumerate() {
            let (sid, seq) = line.split_once(' ').expect("ack is `<id> <seq>`");
            assert_eq!(sid, id);
            acknowledged.push((seq.parse().unwrap(), format!("r{round}-m{k}")));
        }

        // After every kill the database must open cleanly and be whole.
        drop(home.store());
        home.assert_intact(&format!("round {round} (seed {seed})"));
    }

    let store = home.store();
    let history = store.full_history(&id).unwrap();
    for (seq, text) in &acknowledged {
        let msg =
            history.get(*seq as usize - 1).unwrap_or_else(|| panic!("acknowledged seq {seq} is missing (seed {seed})"));
        assert_eq!(msg.seq, *seq);
        assert_eq!(text_of(msg), text, "seq {seq} holds the wrong message (seed {seed})");
    }
    for (i, msg) in history.iter().enumerate() {
        assert_eq!(msg.seq, i as u64 + 1, "seq has a gap");
    }
    println!("{} acknowledged appends over {ROUNDS} kills; {} messages stored", acknowledged.len(), history.len());
}
}
