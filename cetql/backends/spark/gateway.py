"""The local driver JVM, tied to this process for its whole life, start-up
included.

pyspark starts it (`java_gateway.launch_gateway`: spark-submit, which
execs the JVM) and relies on the JVM ending when its standard input, a
pipe from this process, closes.  The JVM watches that pipe only once its
gateway is up: a process killed (or interrupted) before then leaves a JVM
that never ends — pyspark removes the folder the JVM writes its port
into, the JVM's main thread fails and its gateway's thread keeps it alive.

`launch(conf, popen_kwargs)` runs pyspark's own launch with two changes
to the child it starts:
- it gets SIGTERM when this process ends, however it ends (Linux
  `PR_SET_PDEATHSIG`; SIGTERM, not SIGKILL, so that the JVM's shutdown
  hooks remove Spark's temporary folders);
- a launch that fails or is interrupted (Ctrl-C) ends the child before
  the exception leaves.

The parent-death signal is sent when the *thread* that started the child
ends, not the process: a JVM started from another thread (the REPL starts
Spark in the background) is started from one thread kept for the process's
life (`_Keeper`).  SIGINT stays ignored in the child, as pyspark has it: a
terminal's Ctrl-C reaches this process, which decides.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import subprocess
import threading

_PR_SET_PDEATHSIG = 1


def _prctl():
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    return fn


_PRCTL = _prctl()  # found before any fork: the child only calls it


def child_setup(parent: int):
    """What the child runs before exec: SIGINT ignored, SIGTERM when its
    parent (`parent`, this process) ends; a parent already gone ends it."""

    def setup():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the signal was asked for
            os._exit(1)

    return setup


class _Keeper:
    """One thread for the process's life that starts children for other
    threads (a parent-death signal follows the thread that forked)."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="cetql-jvm-parent", daemon=True).start()

    def _serve(self):
        while True:
            fn, done, box = self.jobs.get()
            try:
                box.append((True, fn()))
            except BaseException as e:  # noqa: BLE001 - handed to the caller as it was
                box.append((False, e))
            done.set()

    def call(self, fn):
        done, box = threading.Event(), []
        self.jobs.put((fn, done, box))
        done.wait()
        ok, value = box[0]
        if not ok:
            raise value
        return value


_keeper: _Keeper | None = None
_keeper_lock = threading.Lock()
_launch_lock = threading.Lock()  # pyspark's Popen is replaced for one launch at a time


def _spawn(popen, args, kwargs) -> subprocess.Popen:
    global _keeper
    if threading.current_thread() is threading.main_thread():
        return popen(args, **kwargs)
    with _keeper_lock:
        if _keeper is None:
            _keeper = _Keeper()
    return _keeper.call(lambda: popen(args, **kwargs))


def end(proc: subprocess.Popen, grace: float = 2.0) -> None:
    """End a JVM this process started: SIGTERM (its shutdown hooks run),
    SIGKILL after `grace` seconds."""
    with contextlib.suppress(OSError):
        proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)


def launch(conf, popen_kwargs: dict | None):
    """pyspark's `launch_gateway(conf, popen_kwargs)`, its JVM tied to this process."""
    from pyspark import java_gateway  # start-up cost: pyspark, only when a local session starts

    started: list[subprocess.Popen] = []
    real = java_gateway.Popen

    def popen(args, **kwargs):
        kwargs["preexec_fn"] = child_setup(os.getpid())
        proc = _spawn(real, args, kwargs)
        started.append(proc)
        return proc

    with _launch_lock:
        java_gateway.Popen = popen
        try:
            return java_gateway.launch_gateway(conf, popen_kwargs=popen_kwargs)
        except BaseException:
            for proc in started:
                end(proc)
            raise
        finally:
            java_gateway.Popen = real
