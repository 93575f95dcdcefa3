package peers;

import event.Event;
import event.StockEvent;
import graph.Propagation;
import java.io.BufferedReader;
import java.io.FileReader;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import query.Query;

/**
 * The peer's GRETA (event trend aggregation) over every sliding window of a
 * stock stream, where its own harness reads one window (the first N events).
 *
 *   java peers.GretaWindows EVENTS W S THREADS
 *
 * EVENTS: the peer's stock format, "id, sec, sector, company, price, volume,
 * type", sorted by sec, read by the peer's own StockEvent.parse.  Each
 * (window, sub-stream) — the peer partitions by sector and company — is
 * counted exactly (BigInteger) by graph.Propagation: the peer's
 * getCompleteGraph under skip-till-any-match with its Query("any", "up")
 * predicate honoured (S.price < NEXT(S).price) and no edge lists.  Windows
 * are [k*S, k*S + W) for every k whose window holds an event, as cetql
 * assigns them; THREADS threads take (window, sub-stream) cells in turn.
 * Prints the cells, the sum of every cell's count, the seconds taken and
 * those of reading the input.
 */
public class GretaWindows {
  public static void main(String[] args) throws Exception {
    long began = System.nanoTime();
    long w = Long.parseLong(args[1]), s = Long.parseLong(args[2]);
    int threads = args.length > 3 ? Integer.parseInt(args[3]) : 1;
    Map<String, List<Event>> parts = new LinkedHashMap<>();
    try (BufferedReader in = new BufferedReader(new FileReader(args[0]))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        Event e = StockEvent.parse(line);
        parts.computeIfAbsent(e.getSubstreamid(), k -> new ArrayList<>()).add(e);
      }
    }
    List<List<Event>> cells = new ArrayList<>();
    for (List<Event> events : parts.values()) {
      long first = Math.floorDiv(events.get(0).sec - w, s) + 1;
      long last = Math.floorDiv(events.get(events.size() - 1).sec, s);
      int lo = 0;
      for (long k = first; k <= last; k++) {
        long start = k * s, end = start + w;
        while (lo < events.size() && events.get(lo).sec < start) lo++;
        int hi = lo;
        while (hi < events.size() && events.get(hi).sec < end) hi++;
        if (hi > lo) cells.add(events.subList(lo, hi));
      }
    }
    long read = System.nanoTime();
    Query query = new Query("any", "up");
    BigInteger[] totals = new BigInteger[threads];
    AtomicInteger next = new AtomicInteger();
    Thread[] pool = new Thread[threads];
    for (int i = 0; i < threads; i++) {
      final int me = i;
      totals[me] = BigInteger.ZERO;
      pool[i] = new Thread(() -> {
        for (int k = next.getAndIncrement(); k < cells.size(); k = next.getAndIncrement()) {
          totals[me] = totals[me].add(Propagation.count(cells.get(k), query));
        }
      });
      pool[i].start();
    }
    BigInteger total = BigInteger.ZERO;
    for (int i = 0; i < threads; i++) {
      pool[i].join();
      total = total.add(totals[i]);
    }
    System.out.println("groups " + cells.size() + " total " + total + " seconds " + (System.nanoTime() - began) / 1e9
        + " reading " + (read - began) / 1e9);
  }
}
