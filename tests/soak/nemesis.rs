//! The nemesis: kills and pauses the leader, partitions clients, expires their sessions and
//! loses the server's replies to them, a fixed number of rounds.

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

/// How often a fault that did not take effect (no leader to kill, a partition that met no
/// traffic) is dealt again before the nemesis moves on.
const TRIES: usize = 3;

/// Injects `rounds` rounds of faults, each every kind once in a shuffled order (a round takes
/// about half a minute), then heals everything and returns the ensemble. A fault is counted
/// only when it took effect: a kill or pause of a leader there was, a partition or lost replies
/// that lost some of the client's traffic, an expiry the client saw; one that did not is dealt
/// again, up to [`TRIES`] times. It runs on a blocking thread of the test's runtime (it sleeps
/// between faults), and waits there for the ensemble's async waits.
pub fn run(mut ensemble: Ensemble, slots: &[Slot], faults: &FaultCounts, rounds: usize, rng: &mut Rng) -> Ensemble {
    let mut expiries = 0;
    for _ in 0..rounds {
        let mut deck = DECK.to_vec();
        rng.shuffle(&mut deck);
        for fault in deck {
            for _ in 0..TRIES {
                std::thread::sleep(Duration::from_millis(rng.u64(500..2_000)));
                let took_effect = match fault {
                    Fault::KillLeader => ensemble.leader().is_some_and(|leader| {
                        bump(&faults.kills);
                        ensemble.kill(leader);
                        std::thread::sleep(Duration::from_millis(rng.u64(500..3_000)));
                        block_on(ensemble.restart(leader)).expect("restart the killed leader");
                        true
                    }),
                    Fault::PauseLeader => ensemble.leader().is_some_and(|leader| {
                        bump(&faults.pauses);
                        ensemble.pause(leader);
                        std::thread::sleep(Duration::from_millis(rng.u64(500..4_000)));
                        ensemble.resume(leader);
                        true
                    }),
                    // Shorter than the session timeout: sometimes within the loss grace,
                    // sometimes past it.
                    Fault::Partition => {
                        let spell = Duration::from_millis(rng.u64(300..4_000));
                        let slot = &slots[holder_or_anyone(slots, rng)];
                        disturb(slot, &faults.partitions, Proxy::blackhole, spell, |proxy| {
                            proxy.requests_lost() + proxy.replies_lost()
                        })
                    }
                    // Expiries cut off a leader and a lock holder in turns, so that both the
                    // elections and the locks meet a session expiring under a holder.
                    Fault::Expire => {
                        let hold = [Hold::Leadership, Hold::Lock][expiries % 2];
                        expiries += 1;
                        expire(&slots[long_holder(slots, hold, rng)], faults, rng)
                    }
                    // Its requests still run but it learns none of their outcomes: it
                    // reconnects and must find the nodes it created (or meant to delete) by
                    // itself.
                    Fault::LoseReplies => {
                        let spell = Duration::from_millis(rng.u64(300..3_000));
                        let slot = &slots[holder_or_anyone(slots, rng)];
                        disturb(slot, &faults.lost_replies, Proxy::drop_replies, spell, Proxy::replies_lost)
                    }
                };
                let _ = block_on(ensemble.wait_for_quorum(Duration::from_secs(60)));
                if took_effect {
                    break;
                }
            }
        }
    }
    for slot in slots {
        slot.proxy.heal();
    }
    block_on(ensemble.wait_for_quorum(Duration::from_secs(60))).expect("the ensemble recovers");
    ensemble
}

/// Runs `future` to its end on the test's runtime, from the nemesis's blocking thread.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(future)
}

/// Applies `fault` to the slot's proxy for `spell`, then heals it; counts it, and says so, only
/// if it lost some of the client's traffic (`lost` counts what the proxy lost so far).
fn disturb(slot: &Slot, count: &AtomicU64, fault: fn(&Proxy), spell: Duration, lost: fn(&Proxy) -> usize) -> bool {
    let before = lost(&slot.proxy);
    fault(&slot.proxy);
    std::thread::sleep(spell);
    let met_traffic = lost(&slot.proxy) > before;
    slot.proxy.heal();
    if met_traffic {
        bump(count);
    }
    met_traffic
}

/// Partitions the slot's client past the session timeout, so that the server expires its
/// session as it would in production; counts the expiry once the client has seen it, and says
/// whether it did.
fn expire(slot: &Slot, faults: &FaultCounts, rng: &mut Rng) -> bool {
    let client = slot.client.lock().unwrap().clone();
    slot.proxy.blackhole();
    std::thread::sleep(SESSION_TIMEOUT + Duration::from_millis(rng.u64(1_500..4_000)));
    slot.proxy.heal();
    let Some(client) = client else { return false };
    let seen_by = Instant::now() + Duration::from_secs(10);
    while Instant::now() < seen_by {
        if client.state() == SessionState::Expired {
            bump(&faults.expiries);
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
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
