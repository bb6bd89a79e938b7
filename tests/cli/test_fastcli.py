"""The fast command line of `pgvet lint` gives the command exactly what typer would, or steps aside."""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from pgvet import cli, fastcli

PROJECT = Path(__file__).resolve().parents[2]


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
    ["--allow-unreadable", "a", "--select", "PGV1,PGV2"],
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
    ["--help"], ["-h"], ["--jobs=-1"], ["--jobs", "x"], ["--frmat", "json"], ["--form", "json"], ["-fjson", "a"],
    ["--format"], ["--format", "--strict"], ["--strict=yes"], [""], ["a\udcff"], ["-vj", "2"],
])
def test_steps_aside_for_what_typer_must_judge(argv: list[str]) -> None:
    with pytest.raises(fastcli._Unsupported):
        fastcli.parse(cli.lint, argv)


def test_other_commands_are_left_to_typer() -> None:
    assert fastcli.run(["facts", "fixtures/big-server"]) is False
    assert fastcli.run([]) is False


def lint_imports(cache: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """A `pgvet lint` of big-server through the entry point, and which of the heavy modules it imported."""
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print(sorted(m for m in ('pydantic', 'rich', 'pglast', 'typer', 'pgvet.cli',"
             " 'psycopg')"
             " if m in sys.modules), file=sys.stderr))\n"
             "sys.argv = ['pgvet', 'lint', 'fixtures/big-server', '--format', 'json']\n"
             "from pgvet.__main__ import main\n"
             "main()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT, timeout=120,
                          env={**os.environ, "PGVET_CACHE_DIR": str(cache)})
    assert done.returncode == 1, done.stderr  # big-server has findings
    assert '"schema_version": "1"' in done.stdout
    return done, ast.literal_eval(done.stderr.strip().splitlines()[-1])  # the list printed above


def test_lint_starts_without_typer_pydantic_or_rich(tmp_path: Path) -> None:
    """The first lint reads lint's declarations through typer and keeps what it read (and compiles the rule
    pack, with pydantic); the next imports none of them, nor pgvet.cli, and gives the same report. Neither
    imports psycopg, a dependency only `collect` and `check` import."""
    first, imported = lint_imports(tmp_path)
    assert {"pgvet.cli", "typer"} <= set(imported)
    assert [path.name.startswith("lint-options-") for path in tmp_path.glob("*.json")] == [True]
    second, imported = lint_imports(tmp_path)
    assert imported == []
    assert without_time(second.stdout) == without_time(first.stdout)


def without_time(report: str) -> dict[str, object]:
    """A JSON report without the moment it was made (two runs may straddle a second)."""
    document = json.loads(report)
    del document["generated_at"]
    return document


def test_the_kept_declarations_are_what_typer_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lint_spec keeps lint's spec as JSON and reads it back the same; a damaged or foreign file is read
    again from the declarations; a changed cli.py (another size or time) is another file."""
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path))
    read = fastcli._spec(cli.lint)
    assert fastcli.lint_spec() == read  # read, then kept
    (kept,) = tmp_path.glob("lint-options-*.json")
    assert fastcli._spec_from_json(kept.read_text()) == read
    kept.write_text('{"params": [["paths", "os.system", false, null, null]]}')
    assert fastcli._spec_from_json(kept.read_text()) is None  # a kind that is not one of the four scalars
    assert fastcli.lint_spec() == read
    kept.write_text("{not json")
    assert fastcli.lint_spec() == read
    good = fastcli._spec_json(read)
    assert good is not None
    for damaged in ("[" * 100_000, '{"params": [], "positional": null, "options": {}}',  # nested; none of lint's
                    good.replace('["jobs", "int", false, 0,', '["jobs", "int", false, "0",'),  # a default's kind
                    good.replace('"positional": "paths"', '"positional": "jobs"'),
                    good.replace('"--strict": ["allow_unreadable", false]', '"--strict": ["allow_unreadable", "no"]')):
        assert damaged != good or damaged.startswith("[")
        kept.write_text(damaged)
        assert fastcli._spec_from_json(damaged) is None
        assert fastcli.lint_spec() == read
    for argv in (["a", "-f", "json", "--jobs=2", "--no-color"], ["--", "-x"], ["--strict", "b", "--rules", "r"]):
        assert fastcli._parse(fastcli.lint_spec(), argv) == fastcli.parse(cli.lint, argv)
    key = fastcli._declarations_key()
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *args, **kwargs: real_stat(
        fastcli.__file__ if str(path).endswith("cli.py") and "fast" not in str(path) else path, *args, **kwargs))
    assert fastcli._declarations_key() != key


def test_an_error_of_the_fast_command_line_is_said_with_its_control_characters_escaped(tmp_path: Path) -> None:
    """A rule pack directory whose name holds an escape sequence: the error names it escaped, as typer's
    commands do in a log (no colour code reaches a terminal or a CI log)."""
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "fixtures/big-server", "--rules", "/no\x1b[31mpe"],
                          capture_output=True, text=True, cwd=PROJECT, timeout=120,
                          env={**os.environ, "PGVET_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 2
    assert "\x1b" not in done.stderr
    assert "/no\\x1b[31mpe" in done.stderr
