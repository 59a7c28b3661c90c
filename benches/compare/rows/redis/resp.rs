//! The little of RESP the Redis row needs: commands as arrays of bulk strings, one at a time,
//! over one TCP connection.

use std::net::SocketAddr;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

/// The replies these commands get; an error reply (`-ERR ...`) is an `Err` of
/// [`Connection::command`].
#[derive(Debug)]
pub(super) enum Reply {
    Simple(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
}

/// One RESP connection: commands go out as arrays of bulk strings, one at a time.
pub(super) struct Connection {
    stream: BufStream<TcpStream>,
    buffer: Vec<u8>,
}

impl Connection {
    pub(super) async fn open(address: SocketAddr) -> Result<Connection, String> {
        let stream = TcpStream::connect(address).await.map_err(|e| format!("connect to redis: {e}"))?;
        // One small request at a time: Nagle would hold each back for the previous answer's ACK.
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Connection { stream: BufStream::new(stream), buffer: Vec::new() })
    }

    pub(super) async fn command(&mut self, args: &[&str]) -> Result<Reply, String> {
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
