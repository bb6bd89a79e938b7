"""PostgreSQL facts of a host: pg.* (effective settings in canonical units), pg_conf.* (declared),
per-occurrence ``setting`` items for the validity rules, and ``problem`` items (syntax errors,
missing includes); a live server's facts come from live_facts.py.

The target major version decides which parameter table judges the settings: host.yaml's
``pg_version``, else ``PG_VERSION``, else the live server, else the newest supported major.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Mapping
from functools import cache, lru_cache
from operator import itemgetter
from pathlib import Path

from pgvet.inputs.conf_templates import TemplateLine, without_template_lines
from pgvet.inputs.postgresql_conf import ConfResult, ConfSetting, load_conf
from pgvet.inputs.reading import read_text
from pgvet.inputs.registry import INPUT_KINDS
from pgvet.live.redact import redact_setting
from pgvet.pgparams import (
    BUILD_OPTIONS,
    NEWEST_MAJOR,
    SUPPORTED_MAJORS,
    Param,
    ParamTable,
    did_you_mean,
    known_parameter_names,
    load_param_table,
    removed_parameter,
)
from pgvet.pgparams.older import (
    accepted_before_12,
    added_after,
    known_before_12,
    older_boot_values,
    refused_before_12,
)
from pgvet.pgparams.units import InvalidValue, ParsedValue, parse_bool, parse_value
from pgvet.pgparams.upgrade import default_changes
from pgvet.provenance import Located, Source
from pgvet.snapshot.discovery import SnapshotInputs
from pgvet.snapshot.facts import DEFAULT_SOURCE_PATH, Fact, FactValue, HostFacts, Item, make_fact


def _param_table_for(major: int, host: HostFacts, source: Source) -> ParamTable:
    """The parameter table the settings are judged with, named by ``pg.catalog_version``: the host's
    version's, else the nearest (the validity rules tell a newer version's parameters apart)."""
    if major in SUPPORTED_MAJORS:
        host.add(Fact("pg.catalog_version", major, source))
        return load_param_table(major)
    nearest = min(SUPPORTED_MAJORS) if major < min(SUPPORTED_MAJORS) else NEWEST_MAJOR
    host.add(Fact("pg.catalog_version", nearest, Source("<pgvet's parameter catalogs>")))
    if major < nearest:
        # a warning: the validity rules would miss what stops this server (a parameter it does not know is fatal)
        host.warnings.append(
            f"{source}: PostgreSQL {major} has no parameter catalog in pgvet: its settings are judged with "
            f"{nearest}'s, with what 10.23 and 11.22 read otherwise (names, values, units, defaults: "
            f"pgparams/older.py), so a refusal of PostgreSQL {major}'s at start that pgvet has not found (an "
            f"enumerated value {nearest} added"
            + (", a parameter 10 added" if major < 10 else "") + ") is not reported"
        )
    else:
        host.notes.append(f"PostgreSQL {major} has no parameter catalog in pgvet; settings are judged with {nearest}'s")
    return load_param_table(nearest)


def load(host: HostFacts, root: Path, inputs: SnapshotInputs, version: Located[object] | None,
         wanted: frozenset[str] | None = None, upgrade_to: int | None = None, declared: ConfResult | None = None,
         copied: Mapping[str, str] | None = None) -> dict[str, Source]:
    """``upgrade_to``: judge the files as that major version reads them (``pgvet lint --upgrade-to``): the
    host's own version becomes ``pg.upgraded_from``, and a live server's values, which are its version's,
    are left out. ``declared``: the parameters configuration documents set (inputs/documents/), judged as lines
    applied after the files, and what their tools refuse; empty for a document declaring a host that sets nothing
    (PostgreSQL runs it on its defaults). ``copied``: the server's configuration files a collection copied into
    the snapshot, each copy's name with the server file it copies (collect.json, which load.py reads).
    Returns the parameters a repository's template sets, each at its line (pg.* facts): unknown, not judged on a
    default (load.py's _unknown)."""
    live = None
    if (path := inputs.first("pg_settings")) is not None:
        # pg_settings.py is slow to import (its many frozen dataclasses): only for a host with a live server's settings
        from pgvet.inputs.pg_settings import live_facts, parse_pg_settings_json

        display = _display(path, root)
        live = parse_pg_settings_json(read_text(path, display, inputs.read_beneath(path, root)), display)
        if version is None:
            live_version = live_facts(live).get("pg.version")
            if live_version is not None:
                version = Located(live_version.value, live_version.source)

    has_configuration = bool(inputs.every("postgresql_conf") or inputs.every("postgresql_auto_conf") or declared)
    if upgrade_to is not None and (has_configuration or live is not None):
        version, live = _upgraded(host, version, live is not None, upgrade_to), None
    if version is None:
        if not (has_configuration or live):
            return {}
        version = Located(NEWEST_MAJOR, Source("<newest supported>"))
        host.notes.append(
            f"PostgreSQL version unknown (set pg_version in host.yaml or add PG_VERSION): judged as {NEWEST_MAJOR}"
        )
    major = int(version.value)  # type: ignore[call-overload]
    host.add(Fact("pg.version", major, version.source))
    if not (has_configuration or live):
        return {}
    param_table = _param_table_for(major, host, version.source)

    conf = None
    templated: dict[str, Source] = {}
    if has_configuration:
        # a repository's files (nothing captured from a machine or a server) may be a renderer's sources
        templates = live is None and not copied and not any(inputs.every(kind.name) for kind in INPUT_KINDS
                                                            if kind.collected)
        conf = _load_conf(host, root, inputs, declared, templates, (copied or {}).get("postgresql.conf"))
        templated = _templated(host, conf)
        params = {setting.name: _param_of(param_table.major, setting.name) for setting in conf.settings}
        _conf_items(host, conf, param_table, params, major)
        prefix = "pg_conf" if live is not None else "pg"
        _effective_facts(host, conf, params, prefix)
    if "pg.upgraded_from" in host.facts:
        _default_change_items(host, param_table)
    if live is not None:
        # as pg_settings.py above: only for a host with a live server's settings
        from pgvet.snapshot.live_facts import add_live_facts

        add_live_facts(host, live, param_table, conf if has_configuration else None, copied)
    _defaults(host, param_table, wanted, major)
    return templated


def _templated(host: HostFacts, conf: ConfResult) -> dict[str, Source]:
    """The parameters a template line sets that no literal line sets after it (all of them after a line that may set
    any), and a note for each file holding such lines."""
    last_literal = {setting.name: index for index, setting in enumerate(conf.settings)}
    unknown: dict[str, Source] = {}
    by_file: dict[str, list[TemplateLine]] = {}
    for position, line, source in conf.templated:
        by_file.setdefault(source.path, []).append(line)
        for name in known_parameter_names() if line.name is None else (line.name,):
            if last_literal.get(name, -1) < position:
                unknown[f"pg.{name}"] = source
    for path, lines in by_file.items():
        more = f", and {len(lines) - 1} more line{'s' if len(lines) > 2 else ''}" if len(lines) > 1 else ""
        host.notes.append(f"{path} is a template's source ({path}:{lines[0].line}: {lines[0].text}{more}): the "
                          "parameters its expressions set are unknown, not judged on their defaults (PostgreSQL "
                          "would refuse those lines as they are written; it reads them rendered)")
    return unknown


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


def _default_change_items(host: HostFacts, param_table: ParamTable) -> None:
    """One ``default_change`` item per parameter that no file sets (no ``setting`` item names it, under any
    of its names) and whose default differs between the host's version and the one it is judged as
    (``--upgrade-to``)."""
    upgraded_from = host.facts["pg.upgraded_from"]
    source = int(upgraded_from.value)
    set_names = set()
    for item in host.items.get("setting", ()):
        name = str(item["setting.name"])
        param = param_table.get(name)
        set_names.add(param.name.lower() if param is not None else name)
    host.items["default_change"] = [
        Item((("default_change.name", change.name), ("default_change.before", change.before),
              ("default_change.after", change.after), ("default_change.added", change.added),
              ("default_change.from_version", source)), upgraded_from.source)
        for change in default_changes(source, param_table.major) if change.name.lower() not in set_names]


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _load_conf(host: HostFacts, root: Path, inputs: SnapshotInputs, declared: ConfResult | None,
               templates: bool, server_config_file: str | None) -> ConfResult:
    """``server_config_file``: the server's configuration file the snapshot's postgresql.conf copies (a
    collection's), whose directory the snapshot stands for: an absolute include into it is read from the copy."""
    main = inputs.first("postgresql_conf") or inputs.first("postgresql_auto_conf")
    auto = inputs.first("postgresql_auto_conf") if inputs.first("postgresql_conf") is not None else None
    server_dir = None if server_config_file is None else posixpath.dirname(server_config_file)
    conf = (load_conf(main, root=root, auto_conf=auto, display_base=root, given=inputs.given,
                      templates=without_template_lines if templates else None,
                      server_dir=server_dir)
            if main is not None else ConfResult())
    host.unmarked_files.update(conf.unmarked_files)
    host.marked_files.update(name for name in conf.files if name not in conf.unmarked_files)
    if declared is not None:
        conf.settings.extend(declared.settings)
        conf.problems.extend(declared.problems)
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


def _conf_items(host: HostFacts, conf: ConfResult, param_table: ParamTable, params: Mapping[str, Param | None],
                major: int) -> None:
    """One ``setting`` item per line that sets a parameter: what the validity rules judge. ``params``: the
    parameter table's parameter of each name set."""
    counts = Counter(map(_SETTING_NAME, conf.settings))
    # the same, apart in postgresql.auto.conf (ALTER SYSTEM) and in the other files: a name set in both is
    # overridden (PGV406) rather than repeated (PGV405)
    kinds = [(setting.name, is_auto_conf(setting.source.path)) for setting in conf.settings]
    kind_counts = Counter(kinds)
    last_of_kind = dict(zip(kinds, conf.settings, strict=True))
    effective = conf.effective()
    applied = conf.applied()
    skipped_invalid = _skipped_invalid(conf, params, applied)
    items: list[Item] = []
    for setting, kind in zip(conf.settings, kinds, strict=True):
        name, value, raw, _, source, written = setting
        value, raw = _without_secret(name, value, raw)
        param = params[name]
        winner = effective[name]
        path = source.path
        placeholder = "." in name
        last = last_of_kind[kind] is setting
        # A dict display, not a list of pairs: cheaper, for an item made per line (a host has a few dozen)
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
            fields["setting.overridden_in_auto_conf"] = is_auto_conf(winner.source.path)
        if param is not None and added_after(name, major):
            fields["setting.known"] = False  # 12's, which the host's older version does not have (jit on 10)
        elif param is not None:
            fields.update(_value_fields(param.major, param.name, value))
            refused = None if fields["setting.invalid"] else refused_before_12(param.name, param.vartype, param.kind,
                                                                               major, value)
            if refused is not None:  # a value 12 reads and the host's older version refuses (0.5GB before 12)
                for key in ("setting.canonical", "setting.bare_number", "setting.build_option",
                            "setting.build_configure", "setting.build_mainstream"):
                    fields.pop(key, None)
                fields.update({"setting.invalid": True, "setting.error": refused[0]})
                if refused[1] is not None:
                    fields["setting.hint"] = refused[1]
            if fields["setting.invalid"] and accepted_before_12(name, major, value):
                flag = parse_bool(value) if param.vartype == "bool" else None
                if param.vartype != "bool" or flag is not None:  # what 10 and 11 store: a Boolean, an enum's value
                    fields.update({"setting.invalid": False,
                                   "setting.canonical": flag if flag is not None else value.strip().lower()})
                    fields.pop("setting.error")
                    fields.pop("setting.hint", None)
        elif known_before_12(name, major):
            fields["setting.known"] = True  # the host's version's, which 12's catalog no longer holds: not judged
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
                suggestion = did_you_mean(name, param_table)
                if suggestion:
                    fields["setting.suggestion"] = suggestion
        items.append(Item(fields, source))
    host.items["setting"] = items


def _without_secret(name: str, value: str, raw: str) -> tuple[str, str]:
    """A line's value and its text as written, with the secret the parameter may hold hidden as a collection hides
    it (pgvet.live.redact: a connection string's password, a command, a custom setting): findings quote the line
    (a duplicate, a value ALTER SYSTEM overrides, one that needs a restart). Only string parameters and
    placeholders hold one, so the hidden value is judged (a setting item) as the written one would be."""
    hidden = redact_setting(name, value)
    if hidden is None or hidden == value:
        return value, raw
    return hidden, "'" + hidden.replace("'", "''") + "'" if raw.startswith("'") else hidden


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
            found.setdefault((setting.name, is_auto_conf(setting.source.path)), []).append(
                f"{setting.written} = {setting.raw} at {setting.source} ({parsed.message})")
    return found


@lru_cache(maxsize=4096)
def _value_fields(major: int, name: str, text: str) -> dict[str, FactValue]:
    """The fields of a setting item that its parameter and value decide (context, unit, the value judged),
    remembered as _parsed is: a fleet's lines repeat. Read only (items copy them)."""
    param = _param_of(major, name)
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


def is_auto_conf(path: str) -> bool:
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
            # an extension's placeholder: kept as text, which rules compute with (pg_stat_statements.max sizes
            # shared memory); `pgvet facts` hides it (report/facts.py)
            if "." in name:
                host.add(Fact(f"{prefix}.{name}", setting.value, setting.source, places, setting.raw))
            continue
        if param.context == "internal":
            continue  # PostgreSQL refuses the line (PGV420) and keeps the compiled or initdb value
        value, raw = _without_secret(name, setting.value, setting.raw)
        parsed = _parsed(param.major, param.name, value)
        fact_name = f"{prefix}.{name}"
        if isinstance(parsed, InvalidValue):
            # the validity rules report it; PostgreSQL would not start with it, nor run its default: the rules
            # reading it are not evaluated (judged on the default, shared_buffers = '1Gb' was called too small)
            if prefix == "pg":
                host.unread[fact_name] = (f"{name} is set at {setting.source} to a value PostgreSQL refuses "
                                          f"({parsed.message}): PGV403 says so")
            continue
        host.facts[fact_name] = make_fact((fact_name, parsed.canonical, setting.source, places, raw))


@lru_cache(maxsize=4096)
def _param_of(major: int, name: str) -> Param | None:
    """``load_param_table(major).get(name)``, remembered: the same names on every host, and a lookup that lowers
    the name and resolves aliases is a Python call a line."""
    return load_param_table(major).get(name)


@lru_cache(maxsize=4096)
def _parsed(major: int, name: str, text: str) -> ParsedValue | InvalidValue:
    """parse_value for a parameter of ``load_param_table(major)``, remembered: it is pure, and a fleet's values
    repeat (``on``, ``128MB``); each line's value was parsed twice, for its item and its effective fact."""
    param = _param_of(major, name)
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


def _defaults(host: HostFacts, param_table: ParamTable, wanted: frozenset[str] | None, major: int) -> None:
    """Unset parameters take their boot value: what PostgreSQL runs with when nothing sets them (an older
    major's own where it differs from the parameter table's). Not those a live server's reading left unknown
    (``host.unread``: hidden from pgvet's role, or a value of its session only)."""
    facts, unread = host.facts, host.unread
    defaults = (_default_facts(param_table.major, major) if wanted is None
                else _wanted_default_facts(param_table.major, major, wanted))
    for fact in defaults:
        if fact.name not in facts and fact.name not in unread:
            facts[fact.name] = fact


@lru_cache(maxsize=16)
def _wanted_default_facts(table_major: int, major: int, wanted: frozenset[str]) -> tuple[Fact, ...]:
    """The boot values a lint reads (a few dozen of ~350), picked once per run."""
    return tuple(fact for fact in _default_facts(table_major, major) if fact.name in wanted)


@cache
def _default_facts(table_major: int, major: int) -> tuple[Fact, ...]:
    """The boot values of a parameter table as facts, computed once: facts are immutable, every host shares them."""
    source = Source(DEFAULT_SOURCE_PATH)
    older = older_boot_values(major) if major < table_major else {}
    facts: list[Fact] = []
    for name, param in load_param_table(table_major).params.items():
        if param.context == "internal" and name not in CONSTANT_INTERNALS:
            continue
        boot_val = older.get(name, param.boot_val)
        try:
            parsed = parse_value(param, boot_val)
        except InvalidValue:
            continue
        facts.append(Fact(f"pg.{name}", parsed.canonical, source, (), boot_val))
    return tuple(facts)
