// Curator's InterProcessMutex, timed, for zklock's comparison benchmark (benches/compare).
//
// java -cp <classes>:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//     CuratorBench CONNECT PATH uncontended CYCLES WARMUP   -> "latencies_us P50 P99"
//     CuratorBench CONNECT PATH contended SESSIONS MILLIS   -> "counts N1 N2 ... violations V"

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], scenario = args[2];
        int first = Integer.parseInt(args[3]);
        long second = Long.parseLong(args[4]);
        if (scenario.equals("uncontended")) {
            uncontended(connect, path, first, (int) second);
        } else {
            contended(connect, path, first, second);
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

    static void uncontended(String connect, String path, int cycles, int warmup) throws Exception {
        CuratorFramework client = client(connect);
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        for (int i = 0; i < warmup; i++) {
            mutex.acquire();
            mutex.release();
        }
        long[] micros = new long[cycles];
        for (int i = 0; i < cycles; i++) {
            long started = System.nanoTime();
            mutex.acquire();
            mutex.release();
            micros[i] = (System.nanoTime() - started) / 1_000;
        }
        Arrays.sort(micros);
        System.out.println("latencies_us " + micros[cycles / 2] + " " + micros[cycles * 99 / 100]);
        client.close();
    }

    static void contended(String connect, String path, int sessions, long millis) throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        long[] counts = new long[sessions];
        Thread[] threads = new Thread[sessions];
        CuratorFramework[] clients = new CuratorFramework[sessions];
        for (int s = 0; s < sessions; s++) {
            clients[s] = client(connect);
        }
        long deadline = System.nanoTime() + millis * 1_000_000;
        for (int s = 0; s < sessions; s++) {
            final int session = s;
            InterProcessMutex mutex = new InterProcessMutex(clients[s], path);
            threads[s] = new Thread(() -> {
                try {
                    while (System.nanoTime() < deadline) {
                        mutex.acquire();
                        if (inside.incrementAndGet() > 1) {
                            violations.incrementAndGet();
                        }
                        inside.decrementAndGet();
                        mutex.release();
                        counts[session]++;
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            threads[s].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        StringBuilder line = new StringBuilder("counts");
        for (long count : counts) {
            line.append(' ').append(count);
        }
        System.out.println(line.append(" violations ").append(violations.get()));
        for (CuratorFramework client : clients) {
            client.close();
        }
    }
}
