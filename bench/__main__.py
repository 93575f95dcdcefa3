"""One entry for every benchmark: `python -m bench` lists the cases
(bench/cases.py); `python -m bench CASE… [--scale F] [-- ARGS…]` runs them
in turn, each with its own arguments, `--scale` where the case takes it,
and ARGS after `--` passed to every one (e.g. `-- --results /tmp/R.md`)."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the scripts import each other by name
from cases import BY_NAME, CASES  # noqa: E402


def listing() -> str:
    width = max(len(c.name) for c in CASES)
    lines = [f"  {c.name:<{width}}  {c.about}" + (f"  (needs {c.needs})" if c.needs else "") for c in CASES]
    return "benchmark cases (python -m bench CASE…):\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0],
                                 epilog=listing(), formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("cases", nargs="*", metavar="CASE")
    ap.add_argument("--scale", type=float, help="a fraction of each case's sizes, where the case takes one")
    a = ap.parse_args(argv)
    if not a.cases:
        print(listing())
        return 0
    unknown = [c for c in a.cases if c not in BY_NAME]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}; {', '.join(BY_NAME)}")
    for name in a.cases:
        case = BY_NAME[name]
        args = [*case.argv, *(["--scale", str(a.scale)] if a.scale is not None and case.scales else []), *extra]
        print(f"== {case.name}: {case.about}", flush=True)
        sys.argv = [f"bench/{case.script}.py", *args]
        importlib.import_module(case.script).main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
