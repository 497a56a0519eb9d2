//! Misbehaviour on request, shared by the hostile test guests: loop forever, hoard memory until
//! the cap, or panic — to prove the sandbox holds for every kind of plugin.

/// Loops forever (`loop`), hoards memory (`membomb`) or panics (`panic`, naming `who`) when
/// `what` says so; returns for anything else.
pub fn on(what: &str, who: &str) {
    match what {
        "loop" => {
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        "membomb" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![7u8; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        "panic" => panic!("{who} panicked on purpose"),
        _ => {}
    }
}
