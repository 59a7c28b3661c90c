//! The nemesis: kills and pauses the leader, partitions clients, expires their sessions and
//! loses the server's replies to them.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use fastrand::Rng;
use zklock_testcontainers::{Ensemble, Proxy};
use zookeeper_client::SessionState;

use super::client::{Hold, Slot, SESSION_TIMEOUT};
use super::tally::{bump, FaultCounts};

#[derive(Clone, Copy, Debug)]
enum Fault {
    KillLeader,
    PauseLeader,
    Partition,
    Expire,
    LoseReplies,
}

const DECK: [Fault; 5] = [Fault::KillLeader, Fault::PauseLeader, Fault::Partition, Fault::Expire, Fault::LoseReplies];

/// Injects faults until `duration` has passed and every kind has happened, then heals
/// everything and returns the ensemble.
///
/// Faults are dealt from a shuffled deck of the kinds, so every kind happens once in every deck
/// (the first deck takes about half a minute).
pub fn run(
    mut ensemble: Ensemble,
    slots: &[Slot],
    faults: &FaultCounts,
    duration: Duration,
    rng: &mut Rng,
) -> Ensemble {
    let started = Instant::now();
    let mut deck = Vec::new();
    let mut dealt = 0;
    let mut expiries = 0;
    while started.elapsed() < duration || dealt < DECK.len() {
        std::thread::sleep(Duration::from_millis(rng.u64(1_000..3_000)));
        if deck.is_empty() {
            deck = DECK.to_vec();
            rng.shuffle(&mut deck);
        }
        dealt += 1;
        match deck.pop().unwrap() {
            Fault::KillLeader => {
                if let Some(leader) = ensemble.leader() {
                    bump(&faults.kills);
                    ensemble.kill(leader);
                    std::thread::sleep(Duration::from_millis(rng.u64(500..3_000)));
                    ensemble.restart(leader).expect("restart the killed leader");
                }
            }
            Fault::PauseLeader => {
                if let Some(leader) = ensemble.leader() {
                    bump(&faults.pauses);
                    ensemble.pause(leader);
                    std::thread::sleep(Duration::from_millis(rng.u64(500..4_000)));
                    ensemble.resume(leader);
                }
            }
            // Shorter than the session timeout: sometimes within the loss grace, sometimes past it.
            Fault::Partition => {
                let spell = Duration::from_millis(rng.u64(300..4_000));
                disturb(&slots[holder_or_anyone(slots, rng)], &faults.partitions, Proxy::blackhole, spell);
            }
            // Expiries cut off a leader and a lock holder in turns, so that both the elections
            // and the locks meet a session expiring under a holder in every run.
            Fault::Expire => {
                let hold = [Hold::Leadership, Hold::Lock][expiries % 2];
                expiries += 1;
                expire(&slots[long_holder(slots, hold, rng)], faults, rng)
            }
            // Its requests still run but it learns none of their outcomes: it reconnects and
            // must find the nodes it created (or meant to delete) by itself.
            Fault::LoseReplies => {
                let spell = Duration::from_millis(rng.u64(300..3_000));
                disturb(&slots[holder_or_anyone(slots, rng)], &faults.lost_replies, Proxy::drop_replies, spell);
            }
        }
        let _ = ensemble.wait_for_quorum(Duration::from_secs(60));
    }
    for slot in slots {
        slot.proxy.heal();
    }
    ensemble.wait_for_quorum(Duration::from_secs(60)).expect("the ensemble recovers");
    ensemble
}

/// Applies `fault` to the slot's proxy for `spell`, then heals it.
fn disturb(slot: &Slot, count: &AtomicU64, fault: fn(&Proxy), spell: Duration) {
    bump(count);
    fault(&slot.proxy);
    std::thread::sleep(spell);
    slot.proxy.heal();
}

/// Partitions the slot's client past the session timeout, so that the server expires its
/// session as it would in production; counts the expiry once the client has seen it.
fn expire(slot: &Slot, faults: &FaultCounts, rng: &mut Rng) {
    let client = slot.client.lock().unwrap().clone();
    slot.proxy.blackhole();
    std::thread::sleep(SESSION_TIMEOUT + Duration::from_millis(rng.u64(1_500..4_000)));
    slot.proxy.heal();
    let Some(client) = client else { return };
    let seen_by = Instant::now() + Duration::from_secs(10);
    while Instant::now() < seen_by {
        if client.state() == SessionState::Expired {
            bump(&faults.expiries);
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The client to partition: the current holder half of the time, else anyone.
fn holder_or_anyone(slots: &[Slot], rng: &mut Rng) -> usize {
    let holders: Vec<usize> = (0..slots.len()).filter(|&index| slots[index].holding_until(None).is_some()).collect();
    match holders.is_empty() || rng.bool() {
        true => rng.usize(0..slots.len()),
        false => holders[rng.usize(0..holders.len())],
    }
}

/// The client to expire: one that will still be holding (a `hold`) when it notices the
/// partition (so a loss is signalled), waiting a few seconds for one; else one with a session.
/// A leader must mean to lead past the session's expiry, when the next leader comes: had it
/// missed its loss, it would still write then, and the register would refuse it.
fn long_holder(slots: &[Slot], hold: Hold, rng: &mut Rng) -> usize {
    let past = match hold {
        // The holder notices after 2/5 of the session timeout and gives up a third later.
        Hold::Lock => SESSION_TIMEOUT * 4 / 5,
        Hold::Leadership => SESSION_TIMEOUT + Duration::from_secs(1),
    };
    let give_up = Instant::now() + Duration::from_secs(8);
    while Instant::now() < give_up {
        let holding_past = Instant::now() + past;
        let long: Vec<usize> = (0..slots.len())
            .filter(|&index| slots[index].holding_until(Some(hold)).is_some_and(|until| until > holding_past))
            .collect();
        if !long.is_empty() {
            return long[rng.usize(0..long.len())];
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let connected: Vec<usize> =
        (0..slots.len()).filter(|&index| slots[index].client.lock().unwrap().is_some()).collect();
    match connected.is_empty() {
        true => rng.usize(0..slots.len()),
        false => connected[rng.usize(0..connected.len())],
    }
}
