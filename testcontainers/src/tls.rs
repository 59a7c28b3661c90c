//! TLS for a test server: a throwaway certificate authority and a server certificate it signs,
//! made with the JDK's `keytool` (no other tool needed), and the Netty jars ZooKeeper's secure
//! port needs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::HarnessError;

/// The password of the throwaway key stores (they live in the server's temporary directory).
const STORE_PASSWORD: &str = "zklock-test";

/// The files of a server's TLS.
#[derive(Debug, Clone)]
pub(crate) struct TlsFiles {
    /// The server's key, its certificate chain and the trusted CA, PKCS#12.
    pub(crate) key_store: PathBuf,
    /// The CA's certificate, PEM: what a client trusts.
    pub(crate) ca_pem: PathBuf,
}

impl TlsFiles {
    /// The `zoo.cfg` lines of a secure client port on `port` with these files.
    pub(crate) fn config(&self, port: u16) -> String {
        let store = self.key_store.display();
        format!(
            "secureClientPort={port}\n\
             secureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={store}\n\
             ssl.keyStore.password={STORE_PASSWORD}\n\
             ssl.keyStore.type=PKCS12\n\
             ssl.trustStore.location={store}\n\
             ssl.trustStore.password={STORE_PASSWORD}\n\
             ssl.trustStore.type=PKCS12\n\
             ssl.clientAuth=none\n"
        )
    }
}

/// Makes a CA (basic constraints CA) and a server certificate it signs for 127.0.0.1 and
/// `localhost` in `dir`, valid for two days. A self-signed server certificate is not enough:
/// rustls (zookeeper-client's TLS) wants a chain to a CA.
pub(crate) fn make_certificates(dir: &Path) -> Result<TlsFiles, HarnessError> {
    let ca_store = dir.join("ca.p12");
    let key_store = dir.join("server.p12");
    let ca_pem = dir.join("ca.pem");
    let request = dir.join("server.csr");
    let signed = dir.join("server.pem");
    let chain = dir.join("chain.pem");
    let store =
        |path: &Path| ["-keystore".to_owned(), path.display().to_string(), "-storetype".into(), "PKCS12".into()];
    let password = ["-storepass", STORE_PASSWORD, "-keypass", STORE_PASSWORD];
    let key_pair = ["-genkeypair", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2"];
    keytool(
        &[&key_pair[..], &["-alias", "ca", "-dname", "CN=zklock-test-ca", "-ext", "bc:c"]],
        &store(&ca_store),
        &password,
    )?;
    keytool(&[&["-exportcert", "-rfc", "-alias", "ca", "-file"], &[&path(&ca_pem)]], &store(&ca_store), &password)?;
    keytool(&[&key_pair[..], &["-alias", "server", "-dname", "CN=localhost"]], &store(&key_store), &password)?;
    keytool(&[&["-certreq", "-alias", "server", "-file"], &[&path(&request)]], &store(&key_store), &password)?;
    let extensions =
        ["-ext", "SAN=ip:127.0.0.1,dns:localhost", "-ext", "ku:c=digitalSignature", "-ext", "eku=serverAuth"];
    let sign = ["-gencert", "-rfc", "-alias", "ca", "-validity", "2", "-infile"];
    keytool(
        &[&sign[..], &[&path(&request), "-outfile", &path(&signed)], &extensions[..]],
        &store(&ca_store),
        &password,
    )?;
    let both = [std::fs::read_to_string(&signed), std::fs::read_to_string(&ca_pem)];
    let [Ok(signed_pem), Ok(ca_text)] = both else {
        return Err(HarnessError::Tls("cannot read the certificates keytool wrote".into()));
    };
    std::fs::write(&chain, signed_pem + &ca_text).map_err(HarnessError::io("write the certificate chain"))?;
    keytool(
        &[&["-importcert", "-noprompt", "-alias", "ca", "-file"], &[&path(&ca_pem)]],
        &store(&key_store),
        &password,
    )?;
    keytool(
        &[&["-importcert", "-noprompt", "-alias", "server", "-file"], &[&path(&chain)]],
        &store(&key_store),
        &password,
    )?;
    Ok(TlsFiles { key_store, ca_pem })
}

/// The Netty jars of Debian's `libnetty-java` (a dependency of its `zookeeper` package) that the
/// secure port's `NettyServerCnxnFactory` loads; Debian's ZooKeeper jar does not name them.
pub(crate) fn netty_classpath() -> String {
    ["buffer", "codec", "common", "handler", "resolver", "transport", "transport-native-unix-common"]
        .iter()
        .map(|part| format!("/usr/share/java/netty-{part}.jar"))
        .filter(|jar| Path::new(jar).is_file())
        .collect::<Vec<_>>()
        .join(":")
}

fn path(path: &Path) -> String {
    path.display().to_string()
}

fn keytool(parts: &[&[&str]], store: &[String], password: &[&str]) -> Result<(), HarnessError> {
    let keytool = match std::env::var_os("JAVA_HOME").filter(|home| !home.is_empty()) {
        Some(home) => PathBuf::from(home).join("bin/keytool"),
        None => PathBuf::from("keytool"),
    };
    let mut command = Command::new(keytool);
    command.args(parts.iter().flat_map(|part| part.iter())).args(store).args(password);
    let output = command.output().map_err(HarnessError::io("run keytool"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(HarnessError::Tls(format!("keytool {:?} failed: {}", parts, String::from_utf8_lossy(&output.stderr))))
}
