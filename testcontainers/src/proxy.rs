use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::HarnessError;

/// TCP proxies on loopback ports in front of one server or every member of an ensemble, to cut a
/// client off, black-hole its traffic, or lose the server's replies, and to heal.
///
/// Connect the client to [`Proxy::connect_string`] (one proxied address per server). Dropping
/// the proxy stops it and closes its connections.
#[derive(Debug)]
pub struct Proxy {
    shared: Arc<Shared>,
    listeners: Vec<(SocketAddr, SocketAddr)>,
    acceptors: Vec<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    stopping: AtomicBool,
    mode: AtomicU8,
    connections: Mutex<Vec<TcpStream>>,
}

const PASS: u8 = 0;
const CUT: u8 = 1;
const BLACKHOLE: u8 = 2;
const DROP_REPLIES: u8 = 3;

impl Proxy {
    /// Starts a proxy to one server.
    ///
    /// # Errors
    /// [`HarnessError::Io`] when no port can be bound.
    pub fn start(target: SocketAddr) -> Result<Self, HarnessError> {
        Self::start_many(&[target])
    }

    /// Starts one proxied port per target, all controlled together (for an ensemble).
    ///
    /// # Errors
    /// [`HarnessError::Io`] when no port can be bound.
    pub fn start_many(targets: &[SocketAddr]) -> Result<Self, HarnessError> {
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            mode: AtomicU8::new(PASS),
            connections: Mutex::default(),
        });
        let mut proxy = Proxy { shared, listeners: Vec::new(), acceptors: Vec::new() };
        for &target in targets {
            let listener =
                TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(HarnessError::io("bind the proxy's port"))?;
            let address = listener.local_addr().map_err(HarnessError::io("bind the proxy's port"))?;
            let shared = Arc::clone(&proxy.shared);
            let acceptor = std::thread::Builder::new()
                .name("zk-proxy".into())
                .spawn(move || accept_loop(&listener, target, &shared))
                .map_err(HarnessError::io("start the proxy thread"))?;
            proxy.listeners.push((address, target));
            proxy.acceptors.push(acceptor);
        }
        Ok(proxy)
    }

    /// The proxied addresses, comma separated, for the client to connect to.
    pub fn connect_string(&self) -> String {
        self.listeners.iter().map(|(address, _)| address.to_string()).collect::<Vec<_>>().join(",")
    }

    /// The first server behind the proxy.
    pub fn target(&self) -> SocketAddr {
        self.listeners[0].1
    }

    /// The servers behind the proxy, comma separated: to reach them without the proxy.
    pub fn targets_connect_string(&self) -> String {
        self.listeners.iter().map(|(_, target)| target.to_string()).collect::<Vec<_>>().join(",")
    }

    /// Closes every proxied connection and refuses new ones, until [`Self::heal`]: the client
    /// learns at once that it is disconnected.
    pub fn cut(&self) {
        self.shared.mode.store(CUT, Ordering::SeqCst);
        self.close_connections();
    }

    /// Keeps connections open but delivers nothing either way, and accepts new connections that
    /// go nowhere, until [`Self::heal`]: a partition the client only notices by its timeouts.
    pub fn blackhole(&self) {
        self.shared.mode.store(BLACKHOLE, Ordering::SeqCst);
    }

    /// Delivers the client's requests but loses the server's replies, until [`Self::heal`].
    pub fn drop_replies(&self) {
        self.shared.mode.store(DROP_REPLIES, Ordering::SeqCst);
    }

    /// Passes traffic again. Connections that were black-holed are closed, since bytes were lost
    /// in them; the client reconnects.
    pub fn heal(&self) {
        let previous = self.shared.mode.swap(PASS, Ordering::SeqCst);
        if previous == BLACKHOLE || previous == DROP_REPLIES {
            self.close_connections();
        }
    }

    fn close_connections(&self) {
        for connection in self.shared.lock().drain(..) {
            let _ = connection.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.close_connections();
        for (address, _) in &self.listeners {
            // Wake the acceptor out of accept().
            let _ = TcpStream::connect(address);
        }
        for acceptor in self.acceptors.drain(..) {
            let _ = acceptor.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<TcpStream>> {
        self.connections.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn accept_loop(listener: &TcpListener, target: SocketAddr, shared: &Arc<Shared>) {
    for incoming in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = incoming else { continue };
        match shared.mode.load(Ordering::SeqCst) {
            CUT => continue, // dropped: the client sees the connection closed at once
            BLACKHOLE => {
                // Held open, never answered.
                if let Ok(clone) = client.try_clone() {
                    shared.lock().push(clone);
                }
                let _ = pump(client, None, Arc::clone(shared), false);
                continue;
            }
            _ => {}
        }
        let Ok(server) = TcpStream::connect(target) else {
            continue;
        };
        if let Err(err) = pump_both_ways(client, server, shared) {
            eprintln!("zk-proxy: cannot forward a connection: {err}");
        }
    }
}

fn pump_both_ways(client: TcpStream, server: TcpStream, shared: &Arc<Shared>) -> io::Result<()> {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    {
        let mut connections = shared.lock();
        connections.push(client.try_clone()?);
        connections.push(server.try_clone()?);
    }
    pump(client.try_clone()?, Some(server.try_clone()?), Arc::clone(shared), false)?;
    pump(server, Some(client), Arc::clone(shared), true)
}

/// Copies `from` to `to` (nowhere when `None`) in a thread, dropping bytes while the mode says
/// so; when either side ends, both are shut down.
fn pump(mut from: TcpStream, mut to: Option<TcpStream>, shared: Arc<Shared>, is_reply: bool) -> io::Result<()> {
    std::thread::Builder::new().name("zk-proxy-pump".into()).spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            let read = match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let mode = shared.mode.load(Ordering::SeqCst);
            let lost = mode == BLACKHOLE || (is_reply && mode == DROP_REPLIES);
            if let (false, Some(to)) = (lost, to.as_mut()) {
                if to.write_all(&buffer[..read]).is_err() {
                    break;
                }
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        if let Some(to) = to {
            let _ = to.shutdown(Shutdown::Both);
        }
    })?;
    Ok(())
}
