# Benchmark baseline: hide the editable install of the current cetql so that
# the copy in this folder (an older commit) is the one imported.
import sys

sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
for name in [m for m in sys.modules if m == "cetql" or m.startswith("cetql.")]:
    del sys.modules[name]
