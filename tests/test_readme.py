"""The README's commands and its Python snippet run as written.

Every ```bash block is run line by line (continuations joined) through the
CLI's `main`, in this process on the suite's Spark session, from a folder
where `examples/` is the repository's — except the install and test
commands, which are what CI itself runs.  The ```python block is executed
as is."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cetql.cli import main

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
SKIP = ("pip install", "pytest")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _commands() -> list[str]:
    out = []
    for block in _blocks("bash"):
        for cmd in block.replace("\\\n", " ").splitlines():
            cmd = cmd.strip()
            if cmd and not cmd.startswith(SKIP):
                out.append(cmd)
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """One folder for the whole README, as a reader's checkout: commands run
    in order and later ones use what earlier ones wrote."""
    path = tmp_path_factory.mktemp("readme")
    (path / "examples").symlink_to(ROOT / "examples")
    return path


@pytest.fixture
def in_copy(folder, monkeypatch):
    monkeypatch.chdir(folder)
    return folder


def test_readme_has_commands_and_a_snippet():
    assert len(_commands()) >= 4 and len(_blocks("python")) == 1


@pytest.mark.parametrize("cmd", _commands())
def test_readme_command_runs(spark, in_copy, capsys, cmd):
    argv = shlex.split(cmd)
    assert argv[0] == "cetql", cmd
    code = main(argv[1:])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip()


def test_readme_python_snippet_runs(spark, in_copy, capsys):
    (snippet,) = _blocks("python")
    exec(compile(snippet, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "plan:" in out and "COUNT(*)" in out
