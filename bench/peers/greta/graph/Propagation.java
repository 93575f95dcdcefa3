package graph;

import event.Event;
import java.math.BigInteger;
import java.util.List;
import query.Query;

/**
 * GRETA's count propagation over one (window, sub-stream), as the peer's
 * Graph.getCompleteGraph does it under skip-till-any-match ("any"), with
 * two changes: each predecessor is checked with the peer's own
 * Query.compatible (its "up" predicate: previous.price < following.price),
 * which getCompleteGraph never calls; and no edge list is kept (the count
 * never reads it, and Node.connect's contains() makes each edge cost the
 * length of the list).  Nodes, seconds and counts are the peer's classes
 * (Node, NodesPerSecond, BigInteger).  In package graph because a Node's
 * count is visible only there.
 */
public final class Propagation {
  private Propagation() {
  }

  public static BigInteger count(List<Event> events, Query query) {
    Graph graph = new Graph();
    int id = 1;
    int currSec = -1;
    for (Event event : events) {
      if (currSec < event.sec) {
        currSec = event.sec;
        graph.all_nodes.add(new NodesPerSecond(id++, currSec));
      }
      Node node = new Node(event);
      graph.all_nodes.get(graph.all_nodes.size() - 1).nodes_per_second.add(node);
      graph.nodeNumber++;
      for (NodesPerSecond second : graph.all_nodes) {
        if (second.second < currSec) {
          for (Node previous : second.nodes_per_second) {
            if (query.compatible(previous.event, event, 0)) {
              node.count = node.count.add(previous.count);
              graph.edgeNumber++;
            }
          }
        }
      }
      graph.final_count = graph.final_count.add(node.count);
    }
    return graph.final_count;
  }
}
