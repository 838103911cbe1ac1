//! client-floor: the least a closed-loop MySQL client can spend per point select on this machine.
//!
//! bench/vs-sysbench compiles this file with `rustc -O` (standard library only) and runs it
//! beside dbperf and sysbench as a third client of `oltp_point_select`. Each thread holds one
//! connection, prepares `SELECT c FROM sbtestN WHERE id=?` on every table, then loops: patch
//! the id into a pre-encoded COM_STMT_EXECUTE, write it, and skip the reply packet by packet
//! (checking only that exactly one row came back). No latency histogram, no per-query clock,
//! no result decoding, no async runtime: what it costs per query is the kernel's price of one
//! send, one blocking receive and one sleep and wake-up, plus almost nothing. No client that
//! waits for each reply before sending the next query can spend less, so the ratio
//! floor/sysbench bounds every closed-loop client's ratio on the machine it was measured on.
//!
//! It logs in without a password (vs-sysbench creates a passwordless user for it), speaks the
//! classic protocol with EOF packets, and prints one line of JSON:
//! `{"queries": N, "seconds": S, "threads": T}`.
//!
//! Usage: client-floor (--host H --port P | --socket PATH) --user U --db D
//!                     --threads T --time S --tables N --table-size R --seed X

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

struct Opts {
    host: String,
    port: u16,
    socket: Option<String>,
    user: String,
    db: String,
    threads: usize,
    time: u64,
    tables: u32,
    table_size: u64,
    seed: u64,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        host: "127.0.0.1".into(),
        port: 3306,
        socket: None,
        user: "floor".into(),
        db: "sbtest".into(),
        threads: 8,
        time: 10,
        tables: 4,
        table_size: 100_000,
        seed: 1,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|_| format!("{flag}: not a number: {v}"));
        match flag.as_str() {
            "--host" => o.host = v.clone(),
            "--port" => o.port = num(v)? as u16,
            "--socket" => o.socket = Some(v.clone()),
            "--user" => o.user = v.clone(),
            "--db" => o.db = v.clone(),
            "--threads" => o.threads = num(v)? as usize,
            "--time" => o.time = num(v)?,
            "--tables" => o.tables = num(v)? as u32,
            "--table-size" => o.table_size = num(v)?,
            "--seed" => o.seed = num(v)?,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.threads == 0 || o.tables == 0 || o.table_size == 0 {
        return Err("--threads, --tables and --table-size must be at least 1".into());
    }
    Ok(o)
}

/// A connection's two halves: buffered reads, unbuffered writes of whole packets.
struct Conn {
    r: BufReader<Box<dyn Read + Send>>,
    w: Box<dyn Write + Send>,
    buf: Vec<u8>,
}

impl Conn {
    fn open(o: &Opts) -> Result<Conn, String> {
        let (r, w): (Box<dyn Read + Send>, Box<dyn Write + Send>) = match &o.socket {
            Some(path) => {
                let s = UnixStream::connect(path).map_err(|e| format!("connecting to {path}: {e}"))?;
                (Box::new(s.try_clone().map_err(|e| e.to_string())?), Box::new(s))
            }
            None => {
                let s = TcpStream::connect((o.host.as_str(), o.port))
                    .map_err(|e| format!("connecting to {}:{}: {e}", o.host, o.port))?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                (Box::new(s.try_clone().map_err(|e| e.to_string())?), Box::new(s))
            }
        };
        Ok(Conn { r: BufReader::with_capacity(64 * 1024, r), w, buf: Vec::new() })
    }

    fn read_packet(&mut self) -> Result<&[u8], String> {
        let mut h = [0u8; 4];
        self.r.read_exact(&mut h).map_err(|e| format!("reading a packet header: {e}"))?;
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        self.buf.resize(len, 0);
        self.r.read_exact(&mut self.buf).map_err(|e| format!("reading a packet: {e}"))?;
        if self.buf.first() == Some(&0xff) {
            let msg = String::from_utf8_lossy(self.buf.get(9..).unwrap_or(&[])).into_owned();
            return Err(format!("server error: {msg}"));
        }
        Ok(&self.buf)
    }

    fn write_packet(&mut self, seq: u8, body: &[u8]) -> Result<(), String> {
        let mut p = Vec::with_capacity(body.len() + 4);
        p.extend_from_slice(&(body.len() as u32).to_le_bytes()[..3]);
        p.push(seq);
        p.extend_from_slice(body);
        self.w.write_all(&p).map_err(|e| format!("writing: {e}"))
    }

    /// Handshake response without a password: PROTOCOL_41, SECURE_CONNECTION, CONNECT_WITH_DB,
    /// LONG_PASSWORD, TRANSACTIONS; latin1; no CLIENT_DEPRECATE_EOF, so results end in EOFs.
    fn login(&mut self, user: &str, db: &str) -> Result<(), String> {
        self.read_packet()?; // the server's greeting
        let caps: u32 = 0x0001 | 0x0008 | 0x0200 | 0x2000 | 0x8000;
        let mut b = Vec::new();
        b.extend_from_slice(&caps.to_le_bytes());
        b.extend_from_slice(&(16u32 << 20).to_le_bytes());
        b.push(8);
        b.extend_from_slice(&[0u8; 23]);
        for s in [user, db] {
            b.extend_from_slice(s.as_bytes());
            b.push(0);
            if s == user {
                b.push(0); // empty auth response
            }
        }
        self.write_packet(1, &b)?;
        match self.read_packet()?.first() {
            Some(0) => Ok(()),
            _ => Err(format!("login as {user} was not accepted (auth switch?): the user must have no password")),
        }
    }

    /// Prepares `sql`; returns the statement id after skipping its parameter and column packets.
    fn prepare(&mut self, sql: &str) -> Result<u32, String> {
        let mut b = vec![0x16u8];
        b.extend_from_slice(sql.as_bytes());
        self.write_packet(0, &b)?;
        let p = self.read_packet()?;
        let id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
        let cols = u16::from_le_bytes([p[5], p[6]]) as usize;
        let params = u16::from_le_bytes([p[7], p[8]]) as usize;
        let skip = |n: usize| if n > 0 { n + 1 } else { 0 };
        for _ in 0..skip(params) + skip(cols) {
            self.read_packet()?;
        }
        Ok(id)
    }
}

fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xfe) && p.len() < 9
}

/// COM_STMT_EXECUTE of `id` with one BIGINT parameter, framed; the value sits at the end.
fn execute_packet(id: u32) -> Vec<u8> {
    let mut e = vec![0x17u8];
    e.extend_from_slice(&id.to_le_bytes());
    e.push(0); // no cursor
    e.extend_from_slice(&1u32.to_le_bytes());
    e.push(0); // null bitmap
    e.push(1); // types follow
    e.extend_from_slice(&[8, 0]);
    e.extend_from_slice(&0u64.to_le_bytes());
    let mut p = (e.len() as u32).to_le_bytes()[..3].to_vec();
    p.push(0);
    p.extend_from_slice(&e);
    p
}

fn worker(o: &Opts, t: usize, start: &Barrier, stop: &AtomicBool) -> Result<u64, String> {
    let setup = || -> Result<(Conn, Vec<Vec<u8>>), String> {
        let mut c = Conn::open(o)?;
        c.login(&o.user, &o.db)?;
        let mut packets = Vec::new();
        for table in 1..=o.tables {
            let id = c.prepare(&format!("SELECT c FROM sbtest{table} WHERE id=?"))?;
            packets.push(execute_packet(id));
        }
        Ok((c, packets))
    };
    let ready = setup();
    start.wait(); // every thread reaches the barrier, ready or not
    let (mut c, mut packets) = ready?;
    let mut x = o.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (t as u64 + 1);
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut queries = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let p = &mut packets[(next() % o.tables as u64) as usize];
        let at = p.len() - 8;
        p[at..].copy_from_slice(&(next() % o.table_size + 1).to_le_bytes());
        c.w.write_all(p).map_err(|e| format!("writing: {e}"))?;
        // column count, column definition, EOF, rows..., EOF
        let (mut eofs, mut packets_seen) = (0, 0);
        while eofs < 2 {
            eofs += is_eof(c.read_packet()?) as u32;
            packets_seen += 1;
        }
        if packets_seen != 5 {
            return Err(format!("expected one row per point select, got {} rows", packets_seen as i32 - 4));
        }
        queries += 1;
    }
    Ok(queries)
}

fn main() {
    let o = match parse() {
        Ok(o) => Arc::new(o),
        Err(e) => {
            eprintln!("client-floor: {e}");
            std::process::exit(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(o.threads + 1));
    let handles: Vec<_> = (0..o.threads)
        .map(|t| {
            let (o, stop, start) = (o.clone(), stop.clone(), start.clone());
            std::thread::spawn(move || {
                let r = worker(&o, t, &start, &stop);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                r
            })
        })
        .collect();
    start.wait();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(o.time) && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let seconds = t0.elapsed().as_secs_f64();
    let mut queries = 0;
    for h in handles {
        match h.join().expect("worker panicked") {
            Ok(n) => queries += n,
            Err(e) => {
                eprintln!("client-floor: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("{{\"queries\": {queries}, \"seconds\": {seconds:.3}, \"threads\": {}}}", o.threads);
}
