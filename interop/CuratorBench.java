// Curator's InterProcessMutex and LeaderLatch, timed, for zklock's comparison benchmark
// (benches/compare).
//
// java -cp <classes>:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//     CuratorBench CONNECT PATH uncontended CYCLES WARMUP
//         -> after WARMUP untimed cycles prints "ready", waits for a line on stdin, then times
//            CYCLES cycles and prints "latencies_us P50 P99"
//     CuratorBench CONNECT PATH contended SESSIONS MILLIS WARMUP_MILLIS RECORD HOLD_MICROS
//         -> SESSIONS threads with a session each contend untimed for WARMUP_MILLIS, then it
//            prints "ready", waits for a line, and they contend for MILLIS, each hold appending
//            "curator-T +" and "curator-T -" to the file RECORD (the benchmark checks exclusion
//            there) around a sleep of HOLD_MICROS; prints "counts N1 N2 ..." (timed acquisitions
//            per thread)
//     CuratorBench CONNECT PATH cohort SESSIONS THREADS LONE MILLIS WARMUP_MILLIS RECORD
//         -> SESSIONS clients, each with one InterProcessMutex shared by THREADS threads, and
//            with LONE=1 one more client with a single thread (another process); untimed for
//            WARMUP_MILLIS, then "ready", a line, and MILLIS timed, each hold appending its
//            enter and exit to RECORD around a yield; prints "cohort ACQUISITIONS P50 P99
//            LONGEST": waits in µs from asking to holding, LONGEST the lone thread's longest
//            (without one, any thread's)
//     CuratorBench CONNECT PATH handoff WAITERS
//         -> after one unmeasured pass (JIT warmup), prints "queued" once a Curator holder has
//            the lock and WAITERS clients are queued behind it, waits for a line on stdin (the
//            caller reads the server's watches meanwhile), lets go, and prints
//            "handoff_us P50 P99": the gaps between consecutive acquisitions, the first from the
//            holder's release (each waiter lets go as soon as it holds).
//     CuratorBench CONNECT PATH failover PARTICIPANTS TERMS WARMUP
//         -> PARTICIPANTS clients each with a LeaderLatch on PATH; again and again the leader
//            closes its latch and a new latch on its client joins at the back. After WARMUP
//            such terms untimed it prints "ready", waits for a line, times TERMS terms and prints
//            "failover_us P50 P99": from the leader's close() call to the moment await() returns
//            in the next leader's thread.
// After its figures it waits for stdin to close before closing its sessions, so that the
// benchmark's request counts hold the measured part alone.

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.io.EOFException;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
    static final BufferedReader INPUT = new BufferedReader(new InputStreamReader(System.in));

    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], scenario = args[2];
        int first = Integer.parseInt(args[3]);
        try {
            if (scenario.equals("uncontended")) {
                uncontended(connect, path, first, Integer.parseInt(args[4]));
            } else if (scenario.equals("cohort")) {
                cohort(connect, path, first, Integer.parseInt(args[4]), args[5].equals("1"), Long.parseLong(args[6]),
                        Long.parseLong(args[7]), args[8]);
            } else if (scenario.equals("contended")) {
                contended(connect, path, first, Long.parseLong(args[4]), Long.parseLong(args[5]), args[6],
                        Long.parseLong(args[7]));
            } else if (scenario.equals("failover")) {
                failover(connect, path, first, Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            } else {
                handoff(connect, path, first);
            }
        } catch (Exception e) {
            // Threads still blocked in acquire would keep the JVM, and the benchmark, waiting.
            e.printStackTrace();
            System.exit(1);
        }
    }

    static CuratorFramework client(String connect) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 30_000, 10_000, new RetryNTimes(3, 100));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("cannot connect to " + connect);
        }
        return client;
    }

    /** Connects {@code count} clients at once: one after the other, 200 take several seconds. */
    static CuratorFramework[] clients(String connect, int count) throws Exception {
        CuratorFramework[] clients = new CuratorFramework[count];
        for (int i = 0; i < count; i++) {
            clients[i] = CuratorFrameworkFactory.newClient(connect, 30_000, 10_000, new RetryNTimes(3, 100));
            clients[i].start();
        }
        for (CuratorFramework client : clients) {
            if (!client.blockUntilConnected(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("cannot connect to " + connect);
            }
        }
        return clients;
    }

    static void uncontended(String connect, String path, int cycles, int warmup) throws Exception {
        CuratorFramework client = client(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        for (int i = 0; i < warmup; i++) {
            mutex.acquire();
            mutex.release();
        }
        awaitGo("ready");
        long[] micros = new long[cycles];
        for (int i = 0; i < cycles; i++) {
            long started = System.nanoTime();
            mutex.acquire();
            mutex.release();
            micros[i] = (System.nanoTime() - started) / 1_000;
        }
        Arrays.sort(micros);
        System.out.println("latencies_us " + micros[cycles / 2] + " " + micros[cycles * 99 / 100]);
        awaitClose();
        client.close();
    }

    /** Says {@code word} and waits for the benchmark's answer (it reads the server's counts). */
    static void awaitGo(String word) throws IOException {
        System.out.println(word);
        System.out.flush();
        INPUT.readLine();
    }

    /** Waits until the benchmark has read the server's counts and closed our stdin. */
    static void awaitClose() throws IOException {
        System.out.flush();
        while (INPUT.readLine() != null) {
        }
    }

    /** One contender's timed part: it takes its lock again and again until {@code deadline}. */
    interface Timed {
        void run(long deadline) throws Exception;
    }

    /**
     * A thread per contender, each warming up on its mutex (taken and released with a yield) for
     * WARMUP_MILLIS; once all are warm, prints "ready" and waits for a line, then runs every timed
     * part for MILLIS and waits for them all.
     */
    static void contend(InterProcessMutex[] mutexes, Timed[] timed, long millis, long warmupMillis) throws Exception {
        int contenders = timed.length;
        Thread[] threads = new Thread[contenders];
        // Every thread and this one: all warm, then all go.
        CyclicBarrier warm = new CyclicBarrier(contenders + 1);
        CyclicBarrier go = new CyclicBarrier(contenders + 1);
        AtomicInteger failures = new AtomicInteger();
        long warmUntil = System.nanoTime() + warmupMillis * 1_000_000;
        for (int t = 0; t < contenders; t++) {
            InterProcessMutex mutex = mutexes[t];
            Timed part = timed[t];
            threads[t] = new Thread(() -> {
                try {
                    while (System.nanoTime() < warmUntil) {
                        mutex.acquire();
                        Thread.yield();
                        mutex.release();
                    }
                    warm.await();
                    go.await();
                    part.run(System.nanoTime() + millis * 1_000_000);
                } catch (Exception e) {
                    e.printStackTrace();
                    failures.incrementAndGet();
                    // The others must not wait at a barrier for this thread.
                    warm.reset();
                    go.reset();
                }
            });
            threads[t].start();
        }
        warm.await();
        awaitGo("ready");
        go.await();
        for (Thread thread : threads) {
            thread.join();
        }
        if (failures.get() > 0) {
            throw new IllegalStateException(failures.get() + " contenders failed");
        }
    }

    static void contended(String connect, String path, int sessions, long millis, long warmupMillis, String record,
            long holdMicros) throws Exception {
        long[] counts = new long[sessions];
        CuratorFramework[] clients = clients(connect, sessions);
        // Opened for appending (O_APPEND): each write lands whole at the end, whichever process.
        FileOutputStream holds = new FileOutputStream(record, true);
        InterProcessMutex[] mutexes = new InterProcessMutex[sessions];
        Timed[] timed = new Timed[sessions];
        for (int s = 0; s < sessions; s++) {
            final int session = s;
            InterProcessMutex mutex = new InterProcessMutex(clients[s], path);
            mutexes[s] = mutex;
            byte[] enter = ("curator-" + s + " +\n").getBytes(StandardCharsets.US_ASCII);
            byte[] exit = ("curator-" + s + " -\n").getBytes(StandardCharsets.US_ASCII);
            timed[s] = deadline -> {
                while (System.nanoTime() < deadline) {
                    mutex.acquire();
                    holds.write(enter);
                    Thread.sleep(holdMicros / 1000, (int) (holdMicros % 1000) * 1000);
                    holds.write(exit);
                    mutex.release();
                    counts[session]++;
                }
            };
        }
        contend(mutexes, timed, millis, warmupMillis);
        holds.close();
        StringBuilder line = new StringBuilder("counts");
        for (long count : counts) {
            line.append(' ').append(count);
        }
        System.out.println(line);
        awaitClose();
        for (CuratorFramework client : clients) {
            client.close();
        }
    }

    static void cohort(String connect, String path, int sessions, int threadsPerSession, boolean lone, long millis,
            long warmupMillis, String record) throws Exception {
        int total = sessions * threadsPerSession + (lone ? 1 : 0);
        CuratorFramework[] clients = clients(connect, sessions + (lone ? 1 : 0));
        InterProcessMutex[] perClient = new InterProcessMutex[clients.length];
        for (int c = 0; c < clients.length; c++) {
            perClient[c] = new InterProcessMutex(clients[c], path);
        }
        long[][] waits = new long[total][];
        int[] counts = new int[total];
        InterProcessMutex[] mutexes = new InterProcessMutex[total];
        Timed[] timed = new Timed[total];
        FileOutputStream holds = new FileOutputStream(record, true);
        for (int t = 0; t < total; t++) {
            final int thread = t;
            // The lone thread, last, has the last client to itself.
            InterProcessMutex mutex = perClient[Math.min(t / threadsPerSession, clients.length - 1)];
            mutexes[t] = mutex;
            byte[] enter = ("curator-" + t + " +\n").getBytes(StandardCharsets.US_ASCII);
            byte[] exit = ("curator-" + t + " -\n").getBytes(StandardCharsets.US_ASCII);
            waits[t] = new long[1 << 16];
            timed[t] = deadline -> {
                while (System.nanoTime() < deadline) {
                    long asked = System.nanoTime();
                    mutex.acquire();
                    long waited = (System.nanoTime() - asked) / 1000;
                    holds.write(enter);
                    Thread.yield();
                    holds.write(exit);
                    mutex.release();
                    if (counts[thread] == waits[thread].length) {
                        waits[thread] = Arrays.copyOf(waits[thread], counts[thread] * 2);
                    }
                    waits[thread][counts[thread]++] = waited;
                }
            };
        }
        contend(mutexes, timed, millis, warmupMillis);
        holds.close();
        int acquisitions = Arrays.stream(counts).sum();
        long[] all = new long[acquisitions];
        int at = 0;
        long longest = 0;
        for (int t = 0; t < total; t++) {
            System.arraycopy(waits[t], 0, all, at, counts[t]);
            at += counts[t];
            if (!lone || t == total - 1) {
                for (int i = 0; i < counts[t]; i++) {
                    longest = Math.max(longest, waits[t][i]);
                }
            }
        }
        Arrays.sort(all);
        long p50 = acquisitions == 0 ? 0 : all[(int) Math.round((acquisitions - 1) * 0.50)];
        long p99 = acquisitions == 0 ? 0 : all[(int) Math.round((acquisitions - 1) * 0.99)];
        System.out.println("cohort " + acquisitions + " " + p50 + " " + p99 + " " + longest);
        awaitClose();
        for (CuratorFramework client : clients) {
            client.close();
        }
    }

    static void handoff(String connect, String path, int waiters) throws Exception {
        long started = System.nanoTime();
        CuratorFramework[] clients = clients(connect, waiters + 1);
        long connected = System.nanoTime();
        // A first pass unmeasured, on a path of its own: the JVM compiles the code that waits and
        // takes over, as our rows run compiled code from the start.
        handoffPass(clients, path + "-warmup", false);
        long warm = System.nanoTime();
        double[] gaps = handoffPass(clients, path, true);
        System.out.printf("handoff_us %.0f %.0f%n", percentile(gaps, 50), percentile(gaps, 99));
        awaitClose();
        // For the report on how long a run takes; the benchmark reads only stdout.
        System.err.printf("Curator handoff: %d clients connected in %.1f s, warmup pass %.1f s, measured pass %.1f s%n",
                waiters + 1, (connected - started) / 1e9, (warm - connected) / 1e9, (System.nanoTime() - warm) / 1e9);
        // About 100 ms each, and no faster from many threads: ZooKeeper's Java client sleeps in
        // its socket cleanup while holding a lock that all its clients share. 200 take 20 s.
        for (CuratorFramework client : clients) {
            client.close();
        }
    }

    /**
     * Queues {@code clients[1..]} behind {@code clients[0]} on {@code path}; once all are queued
     * (and, if {@code measured}, once the caller has answered "queued"), the holder releases.
     * Returns the gaps in µs between consecutive acquisitions, the first from the release.
     */
    static double[] handoffPass(CuratorFramework[] clients, String path, boolean measured) throws Exception {
        int waiters = clients.length - 1;
        InterProcessMutex holder = new InterProcessMutex(clients[0], path);
        holder.acquire();
        long[] acquired = new long[waiters];
        AtomicInteger failures = new AtomicInteger();
        Thread[] threads = new Thread[waiters];
        for (int w = 0; w < waiters; w++) {
            final int waiter = w;
            InterProcessMutex mutex = new InterProcessMutex(clients[w + 1], path);
            threads[w] = new Thread(() -> {
                try {
                    mutex.acquire();
                    acquired[waiter] = System.nanoTime();
                    mutex.release();
                } catch (Exception e) {
                    e.printStackTrace();
                    failures.incrementAndGet();
                }
            });
            threads[w].start();
        }
        // Everyone queued: the holder's node and one per waiter.
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (clients[0].getChildren().forPath(path).size() < waiters + 1) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the waiters did not queue in time");
            }
            Thread.sleep(20);
        }
        if (measured) {
            awaitGo("queued");
        }
        long released = System.nanoTime();
        holder.release();
        for (Thread thread : threads) {
            thread.join();
        }
        if (failures.get() > 0) {
            throw new IllegalStateException(failures.get() + " waiters failed");
        }
        Arrays.sort(acquired);
        double[] gaps = new double[waiters];
        long before = released;
        for (int w = 0; w < waiters; w++) {
            gaps[w] = (acquired[w] - before) / 1_000.0;
            before = acquired[w];
        }
        return gaps;
    }

    static void failover(String connect, String path, int participants, int terms, int warmup) throws Exception {
        CuratorFramework[] clients = clients(connect, participants);
        // Each message: a participant's slot and the System.nanoTime() at which await() returned.
        BlockingQueue<long[]> told = new LinkedBlockingQueue<>();
        // Threads that wait in await(), reused from term to term, and daemons: a latch that never
        // leads must not keep the JVM alive.
        ExecutorService waiters = Executors.newCachedThreadPool(runnable -> {
            Thread thread = new Thread(runnable);
            thread.setDaemon(true);
            return thread;
        });
        LeaderLatch[] latches = new LeaderLatch[participants];
        for (int slot = 0; slot < participants; slot++) {
            latches[slot] = join(clients[slot], path, slot, told, waiters);
        }
        long[] leader = nextLeader(told);
        double[] gaps = new double[terms];
        for (int term = -warmup; term < terms; term++) {
            if (term == 0) {
                awaitGo("ready");
            }
            int slot = (int) leader[0];
            long gaveUp = System.nanoTime();
            latches[slot].close();
            latches[slot] = join(clients[slot], path, slot, told, waiters);
            leader = nextLeader(told);
            if (term >= 0) {
                gaps[term] = (leader[1] - gaveUp) / 1_000.0;
            }
        }
        System.out.printf("failover_us %.0f %.0f%n", percentile(gaps, 50), percentile(gaps, 99));
        awaitClose();
        for (LeaderLatch latch : latches) {
            latch.close();
        }
        for (CuratorFramework client : clients) {
            client.close();
        }
    }

    /** A new latch for {@code slot} on {@code client}, started, with a thread that reports when it leads. */
    static LeaderLatch join(CuratorFramework client, String path, int slot, BlockingQueue<long[]> told,
            ExecutorService waiters) throws Exception {
        LeaderLatch latch = new LeaderLatch(client, path, "participant-" + slot);
        latch.start();
        waiters.execute(() -> {
            try {
                latch.await();
                told.add(new long[] {slot, System.nanoTime()});
            } catch (EOFException | InterruptedException closedBeforeLeading) {
                // Only at the end, when the latches still queued are closed.
            }
        });
        return latch;
    }

    /** The next participant told it leads, or a failure after two minutes. */
    static long[] nextLeader(BlockingQueue<long[]> told) throws InterruptedException {
        long[] leader = told.poll(120, TimeUnit.SECONDS);
        if (leader == null) {
            throw new IllegalStateException("no participant was told it leads within 120 s");
        }
        return leader;
    }

    /** The same nearest-rank percentile as the Rust side of the benchmark. */
    static double percentile(double[] samples, double percent) {
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        return sorted[(int) Math.round((sorted.length - 1) * percent / 100)];
    }
}
