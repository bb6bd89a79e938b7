"""What a person sees of a fleet (issue #30): a summary-only view, and a progress bar on a terminal for long runs —
on standard error, never in a pipe or a CI log."""

from __future__ import annotations

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, PROJECT
from pgvet.report.progress import PROGRESS_HOSTS

runner = CliRunner()


def fleet(directory: Path, count: int) -> list[str]:
    hosts = []
    for number in range(count):
        host = directory / f"h{number:03}"
        shutil.copytree(FIXTURES / ("small-vm", "big-server", "well-tuned")[number % 3], host)
        (host / "host.yaml").write_text(f"name: h{number:03}\npg_version: 16\n")
        hosts.append(str(host))
    return hosts


def test_the_summary_view_is_the_fleet_without_its_findings(tmp_path: Path) -> None:
    from pgvet.cli import app

    hosts = fleet(tmp_path, 30)
    (tmp_path / "empty").mkdir()
    summary = runner.invoke(app, ["lint", *hosts, str(tmp_path / "empty"), "-f", "summary", "--no-color"])
    text = runner.invoke(app, ["lint", *hosts, str(tmp_path / "empty"), "--no-color"])
    assert summary.exit_code == text.exit_code == 2
    lines = summary.stdout.splitlines()
    assert lines[0].startswith("error: empty: ") and "Fleet: 30 hosts (and 1 that could not be read)" in lines
    assert "Most frequent findings" in lines and "  fix" not in summary.stdout
    assert len(lines) < 60 < len(text.stdout.splitlines()) // 10
    assert lines[-2:] == text.stdout.splitlines()[-2:]  # the same counts as the text report's last lines


def on_terminal(argv: list[str], *, stdout_file: Path | None, **environment: str) -> tuple[int, str]:
    """`pgvet ARGV` with standard error on a terminal (a pseudo-terminal), standard output on it too or in a file;
    its exit code and what reached the terminal."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    environ = {key: value for key, value in os.environ.items() if key not in ("CI", "TERM", "NO_COLOR")}
    with open(stdout_file or os.devnull, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "pgvet", *argv], cwd=PROJECT, stderr=follower,
                                   stdout=out if stdout_file is not None else follower,
                                   env={**environ, "TERM": "xterm-256color", **environment})
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        os.close(leader)
        return process.wait(timeout=120), shown.decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return fleet(tmp_path_factory.mktemp("fleet"), PROGRESS_HOSTS + 5)


def test_a_long_run_on_a_terminal_shows_a_progress_bar_on_stderr(long_run: list[str], tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    code, shown = on_terminal(["lint", *long_run, "-f", "concise"], stdout_file=report)
    assert code == 1 and f"/{len(long_run)}" in shown and "linting" in shown and "hosts" in shown
    assert "linting" not in report.read_text()  # the report itself is untouched
    # the text report on the terminal too: written at the end, after the bar is gone
    code, shown = on_terminal(["lint", *long_run], stdout_file=None)
    assert code == 1 and "linting" in shown and shown.rindex("linting") < shown.index("Fleet:")


@pytest.mark.parametrize(("argv", "environment", "to_file"), [
    ([], {"CI": "true"}, True),  # a CI job that runs in a terminal
    ([], {"TERM": "dumb"}, True),
    (["-f", "jsonl"], {}, False),  # a report written on the same terminal as the run goes
])
def test_no_bar_in_a_ci_log_a_dumb_terminal_or_under_a_streamed_report(long_run: list[str], tmp_path: Path,
                                                                         argv: list[str], environment: dict[str, str],
                                                                         to_file: bool) -> None:
    code, shown = on_terminal(["lint", *long_run, *argv], stdout_file=tmp_path / "out" if to_file else None,
                              **environment)
    assert code == 1 and "linting" not in shown


def test_no_bar_in_a_pipe_or_for_a_short_run(long_run: list[str]) -> None:
    piped = subprocess.run([sys.executable, "-m", "pgvet", "lint", *long_run, "-f", "concise"], cwd=PROJECT,
                           capture_output=True, text=True, timeout=120, check=False)
    assert piped.returncode == 1 and piped.stderr == ""
    code, shown = on_terminal(["lint", *long_run[:PROGRESS_HOSTS - 1], "-f", "concise"], stdout_file=None)
    assert code == 1 and "linting" not in shown
