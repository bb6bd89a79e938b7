"""The registry of fact names a rule may read, with their types (docs/facts.md is the contract).

Rule packs are checked against it when they are compiled: an unknown name is an error with a
did-you-mean, and the types let the compiler reject ``text + number`` before any host is read.
``pg.*`` names and types come from the PostgreSQL parameter tables (pgparams/).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from functools import cache
from typing import Literal

from pgvet.inputs.documents import DECLARED_HOST_FACTS
from pgvet.inputs.registry import FactType, input_fact_types, open_prefixes
from pgvet.pgparams import SUPPORTED_MAJORS, load_param_table

# What the type checker cares about: numbers of any unit compare and add with each other.
Kind = Literal["number", "text", "bool", "any", "null"]

NUMERIC_TYPES: frozenset[str] = frozenset({"int", "float", "number", "bytes", "seconds"})

ITEM_SCOPES: tuple[str, ...] = ("mount", "disk", "setting", "problem", "declared", "drift", "file_error",
                                "role_setting", "database", "slot", "prepared", "session", "index", "default_change")


def kind_of(fact_type: str) -> Kind:
    if fact_type in NUMERIC_TYPES:
        return "number"
    if fact_type in ("bool", "text"):
        return fact_type  # type: ignore[return-value]
    return "any"


# What the inputs give (inputs/registry.py), then what the snapshot derives from several of them and what a
# live server's lists give.
STATIC_FACTS: dict[str, FactType] = {
    **input_fact_types(),
    **{f"host.{key}": fact_type for key, fact_type in DECLARED_HOST_FACTS.items()},  # configuration documents'
    "host.name": "text", "host.ram": "bytes", "host.cpus": "int", "host.data_disk_rotational": "bool",
    "host.data_fstype": "text",
    "pg.catalog_version": "int", "pg.upgraded_from": "int",
    "run.year_month": "int",
    "default_change.name": "text", "default_change.before": "text", "default_change.after": "text",
    "default_change.added": "bool", "default_change.from_version": "int",
    "drift.name": "text", "drift.file_value": "text", "drift.default": "text", "drift.running": "text",
    "drift.removed": "bool", "drift.context": "text", "drift.pending_restart": "bool",
    "file_error.name": "text", "file_error.setting": "text", "file_error.error": "text", "file_error.file": "text",
    "file_error.line": "int",
    # a live server's lists (docs/live.md, "Outage checks"), one item each
    "role_setting.database": "text", "role_setting.role": "text", "role_setting.name": "text",
    "role_setting.value": "text", "role_setting.canonical": "any", "role_setting.scope": "text",
    "role_setting.alter": "text",
    "database.name": "text", "database.xid_age": "int", "database.mxid_age": "int",
    "slot.name": "text", "slot.type": "text", "slot.active": "bool", "slot.wal_status": "text",
    "slot.retained_bytes": "bytes", "slot.safe_wal_size": "bytes", "slot.xmin_age": "int",
    "slot.catalog_xmin_age": "int",
    "prepared.gid": "text", "prepared.owner": "text", "prepared.database": "text", "prepared.age": "seconds",
    "prepared.xid_age": "int",
    "session.pid": "int", "session.user": "text", "session.database": "text", "session.state": "text",
    "session.idle": "seconds", "session.transaction_age": "seconds", "session.xmin_age": "int",
    "index.schema": "text", "index.name": "text", "index.table": "text", "index.database": "text",
    "index.valid": "bool",
}

# Namespaces whose keys are open: any sysctl key (int or text), and live facts whose names the live
# collector owns.
OPEN_PREFIXES: tuple[str, ...] = open_prefixes()

_SYSCTL_KEY = re.compile(r"[A-Za-z0-9_.\-/*:@]+")


@cache
def _parameter_types() -> dict[str, FactType]:
    """pg.<name> → type from the parameter tables (newest major wins)."""
    types: dict[str, FactType] = {}
    for major in SUPPORTED_MAJORS:  # oldest first: the newest major's type overwrites
        param_table = load_param_table(major)
        for key, param in param_table.params.items():
            types[key] = _param_type(param.vartype, param.kind)
        for alias, target in param_table.aliases.items():
            if target in param_table.params:
                types.setdefault(alias, types[target])
    return types


def _param_type(vartype: str, unit_kind: str | None) -> FactType:
    if vartype == "bool":
        return "bool"
    if vartype in ("string", "enum"):
        return "text"
    if unit_kind == "memory":
        return "bytes"
    if unit_kind == "time":
        return "seconds"
    return "int" if vartype == "integer" else "float"


def static_type(name: str) -> FactType | None:
    """The type of a fact that does not depend on the pack (not derived.*, not params.*), or None."""
    known = STATIC_FACTS.get(name)
    if known is not None:
        return known
    for prefix in OPEN_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return "any" if _SYSCTL_KEY.fullmatch(name[len(prefix):]) else None
    if name.startswith(("pg.", "pg_conf.")):
        parameter = name.partition(".")[2].lower()
        if "." in parameter:
            return "text"  # a placeholder such as pg_stat_statements.max is text until an extension says
        return _parameter_types().get(parameter)
    return None


def item_scope(name: str) -> str | None:
    """The scope whose items carry this fact (``mount`` for ``mount.point``), or None for host facts."""
    head = name.partition(".")[0]
    return head if head in ITEM_SCOPES else None


def known_names(extra: Iterable[str] = ()) -> list[str]:
    """Every name a did-you-mean may propose."""
    names = [*STATIC_FACTS, *extra]
    names.extend(f"pg.{parameter}" for parameter in _parameter_types())
    return names


def did_you_mean(name: str, derived: Mapping[str, object], params: Mapping[str, object]) -> str | None:
    candidates = known_names([*(f"derived.{key}" for key in derived), *(f"params.{key}" for key in params)])
    close = get_close_matches(name, candidates, n=1, cutoff=0.75)
    return close[0] if close else None
