"""``host.yaml``: what cannot be read from the machine (version, workload, storage, RAID, …).

Loaded safely (ruamel.yaml's round-trip loader: plain mappings, lists and scalars only, with line
numbers); a misspelt key is an error with a did-you-mean, never silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import get_close_matches
from typing import Any

from pgvet.errors import ParseError
from pgvet.provenance import Located, Source

HostValue = int | str | bool | list[str]

WORKLOADS = ("oltp", "olap", "mixed", "web", "desktop")
STORAGE_KINDS = ("hdd", "ssd", "nvme", "san")
RAID_LEVELS = (0, 1, 5, 6, 10)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|[kKMGT]|B)?\s*$")
_SIZE_FACTORS = {None: 1, "B": 1, "k": 1024, "K": 1024}
for _prefix, _power in (("K", 1), ("M", 2), ("G", 3), ("T", 4)):
    _SIZE_FACTORS[_prefix] = 1024**_power
    _SIZE_FACTORS[f"{_prefix}B"] = 1024**_power
    _SIZE_FACTORS[f"{_prefix}iB"] = 1024**_power
_SIZE_FACTORS["kB"] = 1024


def parse_size(value: object) -> int | None:
    """``64GB``, ``64 GiB``, ``65536MB`` or an integer of bytes → bytes (powers of 1024, as PostgreSQL)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if not isinstance(value, str):
        return None
    match = _SIZE.match(value)
    if match is None or match.group(2) not in _SIZE_FACTORS:
        return None
    return round(float(match.group(1)) * _SIZE_FACTORS[match.group(2)])


def _line(node: Any, key: str | int | None = None) -> int | None:
    """The 1-based line of a key (or of the node) in a ruamel round-trip document."""
    position = getattr(node, "lc", None)
    if position is None:
        return None
    if key is not None:
        try:
            return int(position.key(key)[0]) + 1 if isinstance(key, str) else int(position.item(key)[0]) + 1
        except (KeyError, IndexError, TypeError):
            pass
    return int(position.line) + 1


def _choice(options: tuple[Any, ...], name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        candidate = value.lower() if isinstance(value, str) else value
        if candidate not in options:
            raise ValueError(f"{name} must be one of {', '.join(str(option) for option in options)}")
        return candidate

    return check


def _integer(low: int, high: int, name: str) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high}")
        return value

    return check


def _boolean(name: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false")
        return value

    return check


def _text(name: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a text (a path or a name)")
        return value.strip()

    return check


def _size(name: str) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        size = parse_size(value)
        if size is None:
            raise ValueError(f"{name} must be a size such as 64GB, 65536MB or a number of bytes")
        return size

    return check


def _paths(name: str) -> Callable[[Any], list[str]]:
    def check(value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            raise ValueError(f"{name} must be a list of paths")
        return [item.strip() for item in value]

    return check


# key in host.yaml → (fact suffix, validator)
_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "name": ("name", _text("name")),
    "pg_version": ("pg_version", _integer(9, 99, "pg_version")),
    "workload": ("workload", _choice(WORKLOADS, "workload")),
    "storage": ("storage", _choice(STORAGE_KINDS, "storage")),
    "dedicated": ("dedicated", _boolean("dedicated")),
    "ram": ("ram", _size("ram")),
    "swap": ("swap", _size("swap")),
    "cpus": ("cpus", _integer(1, 100000, "cpus")),
    "data_directory": ("data_directory", _text("data_directory")),
    "wal_directory": ("wal_directory", _text("wal_directory")),
    "tablespaces": ("tablespaces", _paths("tablespaces")),
    "battery_backed_cache": ("bbu", _boolean("battery_backed_cache")),
    "pg_instances": ("pg_instances", _integer(1, 1000, "pg_instances")),
}
_RAID_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "level": ("raid_level", _choice(RAID_LEVELS, "raid.level")),
    "disks": ("raid_disks", _integer(1, 1000, "raid.disks")),
}
KNOWN_KEYS = (*_KEYS, "raid")


def _unknown(key: object, known: tuple[str, ...] | list[str], source: Source) -> ParseError:
    close = get_close_matches(str(key), list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(known)})"
    return ParseError(f"unknown key {key!r}{hint}", source)


def _load(text: str, path: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    from pgvet.nesting import MAX_NESTING, too_deep

    deep = too_deep(text)
    if deep is not None:
        raise ParseError(f"invalid YAML: brackets nested more than {MAX_NESTING} deep", Source(path, deep))
    yaml = YAML(typ="rt", pure=True)
    try:
        return yaml.load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ParseError(f"invalid YAML: {error.problem or error.context}", Source(path, line)) from None
    except (YAMLError, ValueError, TypeError, RecursionError) as error:
        raise ParseError(f"invalid YAML: {error}", Source(path, 1)) from None


def parse_host_yaml(text: str, path: str) -> dict[str, Located[HostValue]]:
    document = _load(text, path)
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ParseError("host.yaml must be a mapping of keys to values", Source(path, 1))
    facts: dict[str, Located[HostValue]] = {}
    for key, value in document.items():
        source = Source(path, _line(document, key) if isinstance(key, str) else None)
        if key == "raid":
            if not isinstance(value, dict):
                raise ParseError("raid must be a mapping: {level: 10, disks: 8}", source)
            for raid_key, raid_value in value.items():
                raid_source = Source(path, _line(value, raid_key) if isinstance(raid_key, str) else source.line)
                if raid_key not in _RAID_KEYS:
                    raise _unknown(raid_key, list(_RAID_KEYS), raid_source)
                suffix, check = _RAID_KEYS[raid_key]
                facts[suffix] = Located(_checked(check, raid_value, raid_source), raid_source)
            continue
        if key not in _KEYS:
            raise _unknown(key, KNOWN_KEYS, source)
        suffix, check = _KEYS[key]
        facts[suffix] = Located(_checked(check, value, source), source)
    return facts


def _checked(check: Callable[[Any], Any], value: Any, source: Source) -> Any:
    try:
        return check(value)
    except ValueError as error:
        raise ParseError(f"{error}, not {value!r}", source) from None
