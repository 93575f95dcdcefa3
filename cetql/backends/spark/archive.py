"""The driver JVM's class-data archive (Java's dynamic CDS): written once
per install, then mapped by every later JVM, which starts faster.

The run that finds none (and takes the install's lock, so that two runs
never write two) starts its JVM ready to be dumped
(`-XX:+RecordDynamicDumpInfo`); once its work is done, before the process
ends, `save()` has that JVM write the archive (`jcmd … VM.cds
dynamic_dump`, a part file settled into the archive only when whole) and
waits for it.  Nothing is left working after the run has ended: a JVM
told to write at its exit (`-XX:ArchiveClassesAtExit`) kept a core busy
for up to two minutes after the run returned, and the next run found no
archive.  A run interrupted or killed writes none; the next run does."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

from cetql.base.places import cache_dir, log_path  # noqa: F401 - also the session's names for them

_DYNAMIC_MAGIC = (0xF00BABA8).to_bytes(4, "little")

_ATTEMPTS = 3  # runs that may try to write an archive for one install

# the archive this process writes, once its JVM has done its work: (lock file, part path), or None
_writer: tuple | None = None


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
    archive; none where archives are off, the cache cannot be written, no
    jcmd is there to write one, or another run is writing it now."""
    global _writer
    if os.environ.get("CETQL_CLASS_ARCHIVE", "").lower() in ("0", "off", "no", "false"):
        return []
    try:
        stem = _archive_stem()
        folder = cache_dir() / "classes"
        if stem is None or '"' in str(folder):
            return []
        folder.mkdir(parents=True, exist_ok=True)
        lock = _lock(folder / f"{stem}.lock")
        if lock is None:  # another run writes it now: neither write nor wait
            archive = _archive(folder, stem)
            return [_option("-XX:SharedArchiveFile", archive)] if archive else []
        archive = _settle(folder, stem)
        attempts = folder / f"{stem}.attempts"
        tried = len(attempts.read_text().split()) if attempts.exists() else 0
        if archive is not None or not write or tried >= _ATTEMPTS or _jcmd() is None or _writer is not None:
            os.close(lock)
            return [_option("-XX:SharedArchiveFile", archive)] if archive else []
        with open(attempts, "a") as f:
            f.write(f"{os.getpid()}\n")
        _writer = (lock, folder / f"{stem}.{os.getpid()}-{time.time_ns()}.part")
        return ["-XX:+RecordDynamicDumpInfo"]
    except (OSError, ValueError):
        return []


def _lock(path: Path) -> int | None:
    """The install's writing lock, taken (its file descriptor), or None when another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _jcmd() -> Path | None:
    java = _java()
    jcmd = java.parent / "jcmd" if java is not None else None
    return jcmd if jcmd is not None and jcmd.exists() else None


def _archive(folder: Path, stem: str) -> Path | None:
    return next((f for f in folder.glob(f"{stem}.*.jsa") if _whole(f)), None)


def _settle(folder: Path, stem: str) -> Path | None:
    """The usable archive, with the lock held: a finished part becomes the
    archive (its size in its name); a part no one writes any more, a second
    archive and one cut short are removed."""
    archive = None
    for f in folder.glob(f"{stem}.*.jsa"):
        if archive is None and _whole(f):
            archive = f
        else:
            f.unlink(missing_ok=True)
    for part in folder.glob(f"{stem}.*.part"):
        if _finished(part) and archive is None:
            archive = folder / f"{stem}.{part.stat().st_size}.jsa"
            os.replace(part, archive)
        else:
            part.unlink(missing_ok=True)
    return archive


def writing() -> bool:
    """Whether this process is the one to write the archive (its JVM started ready to)."""
    return _writer is not None


def save(jvm_pid: int | None, say=None) -> Path | None:
    """Have this process's JVM (`jvm_pid`) write the archive, if this
    process is the one to write it, and wait until it is in place; the
    archive, or None.  `say(line)` is told first (it takes a while)."""
    global _writer
    if _writer is None:
        return None
    lock, part = _writer
    _writer = None
    try:
        jcmd = _jcmd()
        if jvm_pid is None or jcmd is None:
            return None
        if say is not None:
            say("saving Spark's loaded classes, so that later runs start faster (once for this install; "
                "CETQL_CLASS_ARCHIVE=off never does)")  # fmt: skip
        with open(log_path(), "ab") as log:
            subprocess.run([str(jcmd), str(jvm_pid), "VM.cds", "dynamic_dump", str(part)], stdout=log,
                           stderr=log, stdin=subprocess.DEVNULL, timeout=600)  # fmt: skip
        return _settle(part.parent, _stem_of(part))
    except (OSError, subprocess.SubprocessError, KeyboardInterrupt):  # interrupted: none this time, the next run's
        part.unlink(missing_ok=True)
        return None
    finally:
        os.close(lock)


def _stem_of(part: Path) -> str:
    """The archive stem of a part file's name (`stem.pid-ns.part`)."""
    return part.name.rsplit(".", 2)[0]


def _option(flag: str, path: Path) -> str:
    """`flag=path`, quoted for spark-submit's option parser where the path has a space."""
    text = f"{flag}={path}"
    return f'"{text}"' if any(c.isspace() for c in text) else text
