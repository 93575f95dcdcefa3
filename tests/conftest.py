import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "support"))  # reference.py, generators.py, …

# Each test process keeps the state files of the servers it starts in a
# folder of its own: a `cetql run` a test starts never finds a `cetql serve`
# of the user's, or of another test process running beside it (pytest -n).
os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="cetql-tests-")
atexit.register(shutil.rmtree, os.environ["XDG_RUNTIME_DIR"], True)


@pytest.fixture(scope="session")
def spark():
    """One embedded Spark session for the whole run."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cetql-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        # short jobs on small data: the C2 JIT compiler would burn more CPU than it saves
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# ---------------------------------------------------------------- markers
#
# `spark`: the test starts a JVM (the session above, a Connect server, a
# cluster, a `cetql run` whose plan runs on Spark, `java` itself).  A test
# that asks for one of these fixtures is marked by the hook below; the others
# say so with @pytest.mark.spark.  A test not marked `spark` runs with a
# `java` that refuses to start and leaves a mark (`_no_jvm_unless_marked`),
# so `pytest -m "not spark"` cannot start a JVM, and a test that starts one
# unmarked fails in every run.
#
# `slow`: the test takes tens of seconds on its own (servers, clusters,
# streams, fresh processes); fixtures that start servers mark it too.

SPARK_FIXTURES = {"spark", "connect_url", "cluster", "driver"}
SLOW_FIXTURES = {"connect_url", "cluster", "driver"}


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: starts a JVM (Spark in process, a server, a cluster, java itself)")
    config.addinivalue_line("markers", "slow: takes tens of seconds on its own; such files start first")
    # No property fails by the clock: no deadline, no health check that
    # times the generation (a loaded machine would fail them, not the code).
    # The fast lane, `pytest -m "not spark"`: each property draws a tenth of
    # its examples (support/budget.py), ten where it names no budget.
    from hypothesis import HealthCheck, settings

    settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("fast-lane", settings.get_profile("suite"), max_examples=10)
    fast = "not spark" in (config.getoption("markexpr", "") or "")
    if fast:
        os.environ["CETQL_TEST_LANE"] = "fast"
    settings.load_profile("fast-lane" if fast else "suite")


# ---------------------------------------------------------------- no JVM unless marked


def _refusing_java(folder: Path) -> tuple[Path, Path]:
    """(a JAVA_HOME whose java and jcmd record their arguments and exit 1,
    the record): a JDK as cetql looks for one, none of it able to run."""
    mark = folder / "java-was-started"
    bin_ = folder / "jdk" / "bin"
    bin_.mkdir(parents=True, exist_ok=True)
    for tool in ("java", "jcmd"):
        (bin_ / tool).write_text(f'#!/bin/sh\necho {tool} "$@" >> "{mark}"\n'
                                 f'echo "no JVM in a test not marked spark" >&2\nexit 1\n')  # fmt: skip
        (bin_ / tool).chmod(0o755)
    return bin_.parent, mark


@pytest.fixture(scope="session")
def _refusing_java_home(tmp_path_factory):
    return _refusing_java(tmp_path_factory.mktemp("no-jvm"))


@pytest.fixture(autouse=True)
def _no_jvm_unless_marked(request, monkeypatch):
    """In a test not marked `spark`, every `java` this process or its
    children would start (JAVA_HOME and PATH, which spark-submit and cetql
    follow) is one that refuses and leaves a mark, and a Spark session in
    this process cannot be made; the mark fails the test."""
    if request.node.get_closest_marker("spark"):
        yield
        return
    home, mark = request.getfixturevalue("_refusing_java_home")
    mark.unlink(missing_ok=True)
    monkeypatch.setenv("JAVA_HOME", str(home))
    monkeypatch.setenv("PATH", f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    if "pyspark.sql.session" in sys.modules:  # a session made by an earlier test would be taken silently

        def refuse(*args, **kwargs):
            raise AssertionError("a Spark session was asked for in a test not marked spark")

        monkeypatch.setattr("pyspark.sql.session.SparkSession.Builder.getOrCreate", refuse)
    yield
    if mark.exists():
        started = mark.read_text().strip().splitlines()
        pytest.fail(f"started a JVM but is not marked spark: {started[0][:200]}", pytrace=False)


# ---------------------------------------------------------------- the order of files
#
# One process a core, a file's tests in one process (pyproject's addopts): a
# long file picked up last runs alone at the end, so the longest files go
# first.  How long a file takes is what its tests took the last time this
# checkout ran them (pytest's cache, written at the end of every run); a test
# not timed yet counts by its markers.

TIMES = "cetql/test-seconds"
GUESS = {"slow": 40.0, "spark": 3.0, None: 0.2}  # seconds, for a test never timed here


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before -m chooses
def pytest_collection_modifyitems(items):
    for item in items:
        names = set(item.fixturenames)
        if names & SPARK_FIXTURES:
            item.add_marker(pytest.mark.spark)
        if names & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(specname="pytest_collection_modifyitems", trylast=True)  # the tests -m chose
def pytest_collection_modifyitems_longest_first(config, items):
    timed = config.cache.get(TIMES, {}) if getattr(config, "cache", None) is not None else {}

    def guess(item) -> float:
        if item.nodeid in timed:
            return timed[item.nodeid]
        return GUESS["slow" if item.get_closest_marker("slow") else "spark" if item.get_closest_marker("spark") else None]

    weight: dict[str, float] = {}
    for item in items:
        weight[_file(item.nodeid)] = weight.get(_file(item.nodeid), 0.0) + guess(item)
    recorded = {} if config.getoption("markexpr", "") else _recorded_seconds()  # a whole run's: not a lane's
    for file in weight:  # a fresh clone (no times of its own): a whole run's, as recorded in the repository
        if file in recorded and not any(i.nodeid in timed for i in items if _file(i.nodeid) == file):
            weight[file] = recorded[file]
    items.sort(key=lambda item: -weight[_file(item.nodeid)])  # stable: a file's own order is kept


_seconds: dict[str, float] = {}

# Each file's seconds in one whole run on 2 cores, for a clone with no times
# of its own (CI): `CETQL_RECORD_TEST_SECONDS=1 pytest` writes it again.
RECORDED = Path(__file__).resolve().parent / "support" / "seconds.json"


def _recorded_seconds() -> dict[str, float]:
    import json

    try:
        return json.loads(RECORDED.read_text())
    except (OSError, ValueError):
        return {}


def pytest_runtest_logreport(report):
    """Each test's setup, call and teardown, in the process that reports
    (the controller, under xdist)."""
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    config = session.config
    if hasattr(config, "workerinput") or getattr(config, "cache", None) is None or not _seconds:
        return
    timed = config.cache.get(TIMES, {})
    timed.update({k: round(v, 2) for k, v in _seconds.items()})
    config.cache.set(TIMES, timed)
    if os.environ.get("CETQL_RECORD_TEST_SECONDS") == "1":
        import json

        files: dict[str, float] = {}
        for k, v in _seconds.items():
            files[_file(k)] = round(files.get(_file(k), 0.0) + v, 1)
        RECORDED.write_text(json.dumps(dict(sorted(files.items(), key=lambda kv: -kv[1])), indent=1) + "\n")


def pytest_terminal_summary(terminalreporter, config):
    """Tests over half a minute that are not marked slow (so a fresh clone,
    with no times, would not start their files first)."""
    if hasattr(config, "workerinput"):
        return
    slow = {r.nodeid for k in ("passed", "failed") for r in terminalreporter.stats.get(k, [])
            if r.when == "call" and r.keywords.get("slow")}  # fmt: skip
    unmarked = sorted((s, n) for n, s in _seconds.items() if s > 30 and n not in slow)
    if unmarked:
        terminalreporter.write_sep("-", "over 30 s and not marked slow")
        for s, n in reversed(unmarked):
            terminalreporter.write_line(f"{s:6.1f} s  {n}")
