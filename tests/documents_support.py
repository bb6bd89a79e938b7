"""What the tests of configuration documents share: their real-file corpus and the lines of a text."""

from __future__ import annotations

from pathlib import Path

from conftest import PROJECT
from pgvet.inputs.documents import document_kinds

DOCUMENTS = PROJECT / "tests" / "data" / "documents"


def corpus(kind: str) -> list[Path]:
    """The real files of a kind (tests/data/documents/<kind>/, its SOURCES.md says where each comes from)."""
    return sorted(path for path in (DOCUMENTS / kind).iterdir() if path.suffix in (".yaml", ".yml"))


def kinds_recognising(path: Path, text: str) -> list[str]:
    """Every kind that claims the file (a file must be exactly one kind's)."""
    return [kind.name for kind in document_kinds()
            if path.name.lower().endswith(kind.suffixes) and kind.recognises(path.name, text)]


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the only line holding ``needle`` (comment lines aside)."""
    lines = [number for number, line in enumerate(text.splitlines(), 1)
             if needle in line and not line.lstrip().startswith("#")]
    assert len(lines) == 1, (needle, lines)
    return lines[0]
