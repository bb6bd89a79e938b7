"""The numbers pgvet computes with and writes: those a double holds (PostgreSQL's float8).

An infinity or a NaN has no JSON token (``json.dumps`` writes ``Infinity``, which no JSON reader takes), and
Python refuses to write an integer of more than 4 300 digits: such a number is refused where it enters — a
rule pack, an input, the configuration — at its file and line, and a formula that computes one is not
evaluated ("value out of range", as PostgreSQL says of a float8 that overflows).
"""

from __future__ import annotations

import sys

_LARGEST = int(sys.float_info.max)


def out_of_range(value: object) -> str | None:
    """Why ``value`` is a number pgvet does not hold, or None (for any other value too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return None if -_LARGEST <= value <= _LARGEST else f"not a finite number ({value!r})"
    if isinstance(value, int) and not -_LARGEST <= value <= _LARGEST:
        return f"a number of {value.bit_length()} bits, beyond what a double holds (about 1.8e308)"
    return None


def shown_number(text: str) -> str:
    """A number as written, for a message: a long one cut."""
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"


def size_text(size: float) -> str:
    """A size in IEC units with one decimal (``141.1 GiB``), bytes below 1 KiB."""
    for unit, factor in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(size) >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{int(size)} B"
