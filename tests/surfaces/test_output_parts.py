"""The Parquet writer's parts (`writers.write_batches` given `parts`): one
file a slice, written at once in threads, reads back as the one-file write
of the same batches — the same rows in the same order, the same footer —
with no file for a part without rows (one, the schema's, when no part has
any); a part's failure is raised as a reader of the parts in turn would
meet it (the first in part order), and nothing is left at the target."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from budget import budget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cetql.base.options import OutputMode
from cetql.surfaces.output import resolve_output, write_batches
from cetql.surfaces.output.shapes import data_files

SCHEMA = pa.schema([pa.field("w", pa.int64(), nullable=False), pa.field("events", pa.list_(pa.int64()))])


def _batch(rows: list[int]) -> pa.RecordBatch:
    return pa.record_batch([pa.array(rows, pa.int64()), pa.array([[r, r + 1] for r in rows])], schema=SCHEMA)


def _parts(slices: list[list[list[int]]]):
    """Each slice's batches, as a call that gives them."""
    return tuple((lambda s=s: (_batch(b) for b in s)) for s in slices)


def _write(tmp_path, name: str, slices, parts: bool) -> tuple[int | None, pa.Table]:
    target = resolve_output(tmp_path / name, OutputMode.ERROR)
    every = (_batch(b) for s in slices for b in s)
    rows = write_batches(SCHEMA, every, target, _parts(slices) if parts else ())
    return rows, pq.read_table(tmp_path / name)


@settings(max_examples=budget(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.lists(st.integers(0, 9), max_size=5), max_size=3), min_size=2, max_size=4))
def test_parts_read_back_as_one_file(tmp_path_factory, slices):
    tmp_path = tmp_path_factory.mktemp("parts")
    one_rows, one = _write(tmp_path, "one", slices, parts=False)
    many_rows, many = _write(tmp_path, "many", slices, parts=True)
    assert many_rows == one_rows == one.num_rows
    assert many.equals(one)  # rows, order, types
    assert pq.read_schema(data_files(tmp_path / "many")[0]).metadata == pq.read_schema(
        data_files(tmp_path / "one")[0]).metadata  # fmt: skip
    # as Spark's writer keeps its parts: the first always (the schema), another only with rows
    assert len(data_files(tmp_path / "many")) == sum(1 for i, s in enumerate(slices) if i == 0 or any(s))


@pytest.mark.parametrize("failing", [[1], [0, 1], [2], [0, 2]])
def test_the_first_failure_in_part_order_is_raised(tmp_path, failing):
    """A later part fails first (it fails at once, the first waits for it):
    the parts before it still run to their end, so a failure of theirs is
    the one raised; the target is not made."""
    failed = threading.Event()
    ran: list[int] = []

    def part(i: int):
        def batches():
            if i == failing[-1]:
                failed.set()
                raise ArithmeticError(f"part {i}")
            if i < failing[-1]:
                failed.wait(60)
            for b in range(3):
                ran.append(i)
                yield _batch([b])
            if i in failing:
                raise ArithmeticError(f"part {i}")

        return batches

    target = resolve_output(tmp_path / "out", OutputMode.ERROR)
    with pytest.raises(ArithmeticError, match=f"part {failing[0]}"):
        write_batches(SCHEMA, iter(()), target, tuple(part(i) for i in range(3)))
    if failing[-1] > 0:  # the first part was not stopped by the later one's failure
        assert ran.count(0) == 3
    assert not (tmp_path / "out").exists()


def test_a_run_written_in_slices_reads_as_one_written_whole(tmp_path, monkeypatch):
    """The CLI's embedded run: its kernels cut in slices (one file each) or
    not, the same rows in the same order, the same types."""
    from cetql.backends.embedded import slices
    from cetql.surfaces.cli.main import main

    n = 3000
    pq.write_table(pa.table({"ts": pa.array([i // 3 for i in range(n)], pa.int64()), "id": pa.array(range(n), pa.int64()),
                             "x": pa.array([i * 7 % 5 for i in range(n)], pa.int64())}), tmp_path / "e.parquet")  # fmt: skip
    query = tmp_path / "q.cet"
    query.write_text("PATTERN E+ e[] WHERE e[i].x = e[i-1].x WITHIN 8 SLIDE 4")
    got = {}
    for name, split in (("whole", 10**9), ("slices", 1)):
        monkeypatch.setattr(slices, "SPLIT_FROM", split)
        assert main(["run", str(query), "--input", str(tmp_path / "e.parquet"), "--id-col", "id", "--no-serve",
                     "--max-trends", "0", "--output", str(tmp_path / name)]) in (0, None)  # fmt: skip
        got[name] = (pq.read_table(tmp_path / name), len(data_files(tmp_path / name)))
    assert got["whole"][1] == 1 and got["slices"][1] > 1
    assert got["slices"][0].equals(got["whole"][0]) and got["whole"][0].num_rows > 0
