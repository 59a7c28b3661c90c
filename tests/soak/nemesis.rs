//! The nemesis: kills and pauses the leader, partitions clients and expires their sessions.

use std::time::{Duration, Instant};

use fastrand::Rng;
use zklock_testcontainers::Ensemble;
use zookeeper_client::SessionState;

use super::client::{Slot, SESSION_TIMEOUT};
use super::tally::{bump, FaultCounts};

#[derive(Clone, Copy, Debug)]
enum Fault {
    KillLeader,
    PauseLeader,
    Partition,
    Expire,
}

/// Injects faults until `duration` has passed, then heals everything and returns the ensemble.
///
/// Faults are dealt from a shuffled deck of the four kinds, so every kind happens once in every
/// four faults (the first deck takes about half a minute at most).
pub fn run(
    mut ensemble: Ensemble,
    slots: &[Slot],
    faults: &FaultCounts,
    duration: Duration,
    rng: &mut Rng,
) -> Ensemble {
    let started = Instant::now();
    let mut deck = Vec::new();
    while started.elapsed() < duration {
        std::thread::sleep(Duration::from_millis(rng.u64(1_000..3_000)));
        if deck.is_empty() {
            deck = vec![Fault::KillLeader, Fault::PauseLeader, Fault::Partition, Fault::Expire];
            rng.shuffle(&mut deck);
        }
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
            Fault::Partition => {
                // Shorter than the session timeout: sometimes within the loss grace, sometimes past it.
                let slot = &slots[holder_or_anyone(slots, rng)];
                bump(&faults.partitions);
                slot.proxy.blackhole();
                std::thread::sleep(Duration::from_millis(rng.u64(300..4_000)));
                slot.proxy.heal();
            }
            Fault::Expire => expire(&slots[long_holder(slots, rng)], faults, rng),
        }
        let _ = ensemble.wait_for_quorum(Duration::from_secs(60));
    }
    for slot in slots {
        slot.proxy.heal();
    }
    ensemble.wait_for_quorum(Duration::from_secs(60)).expect("the ensemble recovers");
    ensemble
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
    let holders: Vec<usize> =
        (0..slots.len()).filter(|&index| slots[index].holding_until.lock().unwrap().is_some()).collect();
    match holders.is_empty() || rng.bool() {
        true => rng.usize(0..slots.len()),
        false => holders[rng.usize(0..holders.len())],
    }
}

/// The client to expire: one that will still be holding when it notices the partition (so a
/// loss is signalled), waiting a few seconds for one; else one with a session.
fn long_holder(slots: &[Slot], rng: &mut Rng) -> usize {
    // The holder notices after 2/5 of the session timeout and gives up a third later.
    let notice = SESSION_TIMEOUT * 4 / 5;
    let give_up = Instant::now() + Duration::from_secs(8);
    while Instant::now() < give_up {
        let holding_past = Instant::now() + notice;
        let long: Vec<usize> = (0..slots.len())
            .filter(|&index| slots[index].holding_until.lock().unwrap().is_some_and(|until| until > holding_past))
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
