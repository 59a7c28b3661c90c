"""A kazoo 2.8 participant that takes kazoo locks in steps and keeps them, for zklock-cli's tests
of `zklock list` and `zklock deadlocks` on kazoo's read-write layout.

/usr/bin/python3 kazoo_holder.py CONNECT NAME STEP [STEP ...]

STEP: write:PATH (a WriteLock) or read:PATH (a ReadLock), acquired in order, blocking, each
with NAME as its identifier. After each step but the last it prints "held NAME" and waits for a
line on stdin; after the last it keeps everything until it is killed or stdin closes.
"""

import sys
import time

from kazoo.client import KazooClient


def main():
    connect, name, steps = sys.argv[1], sys.argv[2], sys.argv[3:]
    client = KazooClient(hosts=connect, timeout=20.0)
    client.start(timeout=30)
    held = []
    for number, step in enumerate(steps):
        kind, path = step.split(":", 1)
        lock = client.WriteLock(path, name) if kind == "write" else client.ReadLock(path, name)
        lock.acquire()
        held.append(lock)
        if number + 1 < len(steps):
            print(f"held {name}", flush=True)
            if not sys.stdin.readline():
                return
    print(f"held {name}", flush=True)
    while sys.stdin.readline():
        time.sleep(0.1)


if __name__ == "__main__":
    main()
