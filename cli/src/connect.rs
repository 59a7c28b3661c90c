//! Reaching ZooKeeper: hosts, session, authentication and TLS, from the command line or the
//! environment; and closing the session on the way out.

use std::path::Path;
use std::time::Duration;

use zookeeper_client::{Client, Connector, SessionState, StateWatcher, TlsOptions};

use crate::cli::Connection;
use crate::exit::{Failure, Outcome};

/// Connects to ZooKeeper, within the connect timeout, authenticated as asked.
pub async fn connect(connection: &Connection) -> Result<Client, Failure> {
    let hosts = connection
        .zk
        .clone()
        .or_else(|| std::env::var("ZK_CONNECT").ok().filter(|hosts| !hosts.is_empty()))
        .unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let mut connector = Client::connector().with_session_timeout(connection.session_timeout);
    for (scheme, credentials) in credentials(connection)? {
        connector = connector.with_auth(&scheme, credentials.as_bytes());
    }
    let tls = tls_options(connection)?;
    let connecting = start(connector, tls, hosts.clone());
    match tokio::time::timeout(connection.connect_timeout, connecting).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(zookeeper_client::Error::AuthFailed)) => {
            Err(Failure::new(Outcome::NotAllowed, format!("ZooKeeper at {hosts} refused our credentials")))
        }
        Ok(Err(err)) => {
            Err(Failure::new(Outcome::Unavailable, format!("cannot connect to ZooKeeper at {hosts}: {err}")))
        }
        Err(_) => Err(Failure::new(
            Outcome::Unavailable,
            format!("cannot connect to ZooKeeper at {hosts} within {:?}", connection.connect_timeout),
        )),
    }
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
    }
}
