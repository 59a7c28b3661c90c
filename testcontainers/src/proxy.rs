use std::io::{self, BufReader, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::{wire, HarnessError};

/// TCP proxies on loopback ports in front of one server or every member of an ensemble, to cut a
/// client off, black-hole its traffic, lose the server's replies, or have a request refused as a
/// throttling server refuses it, and to heal.
///
/// Connect the client to [`Proxy::connect_string`] (one proxied address per server). Dropping
/// the proxy stops it and closes its connections.
///
/// The proxy forwards whole ZooKeeper frames, so a fault starts and ends between two requests
/// or replies, never inside one.
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
    /// Operations whose next request is to be throttled, in the order they were armed.
    armed: Mutex<Vec<ThrottledOperation>>,
    throttled: AtomicUsize,
    /// The type of every request the client sent, pings left out, in order.
    requests: Mutex<Vec<i32>>,
    /// Requests and replies (watch events included) that a fault lost, pings and the
    /// connection handshake left out.
    lost_requests: AtomicUsize,
    lost_replies: AtomicUsize,
}

/// A kind of request that [`Proxy::throttle_next`] can have refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThrottledOperation {
    /// `create` in any of its forms: plain (opcode 1, what a client sends to a server older
    /// than 3.5), `create2` (15, what zookeeper-client sends otherwise), a container (19, what
    /// its `mkdir` sends for parents) or a node with a TTL (21).
    Create,
    /// `delete` (opcode 2).
    Delete,
    /// `getData` (opcode 4), watched or not.
    GetData,
    /// `getChildren` (opcode 8, zookeeper-client's `list_children`) or `getChildren2` (12, its
    /// `get_children`, which also returns the parent's stat), watched or not.
    GetChildren,
}

impl ThrottledOperation {
    /// Whether a request of type `opcode` carries this operation. A `multi` (14, 22) carries
    /// several and is never one of these.
    fn is_sent_as(self, opcode: i32) -> bool {
        let opcodes: &[i32] = match self {
            ThrottledOperation::Create => &[1, 15, 19, 21],
            ThrottledOperation::Delete => &[2],
            ThrottledOperation::GetData => &[4],
            ThrottledOperation::GetChildren => &[8, 12],
        };
        opcodes.contains(&opcode)
    }
}

/// ZooKeeper's opcode for a ping.
const PING: i32 = 11;

/// The xid of a ping and of its reply.
const PING_XID: i32 = -2;

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
            armed: Mutex::default(),
            throttled: AtomicUsize::new(0),
            requests: Mutex::default(),
            lost_requests: AtomicUsize::new(0),
            lost_replies: AtomicUsize::new(0),
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

    /// Has the next request for `operation`, on any connection of this proxy, refused as a
    /// ZooKeeper 3.6+ server with request throttling refuses it: the request does not run and
    /// its reply is the error `Throttled` (-127, `zookeeper_client::Error::Throttled`) with no
    /// body. Later requests pass as before. Each call arms one more request.
    ///
    /// The order of replies stays the server's: the request is replaced by one with the same
    /// xid that runs nothing (an unwatched `exists` on its path), and that one's reply is
    /// rewritten into the refusal, keeping its xid and zxid. A request lost by another fault
    /// ([`Self::blackhole`]) is not the one throttled.
    pub fn throttle_next(&self, operation: ThrottledOperation) {
        self.shared.armed().push(operation);
    }

    /// How many requests this proxy has answered with `Throttled` so far (see
    /// [`Self::throttle_next`]): to tell that a throttle armed was used.
    pub fn throttled_count(&self) -> usize {
        self.shared.throttled.load(Ordering::SeqCst)
    }

    /// The type (ZooKeeper opcode) of every request that clients sent through this proxy, in
    /// the order they arrived, pings left out: `1`/`15` create, `2` delete, `3` exists, `4`
    /// getData, `8`/`12` getChildren, `9` sync, `14` multi, ... (ZooKeeper's `ZooDefs.OpCode`).
    /// To check what a client sends, not only what it gets.
    pub fn requests_sent(&self) -> Vec<i32> {
        lock(&self.shared.requests).clone()
    }

    /// How many of the client's requests a fault ([`Self::blackhole`]) has lost so far, pings
    /// and connection handshakes left out: to tell a partition that met the client's traffic
    /// from one it slept through.
    pub fn requests_lost(&self) -> usize {
        self.shared.lost_requests.load(Ordering::SeqCst)
    }

    /// How many of the server's replies and watch events a fault ([`Self::blackhole`],
    /// [`Self::drop_replies`]) has lost so far, pings and connection handshakes left out.
    pub fn replies_lost(&self) -> usize {
        self.shared.lost_replies.load(Ordering::SeqCst)
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
    fn lock(&self) -> MutexGuard<'_, Vec<TcpStream>> {
        lock(&self.connections)
    }

    fn armed(&self) -> MutexGuard<'_, Vec<ThrottledOperation>> {
        lock(&self.armed)
    }

    /// What to send the server for `request`: a stand-in when it is the next request of an
    /// armed operation (its xid is then recorded in `throttled`), else the request itself.
    fn forward_request(&self, request: Vec<u8>, throttled: &Mutex<Vec<i32>>) -> Vec<u8> {
        let (Some(opcode), Some(xid)) = (wire::opcode(&request), wire::xid(&request)) else {
            return request;
        };
        if opcode != PING {
            lock(&self.requests).push(opcode);
        }
        let mut armed = self.armed();
        let Some(position) = armed.iter().position(|operation| operation.is_sent_as(opcode)) else {
            return request;
        };
        let Some(stand_in) = wire::stand_in(&request) else {
            return request;
        };
        armed.remove(position);
        // Recorded before the stand-in leaves, so its reply cannot come back first.
        lock(throttled).push(xid);
        stand_in
    }

    /// Counts a lost frame that is neither a ping nor its reply.
    fn count_lost(&self, frame: &[u8], direction: Direction) {
        match direction {
            Direction::Requests if wire::opcode(frame).is_some_and(|opcode| opcode != PING) => {
                self.lost_requests.fetch_add(1, Ordering::SeqCst);
            }
            Direction::Replies if wire::xid(frame).is_some_and(|xid| xid != PING_XID) => {
                self.lost_replies.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
    }

    /// What to send the client for `reply`: the refusal when it answers a throttled request.
    fn forward_reply(&self, reply: Vec<u8>, throttled: &Mutex<Vec<i32>>) -> Vec<u8> {
        let Some(xid) = wire::xid(&reply) else {
            return reply;
        };
        {
            let mut throttled = lock(throttled);
            let Some(position) = throttled.iter().position(|&waiting| waiting == xid) else {
                return reply;
            };
            throttled.swap_remove(position);
        }
        match wire::throttled(&reply) {
            Some(refusal) => {
                self.throttled.fetch_add(1, Ordering::SeqCst);
                refusal
            }
            None => reply,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
                let _ = pump(client, None, Arc::clone(shared), Direction::Requests, Arc::default());
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
    let throttled = Arc::default();
    pump(
        client.try_clone()?,
        Some(server.try_clone()?),
        Arc::clone(shared),
        Direction::Requests,
        Arc::clone(&throttled),
    )?;
    pump(server, Some(client), Arc::clone(shared), Direction::Replies, throttled)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Client to server.
    Requests,
    /// Server to client.
    Replies,
}

/// Copies `from` to `to` (nowhere when `None`) frame by frame in a thread, dropping frames while
/// the mode says so and throttling as armed; `throttled` holds the xids of this connection's
/// throttled requests whose replies are still to come. When either side ends, or `from` sends
/// what is not a frame, both are shut down.
fn pump(
    from: TcpStream,
    mut to: Option<TcpStream>,
    shared: Arc<Shared>,
    direction: Direction,
    throttled: Arc<Mutex<Vec<i32>>>,
) -> io::Result<()> {
    std::thread::Builder::new().name("zk-proxy-pump".into()).spawn(move || {
        let mut reader = BufReader::new(&from);
        // The connect request or response, which has no header.
        let mut connecting = true;
        while let Ok(frame) = wire::read_frame(&mut reader) {
            let mode = shared.mode.load(Ordering::SeqCst);
            let lost = mode == BLACKHOLE || (direction == Direction::Replies && mode == DROP_REPLIES);
            let frame = match (lost, connecting, direction) {
                (true, ..) => {
                    if !connecting {
                        shared.count_lost(&frame, direction);
                    }
                    None
                }
                (false, true, _) => Some(frame),
                (false, false, Direction::Requests) => Some(shared.forward_request(frame, &throttled)),
                (false, false, Direction::Replies) => Some(shared.forward_reply(frame, &throttled)),
            };
            connecting = false;
            if let (Some(frame), Some(to)) = (frame, to.as_mut()) {
                if to.write_all(&frame).is_err() {
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
