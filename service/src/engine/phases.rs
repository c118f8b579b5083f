//! Where start-up time goes: each phase's wall time, logged as one line when the daemon owns
//! its name, so that a slow start on a real host (the lab's 256 devices) says which phase it
//! was without a profiler.

use std::time::Instant;

#[derive(Debug)]
pub struct Phases {
    last: Instant,
    done: Vec<(&'static str, f64)>,
}

impl Default for Phases {
    fn default() -> Self {
        Phases::new()
    }
}

impl Phases {
    pub fn new() -> Phases {
        Phases {
            last: Instant::now(),
            done: Vec::new(),
        }
    }

    /// Ends the phase that ran since the previous mark (or since `new`) under `name`.
    pub fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.done
            .push((name, now.duration_since(self.last).as_secs_f64() * 1e3));
        self.last = now;
    }

    /// `name=ms` pairs in order, as one log field.
    pub fn summary(&self) -> String {
        self.done
            .iter()
            .map(|(n, ms)| format!("{n}={ms:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_listed_in_order_with_their_times() {
        let mut p = Phases::new();
        p.mark("a");
        std::thread::sleep(std::time::Duration::from_millis(5));
        p.mark("b");
        let s = p.summary();
        let parts: Vec<_> = s.split(' ').collect();
        assert_eq!(parts.len(), 2, "{s}");
        assert!(parts[0].starts_with("a="), "{s}");
        let b: f64 = parts[1].trim_start_matches("b=").parse().expect("a number");
        assert!(b >= 5.0, "{s}");
    }
}
