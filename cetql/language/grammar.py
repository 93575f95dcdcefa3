"""The cetql grammar (file: cetql.lark, shipped beside this module) and the
one Lark parser built from it.

Building the LALR tables takes a third of a second, a third of what a small
run may cost: the built parser is kept in the user's cache folder
(`base.places.cache_dir`, the user's own), named by a hash of the grammar,
the options and the versions, written whole or not at all, and built again
whenever it cannot be read."""

import hashlib
import os
import sys
from functools import lru_cache
from importlib.resources import files

import lark
from lark import Lark

from cetql.base.places import cache_dir

OPTIONS = {"parser": "lalr", "lexer": "contextual", "propagate_positions": True, "maybe_placeholders": False}


def grammar_text() -> str:
    return files("cetql.language").joinpath("cetql.lark").read_text(encoding="utf-8")


def _cache_file(text: str):
    key = f"{text}{sorted(OPTIONS.items())}{lark.__version__}{sys.version_info[:2]}".encode()
    return cache_dir() / "grammar" / f"parser-{hashlib.sha256(key).hexdigest()[:24]}.lark"


@lru_cache(maxsize=1)
def lark_parser() -> Lark:
    text = grammar_text()
    path = _cache_file(text)
    try:
        with open(path, "rb") as f:
            return Lark.load(f)
    except Exception:  # noqa: BLE001 - absent, cut short or of another build: built again below
        pass
    parser = Lark(text, **OPTIONS)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            parser.save(f)
        os.replace(tmp, path)  # whole or not at all: another process never reads half of it
    except OSError:  # a cache that cannot be written: the parser is built each time
        pass
    return parser


@lru_cache(maxsize=1)
def keywords() -> dict[str, str]:
    """The grammar's keywords: terminal name → how a query spells it
    (`GROUP_BY` → `GROUP-BY`)."""
    out = {t.name: t.pattern.value.upper() for t in lark_parser().terminals
           if t.pattern.type == "str" and t.pattern.value.isalpha()}  # fmt: skip
    out["GROUP_BY"] = "GROUP-BY"
    return out
