"""``PG_VERSION``, the file of a data directory that names its major version."""

from __future__ import annotations

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
