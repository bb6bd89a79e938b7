"""``pg_settings.json``, written by ``pgvet collect`` (format 1, docs/live.md), read back as a LiveServer.

Public API::

    parse_pg_settings_json(text: str, path: str) -> LiveServer
        Pure: the document's settings, file settings, statistics and gaps, typed, each with the line
        of the JSON document it was read from. Invalid JSON or a wrong shape → ParseError(path, line).

    live_facts(server: LiveServer) -> dict[str, Located[int | float | str | bool]]
        ``pg.<parameter>`` in canonical units (bytes, seconds, bool, lower-case enum), ``pg.version``,
        ``pg.server_version_num`` and the ``live.*`` statistics (docs/live.md lists every name).

Line numbers are found by walking the document with ``json.JSONDecoder.raw_decode`` rather than by
trusting the writer's layout, so a reformatted file still points at the right lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NamedTuple

from pgvet.errors import ParseError
from pgvet.live.redact import REDACTED, redact_setting, unrecognised
from pgvet.numbers import out_of_range, shown_number
from pgvet.provenance import Located, Source

MAX_LINE = 2**31 - 1  # PostgreSQL's sourceline is an int4

SUPPORTED_FORMAT = 1
_MAX_INTEGER_CHARS = 400  # a double's largest integer has 309 digits
LiveValue = int | float | str | bool

# Parameter units as pg_settings names them: size in bytes, or duration in microseconds.
_UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024 * 1024}
_UNIT_MICROSECONDS = {"us": 1, "ms": 1000, "s": 1000 * 1000, "min": 60 * 1000 * 1000}


class LiveSetting(NamedTuple):
    """One row of ``pg_settings``. ``source`` is PostgreSQL's column (``default``, ``configuration file``…).

    ``origin`` is where the value was set: ``sourcefile:sourceline`` when the server showed them,
    else the row's line in pg_settings.json (``row``).
    """

    name: str
    setting: str | None
    unit: str | None
    vartype: str
    context: str
    source: str
    sourcefile: str | None
    sourceline: int | None
    boot_val: str | None
    reset_val: str | None
    pending_restart: bool
    row: Source

    @property
    def origin(self) -> Source:
        return Source(self.sourcefile, self.sourceline) if self.sourcefile else self.row


class LiveFileSetting(NamedTuple):
    """One row of ``pg_file_settings``: what the configuration files say now (``error`` when invalid)."""

    sourcefile: str | None
    sourceline: int | None
    seqno: int | None
    name: str | None
    setting: str | None
    applied: bool
    error: str | None
    row: Source


class DatabaseStats(NamedTuple):
    """Size and counters of one database (``pg_database``, ``pg_stat_database``); None when unreadable."""

    name: str
    size_bytes: int | None
    temp_files: int | None
    temp_bytes: int | None
    blks_hit: int | None
    blks_read: int | None
    row: Source
    xid_age: int | None = None  # age(datfrozenxid): transactions since its oldest unfrozen one
    mxid_age: int | None = None  # mxid_age(datminmxid): the same for multixacts


class LiveRow(NamedTuple):
    """One row of a list the server gave (a replication slot, a prepared transaction…): its columns by name,
    None for a NULL, and its line in pg_settings.json."""

    values: dict[str, str | int | float | bool | None]
    row: Source


# The lists of pg_settings.json read as LiveRows (docs/live.md): each one's columns with their kind.
ROW_LISTS: dict[str, dict[str, str]] = {
    "role_settings": {"database": "text", "role": "text", "name": "text", "setting": "text"},
    "replication_slots": {"name": "text", "type": "text", "active": "bool", "wal_status": "text",
                          "retained_bytes": "int", "safe_wal_size": "int", "xmin_age": "int",
                          "catalog_xmin_age": "int"},
    "prepared_transactions": {"gid": "text", "owner": "text", "database": "text", "age_seconds": "number",
                              "xid_age": "int"},
    "idle_sessions": {"pid": "int", "user": "text", "database": "text", "state": "text", "idle_seconds": "number",
                      "transaction_seconds": "number", "xmin_age": "int"},
    "invalid_indexes": {"schema": "text", "name": "text", "table": "text", "database": "text", "valid": "bool"},
}


class Unavailable(NamedTuple):
    """Something the collection could not read, the server's (or pgvet's) reason, and what would let pgvet
    read it (``GRANT pg_read_all_stats TO pgvet``), when pgvet knows."""

    what: str
    error: str
    row: Source
    fix: str | None = None


class LiveServer(NamedTuple):
    """A running server as ``pgvet collect`` saw it.

    ``statistics`` maps a statistic's name (docs/live.md) to its value, None when unreadable, with
    the line it was read from. ``file_settings`` is None when ``pg_file_settings`` could not be read.
    """

    path: str
    collected_at: str
    pgvet_version: str
    dsn: str
    version: str
    server_version_num: Located[int]
    settings: dict[str, LiveSetting]  # keyed by lower-case name
    file_settings: tuple[LiveFileSetting, ...] | None
    databases: tuple[DatabaseStats, ...]
    statistics: dict[str, Located[int | float | str | None]]
    unavailable: tuple[Unavailable, ...]
    rows: dict[str, tuple[LiveRow, ...]]  # the ROW_LISTS the role could read (absent: not read, or older pgvet)
    # the postmaster's command-line settings by lower-case name, with where each is written; None: not read
    command_line: dict[str, Located[str]] | None = None

    @property
    def major(self) -> int:
        return self.server_version_num.value // 10000


@dataclass(slots=True)
class _Node:
    """A JSON value with the line where it starts and, for the first levels, its members' nodes."""

    value: Any
    line: int
    members: dict[str, _Node] | list[_Node] | None = None


class _OutOfRange(Exception):
    """A number no double holds, or JSON's extensions NaN and Infinity (pgvet writes none: pgvet/numbers.py)."""


def _no_constant(name: str) -> float:
    raise _OutOfRange(f"{name} is not a number pgvet reads (it is not JSON)")


def _double(text: str) -> float:
    value = float(text)
    refused = out_of_range(value)
    if refused is not None:
        raise _OutOfRange(f"{shown_number(text)}: {refused}")
    return value


def _integer(text: str) -> int:
    if len(text) > _MAX_INTEGER_CHARS:  # int() refuses more than 4300 digits
        raise _OutOfRange(f"{shown_number(text)}: beyond what a double holds (about 1.8e308)")
    value = int(text)
    refused = out_of_range(value)
    if refused is not None:
        raise _OutOfRange(f"{shown_number(text)}: {refused}")
    return value


class _Walker:
    """Decodes a JSON document keeping the line of every value down to ``depth`` levels."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.decoder = json.JSONDecoder(parse_constant=_no_constant, parse_float=_double, parse_int=_integer)
        self.counted = 0  # the '\n's before this position are counted in self.newlines
        self.newlines = 0

    def line_at(self, position: int) -> int:
        """The line of a position; the walk goes forward, so each '\n' is counted once (counting from the start
        for each value made a document of 150 000 settings on one line take ten minutes)."""
        if position < self.counted:
            return self.text.count("\n", 0, position) + 1
        self.newlines += self.text.count("\n", self.counted, position)
        self.counted = position
        return self.newlines + 1

    def skip(self, position: int) -> int:
        while position < len(self.text) and self.text[position] in " \t\n\r":
            position += 1
        return position

    def fail(self, message: str, position: int) -> ParseError:
        return ParseError(message, Source(self.path, self.line_at(position)))

    def expect(self, position: int, char: str) -> int:
        position = self.skip(position)
        if self.text[position:position + 1] != char:
            raise self.fail(f"invalid JSON: expected {char!r}", position)
        return position + 1

    def value(self, position: int, depth: int) -> tuple[_Node, int]:
        position = self.skip(position)
        line = self.line_at(position)
        opening = self.text[position:position + 1]
        if depth > 0 and opening == "{":
            return self.object(position, depth, line)
        if depth > 0 and opening == "[":
            return self.array(position, depth, line)
        try:
            decoded, end = self.decoder.raw_decode(self.text, position)
        except json.JSONDecodeError as error:
            raise ParseError(f"invalid JSON: {error.msg}", Source(self.path, error.lineno)) from None
        except _OutOfRange as error:  # at the line of the value that holds it
            raise ParseError(f"{error}", Source(self.path, line)) from None
        return _Node(decoded, line), end

    def object(self, position: int, depth: int, line: int) -> tuple[_Node, int]:
        members: dict[str, _Node] = {}
        position = self.skip(position + 1)
        if self.text[position:position + 1] == "}":
            return _Node({}, line, members), position + 1
        while True:
            key_node, position = self.value(position, 0)
            if not isinstance(key_node.value, str):
                raise self.fail("invalid JSON: object keys must be strings", position)
            position = self.expect(position, ":")
            members[key_node.value], position = self.value(position, depth - 1)
            position = self.skip(position)
            if self.text[position:position + 1] == "}":
                return _Node({key: node.value for key, node in members.items()}, line, members), position + 1
            position = self.expect(position, ",")

    def array(self, position: int, depth: int, line: int) -> tuple[_Node, int]:
        items: list[_Node] = []
        position = self.skip(position + 1)
        if self.text[position:position + 1] == "]":
            return _Node([], line, items), position + 1
        while True:
            node, position = self.value(position, depth - 1)
            items.append(node)
            position = self.skip(position)
            if self.text[position:position + 1] == "]":
                return _Node([item.value for item in items], line, items), position + 1
            position = self.expect(position, ",")

    def document(self) -> _Node:
        node, end = self.value(0, 2)
        if self.skip(end) != len(self.text):
            raise self.fail("invalid JSON: extra data after the document", end)
        return node


class _Fields:
    """Typed access to the members of one JSON object, with errors at its line."""

    def __init__(self, node: _Node, path: str, what: str) -> None:
        if not isinstance(node.value, dict):
            raise ParseError(f"{what} should be a JSON object", Source(path, node.line))
        self.values: dict[str, Any] = node.value
        self.source = Source(path, node.line)
        self.what = what

    def _get(self, key: str, types: tuple[type, ...], optional: bool) -> Any:
        if key not in self.values:
            if optional:
                return None
            raise ParseError(f"{self.what} lacks {key!r}", self.source)
        value = self.values[key]
        if value is None and optional:
            return None
        # bool is an int in Python: a JSON true is not accepted where a number is meant.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            names = " or ".join(kind.__name__ for kind in types)
            raise ParseError(f"{self.what}: {key!r} should be {names}, not {value!r}", self.source)
        return value

    def text(self, key: str) -> str:
        return str(self._get(key, (str,), False))

    def optional_text(self, key: str) -> str | None:
        value = self._get(key, (str,), True)
        return None if value is None else str(value)

    def optional_int(self, key: str) -> int | None:
        value = self._get(key, (int,), True)
        return None if value is None else int(value)

    def optional_line(self, key: str) -> int | None:
        """A line number as the server gives one (an int4 from 1): another would reach the reports' places (a
        GitHub annotation's ``line=-5``, a SARIF startLine code scanning refuses)."""
        value = self.optional_int(key)
        if value is not None and not 1 <= value <= MAX_LINE:
            raise ParseError(f"{self.what}: {key!r} should be a line number (1 to {MAX_LINE}), not {value}",
                             self.source)
        return value

    def flag(self, key: str) -> bool:
        return bool(self._get(key, (bool,), True))

    def optional_flag(self, key: str) -> bool | None:
        value = self._get(key, (bool,), True)
        return None if value is None else bool(value)

    def optional_number(self, key: str) -> float | None:
        value = self._get(key, (int, float), True)
        return None if value is None else float(value)


def _members(node: _Node | None, path: str, what: str, kind: type) -> Any:
    if node is None or not isinstance(node.members, kind):
        line = None if node is None else node.line
        raise ParseError(f"{what} should be a JSON {'object' if kind is dict else 'array'}", Source(path, line))
    return node.members


# Values are read as a collection writes them (pgvet.live.redact: a command's, a custom setting's, a connection
# string's password): a document pgvet did not write (by hand, another tool's, edited) may hold the secrets a
# collection leaves out, which findings and facts would show. What a collection wrote reads back unchanged.


def _setting(node: _Node, path: str) -> LiveSetting:
    row = _Fields(node, path, "a settings row")
    name = row.text("name")
    return LiveSetting(
        name=name, setting=redact_setting(name, row.optional_text("setting")), unit=row.optional_text("unit"),
        vartype=row.text("vartype"), context=row.optional_text("context") or "",
        source=row.optional_text("source") or "", sourcefile=row.optional_text("sourcefile"),
        sourceline=row.optional_line("sourceline"), boot_val=redact_setting(name, row.optional_text("boot_val")),
        reset_val=redact_setting(name, row.optional_text("reset_val")), pending_restart=row.flag("pending_restart"),
        row=row.source,
    )


def _file_setting(node: _Node, path: str, recognised: AbstractSet[str]) -> LiveFileSetting:
    """A file_settings row; ``recognised``: the settings' names (a row of another name is a line of another file, its
    value redacted as a collection redacts it: pgvet.live.redact.unrecognised)."""
    row = _Fields(node, path, "a file_settings row")
    name = row.optional_text("name")
    setting = row.optional_text("setting")
    if name is not None:
        setting = REDACTED if setting and unrecognised(name, recognised) else redact_setting(name, setting)
    return LiveFileSetting(
        sourcefile=row.optional_text("sourcefile"), sourceline=row.optional_line("sourceline"),
        seqno=row.optional_int("seqno"), name=name, setting=setting,
        applied=row.flag("applied"), error=row.optional_text("error"), row=row.source,
    )


def _database(node: _Node, path: str) -> DatabaseStats:
    row = _Fields(node, path, "a databases row")
    return DatabaseStats(
        name=row.text("name"), size_bytes=row.optional_int("size_bytes"), temp_files=row.optional_int("temp_files"),
        temp_bytes=row.optional_int("temp_bytes"), blks_hit=row.optional_int("blks_hit"),
        blks_read=row.optional_int("blks_read"), row=row.source, xid_age=row.optional_int("xid_age"),
        mxid_age=row.optional_int("mxid_age"),
    )


def _live_row(node: _Node, path: str, what: str, columns: dict[str, str]) -> LiveRow:
    row = _Fields(node, path, f"a {what} row")
    read = {"text": row.optional_text, "int": row.optional_int, "number": row.optional_number,
            "bool": row.optional_flag}
    return LiveRow({column: read[kind](column) for column, kind in columns.items()}, row.source)


def _unavailable(node: _Node, path: str) -> Unavailable:
    row = _Fields(node, path, "an unavailable row")
    return Unavailable(what=row.text("what"), error=row.text("error"), row=row.source, fix=row.optional_text("fix"))


def parse_pg_settings_json(text: str, path: str) -> LiveServer:
    """A ``pg_settings.json`` document as a LiveServer; ParseError(path, line) when it is not one."""
    try:
        document = _Walker(text, path).document()
    except RecursionError:
        raise ParseError("invalid JSON: nested too deep", Source(path, 1)) from None
    top = _Fields(document, path, "pg_settings.json")
    members: dict[str, _Node] = _members(document, path, "pg_settings.json", dict)
    file_format = top.optional_int("format")
    if file_format != SUPPORTED_FORMAT:
        raise ParseError(f"pg_settings.json format {file_format!r} is not supported (pgvet reads format "
                         f"{SUPPORTED_FORMAT}); collect it again with this pgvet", top.source)
    server_node = members.get("server")
    server = _Fields(server_node, path, "server") if server_node else None
    if server is None or server_node is None:
        raise ParseError("pg_settings.json lacks the 'server' object", top.source)
    server_members: dict[str, _Node] = _members(server_node, path, "server", dict)
    version_num = server.optional_int("server_version_num")
    if version_num is None:
        raise ParseError("server lacks 'server_version_num'", server.source)

    settings: dict[str, LiveSetting] = {}
    for node in _members(members.get("settings"), path, "settings", list):
        setting = _setting(node, path)
        settings[setting.name.lower()] = setting
    file_settings = None
    if members.get("file_settings") is not None and members["file_settings"].value is not None:
        file_settings = tuple(_file_setting(node, path, settings.keys())
                              for node in _members(members["file_settings"], path, "file_settings", list))
    databases = tuple(_database(node, path)
                      for node in _members(members.get("databases"), path, "databases", list))
    unavailable = tuple(_unavailable(node, path)
                        for node in _members(members.get("unavailable"), path, "unavailable", list))
    rows = {what: tuple(_live_row(node, path, what, columns) for node in _members(members[what], path, what, list))
            for what, columns in ROW_LISTS.items() if members.get(what) is not None and members[what].value is not None}
    command_line: dict[str, Located[str]] | None = None
    if members.get("command_line") is not None and members["command_line"].value is not None:
        command_line = {}
        for key, node in _members(members["command_line"], path, "command_line", dict).items():
            if not isinstance(node.value, str):
                raise ParseError(f"command_line: {key!r} should be a text", Source(path, node.line))
            command_line[key.lower()] = Located(redact_setting(key, node.value) or "", Source(path, node.line))
    statistics: dict[str, Located[int | float | str | None]] = {}
    for key, node in _members(members.get("statistics"), path, "statistics", dict).items():
        if node.value is not None and (isinstance(node.value, bool) or not isinstance(node.value, int | float | str)):
            raise ParseError(f"statistics: {key!r} should be a number, a text or null", Source(path, node.line))
        statistics[key] = Located(node.value, Source(path, node.line))

    return LiveServer(
        path=path,
        collected_at=top.optional_text("collected_at") or "",
        pgvet_version=top.optional_text("pgvet_version") or "",
        dsn=top.optional_text("dsn") or "",
        version=server.optional_text("version") or "",
        server_version_num=Located(version_num, Source(path, server_members["server_version_num"].line)),
        settings=settings,
        file_settings=file_settings,
        databases=databases,
        statistics=statistics,
        unavailable=unavailable,
        rows=rows,
        command_line=command_line,
    )


def _number(text: str, vartype: str) -> int | float:
    if vartype != "integer":
        value: int | float = float(text)
    elif len(text) > 1 and text.startswith("0") and text.isdigit():
        value = int(text, 8)  # file modes (data_directory_mode, log_file_mode…) are shown in octal: 0700
    else:
        value = int(text)
    if out_of_range(value) is not None:  # 'inf', 'nan', '1e400', 400 digits: no server shows them
        raise ValueError(text)
    return value


def canonical_value(setting: LiveSetting) -> LiveValue | None:
    """A pg_settings value in pgvet's canonical units; None when the server hid it.

    Memory in bytes and time in seconds (integers when exact), negative special values (-1) kept
    as they are, booleans from on/off, enums lower-case, strings as they are.
    """
    text = setting.setting
    if text is None:
        return None
    if setting.vartype == "bool":  # pg_settings shows on or off; anything else stays text, as a number does
        return {"on": True, "off": False}.get(text, text)
    if setting.vartype == "enum":
        return text.lower()
    if setting.vartype not in ("integer", "real"):
        return text
    try:
        native = _number(text, setting.vartype)
    except ValueError:
        return text  # never seen from a real server; kept as text rather than lost (a rule then says it is no number)
    if native < 0 or setting.unit is None:
        return native
    if setting.unit in _UNIT_BYTES:
        return native * _UNIT_BYTES[setting.unit]
    if setting.unit in _UNIT_MICROSECONDS:
        microseconds = native * _UNIT_MICROSECONDS[setting.unit]
        if isinstance(microseconds, int) and microseconds % 1_000_000 == 0:
            return microseconds // 1_000_000
        return microseconds / 1_000_000
    return native


def _computed_by_the_server(setting: LiveSetting) -> bool:
    """A size the server chose itself from other settings: wal_buffers = -1 (from shared_buffers), 17's
    transaction_buffers = 0 and the other automatic SLRU caches, 18's io_max_concurrency = -1 (from shared_buffers
    and max_connections). pg_settings shows the size chosen, from source ``default`` (or ``override`` where the
    files give the sentinel): taken as a size, it stayed the same on a target that changes shared_buffers, and the
    shared memory predicted for the restart (the huge page pool for huge_pages = on) came out short."""
    return (setting.vartype == "integer" and setting.context != "internal"
            and setting.source in ("default", "override") and setting.boot_val in ("-1", "0")
            and setting.setting is not None and setting.setting != setting.boot_val)


def _boot_sentinel(setting: LiveSetting) -> int:
    """The automatic value (-1 or 0) a setting the server sized itself was given; the rules' formulas size it."""
    return int(setting.boot_val or 0)


def _statistic(server: LiveServer, name: str) -> Located[int | float | str | None] | None:
    located = server.statistics.get(name)
    return None if located is None or located.value is None else located


# server_version of a build that is not a release: "18beta1", "17rc1", "19devel" (server_version_num cannot
# tell 18beta1 from 18.0: both are 180000); a release's is "16.2" or "16.2 (Debian 16.2-1.pgdg120+2)".
_PRERELEASE = re.compile(r"\d+(?:\.\d+)*((?:devel|alpha|beta|rc)\d*)")
_VERSION_FUNCTION = re.compile(r"PostgreSQL (\S+)")  # version(): "PostgreSQL 18beta1 on x86_64-pc-linux-gnu, …"


def _prerelease(server: LiveServer) -> Located[str] | None:
    """``pg.prerelease``: "beta1", "rc1", "devel"…, or "" for a release; None when the version is not shown."""
    row = server.settings.get("server_version")
    if row is not None and row.setting:
        text, source = row.setting, row.origin
    else:
        shown = _VERSION_FUNCTION.match(server.version)
        if shown is None:
            return None
        text, source = shown.group(1), server.server_version_num.source
    match = _PRERELEASE.match(text)
    return Located(match.group(1) if match else "", source)


def live_facts(server: LiveServer) -> dict[str, Located[LiveValue]]:
    """The facts of a live server, keyed by full fact name (docs/live.md)."""
    facts: dict[str, Located[LiveValue]] = {}
    for key, setting in settings_sorted(server):
        value = _boot_sentinel(setting) if _computed_by_the_server(setting) else canonical_value(setting)
        if value is not None:
            facts[f"pg.{key}"] = Located(value, setting.origin)
    running = facts.get("pg.huge_pages")
    if "pg.huge_pages_status" not in facts and running is not None and running.value in ("on", "off"):
        # before 17 no huge_pages_status, but a server that runs huge_pages = on runs in huge pages (it does not
        # start without them), and one that runs off without: what it holds of the pool is known all the same
        facts["pg.huge_pages_status"] = Located(running.value, running.source)
    version_source = server.server_version_num.source
    facts["pg.version"] = Located(server.major, version_source)
    facts["pg.server_version_num"] = Located(server.server_version_num.value, version_source)
    prerelease = _prerelease(server)
    if prerelease is not None:
        facts["pg.prerelease"] = prerelease

    for statistic in ("connections", "temp_files", "temp_bytes", "checkpoints_timed", "checkpoints_requested",
                      "checkpoints_wal_bytes", "wal_filesystem_free_bytes", "wal_filesystem_bytes",
                      "ssl_files_missing", "wal_replay_pause_state", "standbys",
                      "disabled_subscriptions"):
        located = _statistic(server, statistic)
        if located is not None:
            facts[f"live.{statistic}"] = Located(located.value, located.source)  # type: ignore[arg-type]
    hit, read = _statistic(server, "blks_hit"), _statistic(server, "blks_read")
    if hit is not None and read is not None and isinstance(hit.value, int) and isinstance(read.value, int) \
            and hit.value + read.value > 0:
        facts["live.cache_hit_ratio"] = Located(hit.value / (hit.value + read.value), hit.source)
    sizes = [database.size_bytes for database in server.databases]
    if sizes and all(size is not None for size in sizes):  # a partial sum would understate the data
        facts["live.database_size_total"] = Located(sum(size for size in sizes if size is not None),
                                                    server.databases[0].row)
    max_connections = server.settings.get("max_connections")
    if max_connections is not None and max_connections.setting is not None:
        facts["live.max_connections"] = Located(int(max_connections.setting), max_connections.row)

    pending = [setting for _, setting in settings_sorted(server) if setting.pending_restart]
    pending_source = pending[0].row if pending else Source(server.path)
    facts["live.pending_restart"] = Located(",".join(setting.name for setting in pending), pending_source)
    facts["live.pending_restart_count"] = Located(len(pending), pending_source)
    if server.file_settings is not None:
        errors = [row for row in server.file_settings if row.error]
        facts["live.file_settings_errors"] = Located(len(errors), errors[0].row if errors else Source(server.path))
    return facts


def settings_sorted(server: LiveServer) -> list[tuple[str, LiveSetting]]:
    """The settings by lower-case name, in name order."""
    return sorted(server.settings.items())
