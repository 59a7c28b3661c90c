"""A kazoo participant for zklock's interop tests: takes a kazoo Lock N times on one path and
appends "enter NAME mutex" / "exit NAME mutex" lines to a shared log while holding it.

/usr/bin/python3 kazoo_locker.py CONNECT PATH ITERATIONS HOLD_MILLIS LOG NAME [EXTRA_PATTERN ...]
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


def main():
    connect, path, iterations, hold_ms, log, name = sys.argv[1:7]
    extra_patterns = sys.argv[7:]
    client = KazooClient(hosts=connect, timeout=20.0)
    client.start(timeout=30)
    lock = client.Lock(path, name, extra_lock_patterns=extra_patterns)
    for _ in range(int(iterations)):
        if not lock.acquire(timeout=120):
            print(f"{name}: timed out waiting for the lock", file=sys.stderr)
            sys.exit(2)
        append(log, f"enter {name} mutex")
        time.sleep(int(hold_ms) / 1000)
        append(log, f"exit {name} mutex")
        lock.release()
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
