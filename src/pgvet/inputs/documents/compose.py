"""Compose files (compose.yaml, docker-compose.yml): each PostgreSQL service is a host named after the service.

A service is PostgreSQL's when its image is (postgres, postgis/postgis, timescale/timescaledb, bitnami/postgresql…)
or its ``command`` runs ``postgres``. Its ``entrypoint`` and ``command`` options (``-c name=value``,
``--name=value``, ``-B``, ``-N``, ``-p``…) are settings at their lines; ``mem_limit`` or
``deploy.resources.limits.memory`` is the RAM of every memory formula, ``cpus`` or the limits' cpus the CPUs,
``shm_size`` the container's /dev/shm (Docker's default is 64 MiB), the image's tag the major version.
"""

from __future__ import annotations

import math
import posixpath
import re
import shlex
from collections.abc import Callable
from typing import Any, TypeVar

from ruamel.yaml.comments import CommentedSeq

from pgvet.errors import ParseError
from pgvet.inputs.documents import (
    MAX_DOCUMENT_BYTES,
    MAX_SHELL_LINE,
    DeclaredHost,
    DocumentKind,
    any_parameter_unknown,
    get,
    load_document,
    yaml_line,
)
from pgvet.inputs.documents._bitnami_image import container_values
from pgvet.inputs.documents._postgres_image import (
    ENTRYPOINT,
    data_directories,
    data_mount_before_18,
    entrypoint_options,
    image_version,
    official_layout,
)
from pgvet.inputs.documents._postgres_options import (
    Dialect,
    block_items,
    flow_items,
    literal_dollars,
    placeholder,
)
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.provenance import Located, Source
from pgvet.safeyaml import YamlError, load_yaml

T = TypeVar("T", int, float)

DOCKER_SHM_DEFAULT = 64 * 1024 * 1024
DOCKER_DEFAULT = "<docker default>"  # what Docker gives a container whose service sets nothing
# host.parameter_form of a service whose command is a list (each item one word), in YAML's flow or block style
FLOW_LIST, BLOCK_LIST = "flow list", "block list"
_SHELLS = frozenset({"sh", "bash", "ash", "dash"})
# the variables of Bitnami's image that set no parameter
_BITNAMI_CREDENTIALS = frozenset({"USERNAME", "PASSWORD", "DATABASE", "POSTGRES_PASSWORD", "PASSWORD_FILE",
                                  "POSTGRES_PASSWORD_FILE"})

_SERVICES = re.compile(r"^services\s*:", re.MULTILINE)
# what a compose file running PostgreSQL names somewhere (its image, or postgres run by a command)
_NAMES_POSTGRES = re.compile(r"postgres|postgis|timescaledb|pgvector|pgvecto-rs", re.IGNORECASE)
# a service's image line naming PostgreSQL's image (what claims a compose file too broken to read)
_POSTGRES_IMAGE_LINE = re.compile(
    r"^[ \t]+image:[ \t]*['\"]?(?:[\w.:-]+/)*(?:postgres|postgis|timescaledb|pgvector|pgvecto-rs)[\w.-]*(?::|['\"]?$)",
    re.MULTILINE)
# the last part of the image's repository name (registry and namespace before it, tag and digest after)
_POSTGRES_IMAGES = frozenset({"postgres", "postgresql", "postgis", "timescaledb", "timescaledb-ha", "pgvector",
                              "pgvecto-rs", "postgresql-repmgr", "crunchy-postgres"})
# a project's own build of the postgres image, named after it (zulip/zulip-postgresql, …-postgres)
_DERIVED_IMAGE = re.compile(r"[a-z0-9][a-z0-9._-]*[-_]postgres(?:ql)?")
_DIALECT = Dialect("compose-command", '"-c", "name=value" as two items')
_SEARCH_ROUNDS = 4  # how many times the text from a command on is searched for its words, at most (_command_string)
_LONGEST_LOCATED = 256  # the longest word (or name) of a command whose line is looked for
# Docker's sizes (go-units' RAMInBytes, which Compose reads them with): a number, one optional space, then b, or
# k m g t p alone or with b or ib, in any case; powers of 1024
_BYTES = re.compile(r"(\d+(?:\.\d*)?|\.\d+) ?(?:([kmgtp])(?:i?b)?|b)?", re.IGNORECASE)
_UNIT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
# postgres' single-letter options that set a parameter (postmaster.c), with the value a bare flag gives


def _recognises(name: str, text: str) -> bool:
    if _SERVICES.search(text) is None or _NAMES_POSTGRES.search(text) is None or len(text) > MAX_DOCUMENT_BYTES:
        return False
    try:
        document = load_yaml(text)
    except YamlError:  # an invalid file running a postgres image is claimed: its error is said, not skipped
        return _POSTGRES_IMAGE_LINE.search(text) is not None
    services = document.get("services") if isinstance(document, dict) else None
    return isinstance(services, dict) and any(_is_postgres(service) for service in services.values())


def parse_compose(text: str, path: str) -> list[DeclaredHost]:
    document = load_document(text, path)
    services = document.get("services") if isinstance(document, dict) else None
    if not isinstance(services, dict):
        return []
    lines = text.split("\n")
    hosts = []
    for name, service in services.items():
        if _is_postgres(service):
            hosts.append(_host(str(name), service, path, yaml_line(services, name) or 1, lines))
    return hosts


def _host(name: str, service: dict[str, Any], path: str, line: int, lines: list[str]) -> DeclaredHost:
    declared = DeclaredHost("compose", name, Source(path, line))
    version = _image_version(service.get("image"))
    if version is not None:
        declared.host["pg_version"] = Located(version, Source(path, yaml_line(service, "image")))
    _resources(declared, service, path)
    # Docker runs the entrypoint with the command after it (the image's docker-entrypoint.sh when none is set)
    arguments: list[tuple[str, Source]] = []
    for key in ("entrypoint", "command"):
        run = service.get(key)
        if isinstance(run, str):
            words = _command_string(declared, key, run, path, yaml_line(service, key), lines)
            if words is None:
                return declared
            arguments += words
            declared.host.pop("parameter_form", None)  # the command's form decides, else the entrypoint's
        elif isinstance(run, list):
            # each item is one word of postgres' command line: the fix writes an option and its value as two items
            form = FLOW_LIST if isinstance(run, CommentedSeq) and run.fa.flow_style() else BLOCK_LIST
            declared.host["parameter_form"] = Located(form, Source(path, yaml_line(service, key)))
            arguments += [(str(item), Source(path, yaml_line(run, index))) for index, item in enumerate(run)]
    # of an image of the postgres image's layout, which file it reads is known (_configuration_file)
    declared.unseen_configuration = not _official_layout(service) and _configured_elsewhere(service)
    if _bitnami(service) and not arguments and not declared.unseen_configuration:
        # the image's run.sh generates postgresql.conf with values of its own (a command of the service's skips it)
        declared.settings.extend(container_values(version))
    entrypoint_options(declared, arguments, _DIALECT)
    _configuration_file(declared, service, version, path)
    _data_mount_of_before_18(declared, service, path)
    return declared


def _configuration_file(declared: DeclaredHost, service: dict[str, Any], version: int | None, path: str) -> None:
    """Which postgresql.conf the server reads. ``-c config_file=…`` names it (the image's own, or one mounted); else
    an image of the postgres image's layout reads its data directory's (initdb's). A file of the directory mounted
    there (``./postgresql.conf``, ``./config/postgresql.conf:/etc/postgresql/postgresql.conf``, ``./data`` as the data
    directory) is the host's postgresql.conf, which pgvet reads (``DeclaredHost.configuration_file``); a config_file
    pgvet cannot see leaves every parameter but the command line's (which win over the file) unknown, not judged on
    its default; a data directory holding none of the directory's files runs the image's own
    (``DeclaredHost.image_configuration``): the directory's postgresql.conf is not this service's."""
    given = next((setting for setting in reversed(declared.settings) if setting.name == "config_file"), None)
    if given is not None:
        mounted = _directory_file(service, posixpath.normpath(given.value))
        if mounted is not None:
            declared.configuration_file = Located(mounted[0], given.source)
            return
        declared.unseen_configuration = True
        declared.notes.append(f"{given.source}: config_file = {given.value}: postgres reads its parameters from that "
                              "file, which pgvet does not read: those the command line does not set are unknown")
        any_parameter_unknown(declared, given.source, [setting.name for setting in declared.settings])
        return
    if not _official_layout(service):
        return
    data_files = [f"{data}/postgresql.conf" for data in data_directories(_pgdata(service), version)]
    mounts = _mounted_from_the_directory(service)
    outside = next((target for target, _ in _volume_targets(service) if target in data_files and target not in mounts),
                   None)
    if outside is not None:  # a file of elsewhere (an absolute path, ../) mounted as the data directory's
        declared.unseen_configuration = True
        declared.notes.append(f"{Source(path, yaml_line(service, 'volumes'))}: {outside} is mounted from outside "
                              "the directory: pgvet does not read it, and the parameters the command line does not "
                              "set are unknown")
        any_parameter_unknown(declared, Source(path, yaml_line(service, "volumes")),
                              [setting.name for setting in declared.settings])
        return
    for target, (relative, line) in mounts.items():
        if posixpath.basename(target) == "postgresql.conf" and target not in data_files:
            declared.problems.append(ConfProblem(
                "mounted-not-read", f"{relative} is mounted at {target}, which postgres does not read without "
                f"-c config_file={target} (it reads its data directory's postgresql.conf)", Source(path, line), False,
                target))
    for data_file in data_files:
        mounted = _directory_file(service, data_file)
        if mounted is not None:
            declared.configuration_file = Located(mounted[0], Source(path, mounted[1]))
            if data_file in mounts:  # the file itself: the server's, whether the directory holds it or not
                return
            break
    # a data directory holding none of the directory's files (a volume, or ./data without postgresql.conf)
    declared.image_configuration = Source(path, yaml_line(service, "image"))


def _data_mount_of_before_18(declared: DeclaredHost, service: dict[str, Any], path: str) -> None:
    image = service.get("image")
    if "build" in service or not isinstance(image, str) or placeholder(image):
        return
    problem = data_mount_before_18(image, _pgdata(service), ((target, Source(path, line))
                                                            for target, line in _volume_targets(service)))
    if problem is not None:
        declared.problems.append(problem)


def _volume_targets(service: dict[str, Any]) -> list[tuple[str, int | None]]:
    """Where each of the service's volumes is mounted in the container (normalised), with the volume's line."""
    targets = []
    volumes = service.get("volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
        target = volume.get("target") if isinstance(volume, dict) else str(volume).partition(":")[2].split(":", 1)[0]
        if isinstance(target, str) and target.startswith("/"):
            targets.append((posixpath.normpath(target), yaml_line(volumes, index)))
    return targets


def _official_layout(service: dict[str, Any]) -> bool:
    """An image of the postgres image's layout, not built here."""
    image = service.get("image")
    return isinstance(image, str) and "build" not in service and official_layout(image)


def _pgdata(service: dict[str, Any]) -> str | None:
    """The service's PGDATA variable, normalised, when it is an absolute path written out."""
    environment = service.get("environment")
    if isinstance(environment, dict):
        pgdata = environment.get("PGDATA")
    elif isinstance(environment, list):
        pgdata = next((str(item).split("=", 1)[1] for item in environment if str(item).startswith("PGDATA=")), None)
    else:
        pgdata = None
    return posixpath.normpath(pgdata) if isinstance(pgdata, str) and pgdata.startswith("/") and not placeholder(
        pgdata) else None


def _directory_file(service: dict[str, Any], path: str) -> tuple[str, int | None] | None:
    """The file of the directory beside the compose file that the container sees at ``path`` (normalised), as a
    relative path, with the line of its mount: through a bind mount of that file
    (``./config/postgresql.conf:/etc/postgresql/postgresql.conf``) or of a directory above it
    (``./config:/etc/postgresql``); None when no mount of the directory's holds it."""
    for target, (source, line) in reversed(_mounted_from_the_directory(service).items()):  # a later mount covers
        if path == target:
            return source, line
        if path.startswith(target.rstrip("/") + "/"):
            return posixpath.normpath(posixpath.join(source, path[len(target.rstrip("/")) + 1:])), line
    return None


def _mounted_from_the_directory(service: dict[str, Any]) -> dict[str, tuple[str, int | None]]:
    """The files and directories of the directory beside the compose file the service mounts, by where it mounts
    them: the bind mounts of a relative path inside the directory (``./config/postgresql.conf``; a source without
    ``./`` is a named volume, one with ``..`` or an absolute one lies outside), each a normalised relative path with
    the line of its mount."""
    mounted: dict[str, tuple[str, int | None]] = {}
    volumes = service.get("volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if isinstance(volume, dict):
            source, target = volume.get("source"), volume.get("target")
        else:
            source, _, rest = str(volume).partition(":")
            target = rest.split(":", 1)[0]
        if not (isinstance(source, str) and isinstance(target, str) and source.startswith(".")):
            continue
        relative = posixpath.normpath(source)
        if relative != ".." and not relative.startswith("../"):
            mounted[posixpath.normpath(target)] = (relative, yaml_line(volumes, index))
    return mounted


def _bitnami(service: dict[str, Any]) -> bool:
    image = service.get("image")
    return isinstance(image, str) and image.split("@", 1)[0].split(":", 1)[0].lower().endswith("bitnami/postgresql")


def _configured_elsewhere(service: dict[str, Any]) -> bool:
    """Whether the server's configuration is in what pgvet does not read: a postgresql.conf (or a configuration
    directory) mounted into the container, or the environment variables Bitnami's image writes into its own
    (POSTGRESQL_MAX_CONNECTIONS…; its credentials aside)."""
    volumes = service.get("volumes")
    for volume in volumes if isinstance(volumes, list) else []:
        target = volume.get("target") if isinstance(volume, dict) else str(volume).split(":")[1:2]
        target = target[0] if isinstance(target, list) and target else target
        if isinstance(target, str) and (target.endswith(".conf") or "/conf" in target
                                        or target.startswith("/etc/postgres")):
            return True
    environment = service.get("environment")
    names = (environment.keys() if isinstance(environment, dict)
             else [str(item).split("=", 1)[0] for item in environment] if isinstance(environment, list) else [])
    return any(name.startswith("POSTGRESQL_") and name.removeprefix("POSTGRESQL_") not in _BITNAMI_CREDENTIALS
               for name in map(str, names))


def _resources(declared: DeclaredHost, service: dict[str, Any], path: str) -> None:
    limits = get(service, "deploy", "resources", "limits")
    for node, key in ((service, "mem_limit"), (limits, "memory")):
        memory = _value(declared, node, key, path, _bytes, "host.ram", "host.memory_limit")
        if memory is not None:
            source = Source(path, yaml_line(node, key))
            declared.host["ram"] = declared.host["memory_limit"] = Located(memory, source)
    for node, key in ((service, "cpus"), (limits, "cpus")):
        cpus = _value(declared, node, key, path, _number, "host.cpus", "host.cpu_limit")
        if cpus is not None and cpus > 0:
            source = Source(path, yaml_line(node, key))
            declared.host["cpu_limit"] = Located(cpus, source)
            declared.host["cpus"] = Located(max(1, math.ceil(cpus)), source)
    _shm_size(declared, service, path)


def _shm_size(declared: DeclaredHost, service: dict[str, Any], path: str) -> None:
    """/dev/shm: shm_size, a tmpfs volume mounted there (the Swarm way), the host's with ``ipc: host``, else
    Docker's 64 MiB."""
    if service.get("ipc") == "host":
        declared.notes.append(f"{path}:{yaml_line(service, 'ipc')}: ipc: host — /dev/shm is the machine's")
        return
    volumes = service.get("volumes")
    for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if isinstance(volume, dict) and volume.get("type") == "tmpfs" and volume.get("target") == "/dev/shm":
            tmpfs = volume.get("tmpfs")
            if isinstance(tmpfs, dict) and tmpfs.get("size") is not None:
                size = _value(declared, tmpfs, "size", path, _bytes, "host.shm_size")
                if size is not None:
                    declared.host["shm_size"] = Located(size, Source(path, yaml_line(volumes, index)))
                return
    if service.get("shm_size") is None:
        declared.host["shm_size"] = Located(DOCKER_SHM_DEFAULT, Source(DOCKER_DEFAULT))
        return
    shm = _value(declared, service, "shm_size", path, _bytes, "host.shm_size")
    if shm is not None:
        declared.host["shm_size"] = Located(shm, Source(path, yaml_line(service, "shm_size")))


def _value(declared: DeclaredHost, node: object, key: str, path: str, read: Callable[[object], T | None],
           *facts: str) -> T | None:
    """A resource of the service (a size, CPUs) as ``read`` reads it; None when absent, left to a variable (its
    facts unknown, with a note: never Docker's default in its place) or one Compose refuses (a fatal problem)."""
    value = node.get(key) if isinstance(node, dict) else None
    if value is None:
        return None
    read_value = read(value)
    if read_value is not None:
        return read_value
    source = Source(path, yaml_line(node, key))
    if isinstance(value, str) and placeholder(value):
        declared.notes.append(f"{source}: {key}: {value} is left to an environment variable: not read")
        for fact in facts:
            declared.unknown[fact] = source
    else:
        declared.problems.append(ConfProblem(
            "compose-refused", f"{key}: {str(value)!r} is no value Compose accepts (sizes: 512m, 2g, 1GiB; CPUs: 1.5): "
            "it refuses the file", source, True))
    return None


def _command_string(declared: DeclaredHost, key: str, command: str, path: str, line: int | None, lines: list[str],
                    ) -> list[tuple[str, Source]] | None:
    """A command (or entrypoint) string's words, split as Compose splits it (shell words), each at the first line
    from the command's that holds it (a folded ``>-`` command has a word a line); None, with a fatal problem, for
    one Compose refuses."""
    if len(command) > MAX_SHELL_LINE:
        raise ParseError(f"{key}: {len(command)} characters, more than pgvet reads of a command ({MAX_SHELL_LINE})",
                         Source(path, line))
    try:
        words = shlex.split(command)
    except ValueError as error:
        declared.problems.append(ConfProblem("compose-command", f"{key}: {error}: Compose refuses it",
                                             Source(path, line), True))
        return None
    arguments = []
    at, column = (line or 1) - 1, 0
    # Each word is looked for after the one before it, and at most _SEARCH_ROUNDS times the text from the command
    # on is searched in all: a word the file spells otherwise ('a'b is ab) was looked for to the end of the file
    # from each line's start, and a command of 1 MiB of them took hours. Past that, a word takes the last line.
    budget = _SEARCH_ROUNDS * sum(len(text) + 1 for text in lines[at:])
    for word in words:
        number, start = at, column
        while budget > 0 and number < len(lines):
            end, scanned = _word_end(word, lines[number], start)
            budget -= scanned + 1
            if end != -1:
                at, column = number, end
                break
            number, start = number + 1, 0
        arguments.append((word, Source(path, at + 1 if line is not None else None)))
    return arguments


def _word_end(word: str, line: str, start: int) -> tuple[int, int]:
    """Where the word ends on the line from ``start``, or its name where the line quotes its value, as a whole word
    (the line of -c max_parallel_workers_per_gather=1 is not that of -c max_parallel_workers=2): -1 if it is not
    there; and how much of the line was searched. A part longer than _LONGEST_LOCATED is not looked for: trying
    it at every place it starts to match costs its length each time."""
    scanned = 0
    for part in (word, word.split("=", 1)[0]):
        if len(part) > _LONGEST_LOCATED:
            continue
        found = re.compile(rf"(?<![\w.-]){re.escape(part)}(?![\w.-])").search(line, start)
        scanned += (found.end() if found is not None else len(line)) - start
        if found is not None:
            return found.end(), scanned
    return -1, scanned


def _command_option(name: str, value: str) -> str:
    """A parameter as a command string passes it to postgres (Compose splits it as a shell would; a ``$`` is
    written ``$$``, Compose's literal one)."""
    return f"-c {shlex.quote(literal_dollars(f'{name}={value}'))}"


def _is_postgres(service: object) -> bool:
    """A service running the PostgreSQL server: its image's (or, built from a directory, that directory's name), or
    its command's; not a client run from the image (a psql or pg_dump job)."""
    if not isinstance(service, dict):
        return False
    runs = [_words(service.get(key)) for key in ("entrypoint", "command")]
    if any(_runs_no_server(words) for words in runs):
        return False
    image = service.get("image")
    if image is None:  # built here: its build context named after the image (./docker-postgres, ./postgres)
        build = service.get("build")
        context = build.get("context") if isinstance(build, dict) else build
        image = posixpath.basename(posixpath.normpath(context)) if isinstance(context, str) and context else None
    # the tag may be left to a variable (postgres:${POSTGRES_TAG}): the repository says it is PostgreSQL's
    if isinstance(image, str) and (_repository(image) in _POSTGRES_IMAGES
                                   or _DERIVED_IMAGE.fullmatch(_repository(image)) is not None):
        return True
    return any(words[:1] == ["postgres"] for words in runs)


def _words(command: object) -> list[str]:
    """The words of a command or entrypoint (a string or a list), the image's entrypoint script aside, the program
    by its name."""
    if isinstance(command, str):
        words = command.split()
    elif isinstance(command, list):
        words = [str(word) for word in command]
    else:
        return []
    if words and _program(words[0]) == ENTRYPOINT:
        words = words[1:]
    return [_program(words[0]), *words[1:]] if words else []


def _runs_no_server(words: list[str]) -> bool:
    """A client or an idle container run from a PostgreSQL image (psql, pg_dump, sleep, a shell's inline script
    never naming postgres): the image's entrypoint runs the server only for ``postgres`` or options. A shell
    running a script file may start it: that is still a host."""
    program = words[0] if words else ""
    if program in ("psql", "sleep", "tail") or program.startswith("pg_"):
        return True
    inline = len(words) > 1 and words[1].startswith("-") and "c" in words[1][1:]  # sh -c, sh -euc
    return program in _SHELLS and inline and not any("postgres" in word for word in words[1:])


def _program(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _repository(image: str) -> str:
    return image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0].lower()


def _image_version(image: object) -> int | None:
    """The major version in the image's tag: postgres:16, 16.2-alpine, timescaledb:latest-pg15, pg14-v0.2.0."""
    return image_version(image) if isinstance(image, str) and not placeholder(image) else None


def _bytes(value: object) -> int | None:
    """Docker's byte sizes: a number of bytes, or with a unit (_BYTES), truncated to a byte as Docker does."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    match = _BYTES.fullmatch(str(value))
    return int(float(match.group(1)) * _UNIT[(match.group(2) or "").lower()]) if match is not None else None


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(str(value))
    except ValueError:
        return None


KIND = DocumentKind("compose", "a Compose file's PostgreSQL services: command-line parameters, memory, CPUs, /dev/shm",
                    (".yml", ".yaml"), _recognises, parse_compose, _command_option,
                    {FLOW_LIST: flow_items, BLOCK_LIST: block_items}, on_command_line=True)
