"""What changes for a file that leaves a parameter unset when its server moves from one major version to another.

The boot values (what PostgreSQL runs with when nothing sets a parameter) of two majors are compared in their
parameter tables, generated from real servers; a parameter that the newer major added is compared with the value that
behaves as its absence did, when its default changes what the server does (NEW_BEHAVIOURS). Boot values that
differ between builds rather than versions (paths and TLS defaults chosen at build time) are not changes of
the version, and a parameter whose type changed (18's log_connections, a boolean become a list) is compared
by no value: both are left out.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from pgvet.pgparams import SUPPORTED_MAJORS, Param, load_param_table
from pgvet.pgparams.older import older_boot_values
from pgvet.pgparams.units import InvalidValue, parse_value, shown_value

# Parameters a version added whose default makes the server behave differently from before, with the value
# that behaves as their absence did: insert-driven autovacuum (13), hash tables' memory (13: 1 behaves as
# before, then 2 from 15), autovacuum's cap on the dead-row threshold (18), asynchronous I/O by workers (18).
NEW_BEHAVIOURS: tuple[tuple[str, int, str], ...] = (
    ("autovacuum_vacuum_insert_threshold", 13, "-1"),
    ("hash_mem_multiplier", 13, "1"),
    ("autovacuum_vacuum_max_threshold", 18, "-1"),
    ("io_method", 18, "sync"),
    ("vacuum_buffer_usage_limit", 16, "256kB"),  # the ring of VACUUM's buffers, 256 kB before 16 made it a setting
)
# Boot values chosen when PostgreSQL is built (the socket directory, the Kerberos key file, TLS defaults that
# are 'none' without SSL): they differ between the builds the parameter tables were generated from, not by version.
BUILD_CHOSEN = frozenset({"krb_server_keyfile", "unix_socket_directories", "ssl_ciphers", "ssl_ecdh_curve",
                          "ssl_groups", "ssl_library"})


class DefaultChange(NamedTuple):
    """A parameter whose value, when no file sets it, differs between two majors: ``before`` (the older's
    boot value, or what behaved as the parameter's absence) and ``after``, as PostgreSQL writes them."""

    name: str
    before: str
    after: str
    added: bool  # the parameter is new in the target: ``before`` is how the source behaved without it


def _source_boot_values(major: int) -> dict[str, tuple[Param, str]]:
    """Per lower-case name, the parameter of the parameter table judging ``major`` and its boot value there."""
    oldest = min(SUPPORTED_MAJORS)
    param_table = load_param_table(max(major, oldest))
    older = older_boot_values(major) if major < oldest else {}
    return {name: (param, older.get(name, param.boot_val)) for name, param in param_table.params.items()}


def _canonical(param: Param, text: str) -> object:
    try:
        return parse_value(param, text).canonical
    except InvalidValue:
        return None


@cache
def default_changes(source: int, target: int) -> tuple[DefaultChange, ...]:
    """The boot values that change from major ``source`` to ``target`` (a supported major), by name."""
    before = _source_boot_values(source)
    added_before = {name: value for name, since, value in NEW_BEHAVIOURS if source < since <= target}
    changes: list[DefaultChange] = []
    for name, param in sorted(load_param_table(target).params.items()):
        if param.context == "internal" or param.hidden or name in BUILD_CHOSEN:
            continue
        after = _canonical(param, param.boot_val)
        if name in before:
            old_param, old_text = before[name]
            if old_param.vartype != param.vartype or _canonical(old_param, old_text) == after:
                continue
            changes.append(DefaultChange(param.name, shown_value(old_param, old_text),
                                         shown_value(param, param.boot_val), False))
        elif name in added_before and _canonical(param, added_before[name]) != after:
            changes.append(DefaultChange(param.name, shown_value(param, added_before[name]),
                                         shown_value(param, param.boot_val), True))
    return tuple(changes)
