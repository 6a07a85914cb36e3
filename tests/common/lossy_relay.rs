//! A UDP relay that impairs what it forwards: the tests' stand-in for a lossy internet
//! path (the test machines' kernels have no `netem`).
//!
//! The relay listens on a loopback address; each client that sends to it gets an
//! upstream socket of its own towards the server, so the server sees one peer per
//! client. Datagrams are forwarded both ways. Each one is dropped with probability
//! `loss` (decided by a seeded generator, in arrival order, so a run is reproducible),
//! delayed by `delay`, and with probability `reorder` held back `reorder_hold` more, so
//! datagrams that came after it overtake it. Every thread waits at most
//! [`POLL`] before it looks at the stop flag; dropping the relay stops and joins them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest any relay thread blocks before it checks whether to stop.
const POLL: Duration = Duration::from_millis(20);

/// The most clients one relay serves (each has an upstream socket and a thread).
const MAX_CLIENTS: usize = 64;

/// The largest datagram forwarded (SRT's default MSS is 1500 bytes).
const MAX_DATAGRAM: usize = 65_536;

/// What the relay does to the datagrams it forwards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    /// The fraction of datagrams dropped (0.0..=1.0), in each impaired direction.
    pub loss: f64,
    /// The delay added to every datagram, one way.
    pub delay: Duration,
    /// The fraction of datagrams held back `reorder_hold` more than the others.
    pub reorder: f64,
    /// How long a reordered datagram is held back beyond `delay`.
    pub reorder_hold: Duration,
    /// Whether the server's answers are impaired too (ACKs, NAKs, handshakes), not only
    /// what the client sends.
    pub both_ways: bool,
    /// The seed of the generator deciding drops and reorders.
    pub seed: u64,
}

impl Impairment {
    /// Forwards everything at once, untouched.
    pub fn none() -> Self {
        Self {
            loss: 0.0,
            delay: Duration::ZERO,
            reorder: 0.0,
            reorder_hold: Duration::ZERO,
            both_ways: true,
            seed: 1,
        }
    }

    /// Drops `loss` of the datagrams both ways, seeded with `seed`.
    pub fn loss(loss: f64, seed: u64) -> Self {
        Self {
            loss,
            seed,
            ..Self::none()
        }
    }
}

/// Which way a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// From a client to the server.
    Up,
    /// From the server back to a client.
    Down,
}

/// What the relay did in one direction.
#[derive(Debug, Default)]
struct Counters {
    received: AtomicU64,
    forwarded: AtomicU64,
    dropped: AtomicU64,
    held_back: AtomicU64,
    reordered: AtomicU64,
}

/// What the relay did in one direction, read at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirectionStats {
    /// Datagrams that reached the relay.
    pub received: u64,
    /// Datagrams sent on.
    pub forwarded: u64,
    /// Datagrams dropped on purpose.
    pub dropped: u64,
    /// Datagrams held back to be reordered.
    pub held_back: u64,
    /// Datagrams sent on after one that reached the relay later than they did.
    pub reordered: u64,
}

impl Counters {
    fn snapshot(&self) -> DirectionStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DirectionStats {
            received: get(&self.received),
            forwarded: get(&self.forwarded),
            dropped: get(&self.dropped),
            held_back: get(&self.held_back),
            reordered: get(&self.reordered),
        }
    }
}

/// What the relay did, both ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayStats {
    /// Client to server.
    pub up: DirectionStats,
    /// Server to clients.
    pub down: DirectionStats,
    /// Clients seen (each with its own upstream socket).
    pub clients: u64,
}

/// A datagram on its way through the relay.
struct Datagram {
    direction: Direction,
    /// The client it comes from or goes to.
    client: SocketAddr,
    arrived: Instant,
    bytes: Vec<u8>,
}

/// State the relay's threads share.
struct Shared {
    stop: AtomicBool,
    impairment: Mutex<Impairment>,
    up: Counters,
    down: Counters,
    clients: AtomicU64,
}

impl Shared {
    fn counters(&self, direction: Direction) -> &Counters {
        match direction {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A running relay; dropping it stops every thread and closes its sockets.
pub struct LossyRelay {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Drop for LossyRelay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Each thread ends within POLL; upstream threads are added only while running.
        loop {
            let next = lock(&self.threads).pop();
            match next {
                Some(handle) => {
                    let _ = handle.join();
                }
                None => break,
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LossyRelay {
    /// Starts a relay on `ip` (any free port) towards `server`, impairing as told.
    pub fn start(ip: Ipv4Addr, server: SocketAddr, impairment: Impairment) -> LossyRelay {
        let front = UdpSocket::bind((ip, 0)).expect("bind the relay");
        front.set_read_timeout(Some(POLL)).expect("read timeout");
        let addr = front.local_addr().expect("relay address");
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            impairment: Mutex::new(impairment),
            up: Counters::default(),
            down: Counters::default(),
            clients: AtomicU64::new(0),
        });
        let threads = Arc::new(Mutex::new(Vec::new()));
        let upstreams: Arc<Mutex<HashMap<SocketAddr, UdpSocket>>> = Arc::default();
        let (tx, rx) = mpsc::channel();
        let scheduler = {
            let front = front.try_clone().expect("clone the relay socket");
            let (shared, upstreams) = (shared.clone(), upstreams.clone());
            std::thread::spawn(move || schedule(&shared, &rx, &front, &upstreams))
        };
        let receiver = {
            let (shared, threads) = (shared.clone(), threads.clone());
            std::thread::spawn(move || {
                receive_front(&shared, &front, ip, server, &tx, &upstreams, &threads)
            })
        };
        lock(&threads).extend([scheduler, receiver]);
        LossyRelay {
            addr,
            shared,
            threads,
        }
    }

    /// Where clients send: the relay's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the impairment of the datagrams that arrive from now on.
    pub fn set(&self, impairment: Impairment) {
        *lock(&self.shared.impairment) = impairment;
    }

    /// What the relay has done so far.
    pub fn stats(&self) -> RelayStats {
        RelayStats {
            up: self.shared.up.snapshot(),
            down: self.shared.down.snapshot(),
            clients: self.shared.clients.load(Ordering::Relaxed),
        }
    }
}

/// Reads what clients send; opens an upstream socket (and its reading thread) for each
/// new client.
fn receive_front(
    shared: &Arc<Shared>,
    front: &UdpSocket,
    ip: Ipv4Addr,
    server: SocketAddr,
    tx: &Sender<Datagram>,
    upstreams: &Arc<Mutex<HashMap<SocketAddr, UdpSocket>>>,
    threads: &Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while !shared.stopped() {
        let Ok((n, client)) = front.recv_from(&mut buf) else {
            continue;
        };
        let arrived = Instant::now();
        let known = lock(upstreams).contains_key(&client);
        if !known {
            if lock(upstreams).len() >= MAX_CLIENTS {
                continue;
            }
            let Some(socket) = open_upstream(ip, server) else {
                continue;
            };
            let reader = socket.try_clone().expect("clone an upstream socket");
            lock(upstreams).insert(client, socket);
            shared.clients.fetch_add(1, Ordering::Relaxed);
            let (shared, tx) = (shared.clone(), tx.clone());
            let handle =
                std::thread::spawn(move || receive_upstream(&shared, &reader, client, &tx));
            lock(threads).push(handle);
        }
        let datagram = Datagram {
            direction: Direction::Up,
            client,
            arrived,
            bytes: buf[..n].to_vec(),
        };
        if tx.send(datagram).is_err() {
            return;
        }
    }
}

/// A socket on `ip` connected to `server`, reading with the relay's poll timeout.
fn open_upstream(ip: Ipv4Addr, server: SocketAddr) -> Option<UdpSocket> {
    let socket = UdpSocket::bind((ip, 0)).ok()?;
    socket.connect(server).ok()?;
    socket.set_read_timeout(Some(POLL)).ok()?;
    Some(socket)
}

/// Reads what the server sends to one client.
fn receive_upstream(
    shared: &Shared,
    socket: &UdpSocket,
    client: SocketAddr,
    tx: &Sender<Datagram>,
) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while !shared.stopped() {
        // A refused send (the server's port closed) shows as an error here: go on.
        let Ok(n) = socket.recv(&mut buf) else {
            continue;
        };
        let datagram = Datagram {
            direction: Direction::Down,
            client,
            arrived: Instant::now(),
            bytes: buf[..n].to_vec(),
        };
        if tx.send(datagram).is_err() {
            return;
        }
    }
}

/// A datagram waiting for its time, ordered by that time, then by arrival.
struct Pending {
    due: Instant,
    arrival: u64,
    datagram: Datagram,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.arrival) == (other.due, other.arrival)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.arrival).cmp(&(other.due, other.arrival))
    }
}

/// The relay's one deciding thread: drops, delays and holds back datagrams in arrival
/// order, and sends each when due.
fn schedule(
    shared: &Shared,
    rx: &Receiver<Datagram>,
    front: &UdpSocket,
    upstreams: &Mutex<HashMap<SocketAddr, UdpSocket>>,
) {
    let seed = lock(&shared.impairment).seed;
    let mut rng = [Rng::new(seed), Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15)];
    // Per direction: arrivals numbered, and the latest arrival number sent so far.
    let mut arrivals = [0u64; 2];
    let mut latest_sent: [Option<u64>; 2] = [None; 2];
    let mut queue: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
    while !shared.stopped() {
        let now = Instant::now();
        while queue.peek().is_some_and(|Reverse(p)| p.due <= now) {
            let Reverse(pending) = queue.pop().expect("peeked");
            let d = pending.datagram.direction as usize;
            let counters = shared.counters(pending.datagram.direction);
            if latest_sent[d].is_some_and(|latest| pending.arrival < latest) {
                counters.reordered.fetch_add(1, Ordering::Relaxed);
            }
            latest_sent[d] = latest_sent[d].max(Some(pending.arrival));
            let sent = match pending.datagram.direction {
                Direction::Up => lock(upstreams)
                    .get(&pending.datagram.client)
                    .map(|s| s.send(&pending.datagram.bytes)),
                Direction::Down => {
                    Some(front.send_to(&pending.datagram.bytes, pending.datagram.client))
                }
            };
            if matches!(sent, Some(Ok(_))) {
                counters.forwarded.fetch_add(1, Ordering::Relaxed);
            }
        }
        let wait = queue.peek().map_or(POLL, |Reverse(p)| {
            p.due.saturating_duration_since(now).min(POLL)
        });
        let datagram = match rx.recv_timeout(wait) {
            Ok(datagram) => datagram,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let direction = datagram.direction;
        let d = direction as usize;
        let counters = shared.counters(direction);
        counters.received.fetch_add(1, Ordering::Relaxed);
        let arrival = arrivals[d];
        arrivals[d] += 1;
        let impairment = *lock(&shared.impairment);
        let impaired = direction == Direction::Up || impairment.both_ways;
        // Both draws are made for every datagram, so one setting does not shift the
        // other's decisions.
        let (drop_draw, reorder_draw) = (rng[d].unit(), rng[d].unit());
        if impaired && drop_draw < impairment.loss {
            counters.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let mut due = datagram.arrived;
        if impaired {
            due += impairment.delay;
            if reorder_draw < impairment.reorder {
                due += impairment.reorder_hold;
                counters.held_back.fetch_add(1, Ordering::Relaxed);
            }
        }
        queue.push(Reverse(Pending {
            due,
            arrival,
            datagram,
        }));
    }
}

/// SplitMix64: a small seeded generator, enough for drop decisions.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
