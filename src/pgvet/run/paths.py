"""The paths of a command line → the host directories to lint (a file given stands for its host), and the files
given that their host does not read."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pgvet.findings import HostError, HostResult
from pgvet.inputs.documents._kustomize import KUSTOMIZATION_NAMES, read_listed
from pgvet.inputs.registry import host_markers
from pgvet.paths import link_out_of_repository
from pgvet.run.suppress import IGNORE_FILE
from pgvet.snapshot.discovery import (
    DROP_IN_FOLDER,
    MountSearch,
    discover,
    hosts_under,
    is_document,
    is_yaml_name,
    mounting_host,
    unread_notice_of,
)

# Files that make a directory a host (inputs/registry.py); a file passed alone (pre-commit passes
# changed files one by one) is linted as part of the nearest directory above it that holds one.
HOST_MARKERS = host_markers()


@dataclass(slots=True, eq=False, repr=False)
class GivenPaths:
    """What the paths of a command line name (host_directories)."""

    hosts: list[Path]  # the host directories to lint, each once
    notices: list[str] = field(default_factory=list)  # files a shell's glob matched beside the hosts: left out
    # paths that name no host: errors of the run, each named as given (``host``; no source, which reports resolve)
    refused: list[HostError] = field(default_factory=list)
    files: dict[str, list[Path]] = field(default_factory=dict)  # a host's real path → the files given in it


def host_directories(paths: Sequence[Path], stop: Path | None = None) -> GivenPaths:
    """Host directories for the paths given: a directory that holds a host as it is, else the directories under
    it that hold hosts (a configuration repository, a fleet's directory: snapshot/discovery.py, hosts_under);
    a file belongs to the nearest
    directory above it holding a host marker (conf.d/10-memory.conf → the directory of postgresql.conf),
    never above ``stop`` (the current directory by default), else to its own directory. Each host once, however
    it is spelled (an absolute path, a symbolic link): the first spelling given is kept. The files given are
    kept by host (``files``): each must be one of its host's inputs (LintRun checks them once the host is read).

    A file of no host whose directory holds host directories of the run (``hosts/README.md`` when a shell
    expands ``hosts/*``) is no host's: it is left out, with a notice. One whose directory holds no input either
    (``pgvet lint notes.txt``) is refused: an error that names it, not its directory linted as an empty host.
    A YAML file of no host that is no configuration document pgvet reads (a CI's workflow passed by pre-commit)
    is left out, with a notice."""
    boundary = (stop or Path.cwd()).resolve()
    hosts: dict[str, Path] = {}
    given = GivenPaths([])
    directories_given: set[str] = set()
    loose: list[tuple[Path, Path]] = []  # (file, its own directory) for files under no host marker
    mounted_by: dict[Path, Path | None] = {}  # a host directory's, by mounting_host (once: files share directories)
    mount_search = MountSearch()
    for path in _searched(paths, given.notices):
        host = path
        # a repository's link out is the host it names, refused as one (snapshot/load.py) whatever lies where it
        # leads: a file there was "not a file of a host", a directory "a link that leads out of its repository"
        if path.is_file() and (not path.is_symlink() or link_out_of_repository(os.fspath(path)) is None):
            # a systemd drop-in (postgresql.service.d/override.conf) is read with the directory of its folder
            host = path.parent.parent if path.parent.name.endswith(DROP_IN_FOLDER) else path.parent
            kustomized = None
            for directory in (host, *host.parents):
                if any((directory / marker).exists() for marker in HOST_MARKERS):
                    # the postgresql.conf a compose service above mounts as its config_file: that service's host
                    if directory not in mounted_by:
                        mounted_by[directory] = mounting_host(directory, boundary, mount_search)
                    host = mounted_by[directory] or directory
                    break
                kustomized = _kustomized(directory, path)
                if kustomized == "component":
                    given.notices.append(f"{path}: not linted alone: a file of the kustomize Component {directory}, "
                                         "read with the kustomizations that list it under components: (lint those)")
                    break
                if kustomized == "listed":
                    host = directory
                    break
                resolved = directory.resolve()
                if resolved == boundary or boundary not in resolved.parents:
                    loose.append((path, host))
                    break
            else:
                loose.append((path, host))
            if kustomized == "component":
                continue
            given.files.setdefault(os.path.realpath(host), []).append(path)
        else:
            directories_given.add(os.path.realpath(host))
        hosts.setdefault(os.path.realpath(host), host)
    if mount_search.stopped is not None:
        given.notices.append(mount_search.stopped)
    for file, directory in loose:
        parent = os.path.realpath(directory)
        if parent in directories_given:  # linted as given: the file is checked against its inputs
            continue
        if is_yaml_name(file.name) and not is_document(file):
            _leave_out(hosts, given, parent, file)
            given.notices.append(unread_notice_of(file) or f"{file}: not linted, no host's file and no configuration "
                                 "document pgvet reads (docs/integrations.md)")
            continue
        if any(os.path.dirname(other) == parent for other in hosts):
            _leave_out(hosts, given, parent, file)
            given.notices.append(f"{file}: not linted, no host's file (no {', '.join(HOST_MARKERS[:4])}… in its "
                                 "directory or above)")
        elif _holds_no_input(directory):
            hosts.pop(parent, None)
            given.files.pop(parent, None)
            given.refused.append(HostError(
                host=str(file),
                message="not a file of a host: neither its directory nor one above it (up to the current directory) "
                        "holds a snapshot (host.yaml, postgresql.conf, sysctl.txt…); give a host directory or a file "
                        "in one (see the README's snapshot layout)"))
    given.hosts = list(hosts.values())
    return given


def _kustomized(directory: Path, file: Path) -> str | None:
    """What a directory's kustomization makes of a file in it or below: ``component`` for a file of a kustomize
    Component (read with the kustomizations listing it), ``listed`` for a file it lists in a subdirectory (a patch)
    or the kustomization itself when it lists documents there, else None."""
    listed = read_listed(directory) if any((directory / name).is_file() for name in KUSTOMIZATION_NAMES) else None
    if listed is None:
        return None
    real = os.path.realpath(file)
    if file.parent == directory or any(os.path.realpath(path) == real for path, _ in listed.files):
        if listed.component:
            return "component"
        if file.parent != directory or (file.name in KUSTOMIZATION_NAMES and listed.files):
            return "listed"
    return None


def _leave_out(hosts: dict[str, Path], given: GivenPaths, parent: str, file: Path) -> None:
    """A file given that is no host's left out; its directory too, unless another file given belongs to it (a
    Cluster manifest committed beside a ScheduledBackup: the Cluster's host is linted)."""
    files = given.files.get(parent, [])
    if file in files:
        files.remove(file)
    if not files:
        hosts.pop(parent, None)
        given.files.pop(parent, None)


def _searched(paths: Sequence[Path], notices: list[str]) -> list[Path]:
    """The paths given, each directory that holds no host itself replaced by those under it that do (kept when
    none does: it is then said to hold no input); ``notices`` receives where a search stopped short."""
    searched: list[Path] = []
    for path in paths:
        if not path.is_dir():
            searched.append(path)
            continue
        found = hosts_under(path)
        searched.extend(found.hosts or [path])
        if found.stopped is not None:
            notices.append(found.stopped)
        # a directory holding no host is linted as given, its error saying what its own files are
        notices.extend(notice for file, notice in found.unread if found.hosts or file.parent != path)
    return searched


def _holds_no_input(directory: Path) -> bool:
    inputs = discover(directory)
    return inputs.is_empty() and not any(is_document(candidate, os.path.relpath(candidate, directory), directory)
                                         for candidate in inputs.documents)


# PostgreSQL's own files: inputs of a host as far as it read them
_CONFIGURATION_KINDS = frozenset({"postgresql_conf", "postgresql_auto_conf"})


def inputs_not_read(host: HostResult, files: Sequence[Path]) -> list[HostError]:
    """The files given in a host directory that the host does not read as inputs (``/etc/hostname`` in /etc, a
    file postgresql.conf does not include): linting their host would say nothing of them."""

    facts = host.host_facts
    root = facts.root
    found = discover(Path(root))
    # YAML files that are no configuration document are no input, and nothing pgvet need say more of (pre-commit
    # passes every YAML file changed); a .conf file not read is (a PostgreSQL file not included, or the directory's
    # postgresql.conf where the host's document runs another: PostgreSQL's files count as they were read)
    discovered = [*(path for kind, paths in found.paths.items() if kind not in _CONFIGURATION_KINDS for path in paths),
                  *(path for path in found.documents if is_yaml_name(path.name) and not is_document(path))]
    named = [IGNORE_FILE, *facts.unmarked_files, *facts.marked_files]  # relative to it: the configuration
    inputs = {os.path.realpath(path) for path in discovered} | {os.path.realpath(os.path.join(root, name))
                                                                   for name in named}
    return [HostError(host=str(file), message=f"not an input of its host {root}: pgvet does not read this file there "
                                              f"({_why_not_read(file)})")
            for file in files if os.path.realpath(file) not in inputs]


def _why_not_read(file: Path) -> str:
    if file.name in ("postgresql.conf", "postgresql.auto.conf"):
        return ("the server its document declares reads another: a compose service of the postgres image reads only "
                "what it mounts in its data directory or names with -c config_file; the host's warning says which")
    return "the inputs are named in the README's snapshot layout; a PostgreSQL file must be included by postgresql.conf"
