"""A-Seq's dynamic prefix counting (SIGMOD'14 §3) for fixed-length
SEQ(E1, …, En) with single-event negation `!C`, inside one group.

One counter per prefix (E1), (E1, E2), …, (E1, …, En); an event of Ei adds
the count of the prefix before it (1 for E1), so nothing is stored per event.
A negated C between Ei and Ei+1 clears the counter of (E1, …, Ei) when a C
arrives (A-Seq's Fig. 7), before Ei+1 at all; before E1 it stops new starts,
after En it clears the full count.  Events of equal time never chain: a time
step reads the counters as they were before it, then clears, then adds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def count(
    states: list[Callable[[int], bool]],
    negations: list[tuple[int, Callable[[int], bool]]],
    times: Sequence,
    approx: bool = False,
):
    """Number of matches of SEQ(states…) in one group.  `negations`: (k,
    eligible) for a negated event between states[k-1] and states[k] (k = 0:
    before the first, k = len(states): after the last)."""
    n = len(states)
    one = 1.0 if approx else 0 + 1
    counters = [0.0 if approx else 0] * n
    started = True  # no negated event before E1 seen yet
    i, m = 0, len(times)
    while i < m:
        j = i
        while j < m and times[j] == times[i]:
            j += 1
        deltas = [0.0 if approx else 0] * n
        for e in range(i, j):
            for k, eligible in enumerate(states):
                if eligible(e):
                    if k == 0:
                        if started:
                            deltas[0] += one
                    else:
                        deltas[k] += counters[k - 1]
        for k, eligible in negations:
            if any(eligible(e) for e in range(i, j)):
                if k == 0:
                    started = False
                else:
                    counters[k - 1] = 0.0 if approx else 0
        for k in range(n):
            counters[k] += deltas[k]
        i = j
    return counters[-1]
