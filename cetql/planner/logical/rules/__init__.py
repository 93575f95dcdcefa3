"""The planner's rules, one module each, applied in order by `build.build`
(as sqlglot's optimizer applies its RULES): each takes the draft plan and
returns it with its own decisions made, or raises the refusal they imply.

Every rule module declares what it reads (`READS`) and what it sets
(`SETS`) of the `Draft`; `build` checks after each rule that it set what it
declares, and before each that what it reads was set by an earlier rule.  A
rule never edits another rule's decision or reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from cetql.base.options import RunOptions
from cetql.planner.logical.plan import Inputs, Resources
from cetql.planner.semantics import ir


class _Missing:
    """A field no rule has set yet (None is a decision: "not applicable")."""

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        raise AssertionError("a rule read a draft field that no earlier rule set")


MISSING = _Missing()

# the draft's fields that come from outside the rules
GIVEN = ("query", "options", "inputs", "resources")


@dataclass(frozen=True)
class Draft:
    """A plan being built: the rules' inputs and their decisions so far."""

    query: ir.BoundQuery
    options: RunOptions
    inputs: Inputs
    resources: Resources
    trend_set: object = MISSING  # Decision[TrendSet]
    keys: object = MISSING  # tuple[Key, ...]: Spark partitions by them
    subkeys: object = MISSING  # tuple[SubKey, ...]: the kernel splits a group by them (aggregation)
    variable_keys: object = MISSING  # tuple[VariableKey, ...]: [v.k], and how each is enforced
    key_predicates: object = MISSING  # predicates that enforce variable keys (vertex and edge)
    transitions: object = MISSING  # tuple[TransitionPlan, ...]
    algorithm: object = MISSING  # Decision[Algorithm] | None (detection)
    complete: object = MISSING  # Decision[Completeness] | None
    numbers: object = MISSING  # Decision[Numbers] | None (detection)
    estimate: object = MISSING  # Decision[GroupEstimate | None] | None (aggregation): the largest group
    strategy: object = MISSING  # Decision[Strategy] | None (aggregation)
    prefilter: object = MISSING  # Decision[Prefilter] | None (not distributed)
    split: object = MISSING  # Decision[int] | None: distributed by cost, the groups the local strategy keeps
    stream: object = MISSING  # Decision[Streaming | None]: streams, keyed by blocks of windows
    sharing: object = MISSING  # Decision[Sharing | None]
    block: object = MISSING  # int: windows per block (0: no blocks)
    propagate: object = MISSING  # bool
    shared_graph: object = MISSING  # bool
    guard: object = MISSING  # Decision[int] | None (aggregation)
    memory: object = MISSING  # Decision[int] | None
    max_edges: object = MISSING  # int | None
    batch_events: object = MISSING  # int | None
    partitions: object = MISSING  # Decision[int]
    invalid: object = MISSING  # Decision[InvalidRows]
    cost: object = MISSING  # str

    @property
    def detection(self) -> bool:
        return self.query.kind == ir.Kind.DETECTION

