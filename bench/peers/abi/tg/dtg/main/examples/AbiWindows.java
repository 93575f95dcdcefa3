package tg.dtg.main.examples;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tg.dtg.events.Event;
import tg.dtg.graph.Graph;

/**
 * The peer's examples (ABI graph, ICPP'21) over every sliding window of a
 * stream, where its own harness stops after the first window.
 *
 *   java tg.dtg.main.examples.AbiWindows kite EVENTS W S [threads]
 *   java tg.dtg.main.examples.AbiWindows stock EVENTS W S [threads] [price range]
 *
 * kite: one event a line, "ts src dest" (the peer's format), sorted by ts;
 * the peer's Kite query (c[i].src = c[i-1].dest).  stock: "ts id price";
 * the peer's "simple stock" query (rising prices) on each id's events, as
 * cetql's `[id]` partitions them (the peer's own [id] variant has no
 * constructor).  Windows are [k*S, k*S + W) for every k whose window holds
 * an event (as cetql assigns them, windows before 0 included), each
 * window's graph built and its CETs extracted by the peer's own classes
 * (Graph.construct, Graph.detect: BasicAnchorBasedDetector with anchor
 * selectivity 2, trends counted, not kept).  The peer prints "cet number N"
 * per window; this prints the windows, the events in them and the seconds
 * taken at the end.
 */
public class AbiWindows {
  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable t) {  // the peer's thread pool would keep the JVM alive
      t.printStackTrace();
      System.exit(1);
    }
    System.exit(0);
  }

  static void run(String[] args) {
    long began = System.nanoTime();
    String kind = args[0];
    Config config = kind.equals("stock") ? Stock.getArgument() : new Config();
    config.path = args[1];
    config.wl = Long.parseLong(args[2]);
    config.sl = Long.parseLong(args[3]);
    config.parallism = args.length > 4 ? Integer.parseInt(args[4]) : 2;
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
    Map<String, List<Event>> parts = new LinkedHashMap<>();
    for (Iterator<Event> it = example.readInput(); it.hasNext(); ) {
      Event e = it.next();
      String key = kind.equals("stock") ? e.get(0).toString() : "";
      parts.computeIfAbsent(key, k -> new ArrayList<>()).add(e);
    }
    long w = config.wl, s = config.sl;
    long windows = 0, inWindows = 0;
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
        Graph graph = new Graph(new ArrayList<>(events.subList(lo, hi)), example.getTemplate(),
            example.getQuery(), example.getConstructors());
        graph.construct();
        graph.detect(config.selectivity, null, 1);
        windows++;
        inWindows += hi - lo;
      }
    }
    tg.dtg.util.Global.close(60, java.util.concurrent.TimeUnit.SECONDS);
    System.out.println("windows " + windows + " events in windows " + inWindows + " seconds "
        + (System.nanoTime() - began) / 1e9);
  }
}
