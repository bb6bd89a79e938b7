"""`lint --jobs N` stopped by a signal (issue #25, item 8): SIGTERM, SIGHUP or SIGINT sent to pgvet ended it
at once but left its workers linting (alive 70 s later) and a half-written report's temporary file. Now the
workers end with it, the report's file is removed, and pgvet exits 128 + the signal with one line. Real
processes and real signals; each wait is bounded, and none waits for time to pass."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FIXTURES
from pgvet.run.workers import usable_cpus

pytestmark = [
    pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                       reason="the workers run the probe's stand-in for reading a host only when forked"),
    pytest.mark.skipif(usable_cpus() < 2, reason="--jobs 2 runs in one process on one CPU"),
]

# pgvet lint, each host's reading replaced by: say which process reads it (a file named by its pid), then wait
# for an hour. Workers busy on a host are then certain when the signal is sent.
PROBE = """
import os, sys, time
from pgvet.snapshot import load as snapshot
from pgvet.run import hosts
ready = sys.argv[1]
def reading(*args, **kwargs):
    open(os.path.join(ready, str(os.getpid())), "w").close()
    time.sleep(3600)
hosts.load_hosts = reading
sys.argv = ["pgvet", *sys.argv[2:]]
from pgvet.__main__ import main
main()
"""
BOUND = 60  # seconds any wait may take before the test fails


def dead(pid: int) -> bool:
    """Gone, or a zombie (ended; whoever adopted it has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as status:
            return status.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {BOUND} s: {what}"
        time.sleep(0.01)


def _default_signals() -> None:
    """pgvet started as a shell or systemd starts it: the stop signals at their default action, whatever the test
    run inherited (under nohup SIGHUP is ignored, and pgvet rightly leaves it so; a background job ignores SIGINT)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], list[int], Path]]:
    """A `lint --jobs 2` of 4 hosts writing a JSON report, its workers each busy on a host; ended at the end."""
    hosts = []
    for number in range(4):
        shutil.copytree(FIXTURES / "small-vm", tmp_path / f"h{number}")
        hosts.append(str(tmp_path / f"h{number}"))
    ready, out = tmp_path / "ready", tmp_path / "out"
    ready.mkdir()
    out.mkdir()
    process = subprocess.Popen([sys.executable, "-c", PROBE, str(ready), "lint", *hosts, "--jobs", "2", "-f", "json",
                                "-o", str(out / "report.json")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=_default_signals)
    workers: list[int] = []
    try:
        wait_until(lambda: len(os.listdir(ready)) == 2 or process.poll() is not None, "both workers on a host")
        workers = [int(name) for name in os.listdir(ready)]
        assert process.poll() is None and len(workers) == 2
        yield process, workers, out
    finally:
        for pid in [process.pid, *workers]:  # whatever the test left running: this test's own processes
            if not dead(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=BOUND)
        assert process.stderr is not None
        process.stderr.close()


@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGTERM, 143, "pgvet: stopped by SIGTERM\n"),
                                                      (signal.SIGHUP, 129, "pgvet: stopped by SIGHUP\n"),
                                                      (signal.SIGINT, 130, "pgvet: interrupted\n")])
def test_a_signal_ends_the_run_its_workers_and_its_temporary_file(
        started: tuple[subprocess.Popen[str], list[int], Path], signum: int, code: int, said: str) -> None:
    process, workers, out = started
    process.send_signal(signum)  # to pgvet alone, as `kill` or systemd would send it
    assert process.wait(timeout=BOUND) == code
    assert [pid for pid in workers if not dead(pid)] == []  # ended before pgvet itself (they held its stderr)
    assert process.stderr is not None and process.stderr.read() == said
    assert os.listdir(out) == []  # no half report, no .pgvet-tmp


def test_workers_end_when_pgvet_is_killed(started: tuple[subprocess.Popen[str], list[int], Path]) -> None:
    """SIGKILL (the out-of-memory killer) runs no handler: the kernel ends the workers (PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    process, workers, _ = started
    process.kill()
    process.wait(timeout=BOUND)
    wait_until(lambda: all(dead(pid) for pid in workers), "the workers ended")


def test_a_hang_up_ignored_by_nohup_stays_ignored(tmp_path: Path) -> None:
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "small-vm", host)
    done = subprocess.run([sys.executable, "-c", "import os, signal, sys\n"
                           "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
                           "from pgvet.interrupt import stop_on_signals\n"
                           "stop_on_signals()\n"
                           "os.kill(os.getpid(), signal.SIGHUP)\n"
                           "print(signal.getsignal(signal.SIGHUP) == signal.SIG_IGN,"
                           " signal.getsignal(signal.SIGTERM))"],
                          capture_output=True, text=True, timeout=BOUND)
    assert done.returncode == 0 and done.stdout.startswith("True <function _raise_stopped"), done.stderr


@pytest.mark.parametrize(("raised", "code", "said"), [("KeyboardInterrupt()", 130, "pgvet: interrupted"),
                                                     ("Stopped(signal.SIGTERM)", 143, "pgvet: stopped by SIGTERM")])
def test_a_stop_python_cannot_pass_on_ends_pgvet_there(raised: str, code: int, said: str) -> None:
    """A Ctrl-C landing in a finaliser or in a C library's call back into Python (pydantic-core building typer's
    validators, while pgvet starts) cannot propagate: Python printed it as an ignored exception, with a traceback,
    and went on. It ends pgvet there, as a stop does anywhere else."""
    done = subprocess.run([sys.executable, "-c", "import signal\n"
                           "from pgvet.interrupt import Stopped, stop_on_signals\n"
                           "stop_on_signals()\n"
                           "class Finalised:\n"
                           "    def __del__(self):\n"
                           f"        raise {raised}\n"
                           "Finalised()\n"
                           "print('went on')\n"],
                          capture_output=True, text=True, timeout=BOUND)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", said + "\n")
