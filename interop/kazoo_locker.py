"""A kazoo participant for zklock's interop tests: takes a kazoo lock N times on one path and
appends "enter NAME MODE" / "exit NAME MODE" lines to a shared log while holding it.

/usr/bin/python3 kazoo_locker.py CONNECT PATH MODE ITERATIONS HOLD_MILLIS LOG NAME [EXTRA_PATTERN ...]

MODE: mutex (Lock, with the EXTRA_PATTERNs as extra_lock_patterns), read (ReadLock), write
(WriteLock), or lease:N (one lease of a Semaphore of N).

Start line: once connected, with its lock built, it prints "ready NAME" on stdout and waits for a
line on stdin before its first acquire, so that every party contends from the start (end of
stdin, when the test is gone, makes it exit).
"""

import os
import sys
import time

from kazoo.client import KazooClient


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
    if mode.startswith("lease:"):
        return client.Semaphore(path, name, max_leases=int(mode[len("lease:"):]))
    sys.exit(f"mode: mutex, read, write or lease:N, not {mode}")


def main():
    connect, path, mode, iterations, hold_ms, log, name = sys.argv[1:8]
    client = KazooClient(hosts=connect, timeout=20.0)
    client.start(timeout=30)
    lock = build(client, path, mode, name, sys.argv[8:])
    mode = mode.split(":")[0]
    print(f"ready {name}", flush=True)
    if not sys.stdin.readline():
        sys.exit(f"{name}: stdin closed before the start")
    for _ in range(int(iterations)):
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
