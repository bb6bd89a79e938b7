"""Parsers of the inputs of a host, and what they share."""

from __future__ import annotations

from typing import BinaryIO


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
