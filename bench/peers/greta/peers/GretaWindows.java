package peers;

import event.Event;
import event.StockEvent;
import graph.Graph;
import java.io.BufferedReader;
import java.io.FileReader;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import query.Query;

/**
 * The peer's GRETA (event trend aggregation) over every sliding window of a
 * stock stream, where its own harness reads one window (the first N events).
 *
 *   java peers.GretaWindows EVENTS W S
 *
 * EVENTS: the peer's stock format, "id, sec, sector, company, price, volume,
 * type", sorted by sec.  Each (window, sub-stream) — the peer partitions by
 * sector and company — is counted by the peer's own Graph.getCompleteGraph
 * (skip-till-any-match, no predicate: the peer's code evaluates none), exact
 * (BigInteger).  Windows are [k*S, k*S + W) for every k whose window holds
 * an event, as cetql assigns them.  Prints the windows, the sum of every
 * (window, sub-stream) count, and the seconds taken.
 */
public class GretaWindows {
  public static void main(String[] args) throws Exception {
    long began = System.nanoTime();
    long w = Long.parseLong(args[1]), s = Long.parseLong(args[2]);
    Map<String, List<Event>> parts = new LinkedHashMap<>();
    try (BufferedReader in = new BufferedReader(new FileReader(args[0]))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        Event e = StockEvent.parse(line);
        parts.computeIfAbsent(e.getSubstreamid(), k -> new ArrayList<>()).add(e);
      }
    }
    Query query = new Query("any", "none");
    BigInteger total = BigInteger.ZERO;
    long cells = 0;
    for (List<Event> events : parts.values()) {
      long first = Math.floorDiv(events.get(0).sec - w, s) + 1;
      long last = Math.floorDiv(events.get(events.size() - 1).sec, s);
      int lo = 0;
      for (long k = first; k <= last; k++) {
        long start = k * s, end = start + w;
        while (lo < events.size() && events.get(lo).sec < start) lo++;
        int hi = lo;
        while (hi < events.size() && events.get(hi).sec < end) hi++;
        if (hi == lo) continue;
        Graph graph = new Graph().getCompleteGraph(new ConcurrentLinkedQueue<>(events.subList(lo, hi)), query);
        total = total.add(graph.final_count);
        cells++;
      }
    }
    System.out.println("groups " + cells + " total " + total + " seconds " + (System.nanoTime() - began) / 1e9);
  }
}
