//! The Redis row: the seed articles' spin lock on a `redis-server` of our own. Acquire is
//! `SET key token NX PX 10000`, retried every millisecond while someone else holds the key;
//! release is a Lua compare-and-delete, so that nobody deletes a key they do not own.
//!
//! The client is a few lines of RESP over one TCP connection per lock, enough for these
//! commands, so the row costs no dependency.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;
use uuid::Uuid;

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
    async fn cycle(&mut self, inside: impl FnOnce() + Send) -> Result<(), String> {
        // A fresh token per acquisition: a late release from an earlier hold cannot delete this one.
        let token = Uuid::new_v4().to_string();
        loop {
            match self.connection.command(&["SET", &self.key, &token, "NX", "PX", "10000"]).await? {
                Reply::Simple(ok) if ok == "OK" => break,
                Reply::Bulk(None) => tokio::time::sleep(Duration::from_millis(1)).await,
                other => return Err(format!("SET NX answered {other:?}")),
            }
        }
        inside();
        match self.connection.command(&["EVAL", RELEASE, "1", &self.key, &token]).await? {
            Reply::Integer(1) => Ok(()),
            other => Err(format!("the release found the key gone or someone else's ({other:?})")),
        }
    }
}

/// The replies these commands get; an error reply (`-ERR ...`) is an `Err` of
/// [`Connection::command`].
#[derive(Debug)]
enum Reply {
    Simple(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
}

/// One RESP connection: commands go out as arrays of bulk strings, one at a time.
struct Connection {
    stream: BufStream<TcpStream>,
    buffer: Vec<u8>,
}

impl Connection {
    async fn open(address: SocketAddr) -> Result<Connection, String> {
        let stream = TcpStream::connect(address).await.map_err(|e| format!("connect to redis: {e}"))?;
        // One small request at a time: Nagle would hold each back for the previous answer's ACK.
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Connection { stream: BufStream::new(stream), buffer: Vec::new() })
    }

    async fn command(&mut self, args: &[&str]) -> Result<Reply, String> {
        self.buffer.clear();
        self.buffer.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            self.buffer.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            self.buffer.extend_from_slice(arg.as_bytes());
            self.buffer.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&self.buffer).await.map_err(broken)?;
        self.stream.flush().await.map_err(broken)?;
        self.reply().await
    }

    async fn reply(&mut self) -> Result<Reply, String> {
        let mut line = Vec::new();
        if self.stream.read_until(b'\n', &mut line).await.map_err(broken)? == 0 {
            return Err("redis closed the connection".into());
        }
        let text = String::from_utf8_lossy(line.strip_suffix(b"\r\n").unwrap_or(&line)).into_owned();
        let (kind, rest) = text.split_at_checked(1).ok_or("redis sent an empty line")?;
        let number = || rest.parse::<i64>().map_err(|_| format!("redis sent a bad number: {text}"));
        match kind {
            "+" => Ok(Reply::Simple(rest.to_owned())),
            "-" => Err(format!("redis: {rest}")),
            ":" => Ok(Reply::Integer(number()?)),
            "$" => match usize::try_from(number()?) {
                Err(_) => Ok(Reply::Bulk(None)),
                Ok(length) => {
                    let mut data = vec![0; length + 2];
                    self.stream.read_exact(&mut data).await.map_err(broken)?;
                    data.truncate(length);
                    Ok(Reply::Bulk(Some(data)))
                }
            },
            _ => Err(format!("unexpected reply from redis: {text}")),
        }
    }
}

fn broken(error: std::io::Error) -> String {
    format!("redis connection: {error}")
}
