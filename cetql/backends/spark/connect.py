"""Spark Connect sessions: the address of a server, whether it answers,
and bounded retries so a server that is gone is not waited on for long."""

from __future__ import annotations

import math
import os

from cetql.base.errors import CetqlError, UsageError
from cetql.base.places import cache_dir, log_path  # noqa: F401 - also the session's names for them


def connect_address(remote: str, origin: str = "--remote") -> tuple[str, int]:
    """(host, port) of a Spark Connect address `sc://host[:port][/;k=v…]`,
    or a one-line `UsageError` naming what is wrong and where it came from."""
    import re

    shown = f"{origin} {remote!r}" if origin == "--remote" else f"{origin}={remote!r}"
    m = re.fullmatch(r"sc://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]*))?(/(;[^;=/]+=[^;]*)*;?)?", remote)
    if m is None:
        raise UsageError(f"{shown} is not a Spark Connect address; expected sc://host:port, e.g. sc://localhost:15002")
    host, port = m.group(1).strip("[]"), m.group(2)
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise UsageError(f"{shown}: the port must be a number from 1 to 65535, e.g. sc://{host}:15002")
    return host, int(port) if port else 15002


def shown_address(remote: str) -> str:
    """A Connect address as a message shows it: a token in it is not shown."""
    import re

    return re.sub(r";token=[^;]*", ";token=…", remote)


def _reachable(remote: str, origin: str = "--remote", timeout: float = 10) -> None:
    """A one-line error now, where the Connect client would retry for many
    minutes against a server that is not there."""
    import socket

    host, port = connect_address(remote, origin)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as e:
        reason = e.strerror or type(e).__name__
    raise CetqlError(f"cannot reach the Spark Connect server at {shown_address(remote)}: {reason.lower()} "
                     "(is `cetql serve` or another Connect server running there?)")  # fmt: skip


def _connect(remote: str, origin: str = "--remote", token_for=None):
    """A Connect session on `remote`; `token_for(host, port)`: the token a
    server there takes (a `cetql serve` of this user's), else None."""
    if not (remote.startswith("sc://") or remote.startswith("local")):
        shown = f"{origin} {remote!r}" if origin == "--remote" else f"{origin}={remote!r}"
        raise UsageError(f"unknown Spark Connect address: {shown}; expected sc://host:port (or local[N])")
    url = remote
    if remote.startswith("sc://"):
        connect_retry_seconds()  # a bad setting is named now, not as a server that cannot be reached
        _reachable(remote, origin)
        url = with_token(remote, token_for)
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.remote(url).getOrCreate()
        if remote.startswith("sc://"):
            _bounded_retries(spark)
    except ImportError as e:
        raise CetqlError(f"Spark Connect needs the pyspark[connect] packages ({e.name} is missing)") from None
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CetqlError(f"cannot reach the Spark Connect server at {shown_address(remote)}: {first}") from None
    return spark


def with_token(remote: str, token_for) -> str:
    """`remote` with the token `token_for(host, port)` gives it, if any and
    none is given already: pyspark's client sends a token without TLS only
    to `localhost`, so the address says that name (the same loopback server)."""
    import re

    if token_for is None or ";token=" in remote or os.environ.get("SPARK_CONNECT_AUTHENTICATE_TOKEN"):
        return remote
    host, port = connect_address(remote)
    token = token_for(host, port)
    if not token:
        return remote
    params = re.sub(r"^sc://[^/]*/?", "", remote).lstrip(";")
    return f"sc://localhost:{port}/;token={token}" + (f";{params}" if params else "")


# How long a Connect client waits for a server it has lost, in all: it
# retries (doubling its wait up to 8 s) for about this long, then fails.
# Spark's own default waits at least 10 minutes, which left a query whose
# server had died hanging without a word.
CONNECT_RETRY_SECONDS = 30


def connect_retry_seconds() -> float:
    """How long a Connect client retries (CETQL_CONNECT_RETRY_SECONDS, default 30)."""
    text = os.environ.get("CETQL_CONNECT_RETRY_SECONDS", "")
    if not text:
        return CONNECT_RETRY_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= 3600:
        raise UsageError(f"CETQL_CONNECT_RETRY_SECONDS={text!r}: give a number of seconds from 0 to 3600")
    return seconds


def _bounded_retries(spark) -> None:
    import warnings

    from pyspark.sql.connect.client.retries import DefaultPolicy

    # the client warns as it gives up; cetql's own error says so, once
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")

    waits, wait, retries = 0.0, 0.05, 0
    bound = connect_retry_seconds()
    while waits < bound:
        waits += wait
        wait = min(wait * 4, 8.0)
        retries += 1
    spark.client.set_retry_policies([DefaultPolicy(max_retries=retries, max_backoff=8000)])


def is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")
