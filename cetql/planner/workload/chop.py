"""A-Seq's Chop-Connect (SIGMOD'14 §4.2) for common suffixes: which
members of a prefix tree are chopped, and where.

A member chopped at position k counts its prefix p1..pk in the Pre-Tree
(shared as prefixes are) and its suffix pk..pL by backward counters kept
once for every member with the same suffix (the same masks, the same
negations between its positions and after its last) — the Suffix-Tree —
connected by start time (Lemma 7).  The choice is the cost rule's, in
passes of prefix sums: each distinct counter one pass, each connection a
quarter (a product and a sum); a suffix is considered only when at least
two members end with it and it is two positions long or more.  Greedy:
the chop that lowers the cost most, until none does.
"""

from __future__ import annotations

from dataclasses import dataclass

CONNECT = 0.25


@dataclass(frozen=True)
class Member:
    """A member's positions: `chain` as the Pre-Tree keys them, `after`
    its negations after the last position."""

    chain: tuple[tuple[str, tuple[str, ...]], ...]  # (mask, clearing columns before it) of each position
    after: tuple[str, ...]

    def suffix(self, k: int) -> tuple:
        """The key of its suffix from position k: each position's mask and
        the negations between it and the next (after the last: `after`)."""
        n = len(self.chain)
        return tuple((self.chain[j][0], self.chain[j + 1][1] if j + 1 < n else self.after) for j in range(k, n))


def cost(members: list[Member], chops: dict[int, int]) -> float:
    """Passes of prefix sums: distinct prefix and suffix counters, plus connections."""
    prefixes, suffixes = set(), set()
    for i, m in enumerate(members):
        k = chops.get(i)
        upto = len(m.chain) if k is None else k + 1
        prefixes.update(m.chain[:p] for p in range(1, upto + 1))
        if k is not None:
            suffixes.update(m.suffix(j) for j in range(k, len(m.chain)))
    return len(prefixes) + len(suffixes) + CONNECT * len(chops)


def candidates(members: list[Member]) -> dict[tuple, list[tuple[int, int]]]:
    """Suffixes of ≥ 2 positions that ≥ 2 members end with: (member, chop position) each."""
    found: dict[tuple, list[tuple[int, int]]] = {}
    for i, m in enumerate(members):
        for k in range(len(m.chain) - 1):
            found.setdefault(m.suffix(k), []).append((i, k))
    return {s: users for s, users in found.items() if len(users) >= 2}


def choose(members: list[Member]) -> dict[int, int]:
    """member → its chop position (members not chopped left out)."""
    chops: dict[int, int] = {}
    options = candidates(members)
    while True:
        now, best = cost(members, chops), None
        for users in options.values():
            trial = {**chops, **dict(users)}
            c = cost(members, trial)
            if c < now - 1e-9 and (best is None or c < best[0]):
                best = (c, trial)
        if best is None:
            return chops
        chops = best[1]
