// A Curator participant for zklock's interop tests: takes a lock N times on one path and appends
// "enter NAME MODE" / "exit NAME MODE" lines to a shared log while holding it.
//
// Start line: once connected, with its lock built, it prints "ready NAME" on stdout and waits
// for a line on stdin before its first acquire, so that every party contends from the start
// (end of stdin, when the test is gone, makes it exit).
//
// java -cp <classes>:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//     CuratorLocker CONNECT PATH MODE ITERATIONS HOLD_MILLIS LOG NAME
//
// MODE: mutex, read, write (InterProcessReadWriteLock), semaphore-mutex
// (InterProcessSemaphoreMutex), lease:N (one lease of an InterProcessSemaphoreV2 of N),
// revocable (an InterProcessMutex made revocable: holds until asked to let go, at most
// HOLD_MILLIS), or revoke (asks the holder of the lock node PATH to let go, and exits).

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;

public class CuratorLocker {
    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], mode = args[2];
        int iterations = Integer.parseInt(args[3]);
        long holdMillis = Long.parseLong(args[4]);
        String log = args[5], name = args[6];

        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 20_000, 10_000, new RetryNTimes(20, 200));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("cannot connect to " + connect);
            System.exit(3);
        }
        if (mode.equals("revoke")) {
            awaitStart(name);
            Revoker.attemptRevoke(client, path);
            client.close();
            return;
        }
        CountDownLatch revoked = new CountDownLatch(1);
        InterProcessLock lock;
        if (mode.equals("revocable")) {
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            mutex.makeRevocable(forLock -> revoked.countDown());
            lock = mutex;
        } else if (mode.startsWith("lease:")) {
            lock = leaseLock(new InterProcessSemaphoreV2(client, path, Integer.parseInt(mode.substring(6))));
            mode = "lease";
        } else {
            lock = switch (mode) {
                case "mutex" -> new InterProcessMutex(client, path);
                case "read" -> new InterProcessReadWriteLock(client, path).readLock();
                case "write" -> new InterProcessReadWriteLock(client, path).writeLock();
                case "semaphore-mutex" -> new InterProcessSemaphoreMutex(client, path);
                default -> throw new IllegalArgumentException("mode: mutex, read, write, semaphore-mutex, lease:N");
            };
        }
        awaitStart(name);
        // Append mode: every line is one O_APPEND write, ordered with the other participants'.
        try (FileOutputStream out = new FileOutputStream(log, true)) {
            for (int i = 0; i < iterations; i++) {
                if (!lock.acquire(60, TimeUnit.SECONDS)) {
                    System.err.println(name + ": timed out waiting for the lock");
                    System.exit(2);
                }
                append(out, "enter " + name + " " + mode);
                if (mode.equals("revocable")) {
                    boolean asked = revoked.await(holdMillis, TimeUnit.MILLISECONDS);
                    append(out, (asked ? "revoked " : "unrevoked ") + name + " " + mode);
                } else {
                    Thread.sleep(holdMillis);
                }
                append(out, "exit " + name + " " + mode);
                lock.release();
            }
        }
        client.close();
    }

    /** Reports "ready NAME" and waits for the test to say go (one line on stdin). */
    private static void awaitStart(String name) throws IOException {
        System.out.println("ready " + name);
        System.out.flush();
        if (new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine() == null) {
            System.err.println(name + ": stdin closed before the start");
            System.exit(4);
        }
    }

    /** One lease of a semaphore, seen as a lock. */
    private static InterProcessLock leaseLock(InterProcessSemaphoreV2 semaphore) {
        return new InterProcessLock() {
            private Lease lease;

            public void acquire() throws Exception { lease = semaphore.acquire(); }

            public boolean acquire(long time, TimeUnit unit) throws Exception {
                lease = semaphore.acquire(time, unit);
                return lease != null;
            }

            public void release() throws Exception { semaphore.returnLease(lease); lease = null; }

            public boolean isAcquiredInThisProcess() { return lease != null; }
        };
    }

    private static void append(FileOutputStream out, String line) throws IOException {
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
