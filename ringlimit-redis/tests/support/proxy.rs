//! A fault-injecting TCP proxy between a client and a server on loopback: it delays bytes
//! each way, drops the next chunk of replies, and makes connections silent (open, carrying
//! nothing) while refusing to carry new ones until released.
//!
//! Each direction of each connection is a reader thread, which stamps every chunk it reads,
//! and a writer thread, which writes it once its delay has passed: a delay adds latency
//! without limiting throughput, as a long link does. Its own sockets have TCP_NODELAY set
//! (a network does not hold bytes back).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A proxy listening on a loopback port, forwarding to `127.0.0.1:<upstream>`.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Delay of each direction, in microseconds.
    delay_us: AtomicU64,
    /// Drop the next chunk from the server.
    drop_next_reply: AtomicBool,
    /// New connections are held silent.
    hold_new: AtomicBool,
    /// Each connection's silence flag.
    silences: Mutex<Vec<Arc<AtomicBool>>>,
    stopped: AtomicBool,
    /// Connections accepted.
    accepted: AtomicU64,
}

impl Proxy {
    /// A proxy in front of the server on `upstream`.
    pub fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy bind");
        let port = listener.local_addr().expect("proxy addr").port();
        let shared = Arc::new(Shared::default());
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                accepting.accepted.fetch_add(1, Ordering::SeqCst);
                let silent = Arc::new(AtomicBool::new(accepting.hold_new.load(Ordering::SeqCst)));
                accepting.silences.lock().unwrap().push(Arc::clone(&silent));
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(
                    client,
                    s2,
                    Arc::clone(&accepting),
                    Arc::clone(&silent),
                    false,
                );
                pipe(server, c2, Arc::clone(&accepting), silent, true);
            }
        });
        Self { port, shared }
    }

    /// The port the proxy listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of the proxied server.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Each direction delayed by `delay` (a round trip by twice that).
    pub fn set_delay(&self, delay: Duration) {
        self.shared
            .delay_us
            .store(delay.as_micros() as u64, Ordering::SeqCst);
    }

    /// The next chunk the server sends is dropped (on loopback, one reply).
    pub fn drop_next_reply(&self) {
        self.shared.drop_next_reply.store(true, Ordering::SeqCst);
    }

    /// Every open connection stays open and carries nothing from now on; new connections
    /// are accepted and held silent too, until `release_new`.
    pub fn silence(&self) {
        self.shared.hold_new.store(true, Ordering::SeqCst);
        for silent in self.shared.silences.lock().unwrap().iter() {
            silent.store(true, Ordering::SeqCst);
        }
    }

    /// New connections carry bytes again (the silent ones stay silent).
    pub fn release_new(&self) {
        self.shared.hold_new.store(false, Ordering::SeqCst);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `stopped`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for silent in self.shared.silences.lock().unwrap().iter() {
            silent.store(true, Ordering::SeqCst);
        }
    }
}

/// Forwards `from` to `to` through a reader and a writer thread.
fn pipe(
    mut from: TcpStream,
    mut to: TcpStream,
    shared: Arc<Shared>,
    silent: Arc<AtomicBool>,
    replies: bool,
) {
    let (chunks, delayed) = mpsc::channel::<(Instant, Vec<u8>)>();
    let reading = Arc::clone(&shared);
    thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            if reading.stopped.load(Ordering::SeqCst) {
                break;
            }
            if silent.load(Ordering::SeqCst) {
                continue;
            }
            if replies && reading.drop_next_reply.swap(false, Ordering::SeqCst) {
                continue;
            }
            let due =
                Instant::now() + Duration::from_micros(reading.delay_us.load(Ordering::SeqCst));
            if chunks.send((due, buffer[..read].to_vec())).is_err() {
                break;
            }
        }
        let _ = from.shutdown(Shutdown::Read);
    });
    thread::spawn(move || {
        for (due, chunk) in delayed {
            let wait = due.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                thread::sleep(wait);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
