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
    catalogs>`` (pg.catalog_version when no parameter table is the host's own). A live server's values come from
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
