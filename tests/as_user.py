"""Running pgvet as another user than root, for what only shows so: a file other users may not read, a uid
without a passwd entry and no HOME (``docker run --user 12345``).

pgvet's main runs in a forked child that drops root's rights (the tests run as root; skipped otherwise): the
interpreter and the modules it already imported are the parent's, so a Python installed where that user may
not read (root's home) still serves. Its files are in ``shared_directory()``, a directory that user may reach (pytest's
are 0700), removed at the end."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

NOBODY_UID = 12345  # no passwd entry: what `docker run --user 12345` or OpenShift gives

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a command as another user")


@contextmanager
def shared_directory() -> Iterator[Path]:
    """A directory under the temporary one that every user may reach, removed with what is in it."""
    directory = Path(tempfile.mkdtemp(prefix="pgvet-test-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory)


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


def preload() -> None:
    """Import what the commands import lazily, while root may still read it: every module of pgvet and of its
    dependencies (which import theirs as they go), and the standard ones pgvet imports inside functions."""
    import contextlib
    import importlib
    import io
    import pkgutil
    import warnings

    import pglast
    import pydantic
    import rich
    import ruamel.yaml
    import typer

    import pgvet

    for package in (typer, rich, ruamel.yaml, pglast, pydantic, pgvet):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if module.name.startswith(("pgvet.live", "rich._unicode_data")) or module.name.endswith("__main__"):
                continue
            # another system's module (_winconsole), an optional dependency; one prints as it loads
            with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(module.name)
    for name in STANDARD:
        importlib.import_module(name)


STANDARD = ("ctypes", "grp", "pwd", "tempfile", "tomllib", "shutil", "traceback", "importlib.machinery")


def run_as(uid: int, argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> Done:
    """``pgvet ARGV`` run by ``uid`` (its group: the same number) in ``cwd``, with exactly ``env``."""
    preload()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 99
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                os.chdir(cwd)
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.environ.clear()
                os.environ.update(env)
                tempfile.tempdir = None  # found again from this TMPDIR, not the one pytest's process found
                sys.argv = ["pgvet", *argv]
                from pgvet.__main__ import main

                main()
                code = 0
            except SystemExit as leaving:
                code = leaving.code if isinstance(leaving.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise TimeoutError(f"pgvet {argv} as uid {uid} ran more than {timeout} s")
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        return Done(os.waitstatus_to_exitcode(status), out.read().decode("utf-8", "replace"),
                    err.read().decode("utf-8", "replace"))
