"""Patroni's own hold on a few PostgreSQL parameters of its dynamic configuration (the DCS), which the Zalando and
Crunchy operators both fill from their manifests (patroni/postgresql/config.py, ConfigHandler.CMDLINE_OPTIONS).

Patroni passes these on postgres' command line: ``listen_addresses``, ``port`` and ``cluster_name`` come from its own
configuration whatever the parameters say; the others must pass a check, else Patroni logs "failed validation,
defaulting to …" and runs its default instead.
"""

from __future__ import annotations

import re

from pgvet.inputs.postgresql_conf import ConfProblem, ConfSetting

# The problem kind of a parameter whose value is not the one that runs (PGV435); its target is the parameter's name.
OVERRIDES = "operator-overrides"

_SET_BY_PATRONI = {"listen_addresses": "postgresql.listen", "port": "postgresql.listen", "cluster_name": "scope"}
_BOOLEANS = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}
_UNITS_IN_MB = {"kB": 1 / 1024, "MB": 1, "GB": 1024, "TB": 1024**2}
_INTEGER = re.compile(r"^\s*(-?[0-9]+)\s*(kB|MB|GB|TB)?\s*$")
_MINIMA = {"max_connections": 25, "max_wal_senders": 3, "wal_keep_segments": 1, "max_prepared_transactions": 0,
           "max_locks_per_transaction": 32, "max_replication_slots": 4, "max_worker_processes": 2}
_DEFAULTS = {"wal_level": "hot_standby", "hot_standby": "on", "max_connections": "100", "max_wal_senders": "10",
             "wal_keep_segments": "8", "wal_keep_size": "128MB", "max_prepared_transactions": "0",
             "max_locks_per_transaction": "64", "track_commit_timestamp": "off", "max_replication_slots": "10",
             "max_worker_processes": "8", "wal_log_hints": "on"}


def patroni_replaces(setting: ConfSetting, operator: str) -> ConfProblem | None:
    """The problem when Patroni does not run this dynamic-configuration parameter's value (None when it does)."""
    name, value = setting.name, setting.value
    if name in _SET_BY_PATRONI:
        return ConfProblem(OVERRIDES, f"{name} is set by Patroni from its {_SET_BY_PATRONI[name]} (under {operator}): "
                           f"{name} = {value} is ignored", setting.source, False, setting.written)
    if name not in _DEFAULTS or _valid(name, value):
        return None
    return ConfProblem(OVERRIDES, f"{name} = {value} fails Patroni's check ({_check(name)}): Patroni runs its default "
                       f"{name} = {_DEFAULTS[name]} instead (under {operator})", setting.source, False,
                       setting.written)


def _valid(name: str, value: str) -> bool:
    if name == "wal_level":
        return value.lower() in ("hot_standby", "replica", "logical")
    if name == "hot_standby":
        return _BOOLEANS.get(value.lower()) is True
    if name in ("track_commit_timestamp", "wal_log_hints"):
        return value.lower() in _BOOLEANS
    match = _INTEGER.match(value)
    if match is None:
        return False
    if name == "wal_keep_size":  # in MB when no unit is given
        return int(match.group(1)) * _UNITS_IN_MB[match.group(2) or "MB"] >= 16
    return match.group(2) is None and int(match.group(1)) >= _MINIMA[name]


def _check(name: str) -> str:
    if name == "wal_level":
        return "hot_standby, replica or logical"
    if name == "hot_standby":
        return "always on"
    if name in ("track_commit_timestamp", "wal_log_hints"):
        return "a boolean"
    if name == "wal_keep_size":
        return "at least 16MB"
    return f"a whole number of at least {_MINIMA[name]}"
