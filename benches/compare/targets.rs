//! The project's targets, checked against this run's own figures and printed side by side, so
//! that the summary cannot disagree with the tables above it.

use crate::report::out;
use crate::Pass;

/// zklock's row, the row it must never lose to on round trips, and the raw floor.
const ZKLOCK: &str = "zklock";
const CLIENT_LOCK: &str = "client-lock";
/// `Client::lock`'s second row: its ratio to the first is the run's noise.
const CLIENT_LOCK_AGAIN: &str = "client-lock-again";

/// The figures the targets need, as the scenarios report them.
#[derive(Default)]
pub struct Summary {
    /// Pass, row tag, p50 / raw floor, requests per cycle.
    uncontended: Vec<(Pass, String, f64, f64)>,
    /// Pass, row tag, acquisitions per second, requests per acquisition.
    contended: Vec<(Pass, String, f64, f64)>,
    /// Pass, row tag, p50 µs.
    handoff: Vec<(Pass, String, f64)>,
}

const PASSES: [Pass; 3] = [Pass::Quiet, Pass::Busy, Pass::ForceSync];

impl Summary {
    pub fn uncontended(&mut self, pass: Pass, tag: &str, ratio: f64, requests: f64) {
        self.uncontended.push((pass, tag.to_owned(), ratio, requests));
    }

    pub fn contended(&mut self, pass: Pass, tag: &str, per_second: f64, requests: f64) {
        self.contended.push((pass, tag.to_owned(), per_second, requests));
    }

    pub fn handoff(&mut self, pass: Pass, tag: &str, p50_us: f64) {
        self.handoff.push((pass, tag.to_owned(), p50_us));
    }

    /// The targets table: one line per target, a cell per pass.
    pub fn print(&self) {
        let find = |figures: &[(Pass, String, f64, f64)], pass: Pass, tag: &str| {
            figures.iter().find(|(p, t, ..)| *p == pass && t == tag).map(|&(_, _, a, b)| (a, b))
        };
        let cells = |cell: &dyn Fn(Pass) -> Option<String>| {
            PASSES.map(|pass| cell(pass).unwrap_or_else(|| "–".into())).join(" | ")
        };
        let verdict = |met: bool| if met { "met" } else { "**not met**" };
        out!("| target (zklock InterProcessMutex) | quiet | busy | forceSync=yes |");
        out!("|---|---|---|---|");
        out!(
            "| uncontended p50 ≤ 1.05x the raw floor's | {} |",
            cells(&|pass| {
                let (ratio, _) = find(&self.uncontended, pass, ZKLOCK)?;
                Some(format!("{ratio:.2}x, {}", verdict(ratio <= 1.05)))
            })
        );
        // Never more round trips than Client::lock: requests are what both send per cycle. To
        // three places: a few requests more in thousands (a predecessor gone between a listing
        // and its watch, in either library) decide the verdict and round away at two.
        let requests = |figures: &[(Pass, String, f64, f64)], pass| {
            let ((_, ours), (_, theirs)) = (find(figures, pass, ZKLOCK)?, find(figures, pass, CLIENT_LOCK)?);
            Some(format!("{ours:.3} vs {theirs:.3}, {}", verdict(ours <= theirs)))
        };
        out!(
            "| uncontended requests per cycle ≤ Client::lock's | {} |",
            cells(&|pass| requests(&self.uncontended, pass))
        );
        out!(
            "| contended requests per acquisition ≤ Client::lock's | {} |",
            cells(&|pass| requests(&self.contended, pass))
        );
        out!(
            "| contended acquisitions/s ≥ Client::lock's | {} |",
            cells(&|pass| {
                let (ours, _) = find(&self.contended, pass, ZKLOCK)?;
                let (theirs, _) = find(&self.contended, pass, CLIENT_LOCK)?;
                Some(format!("{:.2}x ({ours:.0} vs {theirs:.0}), {}", ours / theirs, verdict(ours >= theirs)))
            })
        );
        out!(
            "| the run's noise: `Client::lock`'s second row over its first, acquisitions/s | {} |",
            cells(&|pass| {
                let (again, _) = find(&self.contended, pass, CLIENT_LOCK_AGAIN)?;
                let (first, _) = find(&self.contended, pass, CLIENT_LOCK)?;
                Some(format!("{:.2}x ({again:.0} vs {first:.0})", again / first))
            })
        );
        let handoff = |pass: Pass, tag: &str| {
            self.handoff.iter().find(|(p, t, _)| *p == pass && t == tag).map(|&(_, _, p50)| p50)
        };
        out!(
            "| handoff p50 ≤ Client::lock's | {} |",
            cells(&|pass| {
                let (ours, theirs) = (handoff(pass, ZKLOCK)?, handoff(pass, CLIENT_LOCK)?);
                Some(format!("{ours:.0} vs {theirs:.0} µs, {}", verdict(ours <= theirs)))
            })
        );
        out!(
            "| the run's noise: `Client::lock`'s second row over its first, handoff p50 | {} |",
            cells(&|pass| {
                let (again, first) = (handoff(pass, CLIENT_LOCK_AGAIN)?, handoff(pass, CLIENT_LOCK)?);
                Some(format!("{:.2}x ({again:.0} vs {first:.0} µs)", again / first))
            })
        );
    }
}
