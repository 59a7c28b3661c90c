//! The Redis row: the seed articles' spin lock on a `redis-server` of our own. Acquire is
//! `SET key token NX PX 10000`, retried every millisecond while someone else holds the key;
//! release is a Lua compare-and-delete, so that nobody deletes a key they do not own.
//!
//! The client is a few lines of RESP (`resp`) over one TCP connection per lock, enough for these
//! commands, so the row costs no dependency.

mod resp;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use uuid::Uuid;

use self::resp::{Connection, Reply};
use crate::servers::LockServer;
use crate::spawned::{find_program, free_port, Spawned};
use crate::spin::Cycle;

/// Deletes the key only if it still holds our token (the recipe's release).
const RELEASE: &str = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

/// A `redis-server` on a free loopback port, without persistence (like ZooKeeper's
/// `forceSync=no`); killed when dropped.
pub struct Redis {
    address: SocketAddr,
    process: Spawned,
}

impl LockServer for Redis {
    const NAME: &'static str = "Redis SET NX PX + Lua delete, 1 ms retry";
    const TAG: &'static str = "redis";
    type Lock = SpinLock;

    /// Starts `redis-server` and waits until it answers `PING`.
    ///
    /// # Errors
    ///
    /// Why there is no Redis row: not installed, or it did not start within 10 s.
    async fn start() -> Result<Redis, String> {
        let program = find_program("redis-server").ok_or("redis-server not installed (scripts/install-bench-deps)")?;
        let mut process = Spawned::new("redis")?;
        let port = free_port()?.to_string();
        let mut command = Command::new(program);
        command
            .args(["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(process.dir());
        process.start(command)?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port.parse::<u16>().map_err(|e| e.to_string())?));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            process.check_running()?;
            if let Ok(mut connection) = Connection::open(address).await {
                if let Ok(Reply::Simple(pong)) = connection.command(&["PING"]).await {
                    if pong == "PONG" {
                        return Ok(Redis { address, process });
                    }
                }
            }
            if Instant::now() > deadline {
                return Err(format!("redis-server did not answer within 10 s: {}", process.log_tail()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    async fn lock(&self, key: &str) -> Result<SpinLock, String> {
        Ok(SpinLock { connection: Connection::open(self.address).await?, key: key.to_owned() })
    }

    /// The `SET` and `EVAL` commands the server has run, from `INFO commandstats`. They are what
    /// the lock's clients send; `total_commands_processed` would also count the `GET` and `DEL`
    /// that each `EVAL` runs inside.
    async fn requests(&self) -> Result<u64, String> {
        let mut connection = Connection::open(self.address).await?;
        let Reply::Bulk(Some(info)) = connection.command(&["INFO", "commandstats"]).await? else {
            return Err("INFO commandstats answered no text".into());
        };
        let calls = |command: &str| {
            let prefix = format!("cmdstat_{command}:calls=");
            String::from_utf8_lossy(&info)
                .lines()
                .find_map(|line| line.strip_prefix(&prefix)?.split(',').next()?.parse::<u64>().ok())
                // A command not run yet has no line.
                .unwrap_or(0)
        };
        Ok(calls("set") + calls("eval"))
    }
}

/// The spin lock on one connection.
pub struct SpinLock {
    connection: Connection,
    key: String,
}

impl Cycle for SpinLock {
    async fn cycle(&mut self, inside: impl Future<Output = Result<(), String>> + Send) -> Result<(), String> {
        // A fresh token per acquisition: a late release from an earlier hold cannot delete this one.
        let token = Uuid::new_v4().to_string();
        loop {
            match self.connection.command(&["SET", &self.key, &token, "NX", "PX", "10000"]).await? {
                Reply::Simple(ok) if ok == "OK" => break,
                Reply::Bulk(None) => tokio::time::sleep(Duration::from_millis(1)).await,
                other => return Err(format!("SET NX answered {other:?}")),
            }
        }
        inside.await?;
        match self.connection.command(&["EVAL", RELEASE, "1", &self.key, &token]).await? {
            Reply::Integer(1) => Ok(()),
            other => Err(format!("the release found the key gone or someone else's ({other:?})")),
        }
    }
}
