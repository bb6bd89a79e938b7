"""Read a running PostgreSQL server, read-only, with psycopg 3 (imported only here, when a server is contacted).

Connection: libpq conventions (a conninfo string or a URI; PG* variables, service files and .pgpass
work because libpq handles them), ``application_name=pgvet``, ``connect_timeout``. The session is
read-only (``default_transaction_read_only``) with ``statement_timeout`` and ``lock_timeout`` set, in
autocommit so that a query refused for lack of privilege does not spoil the ones after it.

pg_settings is read first, in a read-only transaction, before pgvet's own ``SET`` commands, so it
shows the server's values rather than pgvet's session (only ``application_name``, given at
connection, and ``transaction_read_only``, on inside that transaction, are pgvet's).

A query the role may not run is recorded in ``ServerReading.unavailable`` with the server's error
text; only a failure to connect stops the collection (InputError, one line, no password).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pgvet.errors import InputError

if TYPE_CHECKING:
    import psycopg

STATEMENT_TIMEOUT = "10s"
LOCK_TIMEOUT = "2s"
REDACTED = "***"
# libpq keywords whose values are secrets (sslpassword: the passphrase of the client key).
SECRET_KEYWORDS = frozenset({"password", "sslpassword"})
# Parameters whose value is a libpq connection string that may hold a password.
CONNINFO_PARAMETERS = frozenset({"primary_conninfo"})

SETTINGS_COLUMNS = ("name", "setting", "unit", "vartype", "context", "source", "sourcefile", "sourceline",
                    "boot_val", "reset_val", "pending_restart")
FILE_SETTINGS_COLUMNS = ("sourcefile", "sourceline", "seqno", "name", "setting", "applied", "error")
# Parameters pg_settings hides from roles without pg_read_all_settings (GUC_SUPERUSER_ONLY).
READ_ALL_SETTINGS_NOTE = ("requires superuser or membership in pg_read_all_settings (pg_monitor includes it): "
                          "without it PostgreSQL shows sourcefile and sourceline as NULL and hides "
                          "superuser-only parameters such as data_directory and config_file")

_URI_PREFIXES = ("postgresql://", "postgres://")
_CONNINFO_SPACE = " \t\n\r\f\v"


@dataclass(slots=True)
class ServerReading:
    """What was read from a server, as JSON-ready values (the writer lays them out in pg_settings.json)."""

    dsn: str  # redacted
    connection: dict[str, Any]
    server: dict[str, Any]
    settings: list[dict[str, Any]]
    file_settings: list[dict[str, Any]] | None
    databases: list[dict[str, Any]]
    statistics: dict[str, Any]
    unavailable: list[dict[str, str]] = field(default_factory=list)
    postmaster_start_epoch: float | None = None  # to check that a local data directory is this server's


# --- redaction -------------------------------------------------------------------------------------------


def _conninfo_password_spans(conninfo: str) -> list[tuple[int, int]] | None:
    """Spans of every secret value (``password``, ``sslpassword``) in a keyword/value conninfo, tokenized
    as libpq does; None when it is malformed."""
    spans: list[tuple[int, int]] = []
    position, length = 0, len(conninfo)
    while True:
        while position < length and conninfo[position] in _CONNINFO_SPACE:
            position += 1
        if position == length:
            return spans
        start = position
        while position < length and conninfo[position] not in _CONNINFO_SPACE and conninfo[position] != "=":
            position += 1
        keyword = conninfo[start:position]
        while position < length and conninfo[position] in _CONNINFO_SPACE:
            position += 1
        if position == length or conninfo[position] != "=":
            return None
        position += 1
        while position < length and conninfo[position] in _CONNINFO_SPACE:
            position += 1
        value_start = position
        if position < length and conninfo[position] == "'":
            position += 1
            while position < length and conninfo[position] != "'":
                position += 2 if conninfo[position] == "\\" else 1
            if position >= length:
                return None  # unterminated quoted string
            position += 1
        else:
            while position < length and conninfo[position] not in _CONNINFO_SPACE:
                position += 2 if conninfo[position] == "\\" else 1
            position = min(position, length)
        if keyword in SECRET_KEYWORDS:
            spans.append((value_start, position))


def _redact_uri(uri: str) -> str:
    scheme_end = uri.index("://") + 3
    rest = uri[scheme_end:]
    authority_end = min((index for index in (rest.find(char) for char in "/?") if index >= 0), default=len(rest))
    authority, tail = rest[:authority_end], rest[authority_end:]
    if "@" in authority:
        userinfo, hosts = authority.rsplit("@", 1)
        if ":" in userinfo:
            authority = userinfo.split(":", 1)[0] + ":" + REDACTED + "@" + hosts
    path, question, query = tail.partition("?")
    if question:
        parameters = []
        for parameter in query.split("&"):
            key, equals, _ = parameter.partition("=")
            parameters.append(f"{key}={REDACTED}" if equals and unquote(key) in SECRET_KEYWORDS else parameter)
        tail = path + "?" + "&".join(parameters)
    return uri[:scheme_end] + authority + tail


def redact_dsn(dsn: str) -> str:
    """The DSN with every secret replaced by ``***``: ``password=…`` and ``sslpassword=…`` in a conninfo,
    ``user:…@`` and ``?password=…`` in a URI. A conninfo too malformed to tokenize loses everything from
    its first ``password`` on.
    """
    if dsn.startswith(_URI_PREFIXES):
        return _redact_uri(dsn)
    spans = _conninfo_password_spans(dsn)
    if spans is None:
        cut = dsn.find("password")
        return dsn if cut < 0 else dsn[:cut] + f"password={REDACTED}"
    for start, end in reversed(spans):
        dsn = dsn[:start] + REDACTED + dsn[end:]
    return dsn


def _passwords_in(dsn: str) -> list[str]:
    """The password texts a DSN holds (to scrub them from error messages that might echo them)."""
    found: list[str] = []
    if dsn.startswith(_URI_PREFIXES):
        authority = dsn.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
        userinfo = authority.rsplit("@", 1)[0] if "@" in authority else ""
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
        found.extend(parameter.partition("=")[2] for parameter in dsn.partition("?")[2].split("&")
                     if unquote(parameter.partition("=")[0]) in SECRET_KEYWORDS)
    else:
        found.extend(dsn[start:end].strip("'") for start, end in _conninfo_password_spans(dsn) or [])
    found.extend([unquote(each) for each in found])
    return [each for each in found if each]


def scrub(message: str, dsn: str) -> str:
    """``message`` with any password of ``dsn`` removed."""
    for secret in sorted(_passwords_in(dsn), key=len, reverse=True):
        message = message.replace(secret, REDACTED)
    return message


# --- reading ---------------------------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def connect(dsn: str | None, *, timeout: float = 10) -> psycopg.Connection[Any]:
    """An autocommit session (read_server makes it read-only); InputError (one line, no password) when the
    server cannot be reached or refuses the login."""
    try:
        import psycopg
    except ImportError:
        raise InputError("reading a server needs psycopg 3: pip install 'pgvet[live]'") from None
    given = dsn or ""
    try:
        connection = psycopg.connect(given, application_name="pgvet", autocommit=True,
                                     connect_timeout=str(max(1, math.ceil(timeout))))
    except psycopg.Error as error:
        shown = redact_dsn(given) or "libpq defaults (PG* environment)"
        raise InputError(f"cannot connect to PostgreSQL ({shown}): {scrub(_one_line(str(error)), given)}") from None
    return connection


def _protect_session(connection: psycopg.Connection[Any]) -> None:
    """Make every later statement read-only and bounded in time."""
    import psycopg

    try:
        with connection.cursor() as cursor:
            cursor.execute("SET default_transaction_read_only = on")
            cursor.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            cursor.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
    except psycopg.Error as error:
        raise InputError(f"cannot prepare a read-only session: {_one_line(str(error))}") from None


class _Reader:
    """Runs the collection queries, recording each refusal instead of failing."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self.connection = connection
        self.unavailable: list[dict[str, str]] = []

    def rows(self, what: str, query: str, *, own_transaction: bool = False) -> list[tuple[Any, ...]] | None:
        """The rows of ``query``, or None (the refusal recorded). ``own_transaction``: in a read-only one."""
        import psycopg

        try:
            with self.connection.cursor() as cursor:
                if not own_transaction:
                    cursor.execute(query)
                    return list(cursor.fetchall())
                with self.connection.transaction():
                    cursor.execute("SET TRANSACTION READ ONLY")
                    cursor.execute(query)
                    return list(cursor.fetchall())
        except psycopg.Error as error:
            # The primary message and its detail (16+ says in the detail which role is needed).
            parts = [error.diag.message_primary or str(error), error.diag.message_detail or ""]
            self.unavailable.append({"what": what, "error": _one_line("\n".join(parts))})
            return None

    def value(self, what: str, query: str) -> Any:
        rows = self.rows(what, query)
        return rows[0][0] if rows else None


def _redacted_row(row: dict[str, Any], value_keys: tuple[str, ...]) -> dict[str, Any]:
    if str(row.get("name", "")).lower() in CONNINFO_PARAMETERS:
        for key in value_keys:
            if isinstance(row.get(key), str):
                row[key] = redact_dsn(row[key])
    return row


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def read_server(connection: psycopg.Connection[Any], dsn: str | None) -> ServerReading:
    """Everything pgvet reads from a server (docs/live.md), the gaps recorded with the server's reason."""
    reader = _Reader(connection)
    settings_rows = reader.rows("pg_settings", f"SELECT {', '.join(SETTINGS_COLUMNS)} FROM pg_settings ORDER BY name",
                                own_transaction=True)
    _protect_session(connection)
    info = connection.info
    version_num = int(info.server_version)
    identity = reader.rows("server identity", "SELECT version(), current_user, "
                           "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
                           "pg_has_role('pg_read_all_settings', 'USAGE'), pg_has_role('pg_read_all_stats', 'USAGE'), "
                           "extract(epoch FROM pg_postmaster_start_time())::float8, inet_server_addr() IS NULL")
    version_text, user, superuser, read_all_settings, read_all_stats, start_epoch, via_socket = (
        identity[0] if identity else (None,) * 7)
    server = {
        "version": version_text,
        "server_version_num": version_num,
        "data_directory": reader.value("data_directory", "SELECT current_setting('data_directory')"),
        "config_file": reader.value("config_file", "SELECT current_setting('config_file')"),
        "current_user": user,
        "is_superuser": superuser,
        "pg_read_all_settings": read_all_settings,
        "pg_read_all_stats": read_all_stats,
        "postmaster_start_epoch": start_epoch,
    }
    if not (superuser or read_all_settings):
        reader.unavailable.append({"what": "pg_settings.sourcefile", "error": READ_ALL_SETTINGS_NOTE})

    settings = [_redacted_row(dict(zip(SETTINGS_COLUMNS, row, strict=True)), ("setting", "boot_val", "reset_val"))
                for row in settings_rows or []]
    file_rows = reader.rows("pg_file_settings", f"SELECT {', '.join(FILE_SETTINGS_COLUMNS)} FROM pg_file_settings "
                            "ORDER BY seqno")
    file_settings = None if file_rows is None else [
        _redacted_row(dict(zip(FILE_SETTINGS_COLUMNS, row, strict=True)), ("setting",)) for row in file_rows]

    database_rows = reader.rows("database sizes", """
        SELECT d.datname,
               CASE WHEN has_database_privilege(d.oid, 'CONNECT') OR pg_has_role('pg_read_all_stats', 'USAGE')
                    THEN pg_database_size(d.oid) END,
               s.temp_files, s.temp_bytes, s.blks_hit, s.blks_read
        FROM pg_database d LEFT JOIN pg_stat_database s ON s.datid = d.oid
        ORDER BY d.datname""")
    databases = [{"name": name, "size_bytes": _int_or_none(size), "temp_files": _int_or_none(temp_files),
                  "temp_bytes": _int_or_none(temp_bytes), "blks_hit": _int_or_none(hit),
                  "blks_read": _int_or_none(read)}
                 for name, size, temp_files, temp_bytes, hit, read in database_rows or []]

    # Totals include the row of shared objects (datid 0), which pg_database does not list.
    totals = reader.rows("pg_stat_database", "SELECT sum(temp_files), sum(temp_bytes), sum(blks_hit), sum(blks_read) "
                         "FROM pg_stat_database")
    temp_files, temp_bytes, blks_hit, blks_read = totals[0] if totals else (None,) * 4
    if version_num >= 170000:
        checkpoint_view = "pg_stat_checkpointer"
        checkpoints = reader.rows(checkpoint_view, "SELECT num_timed, num_requested, stats_reset::text "
                                  "FROM pg_stat_checkpointer")
    else:
        checkpoint_view = "pg_stat_bgwriter"
        checkpoints = reader.rows(checkpoint_view, "SELECT checkpoints_timed, checkpoints_req, stats_reset::text "
                                  "FROM pg_stat_bgwriter")
    timed, requested, stats_reset = checkpoints[0] if checkpoints else (None,) * 3
    connections = reader.value("pg_stat_activity", "SELECT count(*) FROM pg_stat_activity "
                               "WHERE backend_type = 'client backend'")
    statistics = {
        "connections": _int_or_none(connections),
        "temp_files": _int_or_none(temp_files),
        "temp_bytes": _int_or_none(temp_bytes),
        "blks_hit": _int_or_none(blks_hit),
        "blks_read": _int_or_none(blks_read),
        "checkpoints_timed": _int_or_none(timed),
        "checkpoints_requested": _int_or_none(requested),
        "checkpoints_view": checkpoint_view,
        "checkpoints_stats_reset": stats_reset,
    }
    connection_facts = {"host": info.host, "port": info.port, "dbname": info.dbname, "user": info.user,
                        "unix_socket": via_socket}
    return ServerReading(
        dsn=redact_dsn(dsn or ""), connection=connection_facts, server=server, settings=settings,
        file_settings=file_settings, databases=databases, statistics=statistics, unavailable=reader.unavailable,
        postmaster_start_epoch=start_epoch,
    )


def config_files(reading: ServerReading) -> list[str]:
    """The server paths of its configuration files: config_file, every file a setting came from, and
    postgresql.auto.conf in the data directory. Empty when the role could not see them."""
    paths: list[str] = []
    config_file = reading.server.get("config_file")
    if config_file:
        paths.append(config_file)
    for row in [*reading.settings, *(reading.file_settings or [])]:
        sourcefile = row.get("sourcefile")
        if sourcefile and sourcefile not in paths:
            paths.append(sourcefile)
    data_directory = reading.server.get("data_directory")
    if data_directory:
        auto_conf = f"{data_directory.rstrip('/')}/postgresql.auto.conf"
        if auto_conf not in paths:
            paths.append(auto_conf)
    return paths


# A commented-out line may hold a password that still works: it is redacted too.
_QUOTED_CONNINFO = re.compile(r"^(?P<head>\s*(?:#\s*)?(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\s*=?\s*)"
                              r"'(?P<value>(?:[^'\\]|''|\\.)*)'(?P<tail>.*)$", re.DOTALL)


def redact_conf_text(text: str) -> str:
    """A configuration file with any ``primary_conninfo`` password replaced; every other byte kept."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        match = _QUOTED_CONNINFO.match(line)
        if match is None or match.group("name").lower() not in CONNINFO_PARAMETERS:
            continue
        value = match.group("value").replace("''", "'")
        redacted = redact_dsn(value)
        if redacted != value:
            lines[index] = match.group("head") + "'" + redacted.replace("'", "''") + "'" + match.group("tail")
    return "".join(lines)
