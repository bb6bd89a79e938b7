"""The fast command line of `pgvet lint` gives the command exactly what typer would, or steps aside."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from pgvet import cli, fastcli

PROJECT = Path(__file__).resolve().parent.parent


def typer_arguments(argv: list[str]) -> dict[str, Any]:
    """What typer calls `lint` with for this command line (a capturing command of the same signature)."""
    captured: dict[str, Any] = {}

    @functools.wraps(cli.lint)
    def capture(**kwargs: Any) -> None:
        captured.update(kwargs)

    app = typer.Typer()
    app.command("lint")(capture)
    app.command("other")(lambda: None)  # two commands: `lint` is a subcommand, as in pgvet
    result = CliRunner().invoke(app, ["lint", *argv])
    assert result.exit_code == 0, result.output
    return captured


@pytest.mark.parametrize("argv", [
    [],
    ["fixtures/big-server"],
    ["a", "b", "--format", "json", "-f", "sarif", "-o", "out.sarif"],
    ["--select=PGV1", "--ignore", "os", "--ignore", "PGV2", "a"],
    ["-j", "2", "--strict", "--exit-zero", "a"],
    ["--no-color", "-v", "a", "--no-exit-zero"],
    ["--color", "--verbose", "a"],
    ["--", "-a-directory", "--format"],
    ["-", "a"],
    ["--sysctl", "s.txt", "--sysctl-conf", "a.conf", "--sysctl-conf", "b.conf", "--meminfo", "m", "--lscpu", "l",
     "--mounts", "mo", "--sysfs", "sy", "--host-yaml", "h.yaml", "--postgresql-conf", "p.conf", "--auto-conf", "x",
     "--pg-settings", "ps.json"],
    ["--config", "x.toml", "--fail-on", "info", "--baseline", "b.json", "--ignore-file", "i.yaml", "--rules", "r",
     "--rules", "s", "a"],
    ["--format", "json", "--format=", "--fail-on", "error", "--fail-on", "warning"],
    ["--jobs=3", "a"],
])
def test_same_arguments_as_typer(argv: list[str]) -> None:
    assert fastcli.parse(cli.lint, argv) == typer_arguments(argv)


@pytest.mark.parametrize("argv", [
    ["--help"], ["-h"], ["--jobs", "0"], ["--jobs", "x"], ["--frmat", "json"], ["--form", "json"], ["-fjson", "a"],
    ["--format"], ["--format", "--strict"], ["--strict=yes"], [""], ["a\udcff"], ["-vj", "2"],
])
def test_steps_aside_for_what_typer_must_judge(argv: list[str]) -> None:
    with pytest.raises(fastcli._Unsupported):
        fastcli.parse(cli.lint, argv)


def test_other_commands_are_left_to_typer() -> None:
    assert fastcli.run(["facts", "fixtures/big-server"]) is False
    assert fastcli.run([]) is False


def test_lint_starts_without_pydantic_or_rich() -> None:
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print(sorted(m for m in ('pydantic', 'rich', 'pglast') if m in sys.modules),"
             " file=sys.stderr))\n"
             "sys.argv = ['pgvet', 'lint', 'fixtures/big-server', '--format', 'json']\n"
             "from pgvet.cli import main\n"
             "main()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT, timeout=120)
    assert done.returncode == 1, done.stderr  # big-server has findings
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert '"schema_version": "1"' in done.stdout
