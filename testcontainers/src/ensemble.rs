use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::blocking::off_runtime;
use crate::four_letter::answers;
use crate::process::{free_loopback_ports, ServerProcess, POLL};
use crate::server::temp_dir;
use crate::{four_letter_word, HarnessError, ServerOptions};

/// A ZooKeeper ensemble of several servers on loopback ports, for fault tests: find the leader,
/// kill, stop, pause and resume, and restart members with their data kept. Every member is
/// killed when the ensemble is dropped (and when the test process dies).
///
/// Members are numbered from 0. The ensemble uses `tickTime` from its options (default 200 ms),
/// `initLimit=50` and `syncLimit=15` ticks, so a paused or killed leader is replaced within a few
/// seconds.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), zklock_testcontainers::HarnessError> {
/// let mut ensemble = zklock_testcontainers::Ensemble::start(3).await?;
/// let leader = ensemble.leader().expect("a leader");
/// ensemble.kill(leader);
/// ensemble.wait_for_quorum(std::time::Duration::from_secs(30)).await?;
/// ensemble.restart(leader).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Ensemble {
    members: Vec<ServerProcess>,
    options: ServerOptions,
    // Last: the processes die before their directories are removed.
    _dir: TempDir,
}

impl Ensemble {
    /// Starts `size` servers and waits until they form a quorum with a leader.
    ///
    /// # Errors
    /// As [`Self::start_with`].
    ///
    /// # Cancel safety
    /// As [`Self::start_with`].
    pub async fn start(size: usize) -> Result<Self, HarnessError> {
        Self::start_with(size, &ServerOptions::default()).await
    }

    /// Starts `size` servers with `options` and waits until they form a quorum with a leader,
    /// for at most [`ServerOptions::start_timeout`]. As
    /// [`ZooKeeperServer::start_with`](crate::ZooKeeperServer::start_with), it does not block
    /// the caller's runtime.
    ///
    /// # Errors
    /// As [`crate::ZooKeeperServer::start_with`].
    ///
    /// # Panics
    /// Outside a tokio runtime.
    ///
    /// # Cancel safety
    /// Dropped before it returns, it leaves no server: every member is killed.
    pub async fn start_with(size: usize, options: &ServerOptions) -> Result<Self, HarnessError> {
        let launch = options.clone();
        let ensemble = off_runtime(move || Self::launch(size, &launch)).await?;
        ensemble.wait_for_quorum(options.start_timeout).await?;
        Ok(ensemble)
    }

    /// Writes every member's directory and configuration and starts its process (without
    /// waiting for them).
    fn launch(size: usize, options: &ServerOptions) -> Result<Self, HarnessError> {
        let dir = temp_dir("zklock-ensemble-")?;
        let ports = free_loopback_ports(3 * size)?;
        let peers: String = (0..size)
            .map(|i| format!("server.{}=127.0.0.1:{}:{}\n", i + 1, ports[3 * i + 1], ports[3 * i + 2]))
            .collect();
        let extra = format!("initLimit=50\nsyncLimit=15\nreconfigEnabled=false\nstandaloneEnabled=false\n{peers}");
        let mut members = Vec::with_capacity(size);
        for i in 0..size {
            let member_dir = dir.path().join(format!("server{}", i + 1));
            std::fs::create_dir_all(&member_dir).map_err(HarnessError::io("create a member directory"))?;
            ServerProcess::configure(&member_dir, ports[3 * i], options, &extra)?;
            std::fs::write(member_dir.join("data/myid"), format!("{}\n", i + 1))
                .map_err(HarnessError::io("write myid"))?;
            let address = SocketAddr::from((Ipv4Addr::LOCALHOST, ports[3 * i]));
            members.push(ServerProcess::launch(&member_dir, address, options)?);
        }
        Ok(Ensemble { members, options: options.clone(), _dir: dir })
    }

    /// How many members the ensemble has.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// All members' client addresses, comma separated, for a client.
    pub fn connect_string(&self) -> String {
        self.addresses().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(",")
    }

    /// Every member's client address, by member number.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.members.iter().map(|m| m.client_address).collect()
    }

    /// The member that answers `srvr` with `Mode: leader`, if any.
    pub fn leader(&self) -> Option<usize> {
        (0..self.size()).find(|&i| self.mode(i).as_deref() == Some("leader"))
    }

    /// The mode member `member` reports (`leader`, `follower`), or `None` when it does not serve.
    pub fn mode(&self, member: usize) -> Option<String> {
        mode_at(self.members[member].client_address)
    }

    /// Waits until a majority of members serve and one of them leads. The members are asked on
    /// tokio's blocking threads: the caller's runtime is not blocked.
    ///
    /// # Errors
    /// [`HarnessError::NotReady`] when that does not happen within `timeout`.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    ///
    /// # Cancel safety
    /// Cancel safe: it only asks.
    pub async fn wait_for_quorum(&self, timeout: Duration) -> Result<(), HarnessError> {
        let started = Instant::now();
        loop {
            let addresses = self.addresses();
            let modes = off_runtime(move || addresses.into_iter().map(mode_at).collect::<Vec<_>>()).await;
            let serving = modes.iter().flatten().count();
            if serving > modes.len() / 2 && modes.iter().flatten().any(|mode| mode == "leader") {
                return Ok(());
            }
            if started.elapsed() > timeout {
                let log = self.members.iter().map(|m| m.log_tail(10)).collect::<Vec<_>>().join("\n---\n");
                return Err(HarnessError::NotReady { waited: timeout, log });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Kills member `member` with SIGKILL (a crash).
    pub fn kill(&mut self, member: usize) {
        self.members[member].kill();
    }

    /// Stops member `member` with SIGTERM (a clean shutdown).
    pub fn stop(&mut self, member: usize) {
        self.members[member].stop();
    }

    /// Freezes member `member` with SIGSTOP: its connections stay open but nothing answers.
    /// Returns once every thread of the server has stopped.
    pub fn pause(&mut self, member: usize) {
        self.members[member].freeze();
    }

    /// Thaws a member frozen by [`Self::pause`]; returns once it runs again.
    pub fn resume(&mut self, member: usize) {
        self.members[member].thaw();
    }

    /// Starts a killed or stopped member again with its data, without waiting for it (to bring a
    /// whole ensemble back, start every member, then [`Self::wait_for_quorum`]).
    ///
    /// # Errors
    /// [`HarnessError::JavaNotStarted`] or [`HarnessError::Io`].
    pub fn start_member(&mut self, member: usize) -> Result<(), HarnessError> {
        self.members[member].start()
    }

    /// Starts a killed or stopped member again with its data, and waits until it serves (which
    /// needs a quorum of the others), for at most [`ServerOptions::start_timeout`]. The wait
    /// does not block the caller's runtime.
    ///
    /// # Errors
    /// As [`crate::ZooKeeperServer::start_with`].
    ///
    /// # Panics
    /// Outside a tokio runtime.
    ///
    /// # Cancel safety
    /// Dropped before it returns, the member is started but not waited for, as by
    /// [`Self::start_member`].
    pub async fn restart(&mut self, member: usize) -> Result<(), HarnessError> {
        let timeout = self.options.start_timeout;
        let process = &mut self.members[member];
        process.start()?;
        let address = process.client_address;
        process.wait_until(timeout, move || answers(address, "srvr", &["Mode: leader", "Mode: follower"])).await
    }

    /// Sends a four-letter word to member `member`.
    ///
    /// # Errors
    /// As [`four_letter_word`].
    pub fn four_letter_word(&self, member: usize, word: &str) -> Result<String, HarnessError> {
        four_letter_word(self.members[member].client_address, word)
    }
}

/// The mode the server at `address` reports in its `srvr` answer, or `None` when it does not
/// serve.
fn mode_at(address: SocketAddr) -> Option<String> {
    let answer = four_letter_word(address, "srvr").ok()?;
    answer.lines().find_map(|line| line.strip_prefix("Mode: ").map(str::to_owned))
}
