"""Parsers of the inputs of a host, and what they share."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

# What every suppression comment holds (``# pgvet: ignore[…]``): a file without it has none.
SUPPRESSION_MARK = "pgvet"


def read_at_most(handle: BinaryIO, size: int, limit: int) -> bytes:
    """The first ``limit`` + 1 bytes of a file at most (the caller refuses more than ``limit``).

    ``size`` is what stat said: asking for exactly that much (and one byte more) spares the allocation
    of a ``limit``-sized buffer for every small file; a file that grew, or one whose size stat does not
    know (/proc), is read on up to the limit.
    """
    if not 0 < size <= limit:
        return handle.read(limit + 1)
    data = handle.read(size + 1)
    if len(data) > size:
        data += handle.read(limit + 1 - len(data))
    return data


def read_file_at_most(path: str, status: os.stat_result, limit: int) -> bytes:
    """The file's first ``limit`` + 1 bytes at most, as read_at_most reads them, given what stat said.

    A regular file is read with os.read straight (half the time of an io.open for a host's small
    files); anything else (a pipe, a device) through io's buffered reader, which reads until the end.
    """
    if not stat.S_ISREG(status.st_mode):
        with open(path, "rb") as handle:
            return read_at_most(handle, status.st_size, limit)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        size = status.st_size
        data = os.read(descriptor, size + 1 if 0 < size <= limit else limit + 1)
        while data and len(data) <= limit:  # till the end, as a file may have grown (or stat not know its size)
            more = os.read(descriptor, limit + 1 - len(data))
            if not more:
                break
            data += more
        return data
    finally:
        os.close(descriptor)
