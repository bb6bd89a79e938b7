"""Opening and reading an input file: beneath its host directory without leaving it, or as the user named it; its
text, bounded, from a regular file, a pipe or /proc; the suppression mark."""

from __future__ import annotations

import errno
import os
import re
import select
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from pgvet.errors import InputError
from pgvet.paths import MAX_LINKS, path_steps
from pgvet.provenance import Source

# The largest input file pgvet reads; real inputs are far smaller (sysctl -a: ~100 kB).
MAX_INPUT_BYTES = 32 * 1024 * 1024

# What every suppression comment holds (``# pgvet: ignore[…]``): a file without it has none. Looked for with
# a regular expression rather than `in`: CPython's substring search starts from the needle's last letter, and
# 't' is on every line of `sysctl -a`.
SUPPRESSION_MARK = "pgvet"
find_mark = re.compile(SUPPRESSION_MARK).search
find_mark_in_bytes = re.compile(SUPPRESSION_MARK.encode()).search


# How long a named pipe given as an input may keep pgvet waiting for its writer.
PIPE_WAIT_SECONDS = 5

# Files are read on past what stat said a chunk at a time: os.read and io allocate the whole size asked for
# before reading, and asking for the limit cost a small file many times its reading.
_CHUNK = 64 * 1024


def read_at_most(handle: BinaryIO, size: int, limit: int) -> bytes:
    """The first ``limit`` + 1 bytes of a file at most (the caller refuses more than ``limit``).

    ``size`` is what stat said: exactly that much (and one byte more) is asked for first; a file that
    grew, or one whose size stat does not know (/proc, a pipe), is read on up to the limit.
    """
    return _read_on(handle.read, size, limit)


class LeadsOut(OSError):
    """The path of an input read beneath a directory leads out of it: through a symbolic link, or ``..``."""


class NotRegular(OSError):
    """An input read beneath a directory is no regular file (a pipe, a device): none of a host's files is."""


class InGitDirectory(OSError):
    """An input read beneath a directory lies in a git directory (``.git``) below it: git's own files (its
    configuration, where a CI checkout keeps the job's token), which no clone brings (git refuses the name in a
    tree), are none of a host's."""


# The one way pgvet opens an input (open_input). Never blocking at the open (a named pipe waits for a writer) nor
# taking a terminal; beneath a directory, no component is followed as a link by the kernel: pgvet resolves each.
_INPUT_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_STEP_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_input(path: str, root: str | None = None) -> tuple[int, os.stat_result]:
    """An input opened for reading (a descriptor the caller closes) and what fstat says of what was opened.

    Without ``root``, the path is opened as given, links followed: a file the user named (``--sysctl F``, a pipe,
    /proc). With ``root``, the path must lie beneath that directory (as given, links followed: the user's) and only
    a regular file is opened: the path is walked from the directory's descriptor a component at a time, each opened
    with O_NOFOLLOW, and a symbolic link met is resolved by pgvet within the directory (a link to another of its
    files is read; one that leads out of it, or a ``..`` above it, raises LeadsOut; a ``.git`` on the way,
    InGitDirectory). What is checked is what is opened: a file or a directory swapped for a link between a check
    and the read cannot lead anywhere else.
    """
    _refuse_nul(path)
    if root is None:
        descriptor = os.open(path, _INPUT_FLAGS)
    else:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            descriptor = _open_beneath(top, _relative(path, root), root, _INPUT_FLAGS | os.O_NOFOLLOW)
        finally:
            os.close(top)
    try:
        status = os.fstat(descriptor)
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if root is not None and not stat.S_ISREG(status.st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file (a pipe or a device)")
    except OSError:
        os.close(descriptor)
        raise
    return descriptor, status


def open_directory(path: str, root: str | None = None) -> int:
    """A directory's descriptor: as given without ``root``, else beneath it as open_input opens a file (a directory
    pgvet writes into: a link swapped in on the way leads nowhere out of it)."""
    _refuse_nul(path)
    if root is None:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _open_beneath(top, _relative(path, root), root, _STEP_FLAGS)
    finally:
        os.close(top)


def _refuse_nul(path: str) -> None:
    """No file has a name holding a NUL byte (a place a snapshot names may): said as the OS says a missing file is,
    not as Python's ValueError."""
    if "\0" in path:
        raise FileNotFoundError(errno.ENOENT, "no file has a name holding a NUL byte")


def _relative(path: str, root: str) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(root))


def _open_beneath(top: int, relative: str, root: str, flags: int) -> int:
    """``relative`` opened from the directory ``top`` (``root``) with ``flags`` (which hold O_NOFOLLOW), never out
    of it (open_input)."""
    pending = path_steps(relative)
    directories = [top]  # the directories walked down from top: ``..`` goes back up, never above top
    links = 0
    try:
        while pending:
            name = pending.pop()
            if name == "..":
                if len(directories) == 1:
                    raise LeadsOut(errno.EXDEV, f"leads out of the directory {root}" + (
                        " through a symbolic link" if links else ""))
                os.close(directories.pop())
                continue
            if name.casefold() == ".git":
                raise InGitDirectory(errno.EACCES, "in a git directory (.git), whose files are git's, not the host's")
            try:
                descriptor = os.open(name, flags if not pending else _STEP_FLAGS, dir_fd=directories[-1])
            except OSError as error:
                if error.errno not in (errno.ELOOP, errno.ENOTDIR):  # what O_NOFOLLOW gives for a link
                    raise
                try:
                    target = os.readlink(name, dir_fd=directories[-1])
                except OSError:
                    raise error from None  # no link: a file where a directory was expected
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
                if os.path.isabs(target):
                    within = _within_root(target, root, top)
                    if within is None:
                        raise LeadsOut(errno.EXDEV, f"a symbolic link leads out of the directory {root} (to "
                                                    f"{target})") from None
                    while len(directories) > 1:
                        os.close(directories.pop())
                    target = within
                pending.extend(path_steps(target))
                continue
            if not pending:
                return descriptor
            directories.append(descriptor)
        if flags & os.O_DIRECTORY:  # a directory walked to, then back up from (``conf/..``)
            return os.dup(directories[-1])
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))  # a directory walked to
    finally:
        for descriptor in directories[1:]:
            os.close(descriptor)


def _within_root(target: str, root: str, top: int) -> str | None:
    """An absolute link's target as a path from the root, when it names the root (by its real path or as it was
    given) or something in it; None when it names anything else."""
    try:
        real = os.readlink(f"/proc/self/fd/{top}")  # the directory opened, whatever became of its path since
    except OSError:
        real = os.path.realpath(root)
    for prefix in (real, os.path.abspath(root)):
        if target == prefix or target.startswith(prefix.rstrip("/") + "/"):
            return target[len(prefix):]
    return None


def read_input(path: str, limit: int, root: str | None = None) -> tuple[bytes, os.stat_result]:
    """The first ``limit`` + 1 bytes at most of an input opened by open_input (the caller refuses more than
    ``limit``), and what fstat said of it. Nothing is read of a regular file larger than ``limit``: the caller
    refuses it by its size.

    A regular file is read with os.read straight (cheaper than an io.open for a host's small files); anything else
    (a pipe, a device) through io's buffered reader, which reads until the end. A pipe is given PIPE_WAIT_SECONDS
    to have something to read (or its writer gone), then read to its end.
    """
    descriptor, status = open_input(path, root)
    try:
        if not stat.S_ISREG(status.st_mode):
            if stat.S_ISFIFO(status.st_mode):
                waiting = select.poll()
                waiting.register(descriptor, select.POLLIN)
                if not waiting.poll(PIPE_WAIT_SECONDS * 1000):
                    raise TimeoutError(errno.ETIMEDOUT, f"a pipe no program wrote to in {PIPE_WAIT_SECONDS} s")
            os.set_blocking(descriptor, True)
            with open(descriptor, "rb", closefd=False) as handle:
                return read_at_most(handle, status.st_size, limit), status
        if status.st_size > limit:
            return b"", status
        # _read_on's first two reads written out: most files end at the size stat gave, and a host reads eight
        # of them, so the closure and the chunk list are made only for a file that goes on.
        data = os.read(descriptor, status.st_size + 1 if status.st_size > 0 else _CHUNK)
        if not data or len(data) > limit:
            return data, status
        more = os.read(descriptor, min(_CHUNK, limit + 1 - len(data)))
        if not more:
            return data, status
        return _read_rest(lambda count: os.read(descriptor, count), [data, more], len(data) + len(more),
                          limit), status
    finally:
        os.close(descriptor)


def _read_on(read: Callable[[int], bytes], size: int, limit: int) -> bytes:
    data = read(size + 1 if 0 < size <= limit else _CHUNK)
    if not data:
        return data
    return _read_rest(read, [data], len(data), limit)


def _read_rest(read: Callable[[int], bytes], chunks: list[bytes], total: int, limit: int) -> bytes:
    """The chunks read so far (``total`` bytes) and what follows, up to ``limit`` + 1 bytes in all."""
    while total <= limit:  # till the end: the file may have grown, or stat not know its size
        more = read(min(_CHUNK, limit + 1 - total))
        if not more:
            break
        chunks.append(more)
        total += len(more)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_text(path: Path, display: str, root: Path | None = None) -> str:
    """An input file's text: UTF-8, undecodable bytes kept as escapes; a clear error otherwise. ``root``: the
    directory it must be read beneath (open_input), None for a file the user named."""
    try:
        data, status = read_input(os.fspath(path), MAX_INPUT_BYTES, None if root is None else os.fspath(root))
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", Source(display)) from None
    except FileNotFoundError:
        raise InputError("no such file", Source(display)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", Source(display)) from None
    if status.st_size > MAX_INPUT_BYTES:
        raise InputError(f"file is {status.st_size} bytes, more than pgvet reads ({MAX_INPUT_BYTES})",
                         Source(display))
    if len(data) > MAX_INPUT_BYTES:  # a pipe or a /proc file, whose size stat does not know
        raise InputError(f"more than {MAX_INPUT_BYTES} bytes, more than pgvet reads", Source(display))
    if not data and stat.S_ISFIFO(status.st_mode):  # read without waiting for a writer: say so, not judge nothing
        raise InputError("a pipe that gave nothing (no program writing to it, or one that wrote nothing)",
                         Source(display))
    return data.decode("utf-8", errors="surrogateescape")
