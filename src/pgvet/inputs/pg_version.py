"""``PG_VERSION``, the file of a data directory that names its major version."""

from __future__ import annotations

import re

from pgvet.errors import ParseError
from pgvet.provenance import Located, Source


def parse_pg_version_file(text: str, path: str) -> Located[object]:
    """PG_VERSION holds the major version: ``15``, or ``9.6`` before PostgreSQL 10."""
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    try:
        major = int(first) if "." not in first else int(first.split(".")[0])
    except ValueError:
        raise ParseError(f"PG_VERSION should hold a major version such as 16, not {first!r}", Source(path, 1)) from None
    return Located(major, Source(path, 1))


# A major before 10 is written with two numbers (9.6); pgvet keeps its first, as PG_VERSION's 9.6 is read
_NINE_X = re.compile(r"9\.[0-6]")


def major_version(value: object) -> int | None:
    """The major version a written version names, as pgvet judges it: a whole number from 9 to 99 (``16``,
    ``'16'``), or a 9.x major (``9.6``: 9, as PG_VERSION's); None for anything else (``10.5`` is a minor release)."""
    if isinstance(value, bool):
        return None
    text = str(value).strip()
    if text.isdigit() and len(text) <= 2 and int(text) >= 9:
        return int(text)
    return 9 if _NINE_X.fullmatch(text) else None
