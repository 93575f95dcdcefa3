"""The driver JVM's class-data archive (Java's dynamic CDS): written once per
install by a run that finds none, then mapped by every later JVM, which
starts faster.  A part file is settled into the archive only when whole."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cetql.base.places import cache_dir, log_path  # noqa: F401 - also the session's names for them

_DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, "little")


_SETTLED = 600  # seconds after which a part without its header is abandoned (its JVM was killed)


_ATTEMPTS = 3  # runs that may try to write an archive for one install


def _java() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the one on PATH."""
    import shutil

    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _archive_stem() -> str | None:
    """A name that changes with pyspark's jars and the JVM, so that an
    archive is never offered to a JVM or class path it was not made for."""
    import hashlib

    import pyspark

    java = _java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    facts = [pyspark.__version__, str(jars.resolve()), str(jars.stat().st_mtime_ns), str(java)]
    for f in (java, *java.parent.parent.glob("lib/server/libjvm.so")):
        st = f.stat()
        facts += [str(st.st_size), str(st.st_mtime_ns)]
    digest = hashlib.sha256("\0".join(facts).encode()).hexdigest()[:16]
    return f"spark-{pyspark.__version__}-{digest}"


def _finished(path: Path) -> bool:
    """A dynamic archive whose writer got to the end (its header, written last, is there)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == _DYNAMIC_MAGIC and path.stat().st_size > 4096
    except OSError:
        return False


def _whole(path: Path) -> bool:
    """A finished archive of the size its name says (the JVM does not check:
    a cut one would crash it)."""
    size = path.name.rsplit(".", 2)[-2]
    try:
        return size.isdigit() and path.stat().st_size == int(size) and _finished(path)
    except OSError:
        return False


def class_archive(write: bool = True) -> list[str]:
    """The JVM options that use (or, once, `write`) this install's class
    archive; none where archives are off, the cache cannot be written, or a
    run is writing one now."""
    if os.environ.get("CETQL_CLASS_ARCHIVE", "").lower() in ("0", "off", "no", "false"):
        return []
    try:
        stem = _archive_stem()
        folder = cache_dir() / "classes"
        if stem is None or '"' in str(folder):
            return []
        folder.mkdir(parents=True, exist_ok=True)
        archive, writing = _settle(folder, stem)
        if archive is not None:
            return [_option("-XX:SharedArchiveFile", archive)]
        attempts = folder / f"{stem}.attempts"
        tried = len(attempts.read_text().split()) if attempts.exists() else 0
        if writing or tried >= _ATTEMPTS or not write:
            return []
        with open(attempts, "a") as f:
            f.write(f"{os.getpid()}\n")
        return [_option("-XX:ArchiveClassesAtExit", folder / f"{stem}.{os.getpid()}-{time.time_ns()}.part")]
    except (OSError, ValueError):
        return []


def _settle(folder: Path, stem: str) -> tuple[Path | None, bool]:
    """(the usable archive, whether a run may be writing one now): a
    finished part becomes the archive (its size in its name), a part
    abandoned or not needed and an archive cut short are removed."""
    archive = None
    for f in folder.glob(f"{stem}.*.jsa"):
        if archive is None and _whole(f):
            archive = f
        else:
            f.unlink(missing_ok=True)
    writing = False
    for part in folder.glob(f"{stem}.*.part"):
        if _finished(part) and archive is None:
            archive = folder / f"{stem}.{part.stat().st_size}.jsa"
            os.replace(part, archive)
        elif _finished(part) or time.time() - part.stat().st_mtime > _SETTLED:
            part.unlink(missing_ok=True)
        else:
            writing = archive is None
    return archive, writing


def _option(flag: str, path: Path) -> str:
    """`flag=path`, quoted for spark-submit's option parser where the path has a space."""
    text = f"{flag}={path}"
    return f'"{text}"' if any(c.isspace() for c in text) else text
