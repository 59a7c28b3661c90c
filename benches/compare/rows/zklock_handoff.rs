//! zklock's `InterProcessMutex` with local handoff (the default bound): only the tasks scenario,
//! where the tasks of a session share the one mutex object.

use std::future::Future;

use zklock::{InterProcessMutex, LocalHandoff};
use zookeeper_client::Client;

use crate::row::Scenario;
use crate::spin::Cycle;
use crate::zookeeper::ZooKeeperLock;

/// One mutex per session, cloned into its tasks, passing the hold between them.
#[derive(Clone)]
pub struct HandoffMutex(InterProcessMutex);

impl ZooKeeperLock for HandoffMutex {
    const NAME: &'static str = "zklock InterProcessMutex, local handoff";
    const TAG: &'static str = "zklock-handoff";
    const SCENARIOS: &'static [Scenario] = &[Scenario::Cohort];

    fn new(client: &Client, path: &str) -> HandoffMutex {
        let mutex = InterProcessMutex::builder(client, path).local_handoff(LocalHandoff::default()).build();
        HandoffMutex(mutex.expect("lock path"))
    }
}

impl Cycle for HandoffMutex {
    fn cycle(
        &mut self,
        inside: impl Future<Output = Result<(), String>> + Send,
    ) -> impl Future<Output = Result<(), String>> + Send {
        self.0.cycle(inside)
    }
}
