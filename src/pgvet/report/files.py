"""Report files written whole or not at all (``--output``), for ``pgvet lint`` and ``pgvet check``."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

from pgvet.errors import UsageError


class ReportFile:
    """A report file, written whole or not at all: into a new file beside it, renamed over it when the run
    ends well and removed otherwise, so that a run that fails (an error found late, a bug, Ctrl-C) leaves
    neither a truncated report nor a previous one damaged. A target that exists and is no regular file (a
    FIFO, a device, a symbolic link such as /dev/stdout) is written where it leads, as are files whose
    directory pgvet may not write. A failure to write is a usage error naming the file."""

    def __init__(self, path: Path) -> None:
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
            # file names that are not UTF-8 (surrogates) escaped as on standard output (__main__): in JSON,
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
        if self.temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)
            self.temporary = None
