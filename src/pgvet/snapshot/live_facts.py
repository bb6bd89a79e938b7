"""A live server's facts (pg_settings.json, written by ``pgvet collect``): pg.* and live.* values, and its
lists as items — drift between the files and the running values, file errors, role settings, databases,
slots, prepared transactions, sessions, invalid indexes."""

from __future__ import annotations

from collections.abc import Mapping

from pgvet.findings import quote_identifier
from pgvet.inputs.pg_settings import LiveFileSetting, LiveServer, live_facts
from pgvet.inputs.postgresql_conf import ConfResult
from pgvet.pgparams import Param, ParamTable
from pgvet.pgparams.units import InvalidValue, parse_value
from pgvet.pgparams.units import shown_value as _shown  # a value as SHOW writes it (drift items)
from pgvet.provenance import Source
from pgvet.snapshot.facts import DEFAULT_SOURCE_PATH, Fact, FactValue, HostFacts, Item, make_fact


def add_live_facts(host: HostFacts, live: LiveServer, param_table: ParamTable, conf: ConfResult | None,
                   copied: Mapping[str, str] | None = None) -> None:
    """A live server's pg.* and live.* facts, its lists as items, and what it could not give as unread;
    ``conf``: the configuration files of the snapshot, when it holds them; ``copied``: each copy's name with the
    server file it copies (collect.json)."""
    for name, located in live_facts(live).items():
        host.add(Fact(name, located.value, located.source))
    file_values = _live_file_items(host, live, param_table, conf)
    _server_wide_values(host, live, param_table, file_values)
    _hidden_values(host, live, param_table, file_values)
    host.set_outside_files.update((name, setting.row) for name, setting in live.settings.items()
                                  if setting.source in OVERRIDING_SOURCES)
    _pending_from_files(host, live, param_table, conf, file_values, copied or {})
    _live_list_items(host, live, param_table)
    for gap in live.unavailable:  # what could not be read (a privilege, an answer that made no sense…)
        said = f"pgvet could not read {gap.what} from the server: {gap.error}"
        if gap.fix:
            said += f" ({gap.fix})"
        host.warnings.append(f"{gap.row}: {said}")
        for given in GAP_GIVES.get(gap.what, ()):
            host.unread.setdefault(given, said)
    if "drift" not in host.unread and live.file_settings is None and conf is None:
        host.unread["drift"] = (
            "neither pg_file_settings nor the configuration files could be read, so what the files say now is "
            "unknown (pg_settings only names what waits for a restart): GRANT EXECUTE ON FUNCTION "
            "pg_show_all_file_settings() to pgvet's role, or run pgvet on the server's host as root or as the "
            "server's OS user")


# pg_settings sources under which a value is the session's own, not the server's: given by ALTER ROLE / ALTER
# DATABASE … SET for the role and database pgvet connected as, or by the connection itself (client: pgvet's own
# read-only, time-bounded session settings, and any options of the DSN or PGOPTIONS).
SESSION_SOURCES = frozenset({"database", "user", "database user", "client"})


def _server_wide_values(host: HostFacts, live: LiveServer, param_table: ParamTable,
                        file_values: dict[str, FileValue] | None) -> None:
    """``pg.*`` facts of the server, not of pgvet's session: a value ALTER ROLE or ALTER DATABASE … SET gives
    pgvet's role (``work_mem`` of 2 GB for the monitoring role), or its connection (the read-only, time-bounded
    session pgvet asks for: statement_timeout, lock_timeout…) is replaced by the postmaster's command line's
    where it sets the parameter (it overrides the files; a setting made outside them), else by the files' (the
    server's reading of them, else the copied files; their absence: the default). With neither, the server-wide
    value is unknown: the fact is removed, and the rules reading it say why. role_setting items judge the role's.
    A command line pgvet could not read (a server on another host) is taken as setting nothing."""
    for name, setting in live.settings.items():
        if setting.source not in SESSION_SOURCES:
            continue
        fact = f"pg.{name}"
        param = param_table.get(name)
        given = None if live.command_line is None else live.command_line.get(name)
        if given is not None:  # the postmaster's command line overrides the files: the server runs it
            value = None if param is None else _canonical(param, given.value)
            if value is not None:
                host.facts[fact] = make_fact((fact, value, given.source, (), given.value))
                host.set_outside_files[name] = given.source
                continue
        from_files = None if param is None else _files_fact(name, param, file_values)
        if from_files is not None:
            host.facts[fact] = from_files
            continue
        host.facts.pop(fact, None)
        if setting.source == "client":
            host.unread[fact] = (f"pg_settings shows {name} as pgvet's connection set it for its own session "
                                 "(read-only, bounded in time, the catalog's functions only), and the server-wide "
                                 "value is in files pgvet could not read: GRANT EXECUTE ON FUNCTION "
                                 "pg_show_all_file_settings() to pgvet's role, or run pgvet on the server's host")
            continue
        altered = "ALTER DATABASE" if setting.source == "database" else "ALTER ROLE"
        host.unread[fact] = (f"pg_settings shows {name} as {altered} … SET gives pgvet's own session, and the "
                             "server-wide value is in files pgvet could not read: connect as a role without such "
                             "settings, or let pgvet read the files")


def _pending_from_files(host: HostFacts, live: LiveServer, param_table: ParamTable, conf: ConfResult | None,
                        file_values: dict[str, FileValue] | None, copied: Mapping[str, str]) -> None:
    """The values the configuration files give parameters the server runs with another value from its files or
    its defaults: a restart applies them (``pending_from_files``). The files are the copies as pgvet reads them
    (pg_conf.*, which a fix written into the snapshot changes) when every one was read; else, for a parameter the
    server's own reading of them (pg_file_settings) takes from a file left out of the copy, that reading (the
    copies' earlier line would undo what the include sets), and the copies for the others and where their line is
    none the server read (``copied``: the server file each copy is of) — a second fix of a snapshot a first one
    wrote into, in place or after the include, sees what it wrote; a line removed from both gives the default.
    Not the values the server takes from elsewhere (its command line, environment, or its own computation:
    wal_buffers = -1 shows the size it chose, from source ``override``); a value ALTER ROLE or ALTER DATABASE gives
    pgvet's session is compared as the server-wide one (_server_wide_values). Not an extension's parameters either:
    pg_settings types them, the files leave them text ('on' against true)."""
    copies_complete = conf is not None and not conf.problems
    if not copies_complete and live.file_settings is None:
        return
    server_reading = file_values if live.file_settings is not None else None
    read = {(each.name.lower(), each.sourcefile, each.sourceline) for each in live.file_settings or ()
            if each.name is not None}
    for name, setting in live.settings.items():
        running = host.facts.get(f"pg.{name}")
        param = param_table.get(name)
        if (running is None or param is None or setting.source in _NOT_FROM_THE_SERVERS_FILES
                or name in host.set_outside_files):
            continue
        row = (server_reading or {}).get(name)
        copy = host.facts.get(f"pg_conf.{name}")
        copied_from = None if copy is None else copied.get(copy.source.path)
        if (not copies_complete and row is not None and row[1].path not in copied.values()
                and (name, copied_from, None if copy is None else copy.source.line) in read):
            host.set_where_not_copied[name] = row[1]  # the include overrides the copy's line
        if copies_complete or (copy is not None and (
                row is None or row[1].path in copied.values()
                or (copied_from is not None and (name, copied_from, copy.source.line) not in read))):
            declared = copy
        else:
            declared = _files_fact(name, param, server_reading) if row is not None else None
        if declared is None and setting.source == "configuration file" and name not in (server_reading or {}):
            declared = _files_fact(name, param, {})  # its line removed from the files: the default
        if declared is None or _same(declared.value, running.value):
            continue
        host.pending_from_files[running.name] = declared._replace(name=running.name)


def _hidden_values(host: HostFacts, live: LiveServer, param_table: ParamTable,
                   file_values: dict[str, FileValue] | None) -> None:
    """The parameters pg_settings hides from a role without pg_read_all_settings (superuser-only ones:
    shared_preload_libraries, ssl_min_protocol_version…): their value in the files (the server's reading of them,
    else the copied files; not set there: the default), else unknown, with the grant that shows them — never the
    boot value for a setting the files may set."""
    if not any(gap.what == "pg_settings.sourcefile" for gap in live.unavailable):
        return  # the role sees every row (or its privileges are unknown, and pg_settings says what it shows)
    for name, param in param_table.params.items():
        fact = f"pg.{name}"
        if name in live.settings or fact in host.facts or param.context == "internal":
            continue
        from_files = _files_fact(name, param, file_values)
        if from_files is not None:
            host.facts[fact] = from_files
            continue
        host.unread[fact] = (f"pg_settings hides {name} from pgvet's role, and the files that set it could not be "
                             "read: GRANT pg_read_all_settings (pg_monitor includes it) to pgvet's role, or let pgvet "
                             "read the files (as root or the server's OS user)")


def _files_fact(name: str, param: Param, file_values: dict[str, FileValue] | None) -> Fact | None:
    """A parameter's value as the configuration files give it (the server's reading of them, else the copied
    files; not set there: its default); None when they could not be read, or hold a value PostgreSQL refuses."""
    if file_values is None:
        return None
    row = file_values.get(name)
    text, source = (row[0], row[1]) if row is not None else (param.boot_val, Source(DEFAULT_SOURCE_PATH))
    value = _canonical(param, text)
    return None if value is None or text is None else make_fact((f"pg.{name}", value, source, (), text))


def _live_list_items(host: HostFacts, live: LiveServer, param_table: ParamTable) -> None:
    """One item per database (its wraparound ages), per ALTER ROLE / DATABASE … SET, replication slot, prepared
    transaction, session idle in a transaction, invalid index (of the database pgvet connected to). A list the
    role could not read gives no items: its rules are not evaluated, with why."""
    items = host.items
    items["database"] = [Item(_present({"database.name": database.name, "database.xid_age": database.xid_age,
                                        "database.mxid_age": database.mxid_age}), database.row)
                         for database in live.databases if database.xid_age is not None]
    for what, scope, fields in _LIST_ITEMS:
        rows = live.rows.get(what)
        if rows is not None:
            items[scope] = [Item(_present({f"{scope}.{name}": row.values[column] for name, column in fields}), row.row)
                            for row in rows]
    for item in items.get("role_setting", []):
        name = str(item["role_setting.name"])
        param = param_table.get(name)
        value = _canonical(param, str(item["role_setting.value"])) if param is not None else None
        if value is not None:
            item["role_setting.canonical"] = value
        database, role = item.get("role_setting.database"), item.get("role_setting.role")
        item["role_setting.scope"] = " in ".join(part for part in (
            f"role {role}" if role is not None else "", f"database {database}" if database is not None else "") if part
        ) or "every role"
        # the statement that set it, to RESET it with
        if role is None and database is not None:
            item["role_setting.alter"] = f"ALTER DATABASE {quote_identifier(str(database))}"
        else:
            item["role_setting.alter"] = (f"ALTER ROLE {quote_identifier(str(role)) if role is not None else 'ALL'}"
                                          + (f" IN DATABASE {quote_identifier(str(database))}" if database is not None
                                             else ""))


def _present(values: Mapping[str, FactValue | None]) -> dict[str, FactValue]:
    """The values that are not NULL: an item holds no NULL (a fact it lacks is NULL to a rule)."""
    return {name: value for name, value in values.items() if value is not None}


# pg_settings.json's lists as items: (list, scope, ((fact, column)…)).
_LIST_ITEMS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("role_settings", "role_setting", (("database", "database"), ("role", "role"), ("name", "name"),
                                       ("value", "setting"))),
    ("replication_slots", "slot", (("name", "name"), ("type", "type"), ("active", "active"),
                                   ("wal_status", "wal_status"), ("retained_bytes", "retained_bytes"),
                                   ("safe_wal_size", "safe_wal_size"), ("xmin_age", "xmin_age"),
                                   ("catalog_xmin_age", "catalog_xmin_age"))),
    ("prepared_transactions", "prepared", (("gid", "gid"), ("owner", "owner"), ("database", "database"),
                                           ("age", "age_seconds"), ("xid_age", "xid_age"))),
    ("idle_sessions", "session", (("pid", "pid"), ("user", "user"), ("database", "database"), ("state", "state"),
                                  ("idle", "idle_seconds"), ("transaction_age", "transaction_seconds"),
                                  ("xmin_age", "xmin_age"))),
    ("invalid_indexes", "index", (("schema", "schema"), ("name", "name"), ("table", "table"),
                                  ("database", "database"), ("valid", "valid"))),
)
# What each part of a server's reading gives (pg_settings.json's ``unavailable``, by ``what``): the item scopes
# and facts whose rules are not evaluated, with its reason, when that part could not be read.
GAP_GIVES: dict[str, tuple[str, ...]] = {
    "pg_file_settings": ("file_error",),
    "pg_stat_database": ("live.temp_files", "live.temp_bytes", "live.cache_hit_ratio"),
    "database sizes": ("live.database_size_total",),
    "pg_stat_activity": ("live.connections",),
    "pg_stat_bgwriter": ("live.checkpoints_timed", "live.checkpoints_requested", "live.checkpoints_wal_bytes"),
    "pg_stat_checkpointer": ("live.checkpoints_timed", "live.checkpoints_requested", "live.checkpoints_wal_bytes"),
    "WAL replay": ("live.wal_replay_pause_state",),
    "pg_stat_replication": ("live.standbys",),
    "pg_subscription": ("live.disabled_subscriptions",),
    "pg_db_role_setting": ("role_setting",),
    "pg_replication_slots": ("slot",),
    "pg_prepared_xacts": ("prepared",),
    "sessions idle in a transaction": ("session",),
    "invalid indexes": ("index",),
}
# pg_file_settings' error for a line PostgreSQL read but cannot apply until a restart (postmaster context).
NEEDS_RESTART_ERROR = "setting could not be applied"
# pg_settings sources of a server-wide value that overrides the configuration files, ALTER SYSTEM's included
# (the postmaster's -c options, PGDATESTYLE and the like): a fix that writes the files does not change it.
OVERRIDING_SOURCES = frozenset({"command line", "environment variable"})
# pg_settings sources under which the server's value does not come from its configuration files.
NOT_FROM_FILES = frozenset({"command line", "environment variable", "override", "database", "user",
                            "database user", "client", "session", "interactive", "test"})

# pg_settings sources whose value the files do not give the server (a session's own are compared as the
# server-wide value _server_wide_values put in their place)
_NOT_FROM_THE_SERVERS_FILES = NOT_FROM_FILES - SESSION_SOURCES


# A configuration file's value of a parameter: its text, where it is, and whether the server said it waits
# for a restart (pg_file_settings' error for a valid postmaster-context change).
FileValue = tuple[str | None, Source, bool]


def _live_file_items(host: HostFacts, live: LiveServer, param_table: ParamTable,
                     conf: ConfResult | None) -> dict[str, FileValue] | None:
    """Items from what the configuration files say now against what the server runs with.

    ``file_error``: a line the server refuses (catalogue D8), from pg_file_settings. ``drift``: a parameter
    whose value in the files differs from the running one — a reload or a restart is pending, or a line was
    removed (catalogue L3, and D7 when pending_restart). The files' values are the server's own reading of
    them (pg_file_settings) when the role may read it, else the copied files; with neither, pg_settings'
    pending_restart still names what waits for a restart. Returns the files' value of each parameter they set
    (None: neither could be read).
    """
    refused: set[str] = set()
    values: dict[str, FileValue] | None = None
    complete = False
    if live.file_settings is not None:
        errors: list[Item] = []
        values = {}
        for each in live.file_settings:
            if each.name is None:
                continue
            refusal = _refusal(each, param_table.get(each.name))
            if refusal is not None:
                source = _row_source(each)
                errors.append(Item((
                    ("file_error.name", each.name), ("file_error.setting", each.setting or ""),
                    ("file_error.error", refusal), ("file_error.file", source.path),
                    ("file_error.line", source.line or 0)), source))
                refused.add(each.name.lower())
            else:
                refused.discard(each.name.lower())
            values[each.name.lower()] = (each.setting, _row_source(each), each.error == NEEDS_RESTART_ERROR)
        host.items["file_error"] = errors
        complete = True
    elif conf is not None:
        values = {}
        for setting in conf.settings:  # the last line of a parameter wins, under any of its names
            param = param_table.get(setting.name)
            values[param.name.lower() if param is not None else setting.name] = (setting.value, setting.source, False)
        complete = not conf.problems  # a file not read (an include outside the copy) would look like removed lines
    host.items["drift"] = _drift_items(live, param_table, values, refused, complete=complete)
    return values


def _drift_items(live: LiveServer, param_table: ParamTable, values: dict[str, FileValue] | None, refused: set[str],
                 *, complete: bool) -> list[Item]:
    """``drift`` items: the parameters whose value in the files (``values``; None when they could not be read)
    is not the running one. ``complete``: the files were all read, so a parameter they no longer set was
    removed from them."""
    drifts: list[Item] = []
    from_files = (name for name, setting in live.settings.items() if setting.source == "configuration file")
    names = sorted({*(values or ()), *from_files})
    for name in names:
        running = live.settings.get(name)
        param = param_table.get(name)
        if running is None or running.setting is None or param is None or running.source in NOT_FROM_FILES:
            continue
        if name in refused:
            continue  # refused: a file_error item says so
        fields: list[tuple[str, FactValue]] = [("name", param.name), ("running", _shown(param, running.setting)),
                                               ("context", param.context)]
        if values is None:  # only pg_settings: it tells a change that waits for a restart, not its value
            if running.pending_restart:
                fields += [("default", _shown(param, param.boot_val)), ("removed", False), ("pending_restart", True)]
                drifts.append(Item(((f"drift.{key}", value) for key, value in fields), running.row))
            continue
        row = values.get(name)
        if row is None and not complete:
            continue
        file_text = row[0] if row is not None else param.boot_val
        file_value = _canonical(param, file_text)
        running_value = _canonical(param, running.setting)
        if file_value is None or running_value is None or _same(file_value, running_value):
            continue
        source = row[1] if row is not None else running.origin
        # a postmaster-context value that differs waits for a restart whether or not the server was reloaded
        # since (pending_restart is set by a reload): a reload would not apply it
        pending = running.pending_restart or (row is not None and row[2]) or param.context == "postmaster"
        fields += [("file_value", file_text if row is not None and file_text else ""),
                   ("default", _shown(param, param.boot_val)), ("removed", row is None), ("pending_restart", pending)]
        drifts.append(Item(((f"drift.{key}", value) for key, value in fields), source))
    return drifts


def _refusal(row: LiveFileSetting, param: Param | None) -> str | None:
    """Why the server refuses a line of its files; None when it does not (no error, or a change that waits
    for a restart).

    PostgreSQL writes the same "setting could not be applied" for a changed postmaster-context parameter
    and for a value it rejects (seq_page_cost = 'abc'): only a valid value of a postmaster-context
    parameter waits for a restart. A parameter the parameter table does not know (an extension's) gets the
    benefit of the doubt. An internal parameter (wal_segment_size) is refused whatever its value.
    """
    if not row.error or row.error != NEEDS_RESTART_ERROR:
        return row.error or None
    if param is None:
        return None
    if param.context == "internal":  # refused by name, whatever the value (the log says why, not the view)
        return f'{row.error} (parameter "{param.name}" cannot be changed)'
    try:
        parse_value(param, row.setting or "")
    except InvalidValue as invalid:
        return f"{row.error} ({invalid.message})"
    return None if param.context == "postmaster" else row.error


def _row_source(row: LiveFileSetting) -> Source:
    return Source(row.sourcefile, row.sourceline) if row.sourcefile else row.row


def _canonical(param: Param, text: str | None) -> FactValue | None:
    if text is None:
        return None
    try:
        return parse_value(param, text).canonical
    except InvalidValue:
        return None


def _same(left: FactValue, right: FactValue) -> bool:
    """Equal as PostgreSQL would compare them: numbers to their precision, texts without case or blanks
    (the server shows ``ISO, MDY`` for a file's ``iso, mdy``)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return abs(left - right) <= 1e-9 * max(abs(left), abs(right), 1)
    return "".join(str(left).split()).lower() == "".join(str(right).split()).lower()


