//! The little of the MySQL protocol the MariaDB row needs: handshake v10, an empty-password
//! HandshakeResponse41 that `--skip-grant-tables` accepts, `COM_QUERY`, OK, ERR and text result
//! sets, over one TCP connection.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

/// What a statement returned.
#[derive(Debug)]
pub(super) enum Answer {
    /// An OK packet.
    Done { affected: u64 },
    /// A text result set, `None` for SQL NULL.
    Rows(Vec<Vec<Option<String>>>),
}

/// Why a statement failed: the server said no (with its error code), or the connection broke.
#[derive(Debug)]
pub(super) enum QueryError {
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
pub(super) struct Connection {
    stream: BufStream<TcpStream>,
    /// The sequence id of the next packet, in either direction.
    sequence: u8,
}

impl Connection {
    pub(super) async fn open(address: SocketAddr) -> Result<Connection, QueryError> {
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

    pub(super) async fn query(&mut self, sql: &str) -> Result<Answer, QueryError> {
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
