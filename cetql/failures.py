"""A failed Spark job → one line that says what happened and what to do.

Chosen from the exception's class or Spark's error class (its condition),
never by searching a plan: a row cetql refused (`raise_error` in the scan:
condition USER_RAISED_EXCEPTION) is counted with one more small job; an
error a kernel raised in a Python worker arrives as a PythonException whose
last line names cetql's own exception class.
"""

from __future__ import annotations

import re

from .errors import CetqlError
from .session import CONNECT_RETRY_SECONDS, log_path

# cetql's own exceptions that a Python worker may raise, by class name.
_KERNEL_ERRORS = ("TrendLimitExceeded", "AggregateOverflow", "CetqlError")


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


def _first_line(text: str) -> str:
    text = re.sub(r"\s*SQLSTATE: \w+\s*", " ", text.strip())
    line = text.splitlines()[0] if text else ""
    return line[:400]


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
    je = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    seen = 0
    while je is not None and seen < 20:
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
            je = je.getCause()
        except Exception:
            return


# conditions that only wrap the error that matters (found in the cause chain)
_WRAPPERS = ("FAILED_READ_FILE", "TASK_WRITE_FAILED")


def _cause(e, name: str, text: str, condition: str | None):
    """The (name, text, condition) that explains `e`: its own, or the first
    telling one in its Java cause chain when `e` only wraps it."""
    if condition is not None and not condition.startswith(_WRAPPERS):
        return name, text, condition
    first = None
    for cond, cls, msg in _java_chain(e):
        if cls.endswith("PythonException"):
            return "PythonException", msg, None
        if cond and cond.startswith(("MALFORMED_RECORD", "USER_RAISED_EXCEPTION")):
            return name, msg, cond
        if cond and first is None and not cond.startswith(_WRAPPERS):
            first = (name, msg, cond)
    return first or (name, text, condition)


def _server_lost(e: BaseException, text: str) -> bool:
    """A Connect client that has given up on its server (gRPC UNAVAILABLE,
    after its retries)."""
    code = getattr(e, "code", None)
    if callable(code):
        try:
            if "UNAVAILABLE" in str(code()):
                return True
        except Exception:  # noqa: BLE001 - not a gRPC error after all
            pass
    return type(e).__name__ == "SparkConnectGrpcException" and "StatusCode.UNAVAILABLE" in text


def describe(e: BaseException, diagnose=None) -> CetqlError:
    """A one-line error for exception `e` from a Spark action.  `diagnose()`
    (optional) counts the rows the scan refused, for USER_RAISED_EXCEPTION."""
    if isinstance(e, CetqlError):
        return e
    name = type(e).__name__
    text = str(e)
    if _server_lost(e, text):
        return JobFailed(
            "lost the Spark Connect server while the query ran: it stopped or cannot be reached "
            f"(retried for {CONNECT_RETRY_SECONDS} s); nothing was returned"
        )
    name, text, condition = _cause(e, name, text, _condition(e))
    if name == "PythonException" or "PythonException" in name:
        msg = kernel_error(text)
        if msg:
            return JobFailed(msg)
        last = [line for line in text.splitlines() if re.match(r"^\w[\w.]*(Error|Exception): ", line)]
        return JobFailed(f"a Python worker failed: {last[-1] if last else _first_line(text)} (log: {log_path()})")
    if condition == "USER_RAISED_EXCEPTION":
        msg = kernel_error(text)
        if msg:
            return JobFailed(msg)
        if diagnose is not None:
            try:
                return JobFailed(diagnose())
            except Exception:
                pass
        m = re.search(r"cetql: invalid value[^\n'\"]*(?:'[^']*')?", text)
        return JobFailed(m.group(0)[len("cetql: ") :] if m else _first_line(text))
    if condition and condition.startswith("MALFORMED_RECORD"):
        return JobFailed("an input has a malformed row (a CSV line with the wrong number of fields, or broken JSON)")
    if condition in ("PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"):
        return JobFailed(_first_line(text))
    if condition and condition.startswith(("ARITHMETIC_OVERFLOW", "CAST_OVERFLOW", "DIVIDE_BY_ZERO")):
        return JobFailed(f"arithmetic overflow in a predicate ({_first_line(text)})")
    if name in ("Py4JNetworkError", "ConnectionRefusedError", "Py4JError") or "SparkContext was shut down" in text:
        return JobFailed(f"Spark stopped while the query ran; its log is {log_path()}")
    inner = kernel_error(text)
    if inner:
        return JobFailed(inner)
    return JobFailed(f"the Spark job failed: {_first_line(text)} (log: {log_path()})")
