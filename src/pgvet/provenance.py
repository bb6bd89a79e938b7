"""Where a value came from: every parsed value keeps its file and line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T_co = TypeVar("T_co", covariant=True)  # a Located[int] is a Located[int | str]


@dataclass(frozen=True, slots=True)
class Source:
    """A place in an input: a file path (as given to pgvet) and a 1-based line, when one applies.

    ``path`` may also name something that is not a file, between angle brackets:
    ``<default>`` (a PostgreSQL boot value), ``<derived>``, ``<run>`` (the date of the run), ``<pgvet's parameter
    catalogs>`` (pg.catalog_version when no catalog is the host's own). A live server's values come from
    ``pg_settings.json`` and its line.
    """

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"

    def to_json(self) -> dict[str, str | int | None]:
        return {"path": self.path, "line": self.line}


@dataclass(frozen=True, slots=True)
class Located(Generic[T_co]):
    """A value with the place it was read from."""

    value: T_co
    source: Source


# The __init__ a frozen dataclass is given sets each field through object.__setattr__, which costs a third of
# the time of building the object; a host's inputs make a few hundred Sources and Locateds. These set the
# slots through their descriptors instead: same objects, still frozen (tests/inputs/test_snapshot.py checks).
_SET_SOURCE_PATH = Source.__dict__["path"].__set__
_SET_SOURCE_LINE = Source.__dict__["line"].__set__
_SET_LOCATED_VALUE = Located.__dict__["value"].__set__
_SET_LOCATED_SOURCE = Located.__dict__["source"].__set__


def _source_init(self: Source, path: str, line: int | None = None) -> None:
    _SET_SOURCE_PATH(self, path)
    _SET_SOURCE_LINE(self, line)


def _located_init(self: Located[object], value: object, source: Source) -> None:
    _SET_LOCATED_VALUE(self, value)
    _SET_LOCATED_SOURCE(self, source)


Source.__init__ = _source_init  # type: ignore[method-assign]
Located.__init__ = _located_init  # type: ignore[method-assign]
