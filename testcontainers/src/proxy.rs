use std::io;
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::HarnessError;

/// A TCP proxy on a loopback port in front of one server, to cut a client off and let it back.
///
/// Connect the client to [`Proxy::connect_string`]. [`Proxy::cut`] closes every proxied
/// connection and refuses new ones until [`Proxy::heal`]. Dropping the proxy stops it and closes
/// its connections.
#[derive(Debug)]
pub struct Proxy {
    address: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    target: SocketAddr,
    stopping: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    cut: bool,
    connections: Vec<TcpStream>,
}

impl Proxy {
    /// Starts a proxy to `target` on a free loopback port.
    ///
    /// # Errors
    /// [`HarnessError::Io`] when no port can be bound.
    pub fn start(target: SocketAddr) -> Result<Self, HarnessError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(HarnessError::io("bind the proxy's port"))?;
        let address = listener
            .local_addr()
            .map_err(HarnessError::io("bind the proxy's port"))?;
        let shared = Arc::new(Shared {
            target,
            stopping: AtomicBool::new(false),
            state: Mutex::default(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("zk-proxy".into())
                .spawn(move || accept_loop(&listener, &shared))
                .map_err(HarnessError::io("start the proxy thread"))?
        };
        Ok(Proxy {
            address,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// `host:port` of the proxy, for the client to connect to.
    pub fn connect_string(&self) -> String {
        self.address.to_string()
    }

    /// The server behind the proxy.
    pub fn target(&self) -> SocketAddr {
        self.shared.target
    }

    /// Closes every proxied connection and refuses new ones until [`Self::heal`].
    pub fn cut(&self) {
        let mut state = self.shared.lock();
        state.cut = true;
        for connection in state.connections.drain(..) {
            let _ = connection.shutdown(Shutdown::Both);
        }
    }

    /// Lets clients connect through the proxy again.
    pub fn heal(&self) {
        self.shared.lock().cut = false;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.cut();
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect(self.address);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for incoming in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = incoming else { continue };
        if shared.lock().cut {
            continue; // dropped: the client sees its connection refused at once
        }
        let Ok(server) = TcpStream::connect(shared.target) else {
            continue;
        };
        if let Err(err) = pump_both_ways(client, server, shared) {
            eprintln!("zk-proxy: cannot forward a connection: {err}");
        }
    }
}

fn pump_both_ways(client: TcpStream, server: TcpStream, shared: &Shared) -> io::Result<()> {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    {
        let mut state = shared.lock();
        state.connections.push(client.try_clone()?);
        state.connections.push(server.try_clone()?);
    }
    for (mut from, mut to) in [(client.try_clone()?, server.try_clone()?), (server, client)] {
        std::thread::Builder::new()
            .name("zk-proxy-pump".into())
            .spawn(move || {
                let _ = io::copy(&mut from, &mut to);
                let _ = from.shutdown(Shutdown::Both);
                let _ = to.shutdown(Shutdown::Both);
            })?;
    }
    Ok(())
}
