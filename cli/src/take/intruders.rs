//! Watching the path while we hold it: another kind of lock, or a semaphore that counts another
//! number of leases, arriving after we took ours would run beside us unseen (neither excludes
//! the other), so holding on would be a lie. `take_alone` checks when the hold starts; this
//! keeps checking for as long as it lasts.

use zookeeper_client::{Client, OneshotWatcher};

use crate::nodes::layout::{ensure_alone, Layout, SEMAPHORE_FOLDERS};
use crate::output::exit::{Failure, Outcome};

/// The path a hold is on, and what the hold put there: what [`arrived`] watches.
#[derive(Clone, Copy, Debug)]
pub struct Watch<'a> {
    pub path: &'a str,
    pub layout: Layout,
}

/// Resolves, with the failure to report, when a participant that cannot share the watched path
/// with us has a node there; never while none does.
///
/// # Cancel safety
/// Cancel safe: it only reads, and a dropped watch costs nothing.
pub async fn arrived(client: &Client, watched: Watch<'_>) -> Failure {
    let Watch { path, layout: ours } = watched;
    loop {
        // Watches first, then the check: a node created after the check fires a watch.
        let watches = match watch(client, path).await {
            Ok(watches) => watches,
            Err(()) => {
                // Cut off (or worse): the hold's own loss decides; look again once reconnected.
                client.state_watcher().changed().await;
                continue;
            }
        };
        match ensure_alone(client, path, ours).await {
            Err(failure) if failure.outcome == Outcome::Usage => {
                return Failure::new(Outcome::Lost, format!("no longer alone: {}", failure.message));
            }
            Ok(()) | Err(_) => {}
        }
        first_of(watches).await;
    }
}

/// A watch on the children of `path` and of each semaphore folder in it.
async fn watch(client: &Client, path: &str) -> Result<Vec<OneshotWatcher>, ()> {
    let (children, watcher) = client.list_and_watch_children(path).await.map_err(drop)?;
    let mut watches = vec![watcher];
    for folder in SEMAPHORE_FOLDERS.iter().filter(|folder| children.iter().any(|child| child == *folder)) {
        if let Ok((_, watcher)) = client.list_and_watch_children(&format!("{path}/{folder}")).await {
            watches.push(watcher);
        }
    }
    Ok(watches)
}

/// Waits for the first of `watches` to fire.
async fn first_of(watches: Vec<OneshotWatcher>) {
    let mut fired = tokio::task::JoinSet::new();
    for watch in watches {
        fired.spawn(watch.changed());
    }
    fired.join_next().await;
}
