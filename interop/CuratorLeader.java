// A Curator participant for zklock's leader election interop tests: joins an election on a path
// when told, appends "NAME lead EPOCH begin" / "NAME lead EPOCH end" lines to a shared log while
// it leads (EPOCH: the czxid of its node), and gives leadership up only when told, so that the
// test decides every turn.
//
// java -cp <classes>:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar \
//     CuratorLeader CONNECT PATH MODE LOG NAME
//
// MODE: latch (Curator's LeaderLatch(client, PATH, NAME)) or selector (a LeaderSelector with id
// NAME and autoRequeue, which leads for as long as takeLeadership runs).
//
// Once connected it prints "ready NAME", then obeys lines on stdin:
//   join   enter the election (once);
//   yield  (when leading) log the end, give leadership up and queue again: a latch is closed and
//          a new one started, a selector returns from takeLeadership;
//   leave  (when leading) log the end, leave the election, print "left NAME" and exit 0;
//   view   print "view NAME LEADER ID,ID,..." (LEADER "-" when none): Curator's getLeader() and
//          getParticipants(), in its queue order.
// The end of stdin (the test is gone) makes it exit at once.

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.RetryNTimes;

public class CuratorLeader {
    /** What the current election handle can tell: Curator's own view of the queue. */
    private interface View {
        Participant leader() throws Exception;

        Collection<Participant> participants() throws Exception;
    }

    private static volatile View view;

    public static void main(String[] args) throws Exception {
        String connect = args[0], path = args[1], mode = args[2], log = args[3], name = args[4];

        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 20_000, 10_000, new RetryNTimes(20, 200));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("cannot connect to " + connect);
            System.exit(3);
        }
        BlockingQueue<String> commands = readCommands(name);
        say("ready " + name);
        expect(commands, "join");
        // Append mode: every line is one O_APPEND write, ordered with the other participants'.
        try (FileOutputStream out = new FileOutputStream(log, true)) {
            switch (mode) {
                case "latch" -> lead(client, path, name, commands, out);
                case "selector" -> select(client, path, name, commands, out);
                default -> throw new IllegalArgumentException("mode: latch, selector");
            }
        }
        client.close();
        say("left " + name);
    }

    /** LeaderLatch: one latch per term; yielding closes it and starts a new one at the back of the queue. */
    private static void lead(CuratorFramework client, String path, String name, BlockingQueue<String> commands,
            FileOutputStream out) throws Exception {
        while (true) {
            LeaderLatch latch = new LeaderLatch(client, path, name);
            view = viewOf(latch::getLeader, latch::getParticipants);
            latch.start();
            latch.await();
            long epoch = client.checkExists().forPath(latch.getOurPath()).getCzxid();
            append(out, name + " lead " + epoch + " begin");
            String command = takeTurnEnd(commands);
            append(out, name + " lead " + epoch + " end");
            latch.close();
            if (command.equals("leave")) {
                return;
            }
        }
    }

    /** LeaderSelector: leads while takeLeadership runs; autoRequeue queues it again after each term. */
    private static void select(CuratorFramework client, String path, String name, BlockingQueue<String> commands,
            FileOutputStream out) throws Exception {
        CountDownLatch left = new CountDownLatch(1);
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework leader) throws Exception {
                long epoch = leaderEpoch(leader, path, name);
                append(out, name + " lead " + epoch + " begin");
                String command = takeTurnEnd(commands);
                append(out, name + " lead " + epoch + " end");
                if (command.equals("leave")) {
                    // Hold on until close() interrupts us: returning would queue again.
                    left.countDown();
                    Thread.sleep(Long.MAX_VALUE);
                }
            }
        });
        selector.setId(name);
        selector.autoRequeue();
        view = viewOf(selector::getLeader, selector::getParticipants);
        selector.start();
        left.await();
        selector.close();
    }

    /**
     * The czxid of the node that makes us leader: the first of the selector's queue in Curator's
     * order (the text after "lock-"), which must be ours (its data is our id).
     */
    private static long leaderEpoch(CuratorFramework client, String path, String name) throws Exception {
        List<String> nodes = new ArrayList<>(client.getChildren().forPath(path));
        nodes.sort(Comparator.comparing(node -> node.substring(node.lastIndexOf("lock-") + 5)));
        String first = path + "/" + nodes.get(0);
        String owner = new String(client.getData().forPath(first), StandardCharsets.UTF_8);
        if (!owner.equals(name)) {
            System.err.println(name + ": takeLeadership called while " + first + " (" + owner + ") is first");
            System.exit(6);
        }
        return client.checkExists().forPath(first).getCzxid();
    }

    private interface Source<T> {
        T get() throws Exception;
    }

    private static View viewOf(Source<Participant> leader, Source<Collection<Participant>> participants) {
        return new View() {
            public Participant leader() throws Exception { return leader.get(); }

            public Collection<Participant> participants() throws Exception { return participants.get(); }
        };
    }

    /** Reads stdin on a thread: answers "view" at once, queues the rest, exits at the end of stdin. */
    private static BlockingQueue<String> readCommands(String name) {
        BlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.equals("view")) {
                        try {
                            printView(name);
                        } catch (Exception e) {
                            say("view " + name + " failed: " + e);
                        }
                    } else {
                        commands.add(line);
                    }
                }
            } catch (IOException e) {
                e.printStackTrace();
            }
            System.exit(0);
        });
        reader.setDaemon(true);
        reader.start();
        return commands;
    }

    private static void printView(String name) throws Exception {
        View current = view;
        if (current == null) {
            say("view " + name + " - ");
            return;
        }
        Participant leader = current.leader();
        List<String> ids = new ArrayList<>();
        for (Participant participant : current.participants()) {
            ids.add(participant.getId());
        }
        String leaderId = leader.isLeader() ? leader.getId() : "-";
        say("view " + name + " " + leaderId + " " + String.join(",", ids));
    }

    /** Waits, while leading, for the test to end the term: "yield" or "leave". */
    private static String takeTurnEnd(BlockingQueue<String> commands) throws InterruptedException {
        String command = commands.take();
        if (!command.equals("yield") && !command.equals("leave")) {
            System.err.println("unexpected command while leading: " + command);
            System.exit(5);
        }
        return command;
    }

    private static void expect(BlockingQueue<String> commands, String expected) throws InterruptedException {
        String command = commands.take();
        if (!command.equals(expected)) {
            System.err.println("expected " + expected + ", got " + command);
            System.exit(5);
        }
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void append(FileOutputStream out, String line) throws IOException {
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
