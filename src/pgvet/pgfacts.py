"""PostgreSQL facts of a host: pg.* (effective settings in canonical units), pg_conf.* (declared),
per-occurrence ``setting`` items for the validity rules, and ``problem`` items (syntax errors,
missing includes).

The target major version decides which parameter catalog judges the settings: host.yaml's
``pg_version``, else ``PG_VERSION``, else the live server, else the newest supported major.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from pgvet.errors import ParseError
from pgvet.facts import Fact, FactValue, HostFacts, ItemFacts
from pgvet.provenance import Located, Source

if TYPE_CHECKING:
    from pgvet.catalog import Catalog
    from pgvet.snapshot import SnapshotInputs
    from pgvet.sources.pgconf import ConfResult, ConfSetting

DEFAULT_SOURCE_PATH = "<default>"


def parse_pg_version_file(text: str, path: str) -> Located[object]:
    """PG_VERSION holds the major version: ``15``, or ``9.6`` before PostgreSQL 10."""
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    try:
        major = int(first) if "." not in first else int(first.split(".")[0])
    except ValueError:
        raise ParseError(f"PG_VERSION should hold a major version such as 16, not {first!r}", Source(path, 1)) from None
    return Located(major, Source(path, 1))


def _catalog_for(major: int, host: HostFacts) -> Catalog:
    from pgvet.catalog import NEWEST_MAJOR, SUPPORTED_MAJORS, load_catalog

    if major in SUPPORTED_MAJORS:
        return load_catalog(major)
    nearest = min(SUPPORTED_MAJORS) if major < min(SUPPORTED_MAJORS) else NEWEST_MAJOR
    host.notes.append(
        f"PostgreSQL {major} has no parameter catalog in pgvet; settings are judged with {nearest}'s"
    )
    return load_catalog(nearest)


def load(host: HostFacts, root: Path, inputs: SnapshotInputs, version: Located[object] | None) -> None:
    from pgvet.catalog import NEWEST_MAJOR

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
    catalog = _catalog_for(major, host)

    if has_configuration:
        conf = _load_conf(host, root, inputs)
        _conf_items(host, conf, catalog, major)
        prefix = "pg_conf" if live is not None else "pg"
        _effective_facts(host, conf, catalog, prefix)
    if live is not None:
        from pgvet.sources.pgsettings import live_facts

        for name, located in live_facts(live).items():
            host.add(Fact(name, located.value, located.source))
    _defaults(host, catalog)


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _load_conf(host: HostFacts, root: Path, inputs: SnapshotInputs) -> ConfResult:
    from pgvet.sources.pgconf import load_conf

    main = inputs.postgresql_conf or inputs.postgresql_auto_conf
    assert main is not None  # the caller checked
    auto = inputs.postgresql_auto_conf if inputs.postgresql_conf is not None else None
    conf = load_conf(main, root=root, auto_conf=auto, display_base=root)
    problems: list[ItemFacts] = []
    for problem in conf.problems:
        if problem.kind == "outside-root":
            host.warnings.append(f"{problem.source}: {problem.message}")
        item: ItemFacts = {}
        for key, value in (("kind", problem.kind), ("message", problem.message), ("fatal", problem.fatal)):
            item[f"problem.{key}"] = Fact(f"problem.{key}", value, problem.source)
        problems.append(item)
    host.items["problem"] = problems
    return conf


def _conf_items(host: HostFacts, conf: ConfResult, catalog: Catalog, major: int) -> None:
    """One ``setting`` item per line that sets a parameter: what the validity rules judge."""
    from pgvet.catalog import did_you_mean, removed_parameter
    from pgvet.catalog.units import InvalidValue, parse_value

    counts = Counter(setting.name for setting in conf.settings)
    effective = conf.effective()
    items: list[ItemFacts] = []
    for setting in conf.settings:
        source = setting.source
        item: ItemFacts = {}

        def put(key: str, value: FactValue, item: ItemFacts = item, source: Source = source) -> None:
            item[f"setting.{key}"] = Fact(f"setting.{key}", value, source)

        param = catalog.get(setting.name)
        winner = effective[setting.name]
        put("name", setting.name)
        put("value", setting.value)
        put("raw", setting.raw)
        put("file", source.path)
        put("line", source.line or 0)
        put("placeholder", "." in setting.name)
        put("known", param is not None or "." in setting.name)
        put("occurrences", counts[setting.name])
        put("effective", winner is setting)
        put("in_auto_conf", Path(source.path).name == "postgresql.auto.conf")
        if winner is not setting:
            put("overridden_by", str(winner.source))
            put("overridden_in_auto_conf", Path(winner.source.path).name == "postgresql.auto.conf")
        if param is None and "." not in setting.name:
            removal = removed_parameter(setting.name, major)
            if removal is not None:
                put("removed_in", str(removal.removed_in))
                if removal.replacement:
                    put("replacement", removal.replacement)
            else:
                suggestion = did_you_mean(setting.name, catalog)
                if suggestion:
                    put("suggestion", suggestion)
        if param is not None:
            put("context", param.context)
            if param.unit:
                put("unit", param.unit)
            try:
                parsed = parse_value(param, setting.value)
            except InvalidValue as invalid:
                put("invalid", True)
                put("error", invalid.message)
                if invalid.hint:
                    put("hint", invalid.hint)
            else:
                put("invalid", False)
                put("canonical", parsed.canonical)
                put("bare_number", bool(param.unit) and not parsed.had_unit)
        items.append(item)
    host.items["setting"] = items


def _effective_facts(host: HostFacts, conf: ConfResult, catalog: Catalog, prefix: str) -> None:
    """The value each parameter ends up with: later lines win, old aliases count as their parameter."""
    from pgvet.catalog.units import InvalidValue, parse_value

    occurrences: dict[str, list[Source]] = {}
    winners: dict[str, ConfSetting] = {}
    for setting in conf.settings:
        param = catalog.get(setting.name)
        name = param.name.lower() if param is not None else setting.name  # sort_mem sets work_mem
        occurrences.setdefault(name, []).append(setting.source)
        winners[name] = setting
    for name, setting in winners.items():
        places = tuple(occurrences[name])
        param = catalog.get(name)
        if param is None:
            if "." in name:  # an extension's placeholder: kept as text
                host.add(Fact(f"{prefix}.{name}", setting.value, setting.source, places, setting.raw))
            continue
        try:
            parsed = parse_value(param, setting.value)
        except InvalidValue:
            continue  # the validity rules report it; PostgreSQL would not start with it
        host.add(Fact(f"{prefix}.{name}", parsed.canonical, setting.source, places, setting.raw))


# Internal parameters whose boot value is what the server really runs with (compile-time constants);
# the other internal ones (shared_memory_size, data_checksums, server_version…) are computed at run time
# and only a live server knows them.
CONSTANT_INTERNALS = frozenset({"block_size", "wal_block_size", "segment_size", "wal_segment_size",
                                "max_function_args", "max_identifier_length", "max_index_keys"})


def _defaults(host: HostFacts, catalog: Catalog) -> None:
    """Unset parameters take their boot value: what PostgreSQL runs with when nothing sets them."""
    from pgvet.catalog.units import InvalidValue, parse_value

    source = Source(DEFAULT_SOURCE_PATH)
    for name, param in catalog.params.items():
        if f"pg.{name}" in host.facts:
            continue
        if param.context == "internal" and name not in CONSTANT_INTERNALS:
            continue
        try:
            parsed = parse_value(param, param.boot_val)
        except InvalidValue:
            continue
        host.add(Fact(f"pg.{name}", parsed.canonical, source, (), param.boot_val))
