"""Where cetql keeps its own files for a user: the cache (class-data
archive, a serve's state when no runtime folder is set) and the log."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def log_path() -> Path:
    base = os.environ.get("CETQL_LOG_DIR") or os.path.join(tempfile.gettempdir(), f"cetql-{os.getuid()}")
    Path(base).mkdir(parents=True, exist_ok=True)
    return Path(base) / "spark.log"


def cache_dir() -> Path:
    """The user's cetql cache: CETQL_CACHE_DIR, else $XDG_CACHE_HOME/cetql or ~/.cache/cetql."""
    base = os.environ.get("CETQL_CACHE_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cetql"
