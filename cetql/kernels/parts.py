"""Parts of a group: equivalence attributes evaluated inside the kernel.

- A shared sub-key (aggregation's `shared_subkeys`, `[k]` not grouped by)
  is a key of every event: the group splits by its value, an event with a
  null value is in no part.
- State keys (`spec.StateKey`, `[b.k]`, `[a.g, b.x]`) split a group into
  one part per combination of the keyed states' key values.  In a part, a
  keyed state's mask holds only for the events whose key is the part's
  value (null: never); the other states' masks are unchanged, so an event
  that may take an unkeyed state is in every part.  The plan keys only
  states every trend has an event at, so each trend lies in exactly one
  part, and whatever could be prepended, appended or inserted into it lies
  in that part too: each part is evaluated on its own (detection: its
  trends; aggregation: its aggregates, summed into the group's row).
  That holds while no event may take a keyed state and another state as
  well (in `SEQ(A* a[], A b) WHERE [b.k]` on one stream, (e1) with e1 as b
  extends to (e1, e2) with e1 as a and e2 as b, whatever e2's key): the
  planner refuses such a key (`logical.rules.keys`), and a group that has
  such an event anyway is refused here (`SharedKeyedEvent`), never answered
  wrongly.

Keys compare as Spark compares them (`compare.key`: NaN equals NaN, -0.0
equals 0.0).  The keyed states' masks are columns of their own in a part
(`keyed_template` renames them), so no column the table holds is changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import product

from cetql.base.errors import shared_keyed_event
from cetql.kernels import spec as K
from cetql.kernels.compare import key
from cetql.kernels.errors import SharedKeyedEvent


@dataclass(frozen=True)
class Part:
    """The rows of one part (table rows, in order) and the keyed states'
    masks there (by the column `keyed_template` names, one value a row)."""

    rows: range | list[int]
    masks: dict[str, list] = field(default_factory=dict)


def keyed_mask(state: K.State) -> str:
    return f"{state.mask}\x00{state.name}"


@lru_cache(maxsize=32)
def keyed_template(template: K.TemplateSpec, state_keys: tuple[K.StateKey, ...]) -> K.TemplateSpec:
    """The template whose keyed states read their part's masks."""
    keyed = {k.state for k in state_keys}
    unknown = keyed - {s.name for s in template.states}
    if unknown:
        raise ValueError(f"state keys of states the template does not have: {sorted(unknown)}")
    states = tuple(replace(s, mask=keyed_mask(s)) if s.name in keyed else s for s in template.states)
    return replace(template, states=states)


def _all_masks(template: K.TemplateSpec) -> list[str]:
    out = [s.mask for s in template.states]
    for neg in template.negations:
        out += _all_masks(neg.template)
    return out


def parts(cols: dict, start: int, end: int, template: K.TemplateSpec, shared: tuple[str, ...] = (),
          state_keys: tuple[K.StateKey, ...] = ()) -> list[Part]:  # fmt: skip
    """The parts of the group of rows start … end - 1 (see the module)."""
    groups: list[range | list[int]] = [range(start, end)]
    if shared:
        by_key: dict[tuple, list[int]] = {}
        columns = [cols[c] for c in shared]
        for r in range(start, end):
            k = tuple(key(c[r]) for c in columns)
            if None not in k:
                by_key.setdefault(k, []).append(r)
        groups = list(by_key.values())
    if not state_keys:
        return [Part(rows) for rows in groups]
    return [p for rows in groups for p in _keyed_parts(cols, rows, template, state_keys)]


def _keyed_parts(cols: dict, rows, template: K.TemplateSpec, state_keys: tuple[K.StateKey, ...]) -> list[Part]:
    columns: dict[str, list[str]] = {}
    for k in state_keys:
        columns.setdefault(k.state, []).append(k.column)
    states = {s.name: s for s in template.states}
    keyed = list(columns)
    unkeyed = [m for m in _all_masks(template) if m not in {states[q].mask for q in keyed}]
    common: list[int] = []  # rows that may take an unkeyed state: in every part
    by_value: dict[str, dict[tuple, list[int]]] = {q: {} for q in keyed}
    for r in rows:
        if any(cols[m][r] is True for m in unkeyed):
            common.append(r)
        for q in keyed:
            if cols[states[q].mask][r] is True:
                _alone(cols, r, q, template)
                k = tuple(key(cols[c][r]) for c in columns[q])
                if None not in k:
                    by_value[q].setdefault(k, []).append(r)
    out = []
    for combo in product(*(by_value[q].items() for q in keyed)):
        members = set(common)
        for _, rs in combo:
            members.update(rs)
        part_rows = sorted(members)
        masks = {}
        for q, (_, rs) in zip(keyed, combo):
            mine = set(rs)
            masks[keyed_mask(states[q])] = [r in mine for r in part_rows]
        out.append(Part(part_rows, masks))
    return out


def _alone(cols: dict, r: int, q: str, template: K.TemplateSpec) -> None:
    """Row r, which may take the keyed state q, may take no other state
    (the planner refuses a key where one could: `logical.rules.keys`)."""
    for s in template.states:
        if s.name != q and cols[s.mask][r] is True:
            raise SharedKeyedEvent(shared_keyed_event(q, s.name))


def nothing(at: int, template: K.TemplateSpec, state_keys: tuple[K.StateKey, ...]) -> Part:
    """A part of no rows (a group whose keys leave no part: no trend)."""
    keyed = {k.state for k in state_keys}
    return Part(range(at, at), {keyed_mask(s): [] for s in template.states if s.name in keyed})


def part_columns(cols: dict, times: list, part: Part) -> tuple[dict, list]:
    """The columns and times of a part's rows (slices for a whole group),
    with its keyed states' masks."""
    rows = part.rows
    if isinstance(rows, range):
        a, z = rows.start, rows.stop
        local, local_times = {k: v[a:z] for k, v in cols.items()}, times[a:z]
    else:
        local, local_times = {k: [v[r] for r in rows] for k, v in cols.items()}, [times[r] for r in rows]
    local.update(part.masks)
    return local, local_times
