//! `zklock leader PATH`: who leads the election at PATH now (as `etcdctl elect --listen` shows).

use std::process::ExitCode;

use serde_json::json;
use zookeeper_client::Client;

use crate::nodes::layout::{kinds_present, shares, Kind};
use crate::nodes::queue::queue;
use crate::output::exit::{Failure, Outcome};
use crate::output::stdout;

/// Prints the leader's id, node and fencing token; exit 1 when nobody leads. `kind` is the
/// election's layout: Curator's `LeaderLatch` (`Kind::Latch`), or kazoo's `Election`
/// (`Kind::Kazoo`, with `--kazoo`), which is a kazoo `Lock` whose holder leads and whose nodes
/// carry each participant's identifier.
pub async fn leader(client: &Client, path: &str, kind: Kind, as_json: bool) -> Result<ExitCode, Failure> {
    let mut participants = Vec::new();
    let kinds = kinds_present(client, path).await?;
    // A lock's path has no leader: "nobody leads" would hide that the path is the wrong one.
    if let Some(theirs) = kinds.iter().find(|theirs| !shares(kind, **theirs)) {
        return Err(Failure::new(
            Outcome::Usage,
            format!("{path} is a {theirs}, not a {kind}: nobody leads it (`zklock list {path}` shows who holds it)"),
        ));
    }
    if kinds.contains(&kind) {
        participants = queue(client, path, kind).await?;
    }
    let leader = participants.iter().find(|participant| participant.holds);
    let text = match (leader, as_json) {
        (Some(leader), true) => {
            let leader = json!({ "id": leader.data, "node": leader.node, "token": leader.token });
            json!({ "path": path, "leader": leader }).to_string()
        }
        (None, true) => json!({ "path": path, "leader": null }).to_string(),
        (Some(leader), false) => {
            format!("{} {} {}", leader.data, leader.node, leader.token)
        }
        (None, false) => format!("{path}: nobody leads"),
    };
    stdout::line(&text)?;
    Ok(if leader.is_some() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
