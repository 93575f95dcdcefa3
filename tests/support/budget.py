"""How many examples a property test draws.

The full suite draws each property's whole budget.  The fast lane
(`pytest -m "not spark"`, conftest sets CETQL_TEST_LANE=fast) draws a tenth
of it, at least ten: every property and every explicit example still runs,
quickly; the depth is the full suite's (CI's)."""

from __future__ import annotations

import os

FAST = os.environ.get("CETQL_TEST_LANE") == "fast"


def budget(examples: int) -> int:
    return max(10, examples // 10) if FAST else examples
