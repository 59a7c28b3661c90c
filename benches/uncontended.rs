//! Uncontended acquire+release against the raw floor, side by side on one session.
//!
//! The floor is what any ZooKeeper lock must do at least: create an ephemeral sequential node
//! and delete it (two round trips). zklock's cycle is create+list sent together, then delete.
//! Rounds alternate the two so that machine noise hits both alike; the ratio is reported per
//! round, and the median over rounds.
//!
//! `cargo bench --bench uncontended [-- --quick]`; uses `ZK_CONNECT` when set, else starts a
//! throwaway server.

use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use zklock::InterProcessMutex;
use zklock_testcontainers::ZooKeeperServer;
use zookeeper_client::{Acls, Client, CreateMode};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let (cycles, rounds, warmup) = if quick { (50, 3, 20) } else { (1_000, 7, 300) };
    let (connect, _server) = match std::env::var("ZK_CONNECT") {
        Ok(connect) if !connect.is_empty() => (connect, None),
        _ => {
            let server = ZooKeeperServer::start()?;
            (server.connect_string(), Some(server))
        }
    };
    let client = Client::connector().with_session_timeout(Duration::from_secs(30)).connect(&connect).await?;
    let raw_parent = format!("/bench-uncontended-{}", std::process::id());
    client.mkdir(&raw_parent, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    let mutex = InterProcessMutex::new(&client, &format!("{raw_parent}-lock"))?;

    raw_cycles(&client, &raw_parent, warmup).await?;
    lock_cycles(&mutex, warmup).await?;

    let mut ratios = Vec::new();
    let mut raw_us = Vec::new();
    let mut lock_us = Vec::new();
    let mut reentrant_ns = Vec::new();
    for _ in 0..rounds {
        let raw = raw_cycles(&client, &raw_parent, cycles).await?;
        let lock = lock_cycles(&mutex, cycles).await?;
        ratios.push(lock.as_secs_f64() / raw.as_secs_f64());
        raw_us.push(raw.as_secs_f64() * 1e6 / cycles as f64);
        lock_us.push(lock.as_secs_f64() * 1e6 / cycles as f64);
        reentrant_ns.push(reentrant_cycles(&mutex, cycles * 10).await?);
    }
    // Requests per cycle, from the server's own count for this session (`cons`).
    let address = connect.split(',').next().and_then(|host| host.to_socket_addrs().ok()?.next());
    let counted = |before: Option<u64>, after: Option<u64>, cycles: usize| match (before, after) {
        (Some(before), Some(after)) => format!("{:.2}", (after - before) as f64 / cycles as f64),
        _ => "n/a".to_owned(),
    };
    let before = address.and_then(|a| requests_received(a, &client));
    raw_cycles(&client, &raw_parent, cycles).await?;
    let middle = address.and_then(|a| requests_received(a, &client));
    lock_cycles(&mutex, cycles).await?;
    let after = address.and_then(|a| requests_received(a, &client));
    let raw_requests = counted(before, middle, cycles);
    let lock_requests = counted(middle, after, cycles);
    client.delete(&raw_parent, None).await?;

    println!("uncontended cycle, {rounds} rounds x {cycles} cycles, one session, medians (min-max):\n");
    println!("| cycle | per cycle | ratio to raw floor | requests per cycle |");
    println!("|---|---|---|---|");
    println!("| raw create+delete (floor) | {} µs | 1.00 | {raw_requests} |", spread(&mut raw_us, 0));
    println!(
        "| zklock acquire+release | {} µs | {} | {lock_requests} |",
        spread(&mut lock_us, 0),
        spread(&mut ratios, 3)
    );
    println!("| zklock reentrant acquire+release | {} ns | — | 0 |", spread(&mut reentrant_ns, 0));
    Ok(())
}

async fn raw_cycles(client: &Client, parent: &str, cycles: usize) -> Result<Duration, zookeeper_client::Error> {
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let prefix = format!("{parent}/raw-");
    let started = Instant::now();
    for _ in 0..cycles {
        let (_, sequence) = client.create(&prefix, b"", &options).await?;
        client.delete(&format!("{prefix}{sequence}"), None).await?;
    }
    Ok(started.elapsed())
}

async fn lock_cycles(mutex: &InterProcessMutex, cycles: usize) -> zklock::Result<Duration> {
    let started = Instant::now();
    for _ in 0..cycles {
        mutex.acquire().await?.release().await?;
    }
    Ok(started.elapsed())
}

/// Nanoseconds per reentrant acquire+release while an outer guard holds the lock.
async fn reentrant_cycles(mutex: &InterProcessMutex, cycles: usize) -> zklock::Result<f64> {
    let outer = mutex.acquire().await?;
    let started = Instant::now();
    for _ in 0..cycles {
        mutex.acquire().await?.release().await?;
    }
    let elapsed = started.elapsed();
    outer.release().await?;
    Ok(elapsed.as_secs_f64() * 1e9 / cycles as f64)
}

/// Requests the server has received from `client`'s session, from the `cons` four-letter word.
fn requests_received(server: std::net::SocketAddr, client: &Client) -> Option<u64> {
    let session = format!("sid={:#x}", client.session_id().0);
    let answer = zklock_testcontainers::four_letter_word(server, "cons").ok()?;
    let line = answer.lines().find(|line| line.contains(&session))?;
    line.split("recved=").nth(1)?.split(',').next()?.parse().ok()
}

/// "median (min–max)" of `values`, with `decimals` places.
fn spread(values: &mut [f64], decimals: usize) -> String {
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    format!("{median:.decimals$} ({:.decimals$}–{:.decimals$})", values[0], values[values.len() - 1])
}
