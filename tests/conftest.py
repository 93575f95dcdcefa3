import atexit
import os
import shutil
import sys
import tempfile

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


# The longest test files (each over half a minute: servers, clusters,
# streams, fresh processes) first: with one process a core and a file's tests
# in one process (pyproject's addopts), a long file picked up last would run
# alone at the end.
LONGEST = ("test_cluster", "test_streaming_cli", "test_start", "test_streaming", "test_reliability", "test_connect",
           "test_gen", "test_fuzz_inputs", "test_plan_runs", "test_output_safety", "test_detect_spark")  # fmt: skip


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        return LONGEST.index(name) if name in LONGEST else len(LONGEST)

    items.sort(key=rank)  # stable: the order within a file, and of the other files, is kept
