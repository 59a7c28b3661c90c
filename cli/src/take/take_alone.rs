//! Taking a hold on a path that no participant of another kind shares: the check before the
//! hold is asked for, and again once our node is there (`intruders.rs` keeps checking while it
//! lasts).

use std::future::Future;

use tracing::info;
use zookeeper_client::Client;

use crate::nodes::layout::{ensure_alone, Kind, Layout};
use crate::nodes::queue::queue;
use crate::output::exit::Failure;
use crate::signals::Signals;
use crate::take::held::Held;

/// Takes the lock (or leadership) with `take`, refusing a path used by another kind of lock
/// (or a semaphore of another size). `Ok(Err(signal))` when a signal came first (`take` is
/// dropped, which leaves no node behind).
pub async fn take_alone(
    client: &Client,
    path: &str,
    layout: Layout,
    take: impl Future<Output = Result<Held, Failure>>,
    signals: &mut Signals,
) -> Result<Result<Held, libc::c_int>, Failure> {
    let before = async {
        ensure_alone(client, path, layout).await?;
        if tracing::enabled!(tracing::Level::INFO) {
            say_who_holds(client, path, layout.kind).await;
        }
        take.await
    };
    let held = match signals.until(before).await {
        Ok(held) => held?,
        Err(signal) => return Ok(Err(signal)),
    };
    // Two modes of different kinds that looked at an empty path at once both got here; each
    // looks again now that its own node is there, so at least one of them sees the other.
    let alone = signals.until(ensure_alone(client, path, layout)).await;
    match alone {
        Ok(Ok(())) => {}
        Ok(Err(failure)) => {
            held.release(client).await;
            return Err(failure);
        }
        Err(signal) => {
            held.release(client).await;
            return Ok(Err(signal));
        }
    }
    info!("acquired {}, fencing token {}", held.hold().node_path(), held.hold().fencing_token());
    Ok(Ok(held))
}

/// With -v: whom we are about to wait for.
async fn say_who_holds(client: &Client, lock_path: &str, kind: Kind) {
    let Ok(entries) = queue(client, lock_path, kind).await else { return };
    for entry in entries.iter().filter(|entry| entry.holds) {
        info!("{lock_path} is held by {} ({}); waiting", entry.node, entry.data);
    }
}
