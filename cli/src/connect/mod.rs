//! Reaching ZooKeeper: hosts, session, authentication and TLS, from the command line or the
//! environment; and closing the session on the way out. Its connect strings are checked in
//! `connect_string.rs`.

mod connect_string;

use std::path::Path;
use std::time::Duration;

use zookeeper_client::{Client, Connector, SessionState, StateWatcher, TlsOptions};

use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::cli::Connection;
use crate::output::duration::human;
use crate::output::exit::{Failure, Outcome};
use crate::output::stderr;

/// How long the probe before connecting may take: a reachable server answers a TCP connect
/// within milliseconds, and the client's own connect timeout covers a slower one.
const PROBE_PATIENCE: Duration = Duration::from_secs(1);

/// Connects to ZooKeeper, within the connect timeout, authenticated as asked; fails fast on a
/// malformed connect string (64), servers that cannot be resolved or all refuse connections
/// (69), and a chroot that does not exist (69).
pub async fn connect(connection: &Connection) -> Result<Client, Failure> {
    let hosts = connection
        .zk
        .clone()
        .or_else(|| std::env::var("ZK_CONNECT").ok().filter(|hosts| !hosts.trim().is_empty()))
        .unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let parsed = connect_string::parse(&hosts).map_err(|reason| Failure::new(Outcome::Usage, reason))?;
    let mut connector = Client::connector().with_session_timeout(connection.session_timeout);
    for (scheme, credentials) in credentials(connection)? {
        connector = connector.with_auth(&scheme, credentials.as_bytes());
    }
    let tls = tls_options(connection)?;
    probe(&parsed.servers, connection.connect_timeout).await.map_err(|reason| {
        Failure::new(Outcome::Unavailable, format!("cannot connect to ZooKeeper at {hosts}: {reason}"))
    })?;
    let connecting = start(connector, tls, hosts.clone());
    let client = match tokio::time::timeout(connection.connect_timeout, connecting).await {
        Ok(Ok(client)) => client,
        Ok(Err(zookeeper_client::Error::AuthFailed)) => {
            return Err(Failure::new(Outcome::NotAllowed, format!("ZooKeeper at {hosts} refused our credentials")))
        }
        Ok(Err(err)) => {
            return Err(Failure::new(Outcome::Unavailable, format!("cannot connect to ZooKeeper at {hosts}: {err}")))
        }
        Err(_) => {
            let within = connection.connect_timeout;
            return Err(Failure::new(
                Outcome::Unavailable,
                format!("no ZooKeeper session at {hosts} within {}", human(within)),
            ));
        }
    };
    if let Some(chroot) = &parsed.chroot {
        // Inside the chroot, "/" is the chroot itself.
        if let Ok(None) = client.check_stat("/").await {
            let message = format!("the chroot {chroot} does not exist on ZooKeeper at {hosts} (create it first)");
            return Err(Failure::new(Outcome::Unavailable, message));
        }
    }
    Ok(client)
}

/// Says when the server granted another session timeout than asked for (a notice: once, for
/// the first session, and not with `--quiet`).
pub fn say_granted(client: &Client, connection: &Connection) {
    let (granted, asked) = (client.session_timeout(), connection.session_timeout);
    if granted != asked {
        let (granted, asked) = (human(granted), human(asked));
        stderr::notice(&format!("the server granted a session timeout of {granted}, not the {asked} asked for"));
    }
}

/// Resolves the servers and opens a TCP connection to each address, all at once: a name
/// nobody resolves, or servers that all refuse, fail now with the reason, where the client would
/// retry until the connect timeout. Anything else (a server that does not answer within a
/// moment) is left to the client and its timeout.
async fn probe(servers: &[(String, u16)], connect_timeout: Duration) -> Result<(), String> {
    let probing = async {
        let mut addresses = Vec::new();
        let mut unresolved = Vec::new();
        for (host, port) in servers {
            match tokio::net::lookup_host((host.as_str(), *port)).await {
                Ok(found) => addresses.extend(found),
                Err(err) => unresolved.push(format!("{host}: {err}")),
            }
        }
        if addresses.is_empty() {
            return Err(format!("cannot resolve {}", unresolved.join("; ")));
        }
        let mut attempts: JoinSet<_> = addresses.into_iter().map(TcpStream::connect).collect();
        let mut all_refused = true;
        while let Some(attempt) = attempts.join_next().await {
            match attempt {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(err)) if err.kind() == std::io::ErrorKind::ConnectionRefused => {}
                _ => all_refused = false,
            }
        }
        if all_refused {
            return Err("connection refused".to_owned());
        }
        Ok(())
    };
    tokio::time::timeout(PROBE_PATIENCE.min(connect_timeout), probing).await.unwrap_or(Ok(()))
}

async fn start(
    connector: Connector,
    tls: Option<TlsOptions>,
    hosts: String,
) -> Result<Client, zookeeper_client::Error> {
    match tls {
        Some(tls) => connector.with_tls(tls).secure_connect(&hosts).await,
        None => connector.connect(&hosts).await,
    }
}

/// `--auth` values, then the lines of `--auth-file` (blank lines and `#` comments skipped), as
/// (scheme, credentials).
fn credentials(connection: &Connection) -> Result<Vec<(String, String)>, Failure> {
    let mut lines = connection.auth.clone();
    if let Some(file) = &connection.auth_file {
        let text = read(file, "--auth-file")?;
        lines.extend(
            text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).map(str::to_owned),
        );
    }
    lines.iter().map(|line| parse_auth(line)).collect()
}

/// `scheme:credentials`, e.g. `digest:user:password`.
fn parse_auth(text: &str) -> Result<(String, String), Failure> {
    match text.split_once(':') {
        // The server would take a digest without a password as the identity `user:` with no
        // error, and the ACLs it then meets would refuse everything for a reason hard to see.
        Some(("digest", credentials)) if credentials.split_once(':').is_none_or(|(user, _)| user.is_empty()) => Err(
            Failure::new(Outcome::Usage, "--auth digest takes digest:USER:PASSWORD (the user, a colon, the password)"),
        ),
        Some((scheme, credentials)) if !scheme.is_empty() && !credentials.is_empty() => {
            Ok((scheme.to_owned(), credentials.to_owned()))
        }
        _ => Err(Failure::new(Outcome::Usage, "--auth takes SCHEME:CREDENTIALS, e.g. digest:user:password")),
    }
}

/// The TLS options, when a CA to trust was given.
fn tls_options(connection: &Connection) -> Result<Option<TlsOptions>, Failure> {
    let Some(ca) = &connection.tls_ca else { return Ok(None) };
    let bad = |what: &str, err: zookeeper_client::Error| Failure::new(Outcome::Usage, format!("{what}: {err}"));
    let mut tls = TlsOptions::new().with_pem_ca(&read(ca, "--tls-ca")?).map_err(|err| bad("--tls-ca", err))?;
    if let (Some(cert), Some(key)) = (&connection.tls_cert, &connection.tls_key) {
        tls = tls
            .with_pem_identity(&read(cert, "--tls-cert")?, &read(key, "--tls-key")?)
            .map_err(|err| bad("--tls-cert/--tls-key", err))?;
    }
    Ok(Some(tls))
}

fn read(file: &Path, option: &str) -> Result<String, Failure> {
    std::fs::read_to_string(file)
        .map_err(|err| Failure::new(Outcome::Usage, format!("{option} {}: {err}", file.display())))
}

/// Closes the session and waits (a little) for the server to confirm: the server then deletes
/// every node the session still had, such as a waiting node of an acquire cut short by a signal.
pub async fn close_session(client: Client, mut states: StateWatcher) {
    // Out of reach, the close cannot be sent: the session expires on the server by itself.
    if !matches!(states.peek_state(), SessionState::SyncConnected | SessionState::ConnectedReadOnly) {
        return;
    }
    // The last handle going sends CloseSession; background tasks may hold a handle a moment more.
    drop(client);
    let closed = async {
        while !matches!(states.peek_state(), SessionState::Closed | SessionState::Expired) {
            states.changed().await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), closed).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_splits_at_the_first_colon() {
        assert_eq!(parse_auth("digest:user:pw").unwrap(), ("digest".to_owned(), "user:pw".to_owned()));
        assert!(parse_auth("digest").is_err());
        assert!(parse_auth(":x").is_err());
        assert!(parse_auth("digest:").is_err());
        for no_password in ["digest:user", "digest::pw"] {
            let failure = parse_auth(no_password).unwrap_err();
            assert!(failure.message.contains("digest:USER:PASSWORD"), "{no_password}: {}", failure.message);
        }
        assert_eq!(parse_auth("digest:user:").unwrap(), ("digest".to_owned(), "user:".to_owned()));
    }
}
