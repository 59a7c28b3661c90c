//! ZooKeeper connect strings, checked before anything is sent: `host[:port][,host[:port]...]
//! [/chroot]`, as zookeeper-client and Java's client read them (port 2181 when left out, IPv6
//! hosts in brackets, an optional `tcp://` or `tcp+tls://` before a host).

/// A connect string's servers and chroot.
#[derive(Debug, PartialEq, Eq)]
pub struct ConnectString {
    pub servers: Vec<(String, u16)>,
    /// The chroot, when one other than `/` is given.
    pub chroot: Option<String>,
}

/// Parses `text`, or says what is wrong with it.
pub fn parse(text: &str) -> Result<ConnectString, String> {
    if text.trim().is_empty() {
        return Err("the ZooKeeper connect string is empty (want host:port[,host:port...][/chroot])".to_owned());
    }
    // The chroot follows the last server, as the client reads it.
    let last = text.rfind(',').map_or(0, |comma| comma + 1);
    let scheme =
        ["tcp://", "tcp+tls://"].iter().find(|scheme| text[last..].starts_with(**scheme)).map_or(0, |s| s.len());
    let (hosts, chroot) = match text[last + scheme..].find('/') {
        Some(at) => split_chroot(text, last + scheme + at)?,
        None => (text, None),
    };
    let servers = hosts.split(',').map(server).collect::<Result<_, _>>()?;
    Ok(ConnectString { servers, chroot })
}

fn split_chroot(text: &str, at: usize) -> Result<(&str, Option<String>), String> {
    let chroot = &text[at..];
    if chroot == "/" {
        return Ok((&text[..at], None));
    }
    zklock::validate_lock_path(chroot).map_err(|err| format!("bad chroot {chroot:?} in the connect string: {err}"))?;
    Ok((&text[..at], Some(chroot.to_owned())))
}

/// One `host[:port]`.
fn server(text: &str) -> Result<(String, u16), String> {
    let address = text.strip_prefix("tcp://").or_else(|| text.strip_prefix("tcp+tls://")).unwrap_or(text);
    let bad = |why: &str| format!("bad server {text:?} in the connect string: {why} (want host:port)");
    let (host, port) = match address.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed.split_once(']').ok_or_else(|| bad("no closing ]"))?;
            match rest {
                "" => (host, None),
                _ => (host, Some(rest.strip_prefix(':').ok_or_else(|| bad("junk after ]"))?)),
            }
        }
        None => match address.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (address, None),
        },
    };
    if text.contains(';') {
        return Err(bad("servers are separated by commas, not semicolons"));
    }
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(bad("no host"));
    }
    let port = match port {
        None => 2181,
        Some(port) => {
            port.parse::<u16>().ok().filter(|&port| port > 0).ok_or_else(|| bad("the port is not 1-65535"))?
        }
    };
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_client_reads() {
        let parsed = parse("zk1:2181,zk2,[::1]:2182/apps/locks").unwrap();
        let servers = [("zk1".to_owned(), 2181), ("zk2".to_owned(), 2181), ("::1".to_owned(), 2182)];
        assert_eq!(parsed.servers, servers);
        assert_eq!(parsed.chroot.as_deref(), Some("/apps/locks"));
        assert_eq!(parse("127.0.0.1:2181/").unwrap().chroot, None);
        assert_eq!(parse("tcp+tls://zk:2281").unwrap().servers, [("zk".to_owned(), 2281)]);
    }

    #[test]
    fn says_what_is_wrong() {
        for (text, says) in [
            ("", "empty"),
            ("   ", "empty"),
            ("127.0.0.1:abc", "port"),
            ("127.0.0.1:0", "port"),
            ("127.0.0.1:70000", "port"),
            ("zk1:2181,", "no host"),
            (":2181", "no host"),
            ("[::1", "]"),
            ("zk1:2181/a//b", "chroot"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }
}
