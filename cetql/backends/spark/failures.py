"""A failed Spark job → one line that says what happened and what to do.

Chosen from the exception's class or Spark's error class (its condition),
never by searching a plan: a row cetql refused (`raise_error` in the scan:
condition USER_RAISED_EXCEPTION) is counted with one more small job; an
error a kernel raised in a Python worker arrives as a PythonException whose
last line names cetql's own exception class.
"""

from __future__ import annotations

import re
from pathlib import Path

from cetql.backends.inputs.refusals import ID_REFUSED
from cetql.backends.spark.connect import connect_retry_seconds
from cetql.base.errors import OVERFLOW_MESSAGE, CetqlError
from cetql.base.places import log_path

# cetql's own exceptions that a Python worker may raise, by class name.
_KERNEL_ERRORS = ("TrendLimitExceeded", "AggregateOverflow", "ValueOverflow", "ArithmeticOverflow", "InputChanged",
                  "CetqlError")  # ArithmeticOverflow: a worker writing the result (`spark.written`)


class JobFailed(CetqlError):
    """A Spark job failed; the message is the one line a user needs."""

    exit_code = 1


def _condition(e) -> str | None:
    for name in ("getCondition", "getErrorClass"):  # the second only where the first is missing (it is deprecated)
        f = getattr(e, name, None)
        if f is not None:
            try:
                return f() or None
            except Exception:
                return None
    return None


# Py4J's preamble, which names the JVM object and method called (o123.save): never the user's words
_PY4J_CALL = re.compile(r"An error occurred while calling [\w.$<>:]*(?: Trace:)?\s*(?::\s*)?")
# a Java exception's class at the start of its line: the message says what happened
_JAVA_CLASS = re.compile(r"^(?:Caused by: )?(?:[a-z_][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error))(?::\s*|$)")


def first_line(text: str) -> str:
    """The line that says what happened: no Py4J preamble, no SQLSTATE, no Java class where a message follows."""
    text = _PY4J_CALL.sub("", re.sub(r"[ \t]*SQLSTATE: \w+[ \t]*", " ", text.strip())).strip()
    line = text.splitlines()[0].strip() if text else ""
    m = _JAVA_CLASS.match(line)
    if m:
        line = line[m.end() :].strip() or m.group(1)
    return line[:400]


# what the operating system said when a file could not be written or read, as Java words it
_IO_REASONS = ("Read-only file system", "No space left on device", "Permission denied", "Disk quota exceeded",
               "File name too long", "Not a directory", "Is a directory", "Input/output error",
               "Too many open files", "Mkdirs failed")  # fmt: skip


def io_problem(e: BaseException) -> str | None:
    """What stopped Spark reading or writing a file, in the operating
    system's words (`Read-only file system`, `No space left on device`, …),
    found in the error or its Java cause chain; None when it is no such error."""
    texts = [str(e)] + [msg for _, cls, msg in _java_chain(e) if "IOException" in cls or "FileSystem" in cls
                        or cls.startswith(("java.io.", "java.nio.file.", "org.apache.hadoop.fs."))]  # fmt: skip
    for reason in _IO_REASONS:
        if any(reason in t for t in texts):
            return "its folder could not be made (a read-only or full file system, or no permission)" \
                if reason == "Mkdirs failed" else reason  # fmt: skip
    return None


def start_failure(e: BaseException, master: str) -> CetqlError:
    """Why a Spark session did not start, in one line (no JVM call names)."""
    if not master.startswith("local"):
        return CetqlError(f"Spark did not start: the master {master} could not be reached or refused the "
                          f"application; its log is {log_path()}")  # fmt: skip
    causes = [msg for _, _, msg in _java_chain(e) if msg]
    what = first_line(causes[-1] if causes else str(e)) or type(e).__name__
    return CetqlError(f"Spark did not start ({what}); its log is {log_path()}")


def kernel_error(text: str) -> str | None:
    """The message of a cetql exception raised in a Python worker, from its
    traceback text (the line `…TrendLimitExceeded: message`)."""
    found = None
    for line in text.splitlines():
        m = re.match(r"^\s*(?:[\w.]+\.)?(" + "|".join(_KERNEL_ERRORS) + r"): (.+)$", line)
        if m:
            found = m.group(2).strip()
    return found


def _java_chain(e):
    """(condition, class name, message) of each Java exception in the cause
    chain behind a Python-side error: a Py4J error (actions Spark does not
    convert, e.g. toLocalIterator) or a converted one (its origin)."""
    pending = [getattr(e, "java_exception", None) or getattr(e, "_origin", None)]
    seen = 0
    while pending and seen < 20:
        je = pending.pop(0)
        if je is None:
            continue
        seen += 1
        try:
            cls = je.getClass().getName()
            msg = je.getMessage() or ""
            cond = None
            for name in ("getCondition", "getErrorClass"):
                try:
                    cond = getattr(je, name)()
                    break
                except Exception:
                    continue
            yield cond, cls, msg
            pending = [je.getCause(), *list(je.getSuppressed() or [])] + pending  # failures a stage gathered
        except Exception:
            return


# conditions that only wrap the error that matters (found in the cause chain)
_WRAPPERS = ("FAILED_READ_FILE", "TASK_WRITE_FAILED", "STAGE_MATERIALIZATION_MULTIPLE_FAILURES")
# conditions of a value past its type's range
_OVERFLOW = ("ARITHMETIC_OVERFLOW", "CAST_OVERFLOW", "NUMERIC_VALUE_OUT_OF_RANGE", "NUMERIC_OUT_OF_SUPPORTED_RANGE",
             "DATETIME_OVERFLOW", "INTERVAL_ARITHMETIC_OVERFLOW")  # fmt: skip


def _cause(e, name: str, text: str, condition: str | None):
    """The (name, text, condition) that explains `e`: its own, or the first
    telling one in its Java cause chain when `e` only wraps it."""
    if condition is not None and not condition.startswith(_WRAPPERS):
        return name, text, condition
    first = None
    for cond, cls, msg in _java_chain(e):
        if cls.endswith("PythonException"):
            return "PythonException", msg, None
        if cond and cond.startswith(("MALFORMED_RECORD", "USER_RAISED_EXCEPTION", *_OVERFLOW)):
            return name, msg, cond
        if cond and first is None and not cond.startswith(_WRAPPERS):
            first = (name, msg, cond)
    return first or (name, text, condition)


def _server_lost(e: BaseException) -> bool:
    """A Connect client that has given up on its server (gRPC UNAVAILABLE,
    after its retries)."""
    for name in ("getGrpcStatusCode", "code"):
        f = getattr(e, name, None)
        if callable(f):
            try:
                return getattr(f(), "name", None) == "UNAVAILABLE"
            except Exception:  # noqa: BLE001 - not a gRPC error after all
                return False
    return False


def _spark_stopped() -> bool:
    """Whether the JVM's SparkContext is gone (stopped, or its JVM dead)."""
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        return sc is None or sc._jsc is None or bool(sc._jsc.sc().isStopped())
    except Exception:  # noqa: BLE001 - the gateway itself is down
        return True


def _parameter(e, key: str) -> str | None:
    f = getattr(e, "getMessageParameters", None)
    try:
        value = (f() or {}).get(key) if callable(f) else None
    except Exception:  # noqa: BLE001 - an exception that will not say
        value = None
    return value if isinstance(value, str) else None


def _java_line(text: str) -> str:
    """The Java exception of a Py4J error's trace (`java.lang.X: message`)."""
    for line in text.splitlines():
        m = re.match(r"^\s*(?:Caused by: )?([a-z]+(?:\.[a-zA-Z$_]+)+(?:Exception|Error)): ?(.*)$", line)
        if m:
            return f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2)}".strip().rstrip(":")
    return first_line(text)



def describe(e: BaseException, diagnose=None) -> CetqlError:
    """A one-line error for exception `e` from a Spark action, chosen by its
    type and Spark's error class.  `diagnose()` (optional) counts the rows
    the scan refused, for USER_RAISED_EXCEPTION."""
    if isinstance(e, CetqlError):
        return e
    if _server_lost(e):
        return JobFailed(
            "lost the Spark Connect server while the query ran: it stopped or cannot be reached "
            f"(retried for {connect_retry_seconds():g} s); nothing was returned"
        )
    name, text, condition = _cause(e, type(e).__name__, str(e), _condition(e))
    if name == "PythonException" or "PythonException" in name:
        return _python_failure(text)
    if condition == "USER_RAISED_EXCEPTION":
        return _refused(e, text, diagnose)
    problem = io_problem(e)
    if problem is not None:
        return JobFailed(f"Spark could not write or read a file: {problem} ({first_line(text)})")
    if condition is not None:
        return _by_condition(condition, text)
    return _by_type(e, text)


def _python_failure(text: str) -> CetqlError:
    msg = kernel_error(text)
    if msg:
        return JobFailed(msg)
    last = [line for line in text.splitlines() if re.match(r"^\w[\w.]*(Error|Exception): ", line)]
    return JobFailed(f"a Python worker failed: {last[-1] if last else first_line(text)} (log: {log_path()})")


def _refused(e, text: str, diagnose) -> CetqlError:
    """A row the scan refused (cetql's own `raise_error`): its message, or
    the counts `diagnose()` finds."""
    raised = _parameter(e, "errorMessage") or ""
    if raised.startswith(ID_REFUSED):
        return JobFailed(raised[len("cetql: ") :])
    msg = kernel_error(raised or text)
    if msg:
        return JobFailed(msg)
    if diagnose is not None:
        try:
            return JobFailed(diagnose())
        except Exception:  # noqa: BLE001 - the diagnosis failed too: say what the row said
            pass
    if raised.startswith("cetql: "):
        return JobFailed(raised[len("cetql: ") :])
    m = re.search(r"cetql: invalid value[^\n'\"]*(?:'[^']*')?", text)
    return JobFailed(m.group(0)[len("cetql: ") :] if m else first_line(text))


def _by_condition(condition: str, text: str) -> CetqlError:
    if condition.startswith("MALFORMED_RECORD"):
        return JobFailed("an input has a malformed row (a CSV line with the wrong number of fields, or broken JSON)")
    if condition in ("PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"):
        return JobFailed(first_line(text))
    if condition.startswith(_OVERFLOW):
        return JobFailed(OVERFLOW_MESSAGE)
    if condition.startswith("INVALID_TIMEZONE"):
        return JobFailed(f"Spark does not know the time zone: {first_line(text)}; give another with --time-zone")
    inner = kernel_error(text)
    if inner:
        return JobFailed(inner)
    return JobFailed(f"the Spark job failed: {first_line(text)} (log: {log_path()})")


def _by_type(e: BaseException, text: str) -> CetqlError:
    from py4j.protocol import Py4JError, Py4JJavaError, Py4JNetworkError

    if not isinstance(e, Py4JError) and not type(e).__module__.startswith(("pyspark", "py4j", "grpc")) and not \
            isinstance(e, ConnectionError):  # fmt: skip
        return _internal(e)
    classic = isinstance(e, Py4JError) or type(e).__module__.startswith("pyspark.errors.exceptions.captured")
    if isinstance(e, (Py4JNetworkError, ConnectionError)) or (classic and _spark_stopped()):
        return JobFailed(f"Spark stopped while the query ran; its log is {log_path()}")
    if isinstance(e, Py4JError) and not isinstance(e, Py4JJavaError):
        # a call into the JVM failed before any job ran: a value Spark cannot take
        return JobFailed(f"Spark cannot take a value of this query ({_java_line(text)}); "
                         "a number may be too large for a 64-bit integer")  # fmt: skip
    inner = kernel_error(text)
    if inner:
        return JobFailed(inner)
    return JobFailed(f"the Spark job failed: {first_line(text)} (log: {log_path()})")


def _internal(e: BaseException) -> CetqlError:
    """An exception of Python's own (an assertion, a TypeError) while the
    query was built or its result read: a bug, said with where it happened."""
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    what = first_line(str(e))
    return JobFailed(f"internal error: {type(e).__name__}{where}{': ' + what if what else ''}; this is a bug in "
                     f"cetql: please report it with the query (log: {log_path()})")  # fmt: skip
