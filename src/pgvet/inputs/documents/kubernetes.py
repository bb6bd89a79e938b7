"""Kubernetes workloads running the postgres image (StatefulSet, Deployment, Pod, DaemonSet, ReplicaSet), as a
manifest applied with kubectl declares them: one host per workload, its first container of the postgres image's
layout (postgres, postgis, pgvector, timescaledb; _postgres_image.py).

The container's ``command`` and ``args`` are the image's entrypoint and command: postgres' options in them
(``-c name=value``, ``-B``…) are settings at their lines, outranking postgresql.conf. Its postgresql.conf is the
one its ``config_file`` names, else its data directory's (PGDATA): a ConfigMap of the same file mounted there (a
``subPath`` of one key, or the whole map as a directory) is read at its lines; one pgvet does not see (another
file's ConfigMap, a Secret) leaves every parameter but the command line's unknown; otherwise the image's own
(initdb's: PostgreSQL's defaults). ``resources`` give the memory and CPUs; a memory-backed ``emptyDir`` at
/dev/shm its size (the container runtime's 64 MiB without one).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from ruamel.yaml.comments import CommentedSeq

from pgvet.errors import ParseError
from pgvet.inputs.documents import (
    DeclaredHost,
    DocumentKind,
    any_parameter_unknown,
    embedded_conf,
    get,
    yaml_line,
)
from pgvet.inputs.documents._kubernetes import (
    RUNTIME_SHM_SIZE,
    apply_resources,
    at,
    file_stem,
    load_manifests,
    memory_size,
    namespace,
    quantity,
)
from pgvet.inputs.documents._postgres_image import (
    ENTRYPOINT,
    data_directories,
    data_mount_before_18,
    entrypoint_options,
    image_version,
    official_layout,
)
from pgvet.inputs.documents._postgres_options import Dialect, block_items, flow_items
from pgvet.inputs.postgresql_conf import ConfDirective, ConfProblem, ConfSetting
from pgvet.provenance import Located, Source

KIND_NAME = "kubernetes"
_WORKLOADS = ("StatefulSet", "Deployment", "Pod", "DaemonSet", "ReplicaSet")
_WORKLOAD_LINE = re.compile(rf"^[ \t]*(?:- )?kind:[ \t]*[\"']?(?:{'|'.join(_WORKLOADS)})[\"']?[ \t]*(?:#.*)?$",
                            re.MULTILINE)
_POSTGRES_IMAGE = re.compile(r"image:[ \t]*[\"']?(?:[\w.:-]+/)*(?:postgres|postgis|pgvector|pgvecto-rs|timescaledb)\b")
RUNTIME_DEFAULT = "<container runtime default>"  # /dev/shm of a container without a memory-backed volume
# host.parameter_form of a container whose args (or command) is a list in YAML's flow or block style
FLOW_LIST, BLOCK_LIST = "flow list", "block list"
# Kubernetes fills in $(VAR) from the container's environment ($$ is a dollar)
_REFERENCE = re.compile(r"(?<!\$)\$\([A-Za-z_][A-Za-z0-9_]*\)")
_DIALECT = Dialect("kubernetes-args", '"-c", "name=value" as two items', lambda word: bool(_REFERENCE.search(word)),
                   "a $(VAR) reference Kubernetes fills in from the container's environment")
_CLIENTS = ("psql", "pg_dump", "pg_dumpall", "pg_restore", "pg_basebackup", "sleep", "tail")


def _recognises(name: str, text: str) -> bool:
    # a template of manifests (Helm's {{ }}) is no manifest until rendered: pgvet does not guess its values
    if _WORKLOAD_LINE.search(text) is None or _POSTGRES_IMAGE.search(text) is None or "{{" in text:
        return False
    try:
        return bool(parse_workloads(text, name))
    except ParseError:  # a manifest Kubernetes refuses: said at its line
        return True


def parse_workloads(text: str, path: str) -> list[DeclaredHost]:
    documents = [document for document in load_manifests(text, path) if isinstance(document, dict)]
    configmaps = {get(document, "metadata", "name"): document.get("data") for document in documents
                  if document.get("kind") == "ConfigMap" and isinstance(document.get("data"), dict)}
    hosts = [_workload(document, configmaps, path) for document in documents if document.get("kind") in _WORKLOADS]
    return [host for host in hosts if host is not None]


def _workload(document: dict[str, Any], configmaps: dict[Any, Any], path: str) -> DeclaredHost | None:
    pod = document.get("spec") if document.get("kind") == "Pod" else get(document, "spec", "template", "spec")
    containers = get(pod, "containers")
    container = next((container for container in containers if isinstance(container, dict) and _runs_postgres(
        container)), None) if isinstance(containers, list) else None
    if container is None:
        return None
    metadata = document.get("metadata")
    name = get(metadata, "name")
    source = at(metadata, "name", path) if isinstance(name, str) and name else Source(path, yaml_line(document) or 1)
    declared = DeclaredHost(KIND_NAME, name if isinstance(name, str) and name else file_stem(path), source,
                            namespace=namespace(document))
    image = str(container["image"])
    image_line = at(container, "image", path)
    version = image_version(image)
    if version is not None:
        declared.host["pg_version"] = Located(version, image_line)
    what = f"{document.get('kind')} {declared.name}"
    apply_resources(declared, container.get("resources"), path, what)
    volumes = {volume.get("name"): volume for volume in get(pod, "volumes") or [] if isinstance(volume, dict)}
    mounts = [mount for mount in container.get("volumeMounts") or [] if isinstance(mount, dict)
              and isinstance(mount.get("mountPath"), str)]
    _shm_size(declared, mounts, volumes, path, what)
    _options(declared, container, path)
    pgdata = _pgdata(container)
    places = ((posixpath.normpath(mount["mountPath"]), at(mount, "mountPath", path)) for mount in mounts)
    problem = data_mount_before_18(image, pgdata, places)
    if problem is not None:
        declared.problems.append(problem)
    _configuration(declared, mounts, volumes, configmaps, pgdata, version, image_line, path)
    return declared


def _runs_postgres(container: dict[str, Any]) -> bool:
    """A container of the postgres image's layout running the server, not a client run from it (a psql job)."""
    image = container.get("image")
    if not isinstance(image, str) or not official_layout(image):
        return False
    words = [str(word) for key in ("command", "args") for word in (container.get(key) or [])
             if isinstance(container.get(key), list)]
    if words and posixpath.basename(words[0]) == ENTRYPOINT:
        words = words[1:]
    return not words or posixpath.basename(words[0]) not in _CLIENTS


def _options(declared: DeclaredHost, container: dict[str, Any], path: str) -> None:
    """The command line: ``command`` replaces the image's entrypoint, ``args`` its command (``postgres``); the
    entrypoint runs postgres with options given alone."""
    arguments: list[tuple[str, Source]] = []
    for key in ("command", "args"):
        words = container.get(key)
        if words is None:
            continue
        if not isinstance(words, list):
            raise ParseError(f"{key} is no list of words: Kubernetes refuses the manifest", at(container, key, path))
        form = FLOW_LIST if isinstance(words, CommentedSeq) and words.fa.flow_style() else BLOCK_LIST
        declared.host["parameter_form"] = Located(form, at(container, key, path))
        arguments += [(str(word), Source(path, yaml_line(words, index) or yaml_line(container, key)))
                      for index, word in enumerate(words)]
    entrypoint_options(declared, arguments, _DIALECT)


def _pgdata(container: dict[str, Any]) -> str | None:
    """The container's PGDATA variable, normalised, when it is an absolute path written out."""
    for variable in container.get("env") or []:
        if isinstance(variable, dict) and variable.get("name") == "PGDATA":
            value = variable.get("value")
            return (posixpath.normpath(value) if isinstance(value, str) and value.startswith("/")
                    and not _REFERENCE.search(value) else None)
    return None


def _configuration(declared: DeclaredHost, mounts: list[dict[str, Any]], volumes: dict[Any, dict[str, Any]],
                   configmaps: dict[Any, Any], pgdata: str | None, version: int | None, image: Source,
                   path: str) -> None:
    """The postgresql.conf the server reads: a ConfigMap of this file mounted where it looks, read at its lines
    before the command line's settings; the image's own (its defaults) where no volume holds one."""
    given = next((setting for setting in reversed(declared.settings) if setting.name == "config_file"), None)
    wanted = ([posixpath.normpath(given.value)] if given is not None
              else [f"{data}/postgresql.conf" for data in data_directories(pgdata, version)])
    for mount in mounts:
        target = posixpath.normpath(mount["mountPath"])
        if posixpath.basename(target) == "postgresql.conf" and target not in wanted:
            declared.problems.append(ConfProblem(
                "mounted-not-read", f"{mount.get('name')} is mounted at {target}, which postgres does not read "
                f"without -c config_file={target} (it reads its data directory's postgresql.conf)",
                at(mount, "mountPath", path), False, target))
    found = next((found for file in wanted if (found := _mounted(file, mounts, volumes, path)) is not None), None)
    declared.image_configuration = image  # the directory's postgresql.conf is never the pod's
    if found is None or (found[0].get("configMap") is None and found[0].get("secret") is None and given is None):
        if given is not None:  # a file of the image pgvet does not know
            _unseen(declared, given.source, f"config_file = {given.value}: a file of the image")
        return  # the data directory's: the one initdb wrote
    volume, key, placed = found
    configmap = get(volume, "configMap", "name")
    data = configmaps.get(configmap) if configmap is not None else None
    if not isinstance(data, dict) or not isinstance(data.get(key), str):
        where = (f"ConfigMap {configmap}'s key {key}, not in this file" if configmap is not None
                 else f"volume {volume.get('name')} (not a ConfigMap of this file)")
        _unseen(declared, placed, f"its postgresql.conf is {where}")
        return
    entries = embedded_conf(declared, data[key], yaml_line(data, key) or 1, path, "postgresql.conf")
    settings: list[ConfSetting] = []
    for entry in entries:
        if isinstance(entry, ConfDirective):
            declared.notes.append(f"{entry.source}: {entry.kind} '{entry.target}' in ConfigMap {configmap}: a file "
                                  "of the container, not followed")
            any_parameter_unknown(declared, entry.source)
        else:
            settings.append(entry)
    declared.settings[:0] = settings  # the command line's settings outrank the file's


def _mounted(file: str, mounts: list[dict[str, Any]], volumes: dict[Any, dict[str, Any]], path: str,
             ) -> tuple[dict[str, Any], str, Source] | None:
    """The volume a container path is in, the key of it that holds the file, and the mount's place: the deepest
    mount at or above the path (``subPath`` mounts one key; a ConfigMap's ``items`` give keys other paths)."""
    best: dict[str, Any] | None = None
    for mount in mounts:
        target = posixpath.normpath(mount["mountPath"])
        if (file == target or file.startswith(target.rstrip("/") + "/")) and (
                best is None or len(target) >= len(posixpath.normpath(best["mountPath"]))):
            best = mount
    volume = volumes.get(best.get("name")) if best is not None else None
    if best is None or volume is None:
        return None
    target = posixpath.normpath(best["mountPath"])
    relative = file[len(target.rstrip("/")) + 1:] if file != target else ""
    sub_path = best.get("subPath")
    key = posixpath.join(str(sub_path), relative) if sub_path else relative
    items = get(volume, "configMap", "items") or get(volume, "secret", "items")
    if isinstance(items, list):
        key = next((str(item.get("key")) for item in items if isinstance(item, dict)
                    and posixpath.normpath(str(item.get("path"))) == posixpath.normpath(key)), "")
    return volume, key.strip("/"), at(best, "mountPath", path)


def _unseen(declared: DeclaredHost, source: Source, why: str) -> None:
    declared.unseen_configuration = True
    declared.notes.append(f"{source}: {why}: pgvet does not read it, and the parameters the command line does not set "
                          "are unknown")
    any_parameter_unknown(declared, source, [setting.name for setting in declared.settings])


def _shm_size(declared: DeclaredHost, mounts: list[dict[str, Any]], volumes: dict[Any, dict[str, Any]], path: str,
              what: str) -> None:
    """/dev/shm: a memory-backed emptyDir mounted there, of its sizeLimit or else the container's memory limit (the
    tmpfs Kubernetes sizes so); the container runtime's 64 MiB without one."""
    mount = next((mount for mount in mounts if posixpath.normpath(mount["mountPath"]) == "/dev/shm"), None)
    volume = volumes.get(mount.get("name")) if mount is not None else None
    if mount is None or volume is None or get(volume, "emptyDir", "medium") != "Memory":
        declared.host["shm_size"] = Located(RUNTIME_SHM_SIZE, Source(RUNTIME_DEFAULT))
        return
    empty_dir = volume["emptyDir"]
    if empty_dir.get("sizeLimit") is not None and quantity(empty_dir.get("sizeLimit")) is not None:
        declared.host["shm_size"] = Located(memory_size(empty_dir, "sizeLimit", path, what),
                                            at(empty_dir, "sizeLimit", path))
    elif "memory_limit" in declared.host:
        declared.host["shm_size"] = declared.host["memory_limit"]


KIND = DocumentKind(KIND_NAME, "a Kubernetes workload (StatefulSet, Deployment, Pod…) running the postgres image: "
                    "its command-line parameters, a ConfigMap's postgresql.conf, memory, CPUs, /dev/shm",
                    (".yaml", ".yml"), _recognises, parse_workloads, block_items,
                    {FLOW_LIST: flow_items, BLOCK_LIST: block_items}, on_command_line=True)
