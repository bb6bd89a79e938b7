"""Reading an input file: its text, bounded, from a regular file, a pipe or /proc; the suppression mark."""

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


def read_file_at_most(path: str, status: os.stat_result, limit: int) -> bytes:
    """The file's first ``limit`` + 1 bytes at most, as read_at_most reads them, given what stat said.

    A regular file is read with os.read straight (cheaper than an io.open for a host's small
    files); anything else (a pipe, a device) through io's buffered reader, which reads until the end.
    """
    if not stat.S_ISREG(status.st_mode):
        # Opened without blocking: opening a named pipe waits for a writer, forever if none comes. A pipe is
        # given PIPE_WAIT_SECONDS to have something to read (or its writer gone), then read to its end.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if stat.S_ISFIFO(status.st_mode):
                waiting = select.poll()
                waiting.register(descriptor, select.POLLIN)
                if not waiting.poll(PIPE_WAIT_SECONDS * 1000):
                    raise TimeoutError(errno.ETIMEDOUT, f"a pipe no program wrote to in {PIPE_WAIT_SECONDS} s")
            os.set_blocking(descriptor, True)
        except OSError:
            os.close(descriptor)
            raise
        with open(descriptor, "rb") as handle:
            return read_at_most(handle, status.st_size, limit)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        # _read_on's first two reads written out: most files end at the size stat gave, and a host reads eight
        # of them, so the closure and the chunk list are made only for a file that goes on.
        data = os.read(descriptor, status.st_size + 1 if 0 < status.st_size <= limit else _CHUNK)
        if not data or len(data) > limit:
            return data
        more = os.read(descriptor, min(_CHUNK, limit + 1 - len(data)))
        if not more:
            return data
        return _read_rest(lambda count: os.read(descriptor, count), [data, more], len(data) + len(more), limit)
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


def read_text(path: Path, display: str) -> str:
    """An input file's text: UTF-8, undecodable bytes kept as escapes; a clear error otherwise."""
    name = os.fspath(path)
    try:
        status = os.stat(name)
        if status.st_size > MAX_INPUT_BYTES:
            raise InputError(f"file is {status.st_size} bytes, more than pgvet reads ({MAX_INPUT_BYTES})",
                             Source(display))
        data = read_file_at_most(name, status, MAX_INPUT_BYTES)
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", Source(display)) from None
    except FileNotFoundError:
        raise InputError("no such file", Source(display)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror or error}", Source(display)) from None
    if len(data) > MAX_INPUT_BYTES:  # a pipe or a /proc file, whose size stat does not know
        raise InputError(f"more than {MAX_INPUT_BYTES} bytes, more than pgvet reads", Source(display))
    if not data and stat.S_ISFIFO(status.st_mode):  # read without waiting for a writer: say so, not judge nothing
        raise InputError("a pipe that gave nothing (no program writing to it, or one that wrote nothing)",
                         Source(display))
    return data.decode("utf-8", errors="surrogateescape")
