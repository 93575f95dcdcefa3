"""An input changed between planning and reading is refused, not read with
another meaning (SEMANTICS.md, Engines and workloads).

Each file's size and modification time (ns) are recorded when the reader
describes it and carried in the plan's scan facts; `inputs.stamps.
check_unchanged`, which every engine's reader calls when it reads, refuses a
file whose size or time differs, or that is gone, naming it and saying to
run again.  Without Spark: the rule, and the facts the plan carries."""

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cetql
from cetql.backends.inputs.facts import describe_paths
from cetql.backends.inputs.sources import describe
from cetql.backends.inputs.stamps import InputChanged, check_unchanged

SOME = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
ROWS = "id,ts,src,dst\n1,1,A,B\n2,2,B,C\n3,3,C,D\n"
# What may happen to one file of an input after the plan was made (each moves its time: `_moved`)
CHANGES = ["none", "rewrite-same-size", "append", "truncate", "touch", "delete", "swap-columns"]


def _moved(path, ns: int) -> None:
    """Set the file's time `ns` after the planned one: a file system keeps
    times to its clock's tick, so a change made at once may keep its time."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + ns))


def _change(path, how: str, ns: int, planned_ns: int) -> None:
    text = path.read_text()
    if how == "rewrite-same-size":
        path.write_text(text.replace("A", "Z"))
    elif how == "append":
        path.write_text(text + "4,4,D,E\n")
    elif how == "truncate":
        path.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 1])
    elif how == "swap-columns":  # the issue's: other columns, same size
        path.write_text(text.replace("id,ts,src,dst", "id,ts,dst,src"))
    elif how == "delete":
        path.unlink()
        return
    if how != "none":
        os.utime(path, ns=(planned_ns, planned_ns))
        _moved(path, ns)


@SOME
@given(st.lists(st.sampled_from(CHANGES), min_size=1, max_size=4), st.integers(1, 10**9), st.data())
@example(["swap-columns"], 1, None)
def test_a_file_changed_since_planning_is_refused_naming_it(tmp_path_factory, changes, ns, data):
    folder = tmp_path_factory.mktemp("in")
    files = [folder / f"part-{i}.csv" for i in range(len(changes))]
    for f in files:
        f.write_text(ROWS)
    source = describe(str(folder))
    assert [s.path for s in source.stamps] == [str(f.resolve()) for f in files]
    for f, how, stamp in zip(files, changes, source.stamps):
        _change(f, how, ns, stamp.mtime_ns)
    first = next((f for f, how in zip(files, changes) if how != "none"), None)
    if first is None:
        check_unchanged(source.stamps, source.name)
        return
    with pytest.raises(InputChanged) as e:
        check_unchanged(source.stamps, source.name)
    text = str(e.value)
    assert text.startswith(f"input '{folder}': file {first.resolve()} ")
    assert "since the query was planned" in text and text.endswith("; run the query again to plan it for the input "
                                                                 "as it is now") and "\n" not in text
    # the job that reads the files checks those of its rows only
    untouched = [str(f.resolve()) for f, how in zip(files, changes) if how == "none"]
    check_unchanged(source.stamps, source.name, ["file://" + p for p in untouched])


def test_the_plan_carries_each_files_stamp(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(ROWS)
    st = os.stat(path)
    inputs = describe_paths({None: str(path)}, "ts")
    plan = cetql.compile("PATTERN C+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10", inputs=inputs).plan
    (scanned,) = plan.scan.inputs
    assert [(s.path, s.size, s.mtime_ns) for s in scanned.stamps] == [(str(path.resolve()), st.st_size,
                                                                        st.st_mtime_ns)]  # fmt: skip
    streamed = cetql.compile("PATTERN C+ c[] WHERE c[i].src = c[i-1].dst WITHIN 10", inputs=inputs.as_stream(),
                             id_col="id").plan
    assert streamed.scan.inputs[0].stamps == ()  # a stream's folder receives files: not the plan's
