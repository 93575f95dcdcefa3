"""The closest name: one rule for every "did you mean …?" cetql says — a
misspelt flag, keyword, column, event type, variable, parameter or Python
keyword argument is answered with the valid name nearest to it.

    closest("dest", ["ts", "src", "dst"])        → "dst"
    nearest("AG", ["AGG", "AVG", "WITHIN"])      → ["AGG", "AVG"]  (equally near: both, for a caller to choose)
    did_you_mean("dest", ["ts", "src", "dst"])   → " (did you mean 'dst'?)"

Names are compared folded: case aside, `_` read as `-` (`--id_col` is
`--id-col`, `Dst` is `dst`).  Nearer is fewer edits (a letter dropped,
added, changed, or two neighbours swapped: the typing slips), then more
alike by difflib's measure; a name is near enough at one edit (but one
letter for another is no slip), or when difflib finds it at least 60% alike.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's own default for get_close_matches


def fold(name: str) -> str:
    """How names are compared: without case, `_` as `-`."""
    return name.casefold().replace("_", "-")


def edits(a: str, b: str) -> int:
    """Letters dropped, added or changed and neighbours swapped, from `a` to
    `b` (the optimal string alignment distance)."""
    before, row = None, list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (x != y))
            if before is not None and i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                current[j] = min(current[j], before[j - 2] + 1)
        before, row = row, current
    return row[-1]


def nearest(word: str, names: Iterable[str]) -> list[str]:
    """The names near enough to `word`, the nearest first (ties in the order
    given); a name equal to `word` once folded (`--id-col` for `--id_col`)
    is nearest of all, `word` itself is never among them."""
    target = fold(word)
    scored = []
    for order, name in enumerate(dict.fromkeys(names)):
        if name == word:
            continue
        folded = fold(name)
        distance = edits(target, folded)
        likeness = difflib.SequenceMatcher(None, target, folded).ratio()
        if (distance <= 1 and max(len(target), len(folded)) > 1) or likeness >= CUTOFF:
            scored.append((distance, -likeness, order, name))
    return [name for *_, name in sorted(scored)]


def closest(word: str, names: Iterable[str]) -> str | None:
    """The one name nearest to `word`, or None when none is near."""
    found = nearest(word, names)
    return found[0] if found else None


def did_you_mean(word: str, names: Iterable[str], quote: str = "'") -> str:
    """`" (did you mean 'dst'?)"`, or "" when no name is near `word`."""
    near = closest(word, names)
    return f" (did you mean {quote}{near}{quote}?)" if near is not None else ""
