"""Progress of a running query on the terminal: Spark's stages and tasks,
drawn by rich on standard error while the query runs, gone when it ends.

Shown only when standard error is a terminal (never in pipes, files or
logs).  Classic sessions are polled through Spark's status tracker; Spark
Connect sessions report through their progress handler.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

from .session import is_connect


def _classic_status(spark):
    tracker = spark.sparkContext.statusTracker()

    def status():
        done = total = 0
        stages = tracker.getActiveStageIds()
        for sid in stages:
            info = tracker.getStageInfo(sid)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return len(stages), done, total

    return status


@contextmanager
def progress(spark, label: str, stream=None):
    """Show `label` with Spark's progress while the block runs."""
    stream = stream or sys.stderr
    if not getattr(stream, "isatty", lambda: False)():
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[tasks]}"),
                   TimeElapsedColumn(), console=Console(file=stream), transient=True)  # fmt: skip
    task = bar.add_task(label, total=None, tasks="")
    stop = threading.Event()
    handler = None

    def show(stages: int, done: int, total: int) -> None:
        if total:
            bar.update(task, total=total, completed=done, tasks=f"{done}/{total} tasks, {stages} stage(s)")

    if is_connect(spark):
        def handler(stages=None, **_):  # noqa: E306 - Spark Connect's callback
            items = list(stages or [])
            show(len(items), sum(s.num_completed_tasks for s in items), sum(s.num_tasks for s in items))

        try:
            spark.registerProgressHandler(handler)
        except Exception:
            handler = None
        poll = None
    else:
        poll = _classic_status(spark)

    def run():
        while not stop.wait(0.25):
            try:
                show(*poll())
            except Exception:
                return

    thread = threading.Thread(target=run, daemon=True) if poll else None
    with bar:
        if thread:
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread:
                thread.join(timeout=1)
            if handler is not None:
                try:
                    spark.removeProgressHandler(handler)
                except Exception:
                    pass
