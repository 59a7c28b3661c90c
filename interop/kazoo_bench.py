"""kazoo's Lock, timed, for zklock's comparison benchmark (benches/compare). Same command line
and output as CuratorBench.java:

/usr/bin/python3 kazoo_bench.py CONNECT PATH uncontended CYCLES WARMUP -> "latencies_us P50 P99"
/usr/bin/python3 kazoo_bench.py CONNECT PATH contended SESSIONS MILLIS -> "counts N1 N2 ... violations V"
/usr/bin/python3 kazoo_bench.py CONNECT PATH handoff WAITERS
    -> after one unmeasured pass (as CuratorBench.java has for its JIT), prints "queued" once a
       kazoo holder has the lock and WAITERS clients are queued behind it, waits for a line on
       stdin (the caller reads the server's watches meanwhile), lets go, and prints
       "handoff_us P50 P99": the gaps between consecutive acquisitions, the first from the
       holder's release (each waiter lets go as soon as it holds).
"""

import logging
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
    micros = []
    for _ in range(cycles):
        started = time.perf_counter_ns()
        lock.acquire()
        lock.release()
        micros.append((time.perf_counter_ns() - started) // 1000)
    micros.sort()
    # The same ranks as CuratorBench.java.
    print(f"latencies_us {micros[cycles // 2]} {micros[cycles * 99 // 100]}", flush=True)
    close([zk])


def contended(connect, path, sessions, millis):
    all_clients = clients(connect, sessions)
    counts = [0] * sessions
    state = {"inside": 0, "violations": 0}
    # Guards only the counter update (Python's += is not atomic across threads); the lock under
    # test is what must keep two threads from being inside at once.
    counter = threading.Lock()
    failed = []
    deadline = time.monotonic() + millis / 1000

    def loop(index, lock):
        try:
            while time.monotonic() < deadline:
                lock.acquire()
                with counter:
                    state["inside"] += 1
                    if state["inside"] > 1:
                        state["violations"] += 1
                with counter:
                    state["inside"] -= 1
                lock.release()
                counts[index] += 1
        except Exception:
            failed.append(index)
            raise

    threads = [
        threading.Thread(target=loop, args=(index, zk.Lock(path, f"bench-{index}")), daemon=True)
        for index, zk in enumerate(all_clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise RuntimeError(f"{len(failed)} sessions failed")
    print("counts " + " ".join(map(str, counts)) + f" violations {state['violations']}", flush=True)
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
        print("queued", flush=True)
        sys.stdin.readline()
    released = time.perf_counter_ns()
    holder.release()
    for thread in threads:
        thread.join()
    if 0 in acquired:
        raise RuntimeError(f"{acquired.count(0)} waiters failed")
    times = sorted(acquired)
    return [(after - before) / 1000 for before, after in zip([released] + times, times)]


def main():
    # kazoo logs connection chatter as warnings; the benchmark's output is its tables.
    logging.basicConfig(level=logging.ERROR)
    connect, path, scenario = sys.argv[1:4]
    numbers = [int(arg) for arg in sys.argv[4:]]
    if scenario == "uncontended":
        uncontended(connect, path, *numbers)
    elif scenario == "contended":
        contended(connect, path, *numbers)
    elif scenario == "handoff":
        handoff(connect, path, *numbers)
    else:
        sys.exit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    main()
