"""``pgvet lint``: hosts linted one after the other and handed to every report as they come.

Every report is written host by host (HostWriter); a host is then dropped, and what remains of a run
is its summary counts: memory stays flat however many hosts.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from pgvet.errors import UsageError
from pgvet.findings import HostError
from pgvet.lint import LintOptions, LintRun
from pgvet.report import HostWriter, ReportOptions, default_format, destinations, writer_factory
from pgvet.summary import RunSummary


class ReportFile:
    """A report file, written whole or not at all: into a new file beside it, renamed over it when the run
    ends well and removed otherwise, so that a run that fails (an error found late, a bug, Ctrl-C) leaves
    neither a truncated report nor a previous one damaged. A target that exists and is no regular file (a
    FIFO, a device, a symbolic link such as /dev/stdout) is written where it leads, as are files whose
    directory pgvet may not write. A failure to write is a usage error naming the file."""

    def __init__(self, path: Path) -> None:
        import os
        import stat

        self.path = path
        self.temporary: str | None = None
        target = os.fspath(path)
        try:
            mode: int | None = os.lstat(target).st_mode
        except OSError:
            mode = None
        try:
            if mode is None or stat.S_ISREG(mode):
                self.temporary = self._beside(target, None if mode is None else stat.S_IMODE(mode))
        except PermissionError as error:
            if mode is None:
                raise UsageError(f"cannot write {path}: {error.strerror}") from None
            # a file pgvet may write in a directory it may not add to: written in place, as it always was
        except OSError as error:
            raise UsageError(f"cannot write {path}: {error.strerror}") from None
        try:
            # file names that are not UTF-8 (surrogates) escaped as on standard output (cli.main): in JSON,
            # that is JSON's own escape of them
            self.handle: IO[str] = open(self.temporary or target, "w", encoding="utf-8",  # noqa: SIM115
                                        errors="backslashreplace")
        except OSError as error:
            self._remove()
            raise UsageError(f"cannot write {path}: {error.strerror}") from None

    @staticmethod
    def _beside(target: str, mode: int | None) -> str:
        """A new file in the target's directory (a rename does not cross file systems), with the mode of the
        file it replaces, else the one any new file gets (umask applied: not mkstemp's 0600)."""
        import os

        directory, name = os.path.split(target)
        temporary = os.path.join(directory, f".{name}.{os.getpid()}-{os.urandom(4).hex()}.pgvet-tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            if mode is not None:
                os.fchmod(descriptor, mode)
        except OSError:
            os.unlink(temporary)
            raise
        finally:
            os.close(descriptor)
        return temporary

    def write(self, text: str, /) -> object:
        try:
            return self.handle.write(text)
        except OSError as error:
            raise UsageError(f"cannot write {self.path}: {error.strerror}") from None

    def __enter__(self) -> ReportFile:
        return self

    def __exit__(self, failed: type[BaseException] | None, *_: object) -> None:
        """At a good end, what is still buffered is written (a full disk may only show there) and the file
        takes the target's place; after a failure it is removed."""
        import os

        try:
            self.handle.close()
            if failed is None and self.temporary is not None:
                os.replace(self.temporary, self.path)
                self.temporary = None
        except OSError as error:
            if failed is None:
                raise UsageError(f"cannot write {self.path}: {error.strerror}") from None
        finally:
            self._remove()

    def _remove(self) -> None:
        import os

        if self.temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)
            self.temporary = None


def lint_and_report(directories: Sequence[Path | None], options: LintOptions, *, jobs: int, formats: list[str],
                    outputs: list[Path], verbose: bool, color: bool | None, notices: Sequence[str] = ()) -> RunSummary:
    """Lint the hosts and write each --format to its --output (or standard output); the run's summary.
    ``notices``: what the run has to say before its first host (paths given that are no host's)."""
    run = LintRun(directories, options, jobs=jobs, notices=notices)  # refuses a wrong pack, selector, parameter first
    with contextlib.ExitStack() as files:
        writers: list[HostWriter] = []
        for fmt, destination in destinations(formats or [default_format()], outputs):
            out: ReportFile | None = None
            if destination is not None:
                out = files.enter_context(ReportFile(destination))
            report_options = ReportOptions(color=False if out is not None else color, verbose=verbose)
            factory = writer_factory(fmt)
            writer = factory(run, report_options, sys.stdout if out is None else out)
            files.callback(writer.close)  # its spools, also when the run fails
            writers.append(writer)
        for outcome in run.outcomes():
            if isinstance(outcome, HostError):
                for writer in writers:
                    writer.error(outcome)
                continue
            for writer in writers:
                writer.host(outcome)
        notices = run.notices
        for writer in writers:
            writer.finish(notices, run.summary)
    return run.summary
