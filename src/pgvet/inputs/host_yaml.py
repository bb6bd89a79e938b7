"""``host.yaml``: what cannot be read from the machine (version, workload, storage, RAID, …).

Loaded safely (ruamel.yaml's round-trip loader: plain mappings, lists and scalars only, with line
numbers); a misspelt key is an error with a did-you-mean, never silently ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from difflib import get_close_matches
from typing import Any

from pgvet.errors import ParseError
from pgvet.provenance import Located, Source
from pgvet.safeyaml import YamlError, load_yaml

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


MAX_SIZE = 2**60  # bytes: above any machine's RAM by far


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
    size = float(match.group(1)) * _SIZE_FACTORS[match.group(2)]
    return round(size) if math.isfinite(size) else None  # 1e400 GB: no size


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
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 18:
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
        if size is not None and size > MAX_SIZE:  # no machine has more: a typo, not a size to compute with
            raise ValueError(f"{name} must be at most 1 EiB (2^60 bytes)")
        if size is None:
            raise ValueError(f"{name} must be a size such as 64GB, 65536MB or a number of bytes")
        if size == 0 and name == "ram":  # every share of RAM would divide by it
            raise ValueError("ram must be more than 0")
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


# A host description is a dozen keys; ruamel.yaml takes seconds over megabytes.
MAX_HOST_YAML_CHARS = 256 * 1024


def _load(text: str, path: str) -> Any:
    if len(text) > MAX_HOST_YAML_CHARS:
        raise ParseError(f"{len(text)} characters: a host description is a few hundred (pgvet reads up to "
                         f"{MAX_HOST_YAML_CHARS})", Source(path, 1))
    try:
        return load_yaml(text)
    except YamlError as error:
        raise ParseError(f"invalid YAML: {error.message}", Source(path, error.line or 1)) from None


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
        raise ParseError(f"{error}, not {_shown(value)}", source) from None


def _shown(value: Any) -> str:
    """A refused value for its message: a tagged one by its tag, a long one cut (repr() of an integer of more
    than 4300 digits raises)."""
    tag = getattr(value, "tag", None)
    if tag is not None and getattr(tag, "value", None):
        return f"a value tagged {tag.value} (YAML tags are not read)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"a number of about {int(value.bit_length() * 0.30103)} digits"
    shown = repr(value)
    return shown if len(shown) <= 100 else shown[:100] + "…"
