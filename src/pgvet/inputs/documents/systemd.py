"""A systemd unit or drop-in of PostgreSQL's service (postgresql-16.service, postgresql@.service,
postgresql.service.d/override.conf): the cgroup limits of its [Service], and the parameters its ExecStart gives
postgres.

``MemoryMax=`` (``MemoryLimit=`` on cgroup v1 systems) is a cgroup memory limit, like a pod's: the RAM of every
memory formula (``ram`` and ``memory_limit``). ``CPUQuota=`` is ``cpu_limit`` in CPUs. ``ExecStart=`` running
postgres (or pg_ctl with ``-o``) with ``-c name=value`` options sets those parameters, over postgresql.conf and
ALTER SYSTEM. A unit describes the machine's service, not a PostgreSQL host: it is not ``hosting``.
"""

from __future__ import annotations

import re
import shlex

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind
from pgvet.inputs.documents._postgres_options import Dialect, placeholder, read_options
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.provenance import Located, Source

MAX_UNIT_CHARS = 256 * 1024

_MEMORY_KEYS = ("MemoryMax", "MemoryLimit")
_READ_KEYS = (*_MEMORY_KEYS, "MemoryHigh", "CPUQuota", "ExecStart")
# Only a unit setting what pgvet reads is a document: a packaged unit (OOMScoreAdjust, PG_OOM_ADJUST_*) declares
# nothing pgvet judges, and a directory holding only it is no host.
_RECOGNISED = re.compile(r"^[ \t]*(?:MemoryMax|MemoryLimit|MemoryHigh|CPUQuota)[ \t]*=", re.MULTILINE)
# The program of each ExecStart= (after systemd's prefixes -@:+!): the unit runs PostgreSQL when one of them is
# PostgreSQL's server or what starts it (pg_ctl, Debian's pg_ctlcluster, Patroni, whose child postgres shares the
# service's cgroup); a unit running another program (postgres_exporter) is not PostgreSQL's, whatever its name.
_EXEC_START = re.compile(r"^[ \t]*ExecStart[ \t]*=[ \t]*[-@:+!]*(\S+)", re.MULTILINE)
_SERVERS = frozenset({"postgres", "postmaster", "pg_ctl", "pg_ctlcluster", "patroni"})
_EXEC_START_COMMAND = re.compile(r"^[ \t]*ExecStart[ \t]*=(.*)$", re.MULTILINE)
# systemd fills in $VAR, ${VAR} (Environment=) and its specifiers (%i, %I…; %% is a percent sign)
_DIALECT = Dialect("systemd-command", "-c and name=value as two words",
                   lambda word: placeholder(word) or "%" in word.replace("%%", ""),
                   "systemd (an environment variable or a specifier)", (("$$", "$"), ("%%", "%")))
# systemd's parse_size(): base 1024, one-letter suffixes, a fraction allowed
_SIZE = re.compile(r"(\d+(?:\.\d+)?)[ \t]*([KMGTPE]?)", re.IGNORECASE)
_FACTORS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5, "E": 1024**6}


def _recognises(name: str, text: str) -> bool:
    if "[Service]" not in text:
        return False
    if not _RECOGNISED.search(text):
        return _gives_parameters(text, name)
    programs = [program.rsplit("/", 1)[-1] for program in _EXEC_START.findall(text)]
    if programs:
        return any(program in _SERVERS for program in programs)
    return "postgres" in name.lower() or "patroni" in name.lower()  # a drop-in: its unit's name says it


def _gives_parameters(text: str, name: str) -> bool:
    """Whether an ExecStart= gives postgres a parameter: such a unit declares parameters, with or without a limit
    (a packaged unit's ``postmaster -D ${PGDATA}`` gives none)."""
    for command in _EXEC_START_COMMAND.findall(text):
        probe = DeclaredHost("systemd", name, Source(name, 1), hosting=False)
        _exec_start(probe, command.strip(), 1, name)
        if probe.settings or probe.unknown or probe.problems:
            return True
    return False


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
    if "ExecStart" in values:
        _exec_start(declared, *values["ExecStart"], path)
    return [declared]


def _exec_start(declared: DeclaredHost, command: str, line: int, path: str) -> None:
    """The parameters an ExecStart= gives postgres: its options, or pg_ctl's ``-o`` ones (pg_ctl passes them on),
    split into words as systemd splits them (quotes, backslash escapes), each at the ExecStart's line."""
    source = Source(path, line)
    prefixes = command[:len(command) - len(command.lstrip("-@:+!"))]
    try:
        words = shlex.split(command[len(prefixes):])
    except ValueError as error:
        declared.problems.append(ConfProblem(_DIALECT.problem_kind, f"ExecStart={command}: {error}: systemd "
                                             "ignores the line", source, False))
        return
    if "@" in prefixes:  # the second word is the process's name (argv[0]), not an argument
        words = words[:1] + words[2:]
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if program in ("postgres", "postmaster"):
        arguments = words[1:]
    elif program == "pg_ctl":
        arguments = []
        for index, word in enumerate(words):
            given = (words[index + 1] if word == "-o" and index + 1 < len(words)
                     else word[2:] if word.startswith("-o") and word != "-o"
                     else word.partition("=")[2] if word.startswith("--options=") else None)
            if given is not None:
                try:
                    arguments += shlex.split(given)
                except ValueError as error:
                    declared.problems.append(ConfProblem(_DIALECT.problem_kind, f"pg_ctl -o {given}: {error}: "
                                                         "pg_ctl's shell refuses it", source, True))
                    return
    else:
        return
    # -D names the data directory, whose postgresql.conf the unit's host is: no parameter to read
    options = [word for index, word in enumerate(arguments)
               if not word.startswith("-D") and not (index and arguments[index - 1] == "-D")]
    read_options(declared, [(word, source) for word in options], _DIALECT)


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
                    "CPUQuota, the parameters ExecStart gives postgres", (".service", ".conf"), _recognises,
                    parse_systemd, on_command_line=True)
