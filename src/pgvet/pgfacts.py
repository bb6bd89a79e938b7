"""PostgreSQL facts of a host: pg.* (effective settings in canonical units), pg_conf.* (declared),
per-occurrence ``setting`` items for the validity rules, and ``problem`` items (syntax errors,
missing includes).

The target major version decides which parameter catalog judges the settings: host.yaml's
``pg_version``, else ``PG_VERSION``, else the live server, else the newest supported major.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from functools import cache, lru_cache
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING

# Imported here, not in the functions: this module is itself imported at the first host's loading, and a
# function's `from package import name` costs as much as building a fact (importlib's _handle_fromlist).
from pgvet.errors import ParseError
from pgvet.facts import Fact, FactValue, HostFacts, Item, make_fact
from pgvet.findings import quote_identifier
from pgvet.pgparams import (
    BUILD_OPTIONS,
    NEWEST_MAJOR,
    SUPPORTED_MAJORS,
    did_you_mean,
    load_catalog,
    removed_parameter,
)
from pgvet.pgparams.units import InvalidValue, parse_value
from pgvet.pgparams.units import shown_value as _shown  # a value as SHOW writes it (drift items)
from pgvet.provenance import Located, Source
from pgvet.sources.pgconf import load_conf

if TYPE_CHECKING:
    from pgvet.pgparams import Catalog, Param
    from pgvet.pgparams.units import ParsedValue
    from pgvet.snapshot import InputPath, SnapshotInputs
    from pgvet.sources.pgconf import ConfResult, ConfSetting
    from pgvet.sources.pgsettings import LiveFileSetting, LiveServer

DEFAULT_SOURCE_PATH = "<default>"


def parse_pg_version_file(text: str, path: str) -> Located[object]:
    """PG_VERSION holds the major version: ``15``, or ``9.6`` before PostgreSQL 10."""
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    try:
        major = int(first) if "." not in first else int(first.split(".")[0])
    except ValueError:
        raise ParseError(f"PG_VERSION should hold a major version such as 16, not {first!r}", Source(path, 1)) from None
    return Located(major, Source(path, 1))


def _catalog_for(major: int, host: HostFacts, source: Source) -> Catalog:
    """The parameter catalog the settings are judged with, named by ``pg.catalog_version``: the host's
    version's, else the nearest (the validity rules tell a newer version's parameters apart)."""
    if major in SUPPORTED_MAJORS:
        host.add(Fact("pg.catalog_version", major, source))
        return load_catalog(major)
    nearest = min(SUPPORTED_MAJORS) if major < min(SUPPORTED_MAJORS) else NEWEST_MAJOR
    host.add(Fact("pg.catalog_version", nearest, Source("<pgvet's parameter catalogs>")))
    host.notes.append(
        f"PostgreSQL {major} has no parameter catalog in pgvet; settings are judged with {nearest}'s"
        + (f", unset ones with {major}'s own defaults where they differ" if major < nearest else "")
    )
    return load_catalog(nearest)


def load(host: HostFacts, root: Path, inputs: SnapshotInputs, version: Located[object] | None,
         wanted: frozenset[str] | None = None, upgrade_to: int | None = None) -> None:
    """``upgrade_to``: judge the files as that major version reads them (``pgvet lint --upgrade-to``): the
    host's own version becomes ``pg.upgraded_from``, and a live server's values, which are its version's,
    are left out."""
    live = None
    if inputs.pg_settings is not None:
        from pgvet.snapshot import read_text
        from pgvet.sources.pgsettings import parse_pg_settings_json

        display = _display(inputs.pg_settings, root)
        live = parse_pg_settings_json(read_text(inputs.pg_settings, display), display)
        if version is None:
            from pgvet.sources.pgsettings import live_facts

            live_version = live_facts(live).get("pg.version")
            if live_version is not None:
                version = Located(live_version.value, live_version.source)

    has_configuration = inputs.postgresql_conf is not None or inputs.postgresql_auto_conf is not None
    if upgrade_to is not None and (has_configuration or live is not None):
        version, live = _upgraded(host, version, live is not None, upgrade_to), None
    if version is None:
        if not (has_configuration or live):
            return
        version = Located(NEWEST_MAJOR, Source("<newest supported>"))
        host.notes.append(
            f"PostgreSQL version unknown (set pg_version in host.yaml or add PG_VERSION): judged as {NEWEST_MAJOR}"
        )
    major = int(version.value)  # type: ignore[call-overload]
    host.add(Fact("pg.version", major, version.source))
    if not (has_configuration or live):
        return
    catalog = _catalog_for(major, host, version.source)

    conf = None
    if has_configuration:
        conf = _load_conf(host, root, inputs)
        params = {setting.name: _catalog_param(catalog.major, setting.name) for setting in conf.settings}
        _conf_items(host, conf, catalog, params, major)
        prefix = "pg_conf" if live is not None else "pg"
        _effective_facts(host, conf, params, prefix)
    if "pg.upgraded_from" in host.facts:
        _default_change_items(host, catalog)
    if live is not None:
        from pgvet.sources.pgsettings import live_facts

        for name, located in live_facts(live).items():
            host.add(Fact(name, located.value, located.source))
        file_values = _live_file_items(host, live, catalog, conf if has_configuration else None)
        _server_wide_values(host, live, catalog, file_values)
        _live_list_items(host, live, catalog)
        for gap in live.unavailable:  # what could not be read (a privilege, an answer that made no sense…)
            said = f"pgvet could not read {gap.what} from the server: {gap.error}"
            if gap.fix:
                said += f" ({gap.fix})"
            host.warnings.append(f"{gap.row}: {said}")
            for given in GAP_GIVES.get(gap.what, ()):
                host.unread.setdefault(given, said)
        if "drift" not in host.unread and live.file_settings is None and not has_configuration:
            host.unread["drift"] = (
                "neither pg_file_settings nor the configuration files could be read, so what the files say now is "
                "unknown (pg_settings only names what waits for a restart): GRANT EXECUTE ON FUNCTION "
                "pg_show_all_file_settings() to pgvet's role, or run pgvet on the server's host as root or as the "
                "server's OS user")
    _defaults(host, catalog, wanted, major)


def _upgraded(host: HostFacts, version: Located[object] | None, had_live: bool, target: int) -> Located[object]:
    """The version the files are judged as with --upgrade-to: ``target``, the host's own kept as
    pg.upgraded_from."""
    if target not in SUPPORTED_MAJORS:  # the command line checked it: a caller's mistake
        raise ValueError(f"no parameter catalog for PostgreSQL {target}")
    if version is None:
        host.notes.append(f"PostgreSQL version unknown (set pg_version in host.yaml or add PG_VERSION): the files "
                          f"are judged as PostgreSQL {target} reads them, without the defaults that change on the way")
    else:
        host.add(Fact("pg.upgraded_from", int(version.value), version.source))  # type: ignore[call-overload]
    if had_live:
        host.notes.append(f"--upgrade-to {target}: the live server's values (pg_settings.json) are its own "
                          "version's and are not used; the files are judged as PostgreSQL "
                          f"{target} reads them")
    return Located(target, Source("--upgrade-to"))


def _default_change_items(host: HostFacts, catalog: Catalog) -> None:
    """One ``default_change`` item per parameter that no file sets (no ``setting`` item names it, under any
    of its names) and whose default differs between the host's version and the one it is judged as
    (``--upgrade-to``)."""
    from pgvet.pgparams.upgrade import default_changes

    upgraded_from = host.facts["pg.upgraded_from"]
    source = int(upgraded_from.value)
    set_names = set()
    for item in host.items.get("setting", ()):
        name = str(item["setting.name"])
        param = catalog.get(name)
        set_names.add(param.name.lower() if param is not None else name)
    host.items["default_change"] = [
        Item((("default_change.name", change.name), ("default_change.before", change.before),
              ("default_change.after", change.after), ("default_change.added", change.added),
              ("default_change.from_version", source)), upgraded_from.source)
        for change in default_changes(source, catalog.major) if change.name.lower() not in set_names]


def _display(path: InputPath, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _load_conf(host: HostFacts, root: Path, inputs: SnapshotInputs) -> ConfResult:
    main = inputs.postgresql_conf or inputs.postgresql_auto_conf
    assert main is not None  # the caller checked
    auto = inputs.postgresql_auto_conf if inputs.postgresql_conf is not None else None
    conf = load_conf(main, root=root, auto_conf=auto, display_base=root)
    host.unmarked_files.update(conf.unmarked_files)
    host.marked_files.update(name for name in conf.files if name not in conf.unmarked_files)
    problems: list[Item] = []
    for problem in conf.problems:  # an include outside the host among them: PGV408 reports it, once
        fields: list[tuple[str, FactValue]] = [("problem.kind", problem.kind), ("problem.message", problem.message),
                                               ("problem.fatal", problem.fatal)]
        if problem.target is not None:
            fields.append(("problem.target", problem.target))
        problems.append(Item(fields, problem.source))
    host.items["problem"] = problems
    return conf


_SETTING_NAME = itemgetter(0)  # ConfSetting.name, read in C


def _conf_items(host: HostFacts, conf: ConfResult, catalog: Catalog, params: Mapping[str, Param | None],
                major: int) -> None:
    """One ``setting`` item per line that sets a parameter: what the validity rules judge. ``params``: the
    catalog's parameter of each name set."""
    counts = Counter(map(_SETTING_NAME, conf.settings))
    # the same, apart in postgresql.auto.conf (ALTER SYSTEM) and in the other files: a name set in both is
    # overridden (PGV406) rather than repeated (PGV405)
    kinds = [(setting.name, _is_auto_conf(setting.source.path)) for setting in conf.settings]
    kind_counts = Counter(kinds)
    last_of_kind = dict(zip(kinds, conf.settings, strict=True))
    effective = conf.effective()
    applied = conf.applied()
    skipped_invalid = _skipped_invalid(conf, params, applied)
    items: list[Item] = []
    for setting, kind in zip(conf.settings, kinds, strict=True):
        name, value, raw, _, source, written = setting
        param = params[name]
        winner = effective[name]
        path = source.path
        placeholder = "." in name
        last = last_of_kind[kind] is setting
        # A dict display, not a list of pairs: a third of the cost of an item (a host has a few dozen)
        fields: dict[str, FactValue] = {
            "setting.name": name, "setting.value": value, "setting.raw": raw, "setting.file": path,
            "setting.line": source.line or 0, "setting.placeholder": placeholder,
            "setting.known": param is not None or placeholder, "setting.occurrences": counts[name],
            "setting.occurrences_in_kind": kind_counts[kind], "setting.last_in_kind": last,
            "setting.effective": winner is setting, "setting.applied": applied[written] is setting,
            "setting.in_auto_conf": kind[1]}
        if last and kind in skipped_invalid:
            fields["setting.skipped_invalid"] = "; ".join(skipped_invalid[kind])
        if winner is not setting:
            fields["setting.overridden_by"] = str(winner.source)
            fields["setting.overridden_in_auto_conf"] = _is_auto_conf(winner.source.path)
        if param is not None:
            fields.update(_value_fields(param.major, param.name, value))
        elif not placeholder:
            removal = removed_parameter(name, major)
            if removal is not None:
                fields["setting.removed_in"] = str(removal.removed_in)
                if removal.replacement:
                    fields["setting.replacement"] = removal.replacement
                    converted = removal.replacement_value(value)
                    if converted is not None:
                        fields["setting.replacement_value"] = converted
            else:
                suggestion = did_you_mean(name, catalog)
                if suggestion:
                    fields["setting.suggestion"] = suggestion
        items.append(Item(fields, source))
    host.items["setting"] = items


def _skipped_invalid(conf: ConfResult, params: Mapping[str, Param | None],
                     applied: Mapping[str, ConfSetting]) -> dict[tuple[str, bool], list[str]]:
    """Per name and kind of file (postgresql.auto.conf or not), the lines PostgreSQL skips (repeated later
    under the same spelling) whose value is invalid: ``work_mem = 'bogus' at postgresql.conf:3 (invalid value
    for parameter …)``. Their values are never checked, so they do not stop the server; PGV405 names them on
    the last line of the name in those files."""
    found: dict[tuple[str, bool], list[str]] = {}
    for setting in conf.settings:
        param = params[setting.name]
        if param is None or param.context == "internal" or applied[setting.written] is setting:
            continue
        parsed = _parsed(param.major, param.name, setting.value)
        if isinstance(parsed, InvalidValue):
            found.setdefault((setting.name, _is_auto_conf(setting.source.path)), []).append(
                f"{setting.written} = {setting.raw} at {setting.source} ({parsed.message})")
    return found


@lru_cache(maxsize=4096)
def _value_fields(major: int, name: str, text: str) -> dict[str, FactValue]:
    """The fields of a setting item that its parameter and value decide (context, unit, the value judged),
    remembered as _parsed is: a fleet's lines repeat. Read only (items copy them)."""
    param = _catalog_param(major, name)
    assert param is not None, name
    fields: dict[str, FactValue] = {"setting.context": param.context}
    if param.unit:
        fields["setting.unit"] = param.unit
    parsed = _parsed(major, name, text)
    if isinstance(parsed, InvalidValue):
        fields["setting.invalid"] = True
        fields["setting.error"] = parsed.message
        if parsed.hint:
            fields["setting.hint"] = parsed.hint
    else:
        fields["setting.invalid"] = False
        fields["setting.canonical"] = parsed.canonical
        fields["setting.bare_number"] = bool(param.unit) and not parsed.had_unit
        option = BUILD_OPTIONS.get(param.build_option(parsed.native) or "")
        if option is not None:  # accepted as the builds with the option accept it: PGV421, PGV422 say so
            fields["setting.build_option"] = option.name
            fields["setting.build_configure"] = option.configure
            fields["setting.build_mainstream"] = option.mainstream
    return fields


def _is_auto_conf(path: str) -> bool:
    """Whether a shown path names a postgresql.auto.conf (its basename, by string operations: once a line)."""
    return path == "postgresql.auto.conf" or path.endswith("/postgresql.auto.conf")


def _effective_facts(host: HostFacts, conf: ConfResult, params: Mapping[str, Param | None], prefix: str) -> None:
    """The value each parameter ends up with: later lines win, old aliases count as their parameter."""
    occurrences: dict[str, list[Source]] = {}
    winners: dict[str, tuple[ConfSetting, Param | None]] = {}
    for setting in conf.settings:
        param = params[setting.name]
        name = param.name.lower() if param is not None else setting.name  # sort_mem sets work_mem
        occurrences.setdefault(name, []).append(setting.source)
        winners[name] = setting, param
    for name, (setting, param) in winners.items():
        places = tuple(occurrences[name])
        if param is None:
            if "." in name:  # an extension's placeholder: kept as text
                host.add(Fact(f"{prefix}.{name}", setting.value, setting.source, places, setting.raw))
            continue
        if param.context == "internal":
            continue  # PostgreSQL refuses the line (PGV420) and keeps the compiled or initdb value
        parsed = _parsed(param.major, param.name, setting.value)
        if isinstance(parsed, InvalidValue):
            continue  # the validity rules report it; PostgreSQL would not start with it
        fact_name = f"{prefix}.{name}"
        host.facts[fact_name] = make_fact((fact_name, parsed.canonical, setting.source, places, setting.raw))


@lru_cache(maxsize=4096)
def _catalog_param(major: int, name: str) -> Param | None:
    """``load_catalog(major).get(name)``, remembered: the same names on every host, and a lookup that lowers
    the name and resolves aliases is a Python call a line."""
    return load_catalog(major).get(name)


@lru_cache(maxsize=4096)
def _parsed(major: int, name: str, text: str) -> ParsedValue | InvalidValue:
    """parse_value for a parameter of ``load_catalog(major)``, remembered: it is pure, and a fleet's values
    repeat (``on``, ``128MB``); each line's value was parsed twice, for its item and its effective fact."""
    param = _catalog_param(major, name)
    assert param is not None, name
    try:
        return parse_value(param, text)
    except InvalidValue as invalid:
        return invalid.with_traceback(None)  # kept: no frames held


# Internal parameters whose boot value is what the server really runs with (compile-time constants);
# the other internal ones (shared_memory_size, data_checksums, server_version…) are computed at run time
# and only a live server knows them.
CONSTANT_INTERNALS = frozenset({"block_size", "wal_block_size", "segment_size", "wal_segment_size",
                                "max_function_args", "max_identifier_length", "max_index_keys"})


def _defaults(host: HostFacts, catalog: Catalog, wanted: frozenset[str] | None, major: int) -> None:
    """Unset parameters take their boot value: what PostgreSQL runs with when nothing sets them (an older
    major's own where it differs from the catalog's)."""
    facts = host.facts
    defaults = (_default_facts(catalog.major, major) if wanted is None
                else _wanted_default_facts(catalog.major, major, wanted))
    for fact in defaults:
        if fact.name not in facts:
            facts[fact.name] = fact


@lru_cache(maxsize=16)
def _wanted_default_facts(catalog_major: int, major: int, wanted: frozenset[str]) -> tuple[Fact, ...]:
    """The boot values a lint reads (a few dozen of ~350), picked once per run."""
    return tuple(fact for fact in _default_facts(catalog_major, major) if fact.name in wanted)


@cache
def _default_facts(catalog_major: int, major: int) -> tuple[Fact, ...]:
    """The boot values of a catalog as facts, computed once: facts are immutable, every host shares them."""
    from pgvet.pgparams.older import older_boot_values

    source = Source(DEFAULT_SOURCE_PATH)
    older = older_boot_values(major) if major < catalog_major else {}
    facts: list[Fact] = []
    for name, param in load_catalog(catalog_major).params.items():
        if param.context == "internal" and name not in CONSTANT_INTERNALS:
            continue
        boot_val = older.get(name, param.boot_val)
        try:
            parsed = parse_value(param, boot_val)
        except InvalidValue:
            continue
        facts.append(Fact(f"pg.{name}", parsed.canonical, source, (), boot_val))
    return tuple(facts)


# Item scopes a live server gives (docs/facts.md).
LIVE_SCOPES = ("drift", "file_error", "role_setting", "database", "slot", "prepared", "session", "index")
# pg_settings sources under which a value is the session's own, given by ALTER ROLE / ALTER DATABASE … SET for
# the role and database pgvet connected as: not the server's.
SESSION_SOURCES = frozenset({"database", "user", "database user"})


def _server_wide_values(host: HostFacts, live: LiveServer, catalog: Catalog,
                        file_values: dict[str, FileValue] | None) -> None:
    """``pg.*`` facts of the server, not of pgvet's session: a value ALTER ROLE or ALTER DATABASE … SET gives
    pgvet's role (``work_mem`` of 2 GB for the monitoring role) is replaced by the files' (the server's reading
    of them, else the copied files; their absence: the default). With neither, the server-wide value is
    unknown: the fact is removed, and the rules reading it say why. role_setting items judge the role's."""
    for name, setting in live.settings.items():
        if setting.source not in SESSION_SOURCES:
            continue
        fact = f"pg.{name}"
        param = catalog.get(name)
        if file_values is not None and param is not None:
            row = file_values.get(name)
            text, source = (row[0], row[1]) if row is not None else (param.boot_val, Source(DEFAULT_SOURCE_PATH))
            value = _canonical(param, text)
            if value is not None and text is not None:
                host.facts[fact] = make_fact((fact, value, source, (), text))
                continue
        host.facts.pop(fact, None)
        altered = "ALTER DATABASE" if setting.source == "database" else "ALTER ROLE"
        host.unread[fact] = (f"pg_settings shows {name} as {altered} … SET gives pgvet's own session, and the "
                             "server-wide value is in files pgvet could not read: connect as a role without such "
                             "settings, or let pgvet read the files")


def _live_list_items(host: HostFacts, live: LiveServer, catalog: Catalog) -> None:
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
        param = catalog.get(name)
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
    "pg_stat_bgwriter": ("live.checkpoints_timed", "live.checkpoints_requested"),
    "pg_stat_checkpointer": ("live.checkpoints_timed", "live.checkpoints_requested"),
    "pg_db_role_setting": ("role_setting",),
    "pg_replication_slots": ("slot",),
    "pg_prepared_xacts": ("prepared",),
    "sessions idle in a transaction": ("session",),
    "invalid indexes": ("index",),
}
# pg_file_settings' error for a line PostgreSQL read but cannot apply until a restart (postmaster context).
NEEDS_RESTART_ERROR = "setting could not be applied"
# pg_settings sources under which the server's value does not come from its configuration files.
NOT_FROM_FILES = frozenset({"command line", "environment variable", "override", "database", "user",
                            "database user", "client", "session", "interactive", "test"})


# A configuration file's value of a parameter: its text, where it is, and whether the server said it waits
# for a restart (pg_file_settings' error for a valid postmaster-context change).
FileValue = tuple[str | None, Source, bool]


def _live_file_items(host: HostFacts, live: LiveServer, catalog: Catalog,
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
            refusal = _refusal(each, catalog.get(each.name))
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
            param = catalog.get(setting.name)
            values[param.name.lower() if param is not None else setting.name] = (setting.value, setting.source, False)
        complete = not conf.problems  # a file not read (an include outside the copy) would look like removed lines
    host.items["drift"] = _drift_items(live, catalog, values, refused, complete=complete)
    return values


def _drift_items(live: LiveServer, catalog: Catalog, values: dict[str, FileValue] | None, refused: set[str],
                 *, complete: bool) -> list[Item]:
    """``drift`` items: the parameters whose value in the files (``values``; None when they could not be read)
    is not the running one. ``complete``: the files were all read, so a parameter they no longer set was
    removed from them."""
    drifts: list[Item] = []
    from_files = (name for name, setting in live.settings.items() if setting.source == "configuration file")
    names = sorted({*(values or ()), *from_files})
    for name in names:
        running = live.settings.get(name)
        param = catalog.get(name)
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
        pending = running.pending_restart or (row is not None and row[2])
        fields += [("file_value", file_text if row is not None and file_text else ""),
                   ("default", _shown(param, param.boot_val)), ("removed", row is None), ("pending_restart", pending)]
        drifts.append(Item(((f"drift.{key}", value) for key, value in fields), source))
    return drifts


def _refusal(row: LiveFileSetting, param: Param | None) -> str | None:
    """Why the server refuses a line of its files; None when it does not (no error, or a change that waits
    for a restart).

    PostgreSQL writes the same "setting could not be applied" for a changed postmaster-context parameter
    and for a value it rejects (seq_page_cost = 'abc'): only a valid value of a postmaster-context
    parameter waits for a restart. A parameter the catalog does not know (an extension's) gets the
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


