"""kazoo's Lock and Election, timed, for zklock's comparison benchmark (benches/compare). Same
command line and output as CuratorBench.java:

/usr/bin/python3 kazoo_bench.py CONNECT PATH uncontended CYCLES WARMUP
    -> after WARMUP untimed cycles prints "ready", waits for a line on stdin, then times CYCLES
       cycles and prints "latencies_us P50 P99"
/usr/bin/python3 kazoo_bench.py CONNECT PATH contended SESSIONS MILLIS WARMUP_MILLIS RECORD HOLD_MICROS
    -> SESSIONS threads with a session each contend untimed for WARMUP_MILLIS, then it prints
       "ready", waits for a line, and they contend for MILLIS, each hold appending "kazoo-T +"
       and "kazoo-T -" to the file RECORD (the benchmark checks exclusion there) around a sleep
       of HOLD_MICROS; prints "counts N1 N2 ..." (timed acquisitions per thread)
/usr/bin/python3 kazoo_bench.py CONNECT PATH handoff WAITERS
    -> after one unmeasured pass (as CuratorBench.java has for its JIT), prints "queued" once a
       kazoo holder has the lock and WAITERS clients are queued behind it, waits for a line on
       stdin (the caller reads the server's watches meanwhile), lets go, and prints
       "handoff_us P50 P99": the gaps between consecutive acquisitions, the first from the
       holder's release (each waiter lets go as soon as it holds).
/usr/bin/python3 kazoo_bench.py CONNECT PATH failover PARTICIPANTS TERMS WARMUP
    -> PARTICIPANTS clients each run an Election on PATH in a thread, in a loop: when elected
       the thread waits to be told to give up, returns from its leader function (kazoo deletes
       its node) and runs the election again, at the back. After WARMUP such terms untimed it
       prints "ready", waits for a line, times TERMS terms and prints "failover_us P50 P99":
       from the moment the leader is told to give up to the moment the next leader's function
       is called.
After its figures it waits for stdin to close before closing its sessions, so that the
benchmark's request counts hold the measured part alone.
"""

import logging
import os
import queue
import sys
import threading
import time

from kazoo.client import KazooClient

# Waiting longer than this for connections or for the queue means something is wrong.
DEADLINE_SECONDS = 120


def client(connect):
    started = KazooClient(hosts=connect, timeout=30.0)
    started.start(timeout=DEADLINE_SECONDS)
    return started


def clients(connect, count):
    """Connects `count` clients at once: one after the other, 200 take several seconds."""
    made = [KazooClient(hosts=connect, timeout=30.0) for _ in range(count)]
    events = [each.start_async() for each in made]
    deadline = time.monotonic() + DEADLINE_SECONDS
    for each, event in zip(made, events):
        event.wait(max(0.0, deadline - time.monotonic()))
        if not each.connected:
            raise RuntimeError(f"cannot connect to {each.hosts}")
    return made


def close(all_clients):
    for each in all_clients:
        each.stop()
        each.close()


def await_go(word):
    """Says `word` and waits for the benchmark's answer (it reads the server's counts)."""
    print(word, flush=True)
    sys.stdin.readline()


def await_close():
    """Waits until the benchmark has read the server's counts and closed our stdin."""
    sys.stdout.flush()
    while sys.stdin.readline():
        pass


def percentile(samples, percent):
    """The same nearest-rank percentile as the Rust side of the benchmark."""
    ordered = sorted(samples)
    return ordered[round((len(ordered) - 1) * percent / 100)]


def uncontended(connect, path, cycles, warmup):
    zk = client(connect)
    lock = zk.Lock(path, "bench")
    for _ in range(warmup):
        lock.acquire()
        lock.release()
    await_go("ready")
    micros = []
    for _ in range(cycles):
        started = time.perf_counter_ns()
        lock.acquire()
        lock.release()
        micros.append((time.perf_counter_ns() - started) // 1000)
    micros.sort()
    # The same ranks as CuratorBench.java.
    print(f"latencies_us {micros[cycles // 2]} {micros[cycles * 99 // 100]}", flush=True)
    await_close()
    close([zk])


def contended(connect, path, sessions, millis, warmup_millis, record, hold_micros):
    all_clients = clients(connect, sessions)
    counts = [0] * sessions
    # Opened for appending (O_APPEND): each write lands whole at the end, whichever process.
    holds = os.open(record, os.O_WRONLY | os.O_APPEND)
    # Every thread and this one: all warm, then all go. A failed thread breaks them, so that
    # nobody waits for it.
    warm = threading.Barrier(sessions + 1)
    go = threading.Barrier(sessions + 1)
    warm_until = time.monotonic() + warmup_millis / 1000
    failed = []

    def loop(index, lock):
        enter, leave = f"kazoo-{index} +\n".encode(), f"kazoo-{index} -\n".encode()
        try:
            while time.monotonic() < warm_until:
                lock.acquire()
                time.sleep(0)
                lock.release()
            warm.wait()
            go.wait()
            deadline = time.monotonic() + millis / 1000
            while time.monotonic() < deadline:
                lock.acquire()
                os.write(holds, enter)
                # As long as every row's hold: another holder let in would enter meanwhile.
                time.sleep(hold_micros / 1_000_000)
                os.write(holds, leave)
                lock.release()
                counts[index] += 1
        except Exception:
            failed.append(index)
            warm.abort()
            go.abort()
            raise

    threads = [
        threading.Thread(target=loop, args=(index, zk.Lock(path, f"bench-{index}")), daemon=True)
        for index, zk in enumerate(all_clients)
    ]
    for thread in threads:
        thread.start()
    warm.wait()
    await_go("ready")
    go.wait()
    for thread in threads:
        thread.join()
    if failed:
        raise RuntimeError(f"{len(failed)} sessions failed")
    os.close(holds)
    print("counts " + " ".join(map(str, counts)), flush=True)
    await_close()
    close(all_clients)


def handoff(connect, path, waiters):
    started = time.monotonic()
    all_clients = clients(connect, waiters + 1)
    connected = time.monotonic()
    # A first pass unmeasured, on a path of its own, as CuratorBench.java does for its JIT.
    handoff_pass(all_clients, path + "-warmup", measured=False)
    warm = time.monotonic()
    gaps = handoff_pass(all_clients, path, measured=True)
    print(f"handoff_us {percentile(gaps, 50):.0f} {percentile(gaps, 99):.0f}", flush=True)
    await_close()
    # For the report on how long a run takes; the benchmark reads only stdout.
    print(
        f"kazoo handoff: {waiters + 1} clients connected in {connected - started:.1f} s, "
        f"warmup pass {warm - connected:.1f} s, measured pass {time.monotonic() - warm:.1f} s",
        file=sys.stderr,
    )
    close(all_clients)


def handoff_pass(all_clients, path, measured):
    """Queues all_clients[1:] behind all_clients[0] on `path`; once all are queued (and, if
    `measured`, once the caller has answered "queued"), the holder releases. Returns the gaps in
    µs between consecutive acquisitions, the first from the release."""
    holder_client = all_clients[0]
    holder = holder_client.Lock(path, "holder")
    holder.acquire()
    waiters = len(all_clients) - 1
    acquired = [0] * waiters

    def wait_turn(index, lock):
        lock.acquire()
        acquired[index] = time.perf_counter_ns()
        lock.release()

    # Daemons: should this process fail, waiters still blocked must not keep it alive.
    threads = [
        threading.Thread(target=wait_turn, args=(index, zk.Lock(path, f"waiter-{index}")), daemon=True)
        for index, zk in enumerate(all_clients[1:])
    ]
    for thread in threads:
        thread.start()
    # Everyone queued: the holder's node and one per waiter.
    deadline = time.monotonic() + DEADLINE_SECONDS
    while len(holder_client.get_children(path)) < waiters + 1:
        if time.monotonic() > deadline:
            raise RuntimeError("the waiters did not queue in time")
        time.sleep(0.02)
    if measured:
        await_go("queued")
    released = time.perf_counter_ns()
    holder.release()
    for thread in threads:
        thread.join()
    if 0 in acquired:
        raise RuntimeError(f"{acquired.count(0)} waiters failed")
    times = sorted(acquired)
    return [(after - before) / 1000 for before, after in zip([released] + times, times)]


def failover(connect, path, participants, terms, warmup):
    all_clients = clients(connect, participants)
    elections = [zk.Election(path, f"participant-{index}") for index, zk in enumerate(all_clients)]
    # (participant, time.perf_counter_ns()) when its leader function is called.
    told = queue.Queue()
    give_up = [threading.Event() for _ in range(participants)]
    stopping = threading.Event()

    def lead(index):
        told.put((index, time.perf_counter_ns()))
        give_up[index].wait()
        give_up[index].clear()

    def participate(index):
        while not stopping.is_set():
            elections[index].run(lead, index)

    def next_leader():
        try:
            return told.get(timeout=DEADLINE_SECONDS)
        except queue.Empty:
            raise RuntimeError(f"no participant was told it leads within {DEADLINE_SECONDS} s") from None

    # Daemons: should this process fail, participants still waiting must not keep it alive.
    threads = [threading.Thread(target=participate, args=(index,), daemon=True) for index in range(participants)]
    for thread in threads:
        thread.start()
    leader, _ = next_leader()
    gaps = []
    for term in range(-warmup, terms):
        if term == 0:
            await_go("ready")
        gave_up = time.perf_counter_ns()
        give_up[leader].set()
        leader, at = next_leader()
        if term >= 0:
            gaps.append((at - gave_up) / 1000)
    print(f"failover_us {percentile(gaps, 50):.0f} {percentile(gaps, 99):.0f}", flush=True)
    await_close()
    stopping.set()
    for election in elections:
        election.cancel()
    for event in give_up:
        event.set()
    for thread in threads:
        thread.join(DEADLINE_SECONDS)
    close(all_clients)


def main():
    # kazoo logs connection chatter as warnings; the benchmark's output is its tables.
    logging.basicConfig(level=logging.ERROR)
    connect, path, scenario = sys.argv[1:4]
    if scenario == "uncontended":
        uncontended(connect, path, *map(int, sys.argv[4:6]))
    elif scenario == "contended":
        contended(connect, path, *map(int, sys.argv[4:7]), sys.argv[7], int(sys.argv[8]))
    elif scenario == "handoff":
        handoff(connect, path, int(sys.argv[4]))
    elif scenario == "failover":
        failover(connect, path, *map(int, sys.argv[4:7]))
    else:
        sys.exit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    main()
