"""A kazoo participant for zklock's interop tests: takes a kazoo lock N times on one path and
appends "enter NAME MODE" / "exit NAME MODE" lines to a shared log while holding it.

/usr/bin/python3 kazoo_locker.py CONNECT PATH MODE ITERATIONS HOLD_MILLIS LOG NAME [EXTRA_PATTERN ...]

MODE: mutex (Lock, with the EXTRA_PATTERNs as extra_lock_patterns), read (ReadLock), write
(WriteLock), lease:N (one lease of a Semaphore of N), read:RETRY_MS (a ReadLock that gives its
place up after RETRY_MS of waiting and queues again, logged as "read": see read_breaking_rings),
or election (an Election whose leader function logs its term: ITERATIONS terms, each with a new
Election, so that the others get their turns). semaphore:N is lease:N that also counts the
leases on the server while it holds one (Semaphore.lease_holders) and fails when there are more
than N; when kazoo refuses the semaphore (another max_leases stored on PATH) it logs "refused
NAME semaphore" and exits with 3.

Start line: once connected, with its lock built, it prints "ready NAME" on stdout and waits for a
line on stdin before its first acquire, so that every party contends from the start (end of
stdin, when the test is gone, makes it exit).
"""

import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

# How long one participant may wait for its lock in all.
PATIENCE_S = 60


def append(log, line):
    # One O_APPEND write per line, ordered with the other participants' lines.
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def build(client, path, mode, name, extra_patterns):
    if mode == "mutex":
        return client.Lock(path, name, extra_lock_patterns=extra_patterns)
    if mode == "read":
        return client.ReadLock(path, name)
    if mode == "write":
        return client.WriteLock(path, name)
    if mode.startswith("read:"):
        return client.ReadLock(path, name)
    if mode == "election":
        return None
    if mode.startswith("lease:"):
        return client.Semaphore(path, name, max_leases=int(mode[len("lease:"):]))
    sys.exit(f"mode: mutex, read, write, lease:N, read:RETRY_MS or election, not {mode}")


def read_breaking_rings(lock, name, retry_ms):
    """Takes a kazoo 2.8 ReadLock, giving the place up after retry_ms and queueing again.

    kazoo 2.8's ReadLock waits for every write node, also those queued after its own (kazoo
    #649, fixed in 2.9): a reader waiting behind a writer, with another writer queued behind
    it, waits for that writer, which waits for it. Only a timeout breaks that ring, so a kazoo
    2.8 reader under contention with writers must use one, whoever the writers are.
    """
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        try:
            if lock.acquire(timeout=retry_ms / 1000):
                return True
        except LockTimeout:
            print(f"requeue {name}", file=sys.stderr, flush=True)
    return False


def run_elections(client, path, name, terms, hold_ms, log):
    """Runs `terms` kazoo Elections on path, each with a fresh contender, one term each."""

    def lead():
        append(log, f"enter {name} election")
        time.sleep(hold_ms / 1000)
        append(log, f"exit {name} election")

    for _ in range(terms):
        client.Election(path, name).run(lead)


def semaphore_rounds(client, path, max_leases, iterations, hold_ms, log, name):
    semaphore = client.Semaphore(path, name, max_leases=max_leases)
    print(f"ready {name}", flush=True)
    if not sys.stdin.readline():
        sys.exit(f"{name}: stdin closed before the start")
    for _ in range(iterations):
        try:
            if not semaphore.acquire(timeout=60):
                sys.exit(f"{name}: timed out waiting for a lease")
        except ValueError as refused:
            print(f"{name}: {refused}", file=sys.stderr, flush=True)
            append(log, f"refused {name} semaphore")
            sys.exit(3)
        append(log, f"enter {name} semaphore")
        holders = len(semaphore.lease_holders())
        if holders > max_leases:
            sys.exit(f"{name}: {holders} leases held at once, over {max_leases}")
        time.sleep(hold_ms / 1000)
        append(log, f"exit {name} semaphore")
        semaphore.release()


def main():
    connect, path, mode, iterations, hold_ms, log, name = sys.argv[1:8]
    client = KazooClient(hosts=connect, timeout=20.0)
    client.start(timeout=30)
    if mode.startswith("semaphore:"):
        max_leases = int(mode[len("semaphore:"):])
        semaphore_rounds(client, path, max_leases, int(iterations), int(hold_ms), log, name)
        client.stop()
        client.close()
        return
    lock = build(client, path, mode, name, sys.argv[8:])
    retry_ms = int(mode[len("read:"):]) if mode.startswith("read:") else None
    mode = mode.split(":")[0]
    print(f"ready {name}", flush=True)
    if not sys.stdin.readline():
        sys.exit(f"{name}: stdin closed before the start")
    if mode == "election":
        run_elections(client, path, name, int(iterations), int(hold_ms), log)
        client.stop()
        client.close()
        return
    for _ in range(int(iterations)):
        if retry_ms is not None:
            if not read_breaking_rings(lock, name, retry_ms):
                sys.exit(f"{name}: timed out waiting for the lock")
            append(log, f"enter {name} {mode}")
            time.sleep(int(hold_ms) / 1000)
            append(log, f"exit {name} {mode}")
            lock.release()
            continue
        if not lock.acquire(timeout=60):
            sys.exit(f"{name}: timed out waiting for the lock")
        append(log, f"enter {name} {mode}")
        time.sleep(int(hold_ms) / 1000)
        append(log, f"exit {name} {mode}")
        lock.release()
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
