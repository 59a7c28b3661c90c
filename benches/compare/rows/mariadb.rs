//! The MariaDB row: a lock table whose primary key is the lock name. Acquire inserts the row
//! and, while someone else's row is there (duplicate key), sleeps 1 ms and retries; release
//! deletes the row if it is still ours. On a `mariadbd` of our own, with a fresh data directory.
//!
//! The client is the little of the MySQL protocol these statements need (handshake v10, an
//! empty-password HandshakeResponse41 that `--skip-grant-tables` accepts, `COM_QUERY`, OK, ERR
//! and text result sets), over one TCP connection per lock (`protocol`), so the row costs no dependency.

mod protocol;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use uuid::Uuid;

use self::protocol::{Answer, Connection, QueryError};
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
    async fn cycle(&mut self, inside: impl Future<Output = Result<(), String>> + Send) -> Result<(), String> {
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
        inside.await?;
        let delete = format!("DELETE FROM bench.locks WHERE name = '{}' AND owner = '{owner}'", self.name);
        match self.connection.query(&delete).await? {
            Answer::Done { affected: 1 } => Ok(()),
            other => Err(format!("the release found the row gone or someone else's ({other:?})")),
        }
    }
}
