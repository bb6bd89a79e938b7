"""A systemd unit or drop-in of PostgreSQL's service (postgresql-16.service, postgresql@.service,
postgresql.service.d/override.conf): the cgroup limits of its [Service].

``MemoryMax=`` (``MemoryLimit=`` on cgroup v1 systems) is a cgroup memory limit, like a pod's: the RAM of every
memory formula (``ram`` and ``memory_limit``). ``CPUQuota=`` is ``cpu_limit`` in CPUs. A unit describes the
machine's service, not PostgreSQL's parameters: it is not ``hosting``.
"""

from __future__ import annotations

import re

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.provenance import Located, Source

MAX_UNIT_CHARS = 256 * 1024

_MEMORY_KEYS = ("MemoryMax", "MemoryLimit")
_READ_KEYS = (*_MEMORY_KEYS, "MemoryHigh", "CPUQuota")
# Only a unit setting what pgvet reads is a document: a packaged unit (OOMScoreAdjust, PG_OOM_ADJUST_*) declares
# nothing pgvet judges, and a directory holding only it is no host.
_RECOGNISED = re.compile(r"^[ \t]*(?:MemoryMax|MemoryLimit|MemoryHigh|CPUQuota)[ \t]*=", re.MULTILINE)
# The program of each ExecStart= (after systemd's prefixes -@:+!): the unit runs PostgreSQL when one of them is
# PostgreSQL's server or what starts it (pg_ctl, Debian's pg_ctlcluster, Patroni, whose child postgres shares the
# service's cgroup); a unit running another program (postgres_exporter) is not PostgreSQL's, whatever its name.
_EXEC_START = re.compile(r"^[ \t]*ExecStart[ \t]*=[ \t]*[-@:+!]*(\S+)", re.MULTILINE)
_SERVERS = frozenset({"postgres", "postmaster", "pg_ctl", "pg_ctlcluster", "patroni"})
# systemd's parse_size(): base 1024, one-letter suffixes, a fraction allowed
_SIZE = re.compile(r"(\d+(?:\.\d+)?)[ \t]*([KMGTPE]?)", re.IGNORECASE)
_FACTORS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}


def _recognises(name: str, text: str) -> bool:
    if "[Service]" not in text or not _RECOGNISED.search(text):
        return False
    programs = [program.rsplit("/", 1)[-1] for program in _EXEC_START.findall(text)]
    if programs:
        return any(program in _SERVERS for program in programs)
    return "postgres" in name.lower() or "patroni" in name.lower()  # a drop-in: its unit's name says it


def _assignments(text: str, path: str, declared: DeclaredHost) -> dict[str, tuple[str, int]]:
    """The [Service] assignments that pgvet reads, the last of each winning (an empty one resets it), as systemd
    reads a unit: ``#`` and ``;`` comments, a trailing backslash continuing the line."""
    values: dict[str, tuple[str, int]] = {}
    section = None
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        start = number + 1
        line = lines[number].strip()
        number += 1
        while line.endswith("\\") and number < len(lines):
            line = line[:-1] + " " + lines[number].strip()
            number += 1
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line[1:-1] if line.endswith("]") else None
            continue
        key, separator, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if section != "Service" or key not in _READ_KEYS:
            continue
        if not separator:
            declared.problems.append(ConfProblem("ignored", f"{line!r}: missing '=', systemd ignores the line",
                                                 Source(path, start), False))
        elif value:
            values[key] = (value, start)
        else:
            values.pop(key, None)
    return values


def parse_systemd(text: str, path: str) -> list[DeclaredHost]:
    if len(text) > MAX_UNIT_CHARS:
        raise ParseError(f"{len(text)} characters: more than pgvet reads in a systemd unit ({MAX_UNIT_CHARS})",
                         Source(path, 1))
    declared = DeclaredHost("systemd", _unit_name(path), Source(path, 1), hosting=False)
    values = _assignments(text, path, declared)
    memory_key = next((key for key in _MEMORY_KEYS if key in values), None)  # MemoryMax wins over MemoryLimit
    if memory_key is not None:
        value, line = values[memory_key]
        source = Source(path, line)
        limit = _size(value)
        if limit is not None:
            declared.host["ram"] = Located(limit, source)
            declared.host["memory_limit"] = Located(limit, source)
        elif value.endswith(("%", "‰")):
            declared.notes.append(f"{path}:{line}: {memory_key}={value} is a share of the machine's memory, which the "
                                  "unit does not say: not read")
        elif value != "infinity":
            declared.problems.append(ConfProblem("ignored", f"{memory_key}={value}: not a size, systemd ignores it",
                                                 source, False))
    if "MemoryHigh" in values:
        value, line = values["MemoryHigh"]
        declared.notes.append(f"{path}:{line}: MemoryHigh={value} throttles the service above it and kills nothing: "
                              "not read as a memory limit")
    if "CPUQuota" in values:
        value, line = values["CPUQuota"]
        percent = value[:-1].strip() if value.endswith("%") else ""
        if percent.replace(".", "", 1).isdigit() and float(percent) > 0:
            declared.host["cpu_limit"] = Located(float(percent) / 100, Source(path, line))
        else:
            declared.problems.append(ConfProblem("ignored", f"CPUQuota={value}: not a percentage, systemd ignores "
                                                 "it", Source(path, line), False))
    return [declared]


def _size(value: str) -> int | None:
    matched = _SIZE.fullmatch(value)
    if matched is None:
        return None
    return int(float(matched.group(1)) * _FACTORS[matched.group(2).upper()])


def _unit_name(path: str) -> str:
    """postgresql-16.service.d/override.conf → postgresql-16; postgresql@.service → postgresql."""
    parts = path.replace("\\", "/").split("/")
    unit = parts[-2] if len(parts) > 1 and parts[-2].endswith(".service.d") else parts[-1]
    return unit.split(".service", 1)[0].rstrip("@") or "systemd"


KIND = DocumentKind("systemd", "a systemd unit or drop-in of PostgreSQL's service: MemoryMax (the memory limit), "
                    "CPUQuota", (".service", ".conf"), _recognises, parse_systemd)
