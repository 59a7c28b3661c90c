//! The MariaDB row: a lock table whose primary key is the lock name. Acquire inserts the row
//! and, while someone else's row is there (duplicate key), sleeps 1 ms and retries; release
//! deletes the row if it is still ours. On a `mariadbd` of our own, with a fresh data directory.
//!
//! The client is the little of the MySQL protocol these statements need (handshake v10, an
//! empty-password HandshakeResponse41 that `--skip-grant-tables` accepts, `COM_QUERY`, OK, ERR
//! and text result sets), over one TCP connection per lock, so the row costs no dependency.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;
use uuid::Uuid;

use crate::servers::LockServer;
use crate::spawned::{find_program, free_port, Spawned};
use crate::spin::Cycle;

/// `ER_DUP_ENTRY`: the lock's row is there, someone holds it.
const DUPLICATE_KEY: u16 = 1062;
/// `ER_LOCK_DEADLOCK`: InnoDB rolled this insert back to break a deadlock. Inserts that waited
/// on the holder's uncommitted delete of the row all take a shared lock on it, then each wants
/// it exclusively; one wins, the others are victims. For the lock it means "not yours yet".
const DEADLOCK: u16 = 1213;

/// A `mariadbd` on a free loopback port with a throwaway data directory and small buffers; it
/// does not flush its log at each commit (like ZooKeeper's `forceSync=no`). Killed when dropped.
pub struct MariaDb {
    address: SocketAddr,
    process: Spawned,
}

impl LockServer for MariaDb {
    const NAME: &'static str = "MariaDB unique-key insert, 1 ms retry";
    const TAG: &'static str = "mariadb";
    /// The `SHOW STATUS` that reads `Questions` is one.
    const COUNTED_BY_A_READING: u64 = 1;
    type Lock = TableLock;

    /// Makes a data directory with `mariadb-install-db`, starts `mariadbd` without grant
    /// tables, waits until it accepts a connection, and creates the lock table.
    ///
    /// # Errors
    ///
    /// Why there is no MariaDB row: not installed, or it did not start within 30 s.
    async fn start() -> Result<MariaDb, String> {
        let not_installed = "mariadb-server not installed (scripts/install-bench-deps)";
        let server = find_program("mariadbd").ok_or(not_installed)?;
        let install = find_program("mariadb-install-db").ok_or(not_installed)?;
        let mut process = Spawned::new("mariadb")?;
        let datadir = format!("--datadir={}", process.dir().join("data").display());
        let mut common = vec![datadir, "--innodb-buffer-pool-size=16M".into(), "--innodb-log-file-size=4M".into()];
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            // mariadbd refuses to run as root unless told to.
            common.push("--user=root".into());
        }

        let mut setup = Command::new(install);
        setup.arg("--no-defaults").args(&common).args(["--skip-test-db", "--skip-name-resolve"]);
        let output = process.run(setup)?;
        if !output.status.success() {
            let text = String::from_utf8_lossy(&output.stderr);
            let last = text.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("");
            return Err(format!("mariadb-install-db failed ({}): {last}", output.status));
        }

        let port = free_port()?;
        let mut command = Command::new(server);
        command
            .arg("--no-defaults")
            .args(&common)
            .arg(format!("--socket={}", process.dir().join("mariadbd.sock").display()))
            .arg(format!("--pid-file={}", process.dir().join("mariadbd.pid").display()))
            .arg(format!("--port={port}"))
            .args(["--bind-address=127.0.0.1", "--skip-grant-tables", "--skip-name-resolve", "--skip-log-bin"])
            .arg("--innodb-flush-log-at-trx-commit=2");
        process.start(command)?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut connection = loop {
            process.check_running()?;
            if let Ok(connection) = Connection::open(address).await {
                break connection;
            }
            if Instant::now() > deadline {
                return Err(format!("mariadbd did not accept a connection within 30 s: {}", process.log_tail()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        connection.query("CREATE DATABASE bench").await?;
        connection
            .query("CREATE TABLE bench.locks (name VARCHAR(64) PRIMARY KEY, owner CHAR(36) NOT NULL) ENGINE=InnoDB")
            .await?;
        Ok(MariaDb { address, process })
    }

    fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    async fn lock(&self, name: &str) -> Result<TableLock, String> {
        TableLock::open(self.address, name).await
    }

    /// The server's `Questions` status: statements received from clients.
    async fn requests(&self) -> Result<u64, String> {
        let mut connection = Connection::open(self.address).await?;
        let Answer::Rows(rows) = connection.query("SHOW GLOBAL STATUS LIKE 'Questions'").await? else {
            return Err("SHOW STATUS returned no rows".into());
        };
        let value = rows.first().and_then(|row| row.get(1)?.as_deref()?.parse().ok());
        value.ok_or_else(|| "SHOW STATUS has no Questions".into())
    }
}

/// The table lock on one connection.
pub struct TableLock {
    connection: Connection,
    name: String,
}

impl TableLock {
    async fn open(address: SocketAddr, name: &str) -> Result<TableLock, String> {
        Ok(TableLock { connection: Connection::open(address).await?, name: name.to_owned() })
    }
}

impl Cycle for TableLock {
    async fn cycle(&mut self, inside: impl FnOnce() + Send) -> Result<(), String> {
        // Names and owners are ours (letters, digits, dashes): nothing to escape.
        let owner = Uuid::new_v4();
        let insert = format!("INSERT INTO bench.locks (name, owner) VALUES ('{}', '{owner}')", self.name);
        loop {
            match self.connection.query(&insert).await {
                Ok(_) => break,
                Err(QueryError::Server { code: DUPLICATE_KEY | DEADLOCK, .. }) => {
                    tokio::time::sleep(Duration::from_millis(1)).await
                }
                Err(other) => return Err(other.to_string()),
            }
        }
        inside();
        let delete = format!("DELETE FROM bench.locks WHERE name = '{}' AND owner = '{owner}'", self.name);
        match self.connection.query(&delete).await? {
            Answer::Done { affected: 1 } => Ok(()),
            other => Err(format!("the release found the row gone or someone else's ({other:?})")),
        }
    }
}

/// What a statement returned.
#[derive(Debug)]
enum Answer {
    /// An OK packet.
    Done { affected: u64 },
    /// A text result set, `None` for SQL NULL.
    Rows(Vec<Vec<Option<String>>>),
}

/// Why a statement failed: the server said no (with its error code), or the connection broke.
#[derive(Debug)]
enum QueryError {
    Server { code: u16, message: String },
    Broken(String),
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Server { code, message } => write!(f, "mariadb error {code}: {message}"),
            QueryError::Broken(why) => write!(f, "mariadb connection: {why}"),
        }
    }
}

impl From<QueryError> for String {
    fn from(error: QueryError) -> String {
        error.to_string()
    }
}

fn broken(error: impl std::fmt::Display) -> QueryError {
    QueryError::Broken(error.to_string())
}

/// `CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION`:
/// 4.1 packets and a length-prefixed (here empty) auth response; no EOF deprecation, no plugins.
const CAPABILITIES: u32 = 0x0001 | 0x0200 | 0x2000 | 0x8000;
/// `utf8mb4_general_ci`.
const CHARSET: u8 = 45;

/// One MySQL-protocol connection, logged in as root without a password.
struct Connection {
    stream: BufStream<TcpStream>,
    /// The sequence id of the next packet, in either direction.
    sequence: u8,
}

impl Connection {
    async fn open(address: SocketAddr) -> Result<Connection, QueryError> {
        let stream = TcpStream::connect(address).await.map_err(broken)?;
        // One small request at a time: Nagle would hold each back for the previous answer's ACK.
        stream.set_nodelay(true).map_err(broken)?;
        let mut connection = Connection { stream: BufStream::new(stream), sequence: 0 };
        let handshake = connection.read_packet().await?;
        match handshake.first() {
            Some(10) => {}
            Some(0xff) => return Err(server_error(&handshake)),
            _ => return Err(QueryError::Broken("not a protocol 10 handshake".into())),
        }
        let mut response = Vec::with_capacity(64);
        response.extend_from_slice(&CAPABILITIES.to_le_bytes());
        response.extend_from_slice(&(1u32 << 24).to_le_bytes());
        response.push(CHARSET);
        response.extend_from_slice(&[0; 23]);
        response.extend_from_slice(b"root\0");
        response.push(0);
        connection.write_packet(&response).await?;
        let answer = connection.read_packet().await?;
        match answer.first() {
            Some(0x00) => Ok(connection),
            Some(0xff) => Err(server_error(&answer)),
            _ => Err(QueryError::Broken("the server asks for authentication (no --skip-grant-tables?)".into())),
        }
    }

    async fn query(&mut self, sql: &str) -> Result<Answer, QueryError> {
        self.sequence = 0;
        let mut packet = Vec::with_capacity(sql.len() + 1);
        packet.push(0x03); // COM_QUERY
        packet.extend_from_slice(sql.as_bytes());
        self.write_packet(&packet).await?;
        let first = self.read_packet().await?;
        match first.first() {
            Some(0x00) => Ok(Answer::Done { affected: length_encoded(&first[1..]).map_or(0, |(value, _)| value) }),
            Some(0xff) => Err(server_error(&first)),
            _ => {
                let columns = length_encoded(&first).ok_or_else(|| broken("bad column count"))?.0;
                // Column definitions, then the EOF that ends them.
                for _ in 0..=columns {
                    self.read_packet().await?;
                }
                let mut rows = Vec::new();
                loop {
                    let row = self.read_packet().await?;
                    match row.first() {
                        Some(0xfe) if row.len() < 9 => return Ok(Answer::Rows(rows)),
                        Some(0xff) => return Err(server_error(&row)),
                        _ => rows.push(text_row(&row)),
                    }
                }
            }
        }
    }

    async fn read_packet(&mut self) -> Result<Vec<u8>, QueryError> {
        let mut header = [0; 4];
        self.stream.read_exact(&mut header).await.map_err(broken)?;
        let length = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
        self.sequence = header[3].wrapping_add(1);
        let mut payload = vec![0; length];
        self.stream.read_exact(&mut payload).await.map_err(broken)?;
        Ok(payload)
    }

    async fn write_packet(&mut self, payload: &[u8]) -> Result<(), QueryError> {
        let length = u32::try_from(payload.len()).ok().filter(|&length| length < 1 << 24);
        let length = length.ok_or_else(|| broken("statement too long for one packet"))?;
        let mut header = length.to_le_bytes();
        header[3] = self.sequence;
        self.sequence = self.sequence.wrapping_add(1);
        self.stream.write_all(&header).await.map_err(broken)?;
        self.stream.write_all(payload).await.map_err(broken)?;
        self.stream.flush().await.map_err(broken)
    }
}

/// An ERR packet: `0xff`, the code, then `#` and the SQL state (absent in early errors), then
/// the message.
fn server_error(packet: &[u8]) -> QueryError {
    let code = u16::from_le_bytes([packet.get(1).copied().unwrap_or(0), packet.get(2).copied().unwrap_or(0)]);
    let rest = packet.get(3..).unwrap_or_default();
    let message = if rest.first() == Some(&b'#') { rest.get(6..).unwrap_or_default() } else { rest };
    QueryError::Server { code, message: String::from_utf8_lossy(message).into_owned() }
}

/// A length-encoded integer at the start of `bytes`: its value and how many bytes it took.
fn length_encoded(bytes: &[u8]) -> Option<(u64, usize)> {
    let width = match *bytes.first()? {
        small @ 0..=0xfa => return Some((u64::from(small), 1)),
        0xfc => 2,
        0xfd => 3,
        0xfe => 8,
        _ => return None,
    };
    let mut value = [0; 8];
    value[..width].copy_from_slice(bytes.get(1..=width)?);
    Some((u64::from_le_bytes(value), 1 + width))
}

/// The columns of a text result row: length-encoded strings, `0xfb` for NULL.
fn text_row(mut bytes: &[u8]) -> Vec<Option<String>> {
    let mut columns = Vec::new();
    while let Some(&first) = bytes.first() {
        if first == 0xfb {
            columns.push(None);
            bytes = &bytes[1..];
            continue;
        }
        let Some((length, width)) = length_encoded(bytes) else { break };
        let end = (width + length as usize).min(bytes.len());
        columns.push(Some(String::from_utf8_lossy(&bytes[width..end]).into_owned()));
        bytes = &bytes[end..];
    }
    columns
}
