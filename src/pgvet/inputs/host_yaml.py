"""``host.yaml``: what cannot be read from the machine (version, workload, storage, RAID, …).

Loaded safely (ruamel.yaml's round-trip loader: plain mappings, lists and scalars only, with line
numbers); a misspelt key is an error with a did-you-mean, never silently ignored.

A host.yaml is a dozen ``key: value`` lines, and ruamel.yaml's pure-Python parser took longer than the
rest of a host's lint. ``_simple_yaml`` reads that plain form itself — top-level keys, one level of
nested keys, whole numbers, true/false, texts that no YAML resolver could take for anything else —
and gives the document ruamel.yaml would; anything else (quotes, lists, floats, anchors, tabs…) goes to
ruamel.yaml. tests/inputs/test_host_yaml_plain.py holds both to the same results.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from difflib import get_close_matches
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.pg_version import major_version
from pgvet.provenance import Located, Source
from pgvet.safeyaml import YamlError, load_yaml

HostValue = int | str | bool | list[str]

WORKLOADS = ("oltp", "olap", "mixed", "web", "desktop")
STORAGE_KINDS = ("hdd", "ssd", "nvme", "san")
RAID_LEVELS = (0, 1, 5, 6, 10)
# matched on the stripped text: a \s* at each end beside this one's was quadratic on a number and blanks
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(kB|[KMGT]i?B|[kKMGT]|B)?")
_SIZE_FACTORS = {None: 1, "B": 1, "k": 1024, "K": 1024, "kB": 1024}  # kB: PostgreSQL's and meminfo's spelling
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
    match = _SIZE.fullmatch(value.strip())
    if match is None or match.group(2) not in _SIZE_FACTORS:
        return None
    size = float(match.group(1)) * _SIZE_FACTORS[match.group(2)]
    return round(size) if math.isfinite(size) else None  # 1e400 GB: no size


class _Mapping(dict[str, Any]):
    """A mapping read by _simple_yaml, with the 1-based line of each key."""

    def __init__(self) -> None:
        super().__init__()
        self.key_lines: dict[str, int] = {}


_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# ruamel.yaml gives 0 as its own ScalarInt: left to it, and so are numbers too long to be any count or size
_SIMPLE_INTEGER = re.compile(r"[1-9][0-9]{0,17}")
_SIMPLE_SIZE = re.compile(r"[0-9]+(?:\.[0-9]+)? ?(?:[kKMGT]i?B|[kKMGT]|B)")  # 64GB: no resolver's number
_SIMPLE_TEXT = re.compile(r"[A-Za-z/_][A-Za-z0-9_./@+-]*(?: [A-Za-z0-9_./@+-]+)*")
_RESOLVED_WORDS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})  # any case: ruamel's


def _simple_scalar(text: str) -> object:
    """The value of a plain scalar, or the _Mapping class itself when it is not plainly a number or a text."""
    if text in ("true", "false"):
        return text == "true"
    if _SIMPLE_INTEGER.fullmatch(text):
        return int(text)
    if _SIMPLE_SIZE.fullmatch(text) or (_SIMPLE_TEXT.fullmatch(text) and text.lower() not in _RESOLVED_WORDS):
        return text
    return _Mapping


def _simple_yaml(text: str) -> _Mapping | None:
    """The document, when it is only ``key: value`` lines and one level of nested keys; else None."""
    if "\t" in text or "\r" in text or text.startswith("\ufeff"):
        return None
    document = _Mapping()
    nested: _Mapping | None = None
    indent = 0
    for number, line in enumerate(text.split("\n"), 1):
        entry = line.lstrip(" ")
        if not entry or entry.startswith("#"):
            continue  # blank lines and comments end no block
        key, colon, rest = entry.partition(":")
        if not colon or not _SIMPLE_KEY.fullmatch(key) or key.lower() in _RESOLVED_WORDS:
            return None
        if rest and rest[0] != " ":
            return None  # key:value is one text in YAML
        value_text = rest.strip(" ").partition(" #")[0].rstrip(" ")
        depth = len(line) - len(entry)
        target = document
        if depth:
            if nested is None or (indent and depth != indent):
                return None
            indent, target = depth, nested
        elif nested is not None and not nested:
            return None  # a key with nothing under it: null, ruamel.yaml's to give
        if key in target:
            return None  # a duplicate key: ruamel.yaml's error
        target.key_lines[key] = number
        if not value_text or value_text.startswith("#"):
            if depth:
                return None
            nested, indent = _Mapping(), 0
            target[key] = nested
            continue
        if not depth:
            nested = None
        value = _simple_scalar(value_text)
        if value is _Mapping:
            return None
        target[key] = value
    if nested is not None and not nested:
        return None
    return document


def _line(node: Any, key: str | int | None = None) -> int | None:
    """The 1-based line of a key (or of the node) in a ruamel round-trip document or a _Mapping."""
    if isinstance(node, _Mapping):
        return node.key_lines.get(key) if isinstance(key, str) else None
    position = getattr(node, "lc", None)
    if position is None:
        return None
    if key is not None:
        try:
            return int(position.key(key)[0]) + 1 if isinstance(key, str) else int(position.item(key)[0]) + 1
        except (KeyError, IndexError, TypeError):
            pass
    return int(position.line) + 1


def _major_version(value: Any) -> int:
    major = major_version(value)
    if major is None:
        raise ValueError("pg_version must be a major version: a whole number from 9 to 99, or 9.0 to 9.6 (before 10 "
                         "a major has two numbers; pgvet judges them as 9)")
    return major


def _choice(options: tuple[Any, ...], name: str) -> Callable[[Any], Any]:
    def validate(value: Any) -> Any:
        candidate = value.lower() if isinstance(value, str) else value
        if candidate not in options:
            raise ValueError(f"{name} must be one of {', '.join(str(option) for option in options)}")
        return candidate

    return validate


def _integer(low: int, high: int, name: str) -> Callable[[Any], int]:
    def validate(value: Any) -> int:
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 18:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high}")
        return value

    return validate


def _boolean(name: str) -> Callable[[Any], bool]:
    def validate(value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false")
        return value

    return validate


def _text(name: str) -> Callable[[Any], str]:
    def validate(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a text (a path or a name)")
        return value.strip()

    return validate


def _size(name: str) -> Callable[[Any], int]:
    def validate(value: Any) -> int:
        size = parse_size(value)
        if size is not None and size > MAX_SIZE:  # no machine has more: a typo, not a size to compute with
            raise ValueError(f"{name} must be at most 1 EiB (2^60 bytes)")
        if size is None:
            raise ValueError(f"{name} must be a size such as 64GB, 65536MB or a number of bytes")
        if size == 0 and name == "ram":  # every share of RAM would divide by it
            raise ValueError("ram must be more than 0")
        return size

    return validate


# The base page sizes Linux is built with (x86-64 4 kB; arm64 4, 16 or 64 kB; ppc64 4 or 64 kB; sparc64 8 kB)
PAGE_SIZES = (4096, 8192, 16384, 65536, 262144)


def _page_size(value: Any) -> int:
    size = parse_size(value)
    if size not in PAGE_SIZES:
        raise ValueError("page_size must be the kernel's base page size (`getconf PAGESIZE`): "
                         "4kB, 8kB, 16kB, 64kB or 256kB")
    return size


def _paths(name: str) -> Callable[[Any], list[str]]:
    def validate(value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            raise ValueError(f"{name} must be a list of paths")
        return [item.strip() for item in value]

    return validate


# key in host.yaml → (fact suffix, validator)
_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "name": ("name", _text("name")),
    "pg_version": ("pg_version", _major_version),
    "workload": ("workload", _choice(WORKLOADS, "workload")),
    "storage": ("storage", _choice(STORAGE_KINDS, "storage")),
    "dedicated": ("dedicated", _boolean("dedicated")),
    "ram": ("ram", _size("ram")),
    "swap": ("swap", _size("swap")),
    "page_size": ("page_size", _page_size),
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
    simple = _simple_yaml(text)
    if simple is not None:
        return simple or None  # an empty document (comments only) is null, as ruamel.yaml has it
    try:
        return load_yaml(text)
    except YamlError as error:
        raise ParseError(f"invalid YAML: {error.message}", Source(path, error.line or 1)) from None


def parse_host_yaml(text: str, path: str) -> dict[str, Located[HostValue]]:
    return _facts(_load(text, path), path)


def host_yaml_keys(text: str, path: str) -> list[str]:
    """The top-level keys a host.yaml gives (``raid``, not its level and disks), once it is checked as
    parse_host_yaml checks it: ParseError with the file and line."""
    document = _load(text, path)
    _facts(document, path)
    return [str(key) for key in document] if document else []


def _facts(document: Any, path: str) -> dict[str, Located[HostValue]]:
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
                suffix, validate = _RAID_KEYS[raid_key]
                facts[suffix] = Located(_validated(validate, raid_value, raid_source), raid_source)
            continue
        if key not in _KEYS:
            raise _unknown(key, KNOWN_KEYS, source)
        suffix, validate = _KEYS[key]
        facts[suffix] = Located(_validated(validate, value, source), source)
    return facts


def _validated(validate: Callable[[Any], Any], value: Any, source: Source) -> Any:
    try:
        return validate(value)
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
