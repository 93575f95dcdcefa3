package tg.dtg.main.examples;

import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import tg.dtg.events.Event;
import tg.dtg.graph.Graph;
import tg.dtg.util.Global;

/**
 * The peer's examples (ABI graph, ICPP'21) over every sliding window of a
 * stream, where its own harness stops after the first window.
 *
 *   java tg.dtg.main.examples.AbiWindows kite EVENTS W S THREADS
 *   java tg.dtg.main.examples.AbiWindows stock EVENTS W S THREADS [price range]
 *
 * kite: one event a line, "ts src dest" (the peer's format, read by its own
 * reader), sorted by ts; the peer's Kite query (c[i].src = c[i-1].dest).
 * stock: "ts id price"; the peer's "simple stock" query (rising prices) on
 * each id's events, as cetql's `[id]` partitions them (the peer's own [id]
 * variant has no constructor).  Windows are [k*S, k*S + W) for every k whose
 * window holds an event (as cetql assigns them, windows before 0 included),
 * each window's graph built and its CETs extracted by the peer's own classes
 * (Graph.construct, Graph.detect: BasicAnchorBasedDetector with anchor
 * selectivity 2, trends counted, not kept).
 *
 * Parallelism is over windows: THREADS threads take windows in turn, and
 * each runs the peer's per-window work on itself.  The peer's own
 * parallelism is within one window (a thread pool that every step of a
 * window's construction and detection is handed to, about 70 tasks for a
 * window of 100 events): on windows this small the handing over costs more
 * than the work, so its pool is replaced by one that runs each task on the
 * thread that submits it (Direct, below; the peer's code is
 * unchanged, its pool of one thread is never started).  The peer prints a
 * dozen lines of progress a window ("cet number N" among them): they are
 * kept, through a buffered stream rather than one write a line.
 *
 * -Dabi.pool=N runs it the peer's own way instead, as its harness does and
 * as this driver did at first: one window at a time, every step handed to
 * the peer's pool of N threads, its progress written a line at a time.  This
 * prints the windows, the events in them, the seconds taken and those of
 * reading the input at the end.
 */
public class AbiWindows {
  public static void main(String[] args) {
    PrintStream out = System.out;
    if (Integer.getInteger("abi.pool", 0) == 0) {
      out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false);
      System.setOut(out);
    }
    int status = 0;
    try {
      run(args);
    } catch (Throwable t) {
      t.printStackTrace();
      status = 1;
    }
    out.flush();
    System.exit(status);
  }

  static void run(String[] args) throws Exception {
    long began = System.nanoTime();
    String kind = args[0];
    Config config = kind.equals("stock") ? Stock.getArgument() : new Config();
    config.path = args[1];
    config.wl = Long.parseLong(args[2]);
    config.sl = Long.parseLong(args[3]);
    int threads = args.length > 4 ? Integer.parseInt(args[4]) : 1;
    int pool = Integer.getInteger("abi.pool", 0);
    config.parallism = Math.max(1, pool);  // the peer's constructors for its pool (of one, made direct below)
    config.selectivity = 2;
    Example example;
    if (kind.equals("stock")) {
      Stock.Argument a = (Stock.Argument) config;
      a.isSimple = true;
      if (args.length > 5) a.range = args[5];
      example = new Stock(a, 1.0);
    } else {
      example = new Kite(config);
    }
    if (pool == 0) {
      Field executor = Global.class.getDeclaredField("executor");
      executor.setAccessible(true);
      executor.set(null, new Direct());
    } else {
      threads = 1;  // the peer's own way: one window at a time, each step handed to its pool
    }

    Map<String, List<Event>> parts = new LinkedHashMap<>();
    for (Iterator<Event> it = example.readInput(); it.hasNext(); ) {
      Event e = it.next();
      String key = kind.equals("stock") ? e.get(0).toString() : "";
      parts.computeIfAbsent(key, k -> new ArrayList<>()).add(e);
    }
    List<List<Event>> windows = new ArrayList<>();
    long w = config.wl, s = config.sl, inWindows = 0;
    for (List<Event> events : parts.values()) {
      long first = Math.floorDiv(events.get(0).timestamp - w, s) + 1;
      long last = Math.floorDiv(events.get(events.size() - 1).timestamp, s);
      int lo = 0;
      for (long k = first; k <= last; k++) {
        long start = k * s, end = start + w;
        while (lo < events.size() && events.get(lo).timestamp < start) lo++;
        int hi = lo;
        while (hi < events.size() && events.get(hi).timestamp < end) hi++;
        if (hi == lo) continue;
        windows.add(events.subList(lo, hi));
        inWindows += hi - lo;
      }
    }
    long read = System.nanoTime();
    AtomicInteger next = new AtomicInteger();
    Throwable[] failed = new Throwable[1];
    Runnable worker = () -> {
      try {
        for (int k = next.getAndIncrement(); k < windows.size(); k = next.getAndIncrement()) {
          Graph graph = new Graph(new ArrayList<>(windows.get(k)), example.getTemplate(), example.getQuery(),
              example.getConstructors());
          graph.construct();
          graph.detect(config.selectivity, null, 1);
        }
      } catch (Throwable t) {
        failed[0] = t;
      }
    };
    Thread[] workers = new Thread[threads];
    for (int i = 0; i < threads; i++) {
      workers[i] = new Thread(worker);
      workers[i].start();
    }
    for (Thread t : workers) t.join();
    if (failed[0] != null) throw new RuntimeException(failed[0]);
    if (pool > 0) Global.close(60, java.util.concurrent.TimeUnit.SECONDS);
    System.out.println("windows " + windows.size() + " events in windows " + inWindows + " seconds "
        + (System.nanoTime() - began) / 1e9 + " reading " + (read - began) / 1e9);
  }

  /** An executor that runs each task on the thread that submits it. */
  static final class Direct extends AbstractExecutorService {
    @Override public void execute(Runnable task) { task.run(); }
    @Override public void shutdown() { }
    @Override public List<Runnable> shutdownNow() { return new ArrayList<>(); }
    @Override public boolean isShutdown() { return false; }
    @Override public boolean isTerminated() { return false; }
    @Override public boolean awaitTermination(long timeout, TimeUnit unit) { return true; }
  }
}
