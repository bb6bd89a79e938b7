"""Read a running PostgreSQL server, in the read-only session bounded in time that session.py opens. The server is
not trusted: what it answers is checked before it is kept.

A query the role may not run, or whose answer is not what the query returns (a count of ``'lots'``, a
NULL name, a text of megabytes), is recorded in ``ServerReading.unavailable``; only a failure to connect,
a lost connection or the bound stop the collection (InputError, one line, no password).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

from pgvet.errors import InputError
from pgvet.findings import quote_identifier
from pgvet.inputs.pg_settings import MAX_LINE
from pgvet.live.redact import REDACTED, recognised_names, redact_dsn, redact_setting, unrecognised
from pgvet.live.session import READING_BOUND_FACTOR, SessionGuard, SocketPeer, one_line

if TYPE_CHECKING:
    import psycopg

# Bounds on what a server may answer: more is recorded as a gap, not kept.
MAX_ROWS = 100_000
MAX_TEXT = 1 << 20  # characters of one value
MAX_INTEGER = 1 << 63
# Characters of text (and bytes) of every answer of a reading together: a server's settings and statistics are a
# few hundred kilobytes; one that answers more is not read further (fatal: its memory would be pgvet's).
MAX_ANSWERED = 64 << 20
# Rows fetched at once as a query's rows stream in (libpq 17's chunks; one at a time before).
STREAM_CHUNK = 256

SETTINGS_COLUMNS = ("name", "setting", "unit", "vartype", "context", "source", "sourcefile", "sourceline",
                    "boot_val", "reset_val", "pending_restart")
FILE_SETTINGS_COLUMNS = ("sourcefile", "sourceline", "seqno", "name", "setting", "applied", "error")
DATABASE_COLUMNS = ("name", "size_bytes", "temp_files", "temp_bytes", "blks_hit", "blks_read", "xid_age", "mxid_age")
SLOT_COLUMNS = ("name", "type", "active", "wal_status", "retained_bytes", "safe_wal_size", "xmin_age",
                "catalog_xmin_age")
PREPARED_COLUMNS = ("gid", "owner", "database", "age_seconds", "xid_age")
IDLE_COLUMNS = ("pid", "user", "database", "state", "idle_seconds", "transaction_seconds", "xmin_age")
INDEX_COLUMNS = ("schema", "name", "table", "database", "valid")
VARTYPES = frozenset({"bool", "integer", "real", "string", "enum"})
# Parameters pg_settings hides from roles without pg_read_all_settings (GUC_SUPERUSER_ONLY).
READ_ALL_SETTINGS_NOTE = ("requires superuser or membership in pg_read_all_settings (pg_monitor includes it): "
                          "without it PostgreSQL shows sourcefile and sourceline as NULL and hides "
                          "superuser-only parameters such as data_directory and config_file")


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
    # None when the role could not read them
    role_settings: list[dict[str, Any]] | None = None
    replication_slots: list[dict[str, Any]] | None = None
    prepared_transactions: list[dict[str, Any]] | None = None
    idle_sessions: list[dict[str, Any]] | None = None
    invalid_indexes: list[dict[str, Any]] | None = None  # of the database pgvet connected to
    # the postmaster's ``-c name=value`` / ``--name=value`` settings, when its command line could be read (values
    # redacted as settings are); None: not read (a server on another host, or one pgvet may not look at)
    command_line: dict[str, str] | None = None


# --- what a server may answer ----------------------------------------------------------------------------


class Nonsense(ValueError):
    """A value that is not what the query returns."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def text(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Nonsense(f"{_shown(value)} where a text was expected")
    if len(value) > MAX_TEXT:
        raise Nonsense(f"a text of {len(value)} characters (pgvet keeps up to {MAX_TEXT})")
    return value


def required_text(value: Any) -> str:
    checked = text(value)
    if not checked:
        raise Nonsense(f"{_shown(value)} where a name was expected")
    return checked


def integer(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Nonsense(f"{_shown(value)} where a whole number was expected")
    if abs(value) >= MAX_INTEGER:
        raise Nonsense(f"a number of {len(str(abs(value)))} digits where a 64-bit one was expected")
    return value


def line(value: Any) -> int | None:
    """A line of a file as PostgreSQL numbers them (an int4 from 1), or NULL."""
    found = integer(value)
    if found is not None and not 1 <= found <= MAX_LINE:
        raise Nonsense(f"{found} where a line of a file was expected")
    return found


def number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, float) or not math.isfinite(value):
        raise Nonsense(f"{_shown(value)} where a finite number was expected")
    return value


def boolean(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise Nonsense(f"{_shown(value)} where true or false was expected")


Convert = Callable[[Any], Any]
_WHOLE_NUMBER = re.compile(r"-?\d+")


def _setting_value(vartype: str, value: str | None) -> str | None:
    """A pg_settings value of its vartype: live_facts reads integer and real settings as numbers."""
    if value is None:
        return None
    if vartype == "integer" and not _WHOLE_NUMBER.fullmatch(value):
        raise Nonsense(f"{_shown(value)} is not a whole number")
    if vartype == "real":
        try:
            if not math.isfinite(float(value)):
                raise ValueError
        except ValueError:
            raise Nonsense(f"{_shown(value)} is not a finite number") from None
    return value


def _setting(row: tuple[Any, ...]) -> dict[str, Any]:
    name, setting, unit, vartype, context, source, sourcefile, sourceline, boot_val, reset_val, pending = row
    name, vartype = required_text(name), required_text(vartype)
    if vartype not in VARTYPES:
        raise Nonsense(f"{name}: vartype {_shown(vartype)} is not one of PostgreSQL's")
    values = [_setting_value(vartype, text(each)) for each in (setting, boot_val, reset_val)]
    return dict(zip(SETTINGS_COLUMNS, (
        name, redact_setting(name, values[0]), text(unit), vartype, text(context), text(source), text(sourcefile),
        line(sourceline), redact_setting(name, values[1]), redact_setting(name, values[2]),
        bool(boolean(pending))), strict=True))


def _file_setting(row: tuple[Any, ...]) -> dict[str, Any]:
    sourcefile, sourceline, seqno, name, setting, applied, error = row
    name = text(name)
    return dict(zip(FILE_SETTINGS_COLUMNS, (
        text(sourcefile), line(sourceline), integer(seqno), name,
        redact_setting(name, text(setting)) if name else text(setting), bool(boolean(applied)), text(error)),
        strict=True))


def _role_setting(row: tuple[Any, ...]) -> dict[str, Any]:
    """One ``name=value`` of ALTER ROLE / ALTER DATABASE … SET (a NULL database or role: all of them)."""
    database, role, entry = text(row[0]), text(row[1]), required_text(row[2])
    name, equals, value = entry.partition("=")
    if not equals or not name:
        raise Nonsense(f"{_shown(entry)} is not a name=value setting")
    return {"database": database, "role": role, "name": name, "setting": redact_setting(name, value)}


class LostConnection(InputError):
    """The session ended before the reading did."""


class _Reader:
    """Runs the collection queries: a refusal or an answer that makes no sense is recorded, not fatal."""

    def __init__(self, connection: psycopg.Connection[Any], guard: SessionGuard) -> None:
        self.connection = connection
        self.guard = guard
        self.unavailable: list[dict[str, str]] = []
        self.answered = 0  # characters of text the server's answers held so far (MAX_ANSWERED)

    def gap(self, what: str, error: str) -> None:
        self.unavailable.append({"what": what, "error": one_line(error)[:1000]})

    def advise(self, what: str, fix: str) -> None:
        """What would let pgvet read ``what``, added to its gap (when there is one)."""
        for gap in self.unavailable:
            if gap["what"] == what:
                gap["fix"] = fix

    def rows(self, what: str, query: str, width: int) -> list[tuple[Any, ...]] | None:
        """The rows of ``query`` (each of ``width`` columns), or None (the reason recorded)."""
        import psycopg

        rows: list[tuple[Any, ...]] = []
        try:
            with self.connection.cursor() as cursor:
                # streamed, counted as they come: what execute() fetches is all in memory before it can be counted
                for row in cursor.stream(query, size=STREAM_CHUNK if psycopg.pq.version() >= 170000 else 1):
                    if len(row) != width:
                        self.gap(what, f"the server answered {len(row)} columns where {width} were expected")
                        return None
                    self.answered += sum(len(value) for value in row if isinstance(value, str | bytes))
                    if self.answered > MAX_ANSWERED:
                        self.connection.close()  # not cancelled and waited for: it may not stop
                        raise InputError(f"the server answered more than {MAX_ANSWERED >> 20} MiB of text while "
                                         f"pgvet read {what}: no server's settings and statistics take that much; "
                                         "not read further")
                    rows.append(row)
                    if len(rows) > MAX_ROWS:
                        break
        except psycopg.Error as error:
            if self.connection.closed:
                self._lost(what, error)
            # The primary message and its detail (16+ says in the detail which role is needed).
            self.gap(what, "\n".join([error.diag.message_primary or str(error), error.diag.message_detail or ""]))
            return None
        except (ValueError, OverflowError) as error:  # psycopg's loaders on the server's bytes ('lots' as int8)
            self.gap(what, f"the server's answer cannot be read: {error}")
            return None
        if len(rows) > MAX_ROWS:
            self.gap(what, f"more than {MAX_ROWS} rows: not kept")
            return None
        return rows

    def _lost(self, what: str, error: Exception) -> NoReturn:
        if self.guard.ended == "interrupt":
            raise KeyboardInterrupt
        if self.guard.ended == "bound":
            raise LostConnection(f"the server did not finish answering within {self.guard.bound:g} s "
                                 f"({READING_BOUND_FACTOR} × --timeout) while pgvet read {what}") from None
        raise LostConnection(f"the connection to the server was lost while pgvet read {what}: "
                             f"{one_line(str(error)) or 'closed by the server'}") from None

    def values(self, what: str, query: str, converters: Sequence[Convert]) -> tuple[Any, ...]:
        """The one row of ``query``, each value checked; Nones (the reason recorded) when there is none."""
        rows = self.rows(what, query, len(converters))
        if not rows:
            if rows is not None:
                self.gap(what, "the server answered no row")
            return (None,) * len(converters)
        try:
            return tuple(convert(value) for convert, value in zip(converters, rows[0], strict=True))
        except Nonsense as nonsense:
            self.gap(what, f"the server answered {nonsense}")
            return (None,) * len(converters)

    def records(self, what: str, query: str, width: int,
                make: Callable[[tuple[Any, ...]], dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Every row of ``query`` made a record; a row that makes no sense is left out, and said."""
        rows = self.rows(what, query, width)
        if rows is None:
            return None
        kept: list[dict[str, Any]] = []
        refused: list[str] = []
        for row in rows:
            try:
                kept.append(make(row))
            except Nonsense as nonsense:
                refused.append(str(nonsense))
        if refused:
            self.gap(what, f"{len(refused)} row(s) that are not what the view holds were left out "
                           f"(the first: {refused[0]})")
        return kept


def read_server(connection: psycopg.Connection[Any], dsn: str | None, guard: SessionGuard,
                peer: SocketPeer | None) -> ServerReading:
    """Everything pgvet reads from a server (docs/live.md), the gaps recorded with the reason."""
    reader = _Reader(connection, guard)
    info = connection.info
    version_num = info.server_version
    if not 90000 <= version_num < 1000000:
        raise InputError(f"the server gave no PostgreSQL version pgvet can read (server_version_num {version_num})")
    settings = reader.records("pg_settings", f"SELECT {', '.join(SETTINGS_COLUMNS)} FROM pg_settings ORDER BY name",
                              len(SETTINGS_COLUMNS), _setting) or []
    version_text, user, superuser, read_all_settings, read_all_stats, start_epoch = reader.values(
        "server identity",
        "SELECT version(), current_user, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
        "pg_has_role('pg_read_all_settings', 'USAGE'), pg_has_role('pg_read_all_stats', 'USAGE'), "
        "extract(epoch FROM pg_postmaster_start_time())::float8",
        (text, text, boolean, boolean, boolean, number))
    server = {
        "version": version_text,
        "server_version_num": version_num,
        "data_directory": reader.values("data_directory", "SELECT current_setting('data_directory')", (text,))[0],
        "config_file": reader.values("config_file", "SELECT current_setting('config_file')", (text,))[0],
        "current_user": user,
        "is_superuser": superuser,
        "pg_read_all_settings": read_all_settings,
        "pg_read_all_stats": read_all_stats,
        "postmaster_start_epoch": start_epoch,
    }
    role = quote_identifier(user or "pgvet")
    if superuser is False and read_all_settings is False:  # None: the identity could not be read
        reader.gap("pg_settings.sourcefile", READ_ALL_SETTINGS_NOTE)
        for what in ("pg_settings.sourcefile", "data_directory", "config_file"):
            reader.advise(what, f"GRANT pg_read_all_settings TO {role}, or GRANT pg_monitor")

    # The function behind the pg_file_settings view: one grant lets a role read it (the view needs two).
    file_settings = reader.records("pg_file_settings", f"SELECT {', '.join(FILE_SETTINGS_COLUMNS)} "
                                   "FROM pg_show_all_file_settings() ORDER BY seqno", len(FILE_SETTINGS_COLUMNS),
                                   _file_setting)
    reader.advise("pg_file_settings", f"GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO {role}")
    if file_settings:  # a name the server does not know: a line of another file, its value no setting's
        recognised = recognised_names(settings)
        for row in file_settings:
            if row["name"] and row["setting"] and unrecognised(row["name"], recognised):
                row["setting"] = REDACTED
    databases = reader.records("database sizes", """
        SELECT d.datname,
               CASE WHEN has_database_privilege(d.oid, 'CONNECT') OR pg_has_role('pg_read_all_stats', 'USAGE')
                    THEN pg_database_size(d.oid) END,
               s.temp_files, s.temp_bytes, s.blks_hit, s.blks_read, age(d.datfrozenxid), mxid_age(d.datminmxid)
        FROM pg_database d LEFT JOIN pg_stat_database s ON s.datid = d.oid
        ORDER BY d.datname""", len(DATABASE_COLUMNS), lambda row: dict(zip(
        DATABASE_COLUMNS, (required_text(row[0]), *(integer(each) for each in row[1:])), strict=True))) or []
    unsized = [database["name"] for database in databases if database["size_bytes"] is None]
    if unsized:
        reader.gap("database sizes", f"{len(unsized)} database(s) the role may not connect to were not sized "
                                     f"({', '.join(unsized[:3])}{', …' if len(unsized) > 3 else ''})")
        reader.advise("database sizes", f"GRANT pg_read_all_stats TO {role}, or GRANT pg_monitor")

    # Totals include the row of shared objects (datid 0), which pg_database does not list.
    temp_files, temp_bytes, blks_hit, blks_read = reader.values(
        "pg_stat_database", "SELECT sum(temp_files), sum(temp_bytes), sum(blks_hit), sum(blks_read) "
        "FROM pg_stat_database", (integer,) * 4)
    # The WAL written while the checkpoints were counted, at most (PGV953: how many of them WAL volume could have
    # requested): pg_stat_wal's count (14+) since its own reset, when that reset came no later than theirs.
    wal_bytes = ("(SELECT CASE WHEN w.stats_reset <= c.stats_reset THEN w.wal_bytes::int8 END FROM pg_stat_wal w)"
                 if version_num >= 140000 else "NULL::int8")
    if version_num >= 170000:
        checkpoint_view = "pg_stat_checkpointer"
        query = f"SELECT num_timed, num_requested, stats_reset::text, {wal_bytes} FROM pg_stat_checkpointer c"
    else:
        checkpoint_view = "pg_stat_bgwriter"
        query = f"SELECT checkpoints_timed, checkpoints_req, stats_reset::text, {wal_bytes} FROM pg_stat_bgwriter c"
    timed, requested, stats_reset, checkpoints_wal_bytes = reader.values(checkpoint_view, query,
                                                                         (integer, integer, text, integer))
    # pg_stat_activity hides the backend_type of other roles' sessions from a role without pg_read_all_stats: a
    # hidden session in a database may be a client backend, so the count is then unknown (NULL), not too low.
    [connections] = reader.values(
        "pg_stat_activity", "SELECT CASE WHEN count(*) FILTER (WHERE backend_type IS NULL AND datid IS NOT NULL) = 0 "
        "THEN count(*) FILTER (WHERE backend_type = 'client backend') END FROM pg_stat_activity", (integer,))
    if connections is None and not any(gap["what"] == "pg_stat_activity" for gap in reader.unavailable):
        reader.gap("pg_stat_activity", "pg_stat_activity hides the state of other roles' sessions from this role: "
                                       "the client connections cannot be counted")
        reader.advise("pg_stat_activity", f"GRANT pg_read_all_stats TO {role}, or GRANT pg_monitor")
    role_settings = reader.records("pg_db_role_setting", """
        SELECT d.datname, r.rolname, unnest(s.setconfig)
        FROM pg_db_role_setting s LEFT JOIN pg_database d ON d.oid = s.setdatabase
             LEFT JOIN pg_roles r ON r.oid = s.setrole
        ORDER BY d.datname NULLS FIRST, r.rolname NULLS FIRST""", 3, _role_setting)
    # What takes servers down (docs/live.md, "Outage checks"): every one readable by pg_monitor.
    # A slot without restart_lsn (created without reserving WAL, or lost: its WAL removed) holds none. A standby
    # holds WAL up to what it received, or replayed when it receives none (from an archive: receive is NULL).
    slots = reader.records("pg_replication_slots", f"""
        SELECT slot_name, slot_type, active, {'wal_status' if version_num >= 130000 else 'NULL::text'},
               CASE WHEN restart_lsn IS NULL THEN 0
                    ELSE pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery()
                                              THEN GREATEST(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())
                                              ELSE pg_current_wal_lsn() END, restart_lsn)::int8 END,
               {'safe_wal_size' if version_num >= 130000 else 'NULL::int8'}, age(xmin), age(catalog_xmin)
        FROM pg_replication_slots ORDER BY slot_name""", len(SLOT_COLUMNS), lambda row: dict(zip(
        SLOT_COLUMNS, (required_text(row[0]), text(row[1]), boolean(row[2]), text(row[3]),
                       *(integer(each) for each in row[4:])), strict=True)))
    prepared = reader.records("pg_prepared_xacts", """
        SELECT gid, owner, database, extract(epoch FROM now() - prepared)::float8, age(transaction)
        FROM pg_prepared_xacts ORDER BY prepared""", len(PREPARED_COLUMNS), lambda row: dict(zip(
        PREPARED_COLUMNS, (text(row[0]), text(row[1]), text(row[2]), number(row[3]), integer(row[4])), strict=True)))
    idle = reader.records("sessions idle in a transaction", """
        SELECT pid, usename, datname, state, extract(epoch FROM now() - state_change)::float8,
               extract(epoch FROM now() - xact_start)::float8, GREATEST(age(backend_xid), age(backend_xmin))
        FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' ORDER BY state_change""",
                          len(IDLE_COLUMNS), lambda row: dict(zip(
        IDLE_COLUMNS, (integer(row[0]), text(row[1]), text(row[2]), text(row[3]), number(row[4]), number(row[5]),
                       integer(row[6])), strict=True)))
    if superuser is False and read_all_stats is False:
        reader.gap("sessions idle in a transaction", "pg_stat_activity hides the state of other roles' sessions "
                                                     "from this role")
        reader.advise("sessions idle in a transaction", f"GRANT pg_read_all_stats TO {role}, or GRANT pg_monitor")
    # An index being built concurrently is invalid until its build ends: not a failed build. CREATE INDEX
    # CONCURRENTLY's progress names it; REINDEX CONCURRENTLY's names the index it replaces, but its session holds
    # a lock on the copy it builds (a failed build's index is locked by no one).
    building = """
          AND NOT EXISTS (SELECT FROM pg_stat_progress_create_index p
                          WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
                                AND (p.index_relid = i.indexrelid
                                     OR EXISTS (SELECT FROM pg_locks l WHERE l.pid = p.pid
                                                AND l.database = p.datid AND l.relation = i.indexrelid)))"""
    invalid_indexes = reader.records("invalid indexes", f"""
        SELECT n.nspname, c.relname, t.relname, current_database(), i.indisvalid
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE NOT i.indisvalid{building if version_num >= 120000 else ''}
        ORDER BY 1, 2""", len(INDEX_COLUMNS), lambda row: dict(zip(
        INDEX_COLUMNS, (*(required_text(each) for each in row[:4]), boolean(row[4])), strict=True)))
    # A standby's WAL replay: paused by pg_wal_replay_pause(), or, from 14, by the standby itself when its primary
    # runs more max_connections, max_worker_processes, max_wal_senders, max_prepared_transactions or
    # max_locks_per_transaction than it has (12 and 13 shut down instead). '' on a server that is not a standby.
    pause_state = ("pg_get_wal_replay_pause_state()" if version_num >= 140000
                   else "CASE WHEN pg_is_wal_replay_paused() THEN 'paused' ELSE 'not paused' END")
    [replay_pause_state] = reader.values(
        "WAL replay", f"SELECT CASE WHEN pg_is_in_recovery() THEN {pause_state} ELSE '' END", (text,))
    # The standbys streaming from this server: its WAL senders but a logical slot's (a subscriber) and a base
    # backup's. Each needs at least this server's max_connections… (PGV969).
    [standbys] = reader.values("pg_stat_replication", """
        SELECT count(*) FROM pg_stat_replication r
        WHERE r.state IS DISTINCT FROM 'backup'
              AND NOT EXISTS (SELECT FROM pg_replication_slots s WHERE s.active_pid = r.pid
                              AND s.slot_type = 'logical')""", (integer,))
    # Subscriptions (a shared catalog: every database's) disabled by ALTER SUBSCRIPTION … DISABLE or, from 15, by
    # disable_on_error after an apply error: their names, '' when none is.
    [disabled_subscriptions] = reader.values(
        "pg_subscription", "SELECT COALESCE(string_agg(quote_ident(subname), ', ' ORDER BY subname), '') "
        "FROM pg_subscription WHERE NOT subenabled", (text,))
    statistics = {
        "connections": connections,
        "temp_files": temp_files,
        "temp_bytes": temp_bytes,
        "blks_hit": blks_hit,
        "blks_read": blks_read,
        "checkpoints_timed": timed,
        "checkpoints_requested": requested,
        "checkpoints_view": checkpoint_view,
        "checkpoints_stats_reset": stats_reset,
        "checkpoints_wal_bytes": checkpoints_wal_bytes,
        "wal_replay_pause_state": replay_pause_state,
        "standbys": standbys,
        "disabled_subscriptions": disabled_subscriptions,
    }
    connection_facts = {"host": info.host, "port": info.port, "dbname": info.dbname, "user": info.user,
                        "unix_socket": peer is not None}
    return ServerReading(
        dsn=redact_dsn(dsn or ""), connection=connection_facts, server=server, settings=settings,
        file_settings=file_settings, databases=databases, statistics=statistics, unavailable=reader.unavailable,
        role_settings=role_settings, replication_slots=slots, prepared_transactions=prepared, idle_sessions=idle,
        invalid_indexes=invalid_indexes,
    )

