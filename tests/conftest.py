import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests/reference.py

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
