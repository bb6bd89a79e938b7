"""``ALTER SYSTEM / ALTER DATABASE / ALTER ROLE … SET`` statements in SQL migration files.

Public API::

    parse_alter_statements(text: str, path: str) -> list[AlterSet]
        Every ``SET`` / ``RESET`` of a parameter by ALTER SYSTEM, ALTER DATABASE or ALTER ROLE/USER
        (``IN DATABASE`` kept), in file order, with Source(path, line of the value).
    parse_alter_sql(text: str, path: str) -> list[ConfSetting]
        What the ALTER SYSTEM statements leave in postgresql.auto.conf, every SET kept in order
        unless a later ``RESET name`` / ``SET name TO DEFAULT`` / ``RESET ALL`` removes it.

Parsed with pglast (PostgreSQL's own parser). Values are rendered as PostgreSQL writes them to
postgresql.auto.conf for single values (``'64MB'`` → ``64MB``, ``-3``, ``1.5``, ``true``); a
list (``search_path = a, b``) is joined with ``", "`` without PostgreSQL's per-parameter quoting
of list items. Statements other than these are ignored. SQL that does not parse raises
ParseError at the line PostgreSQL's parser names.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.postgresql_conf import ConfSetting
from pgvet.provenance import Source

__all__ = ["AlterSet", "parse_alter_sql", "parse_alter_statements"]


@dataclass(frozen=True, slots=True)
class AlterSet:
    """One ``… SET name = value`` or ``… RESET name`` (value None; name ``all`` for RESET ALL)."""

    scope: str  # 'system' | 'database' | 'role'
    database: str | None  # ALTER DATABASE d, ALTER ROLE r IN DATABASE d
    role: str | None  # ALTER ROLE r; None for ALTER ROLE ALL and the other scopes
    name: str  # lower-case
    value: str | None
    raw: str  # the value as written in the SQL
    quoted: bool
    source: Source


def _lines(text: str) -> Callable[[int], int]:
    """The line of an offset of ``text``, by a search among its '\n's (counting them from the start for each
    statement made a file of statements quadratic)."""
    newlines = [match.start() for match in re.finditer("\n", text)]
    return lambda offset: bisect_left(newlines, max(offset, 0)) + 1


def _constant(node: Any) -> str:
    """One SET argument as PostgreSQL renders it (A_Const, or a typed literal such as interval '1h')."""
    name = type(node).__name__
    if name == "TypeCast":
        return _constant(node.arg)
    if name == "A_Const":
        value = node.val
        kind = type(value).__name__
        if kind == "Integer":
            return str(value.ival)
        if kind == "Float":
            return str(value.fval)
        if kind == "Boolean":
            return "true" if value.boolval else "false"
        if kind == "String":
            return str(value.sval)
    return str(node)


def parse_alter_statements(text: str, path: str) -> list[AlterSet]:
    """Every parameter SET/RESET of ALTER SYSTEM, ALTER DATABASE and ALTER ROLE in ``text``."""
    # pglast, PostgreSQL's own parser, is slow to import: only for the hosts that hold SQL migrations
    from pglast import parse_sql
    from pglast.parser import ParseError as PglastError
    from pglast.parser import scan

    line = _lines(text)
    undecodable = next((index for index, char in enumerate(text) if "\udc80" <= char <= "\udcff"), None)
    if undecodable is not None:  # the SQL parser takes UTF-8 only; read_text kept the bad bytes as escapes
        raise ParseError("not valid UTF-8", Source(path, line(undecodable)))
    try:
        statements = parse_sql(text)
        tokens = scan(text)
    except PglastError as error:
        offset = error.args[1] if len(error.args) > 1 and isinstance(error.args[1], int) else 0
        raise ParseError(f"SQL syntax: {error.args[0]}", Source(path, line(offset))) from None
    starts = [token.start for token in tokens]  # in the text's order
    found: list[AlterSet] = []
    for raw in statements:  # pglast's node classes are dynamic: read as Any
        statement: Any = raw.stmt
        kind = type(statement).__name__
        database: str | None = None
        role: str | None = None
        if kind == "AlterSystemStmt":
            scope = "system"
        elif kind == "AlterDatabaseSetStmt":
            scope, database = "database", statement.dbname
        elif kind == "AlterRoleSetStmt":
            scope, database = "role", statement.database
            role = statement.role.rolename if statement.role is not None else None
        else:
            continue
        start = raw.stmt_location or 0
        end = start + raw.stmt_len if raw.stmt_len else len(text)
        words = [token for token in tokens[bisect_left(starts, start):bisect_left(starts, end)]
                 if not token.name.endswith("COMMENT")]
        change = _alter_set(text, path, line, words, statement.setstmt, scope, database, role)
        if change is not None:
            found.append(change)
    return found


def _alter_set(text: str, path: str, line_of: Callable[[int], int], words: list[Any], setstmt: Any, scope: str,
               database: str | None, role: str | None) -> AlterSet | None:
    """The SET of one statement; the value's place is found among the statement's tokens (pglast's
    tree has no locations for constants): what follows the first ``=`` or ``TO`` after SET."""
    kind = setstmt.kind.name
    name = (setstmt.name or "all").lower()
    line = line_of(words[0].start) if words else 1
    if kind in ("VAR_SET_DEFAULT", "VAR_RESET", "VAR_RESET_ALL"):
        return AlterSet(scope, database, role, name, None, "", False, Source(path, line))
    if kind != "VAR_SET_VALUE":
        return None  # FROM CURRENT: the value is not in the file
    names = [word.name for word in words]
    after_set = names.index("SET") if "SET" in names else 0
    value_words = []
    for index in range(after_set + 1, len(words)):
        if names[index] in ("ASCII_61", "TO"):
            value_words = [word for word in words[index + 1:] if word.name != "ASCII_59"]
            break
    value = ", ".join(_constant(arg) for arg in setstmt.args or ())
    if not value_words:
        return AlterSet(scope, database, role, name, value, value, False, Source(path, line))
    written = text[value_words[0].start:value_words[-1].end + 1]
    quoted = value_words[0].name == "SCONST" and len(value_words) == 1
    return AlterSet(scope, database, role, name, value, written, quoted,
                    Source(path, line_of(value_words[0].start)))


def parse_alter_sql(text: str, path: str) -> list[ConfSetting]:
    """The ALTER SYSTEM settings of ``text`` as postgresql.auto.conf would keep them, in order."""
    kept: dict[int, ConfSetting] = {}  # by the SET's place in the file: in its order
    places: dict[str, list[int]] = {}
    for place, change in enumerate(parse_alter_statements(text, path)):
        if change.scope != "system":
            continue
        if change.value is None:  # each SET is removed once at most: no list rebuilt for each RESET
            if change.name == "all":
                kept.clear()
                places.clear()
            for removed in places.pop(change.name, []):
                del kept[removed]
            continue
        kept[place] = ConfSetting(change.name, change.value, change.raw, change.quoted, change.source,
                                  change.name)  # ALTER SYSTEM writes the parameter's own name
        places.setdefault(change.name, []).append(place)
    return list(kept.values())
