"""Which inputs a host directory holds (design.md: "a snapshot is a directory"), and which directories of a
repository hold hosts.

File names tell the kind of each input (inputs/registry.py); configuration documents (inputs/documents/: Patroni,
Kubernetes manifests, Ansible variables…) are told by their content, so their files here are only candidates,
which snapshot/load.py reads. Nothing outside the host directory is read without saying so: an input that
resolves (after symbolic links) outside the directory is refused and reported as a warning. These checks say
why; what keeps pgvet inside is the open (inputs/reading.py, open_input): an input found here is opened beneath
the directory, so that one swapped for a link out since is refused all the same.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pgvet.errors import InputError
from pgvet.inputs.documents import (
    MAX_DOCUMENT_BYTES,
    DeclaredHost,
    document_kinds,
    recognise,
    unread_operator,
)
from pgvet.inputs.documents._kustomize import KUSTOMIZATION_NAMES, read_listed
from pgvet.inputs.documents.cnpg import chart_override
from pgvet.inputs.reading import InGitDirectory, LeadsOut, NotRegular, open_directory, open_input, read_text
from pgvet.inputs.registry import INPUT_KINDS, KINDS, InputKind, host_markers, input_options
from pgvet.paths import is_inside
from pgvet.snapshot.facts import HostFacts


@dataclass(slots=True, eq=False, repr=False)
class SnapshotInputs:
    """The input files of one host by kind (inputs/registry.py); any subset may be present. A kind of several
    files (sysctl_conf) lists them in the order they apply."""

    paths: dict[str, list[Path]] = field(default_factory=dict)
    # files that may be configuration documents (their names say so; their content decides), by name
    documents: list[Path] = field(default_factory=list)
    given: frozenset[Path] = frozenset()  # the files the user named: read as named, not beneath the host directory

    @classmethod
    def of(cls, **given: Path | list[Path] | None) -> SnapshotInputs:
        """``SnapshotInputs.of(meminfo=path, sysctl_conf=[a, b])``: the kinds given, None for absent."""
        inputs = cls()
        for kind, value in given.items():
            if value is not None:
                inputs.paths[KINDS[kind].name] = list(value) if isinstance(value, list) else [value]
        inputs.given = frozenset(inputs.files())
        return inputs

    def first(self, kind: str) -> Path | None:
        """The file of a kind, or None."""
        paths = self.paths.get(KINDS[kind].name)
        return paths[0] if paths else None

    def every(self, kind: str) -> list[Path]:
        """The files of a kind, in the order they apply."""
        return self.paths.get(KINDS[kind].name, [])

    def files(self) -> list[Path]:
        """Every file of every kind (the documents' candidates not among them)."""
        return [path for paths in self.paths.values() for path in paths]

    def is_empty(self) -> bool:
        """No input of a kind named by its file (documents' candidates are inputs only once read)."""
        return not any(self.paths.values())

    def merged(self, explicit: SnapshotInputs) -> SnapshotInputs:
        """These inputs with every input given explicitly taking the place of the discovered one."""
        return SnapshotInputs({**self.paths, **{kind: paths for kind, paths in explicit.paths.items() if paths}},
                              self.documents, self.given | explicit.given)

    def read_beneath(self, path: Path, root: Path) -> Path | None:
        """The directory an input is read beneath (inputs/reading.py, open_input): the host's, None for a file
        the user named."""
        return None if path in self.given else root


def given_inputs(options: Mapping[str, Path | list[Path] | None]) -> SnapshotInputs | None:
    """The input files a command was given one by one, by the parameter names of their options (``meminfo``,
    ``auto_conf``: inputs/registry.py's ``input_options``), or None when none was."""
    kinds = {kind.parameter: kind.name for kind in input_options()}
    given = SnapshotInputs.of(**{kinds[parameter]: value for parameter, value in options.items()})
    return None if given.is_empty() else given


def discover(directory: Path, host: HostFacts | None = None) -> SnapshotInputs:
    """The inputs present in a host directory, refusing any that resolve outside it. ``host`` receives the
    refusals (its warnings), the names the directory's listing shows as regular files (no links) and the
    listing's names, lower-cased (none when the directory cannot be listed)."""
    refused = host.warnings if host is not None else []
    inputs = SnapshotInputs()

    # A link is followed beneath the directory only (open_input), as its inputs are read: what lies where it leads
    # out of it is never looked at, or which refusal is said would tell whether the linting machine has a file, a
    # directory or nothing there.
    def usable(path: Path) -> bool:
        try:
            mode = path.lstat().st_mode
        except OSError:
            return False
        if stat.S_ISREG(mode):
            return True  # a regular file of the directory (no link) lies inside it: no need to resolve
        if not stat.S_ISLNK(mode):  # a directory or a device under an input's name: say so rather than skip it
            refused.append(f"{path.name}: refused, it is not a regular file")
            return False
        try:
            os.close(open_input(str(path), str(directory))[0])
        except LeadsOut:
            refused.append(f"{path.name}: refused, it resolves outside the host directory")
        except (NotRegular, IsADirectoryError):
            refused.append(f"{path.name}: refused, it is not a regular file")
        except InGitDirectory as error:
            refused.append(f"{path.name}: refused, {error.strerror}")
        except OSError:  # a link to nothing, or a loop
            pass
        else:
            return True
        return False

    def directory_usable(path: Path) -> bool:
        try:
            mode = path.lstat().st_mode
        except OSError:
            return False
        if stat.S_ISDIR(mode):
            return True
        if not stat.S_ISLNK(mode):
            refused.append(f"{path.name}: refused, it is not a directory")
            return False
        try:
            os.close(open_directory(str(path), str(directory)))
        except LeadsOut:  # a link to /etc/sysctl.d would lint this machine, not the snapshot
            # not where it leads: resolved on the machine that lints, which a public report must not show
            refused.append(f"{path.name}: refused, it resolves outside the host directory")
        except NotADirectoryError:
            refused.append(f"{path.name}: refused, it is not a directory")
        except InGitDirectory as error:
            refused.append(f"{path.name}: refused, {error.strerror}")
        except OSError:  # a link to nothing, or a loop: the declared values it should hold are missing
            refused.append(f"{path.name}: refused, it links to {os.readlink(path)}, which does not exist")
        else:
            return True
        return False

    entries = _entries(directory)
    present = None if entries is None else frozenset(name.lower() for name in entries)
    if host is not None:
        host.listing = present
    for kind in INPUT_KINDS:
        if kind.many:
            inputs.paths[kind.name] = _every_file(kind, directory, present, usable, directory_usable)
            continue
        for name in kind.file_names:
            if present is not None and name.lower() not in present:
                continue  # not there: no need to ask the file system name by name
            if _listed_as_regular(entries, name):
                inputs.paths[kind.name] = [directory / name]
                if host is not None:
                    host.regular_files.add(name)
                break
            candidate = directory / name
            if usable(candidate):
                inputs.paths[kind.name] = [candidate]
                break
    if entries is not None:
        inputs.documents = [directory / name for name in sorted(entries) if may_be_document(name)
                            and (_listed_as_regular(entries, name) or usable(directory / name))]
        inputs.documents += [directory / name for name in _drop_ins(directory, entries)]
        if host is not None:  # said, so that a chart's templates directory is not "no inputs found" alone
            host.notes.extend(f"{name}: not read: a template file (Helm's helpers, or a configuration that gomplate, "
                              "envsubst or sed renders), whose values are known only once rendered: lint what it "
                              "renders (`helm template`'s output, the chart's values file)"
                              for name in sorted(entries) if name.lower().endswith(_TEMPLATE_SUFFIXES))
    return inputs


def _drop_ins(directory: Path, entries: Mapping[str, os.DirEntry[str]]) -> list[str]:
    """The systemd drop-ins of the directory's ``*.service.d`` folders (``postgresql@16-main.service.d/
    override.conf``), as names within the directory: a unit's drop-in tells by its folder which unit it changes.
    Folders and files that are links are not followed."""
    return [name for folder in sorted(entries)
            if folder.endswith(DROP_IN_FOLDER) and entries[folder].is_dir(follow_symlinks=False)
            for name in drop_ins_of(directory, folder)]


def drop_ins_of(directory: Path, folder: str) -> list[str]:
    """The drop-ins (``*.conf`` regular files, sorted) of a ``*.service.d`` folder of the directory, as names within
    the directory; none when it cannot be listed."""
    try:
        with os.scandir(directory / folder) as listing:
            return sorted(f"{folder}/{entry.name}" for entry in listing
                          if entry.name.endswith(".conf") and entry.is_file(follow_symlinks=False))
    except OSError:
        return []


# The names of files pgvet reads as inputs of their own kind, or as its own configuration: never documents.
_NOT_DOCUMENTS = frozenset(name.lower() for kind in INPUT_KINDS for name in kind.file_names)


YAML_SUFFIXES = (".yaml", ".yml", ".yaml.j2", ".yml.j2")
DROP_IN_FOLDER = ".service.d"  # a systemd unit's folder of drop-ins


def is_yaml_name(name: str) -> bool:
    """Whether a file's name says it is YAML (or a Jinja template of YAML)."""
    return name.lower().endswith(YAML_SUFFIXES)


_TEMPLATE_SUFFIXES = (".tpl", ".gotmpl")


def may_be_document(name: str) -> bool:
    """Whether a file of a host directory may be a configuration document: a name one of their kinds has,
    not hidden (``.pgvet-ignore.yaml``, a CI's file) and no other input's."""
    lowered = name.lower()
    return (not name.startswith(".") and lowered not in _NOT_DOCUMENTS
            and any(lowered.endswith(kind.suffixes) for kind in document_kinds()))


# How far a repository is searched for hosts (``pgvet lint repo/``): far enough for a configuration
# repository's layout, not into a whole file system given by mistake.
MAX_SEARCH_DEPTH = 8
MAX_SEARCH_ENTRIES = 20_000  # files and directories looked at
MAX_SEARCH_BYTES = 64 * 1024 * 1024  # of the files read to tell whether they are documents (YAML is slow to parse)


@dataclass(slots=True, eq=False, repr=False)
class SearchedHosts:
    """What ``hosts_under`` found, and where it stopped short (a notice to say: a host not found is not linted)."""

    hosts: list[Path] = field(default_factory=list)
    stopped: str | None = None
    # files of directories holding no host that declare a PostgreSQL operator's objects pgvet does not read, each
    # with its notice
    unread: list[tuple[Path, str]] = field(default_factory=list)


def hosts_under(root: Path) -> SearchedHosts:
    """The directories under ``root`` that hold hosts, in name order: those holding a host's files (a
    snapshot: not searched further, its conf.d and sysctl.d are its own) and those holding configuration
    documents, recognised by their content. Hidden directories (.git) and links are not followed; files larger
    than a configuration document (MAX_DOCUMENT_BYTES) are not read. The search stops, and says so, past
    MAX_SEARCH_ENTRIES files and directories or MAX_SEARCH_BYTES of files read, and does not go deeper than
    MAX_SEARCH_DEPTH."""
    searched = SearchedHosts()
    found = searched.hosts
    markers = frozenset(marker.lower() for marker in host_markers())
    seen = read = 0
    claimed: set[str] = set()  # files a kustomization above lists: its own documents, no host of their directory's
    # the postgresql.conf files a document above runs its host with (a compose service's mounted config_file): the
    # directory holding one and no other host's file is that host's, not a host of its own
    mounted: set[str] = set()
    for current, directories, files in os.walk(root):
        depth = os.path.relpath(current, root).count(os.sep) + (current != os.fspath(root))
        visible = sorted(name for name in directories if not name.startswith("."))
        directories[:] = visible if depth < MAX_SEARCH_DEPTH else []
        if visible and depth >= MAX_SEARCH_DEPTH and searched.stopped is None:
            searched.stopped = (f"{root}: directories deeper than {MAX_SEARCH_DEPTH} levels were not searched for "
                                f"hosts (such as {os.path.join(current, visible[0])}): give them")
        seen += len(visible)
        names = {name.lower() for name in (*files, *directories)}
        if names & markers == {"postgresql.conf"} and any(
                os.path.normpath(os.path.join(current, name)) in mounted
                for name in files if name.lower() == "postgresql.conf"):
            directories.clear()
            continue
        if names & markers:
            found.append(root if current == os.fspath(root) else Path(current))  # a fleet's hosts given one by one
            directories.clear()
            continue
        # a unit's drop-ins are read with the directory that holds their folder, not as a host of their own
        drop_ins = [name for folder in directories
                    if folder.endswith(DROP_IN_FOLDER) and not os.path.islink(os.path.join(current, folder))
                    for name in drop_ins_of(Path(current), folder)]
        directories[:] = [name for name in directories if not name.endswith(DROP_IN_FOLDER)]
        # a kustomization's patches and resources in subdirectories and its components' files are its directory's
        # documents; a component's directory is no host (its documents are read with the kustomizations listing it)
        listed = read_listed(Path(current)) if any(name in KUSTOMIZATION_NAMES for name in files) else None
        if listed is not None:
            real = os.path.realpath(current)
            claimed.update(str(Path(current, os.path.relpath(path, real))) for path, _ in listed.files
                           if is_inside(path, real))
            if listed.component:
                continue
        candidates = [(Path(current, name), name, Path(current)) for name in [*sorted(files), *drop_ins]
                      if not claimed or str(Path(current, name)) not in claimed]
        if listed is not None:
            candidates += [(Path(path), os.path.relpath(path, real), Path(beneath)) for path, beneath in listed.files]
        unread_here = []
        for candidate, name, beneath in candidates:
            seen += 1
            if seen > MAX_SEARCH_ENTRIES:
                searched.stopped = (f"{root}: the search for hosts stopped after {MAX_SEARCH_ENTRIES} files and "
                                    f"directories, at {current}: give the directories of the hosts")
                return searched
            if not (may_be_document(candidate.name) or name in drop_ins):
                continue
            try:
                size = candidate.lstat().st_size
            except OSError:
                continue
            read += size if size <= MAX_DOCUMENT_BYTES else 0  # a larger one is not read
            if read > MAX_SEARCH_BYTES:
                searched.stopped = (f"{root}: the search for hosts stopped after reading {MAX_SEARCH_BYTES} bytes of "
                                    f"files that may be configuration documents, at {candidate}: give the "
                                    "directories of the hosts")
                return searched
            text = _document_text(candidate, name, beneath)
            declared = _declared(text, name) if text is not None else None
            if declared is not None:
                found.append(Path(current))
                mounted.update(os.path.normpath(os.path.join(current, host.configuration_file.value))
                               for host in declared if host.configuration_file is not None)
                break
            if text is not None and (operator := unread_operator(text)) is not None:
                unread_here.append((candidate, unread_notice(candidate, operator)))
        else:
            searched.unread.extend(unread_here)
    return searched


@dataclass(slots=True, eq=False, repr=False)
class MountSearch:
    """What ``mounting_host`` read in a run: the configuration files each directory's documents mount, each
    directory read once (pre-commit passes a file of every directory of a repository: each searched the same
    documents above, a megabyte of compose YAML every time), and the bytes read, at most MAX_SEARCH_BYTES as the
    search for hosts; where the search stopped short, said as a notice (a file is then linted as its directory)."""

    mounted: dict[Path, frozenset[str]] = field(default_factory=dict)
    read: int = 0
    stopped: str | None = None


def mounting_host(directory: Path, boundary: Path, search: MountSearch) -> Path | None:
    """The directory above ``directory``, not above ``boundary``, whose configuration document runs a host with
    ``directory``'s postgresql.conf (a compose service's mounted config_file): that host's, as ``hosts_under`` finds
    it. None when ``directory`` holds another host's file than postgresql.conf, or no document above mounts it."""
    try:
        names = {entry.name.lower() for entry in os.scandir(directory)}
    except OSError:
        return None
    if names & frozenset(marker.lower() for marker in host_markers()) != {"postgresql.conf"}:
        return None
    conf = os.path.normpath(os.path.abspath(directory / "postgresql.conf"))
    for above in Path(os.path.abspath(directory)).parents:
        if above != boundary and boundary not in above.parents:
            return None
        mounted = search.mounted.get(above)
        if mounted is None:
            mounted = _mounted_in(above, search)
            if mounted is None:
                return None
            search.mounted[above] = mounted
        if conf in mounted:
            return above
        if above == boundary:
            return None
    return None


def _mounted_in(above: Path, search: MountSearch) -> frozenset[str] | None:
    """The configuration files the documents of ``above`` mount, as paths; None when it cannot be listed or the
    search has read its bytes (said once)."""
    try:
        files = sorted((entry.name, entry.stat(follow_symlinks=False).st_size) for entry in os.scandir(above)
                       if entry.is_file(follow_symlinks=False))
    except OSError:
        return None
    mounted: set[str] = set()
    for name, size in files:
        if not may_be_document(name) or size > MAX_DOCUMENT_BYTES:  # a larger one is not read
            continue
        search.read += size
        if search.read > MAX_SEARCH_BYTES:
            search.stopped = search.stopped or (
                f"{above}: the search for the compose services that mount a postgresql.conf given stopped after "
                f"reading {MAX_SEARCH_BYTES} bytes of files that may be configuration documents, at {above / name}: "
                "a postgresql.conf given below it is linted as its directory; give the service's directory")
            return None
        text = _document_text(above / name, name, above)
        declared = _declared(text, name) if text is not None else None
        mounted.update(os.path.normpath(os.path.join(above, host.configuration_file.value))
                       for host in declared or () if host.configuration_file is not None)
    return frozenset(mounted)


def is_document(path: Path, shown: str | None = None, root: Path | None = None) -> bool:
    """Whether a file is a configuration document pgvet reads that declares something (one it cannot read is
    none: it is not an input; one its parser refuses is, so that its error is said). ``shown``: its name as its
    host shows it (a drop-in's with its folder), its own name by default; it is read beneath ``root``, its
    directory by default."""
    shown = shown or path.name
    text = _document_text(path, shown, root or path.parent)
    return text is not None and _declares(text, shown)


def _declares(text: str, shown: str) -> bool:
    return _declared(text, shown) is not None


def _declared(text: str, shown: str) -> list[DeclaredHost] | None:
    """What a document pgvet reads declares (a document its parser refuses declares nothing it can tell, but is
    one), None for a file that is no such document or declares nothing."""
    kind = recognise(shown, text)
    if kind is None:
        return None
    try:
        return kind.parse(text, shown) or None
    except InputError:
        return []


def unread_notice_of(path: Path) -> str | None:
    """Why a file that is no configuration document pgvet reads is PostgreSQL's configuration all the same — a
    PostgreSQL operator's objects pgvet has no reader for, values given over a chart's whose values it reads, a
    template of PostgreSQL's configuration — as the notice of its leaving out; None for any other file or one it
    cannot read."""
    text = _document_text(path, path.name, path.parent)
    if text is None:
        return None
    if (operator := unread_operator(text)) is not None:
        return unread_notice(path, operator)
    if chart_override(text, path.name) is not None:
        return (f"{path}: not linted: values given over CloudNativePG's cluster chart's values, which pgvet does not "
                "merge with them: lint the chart's values' directory (it says so), or what the chart renders")
    if "{{" in text and "postgres" in text.lower():  # as a directory's documents say it (snapshot/declared_hosts.py)
        return (f"{path}: not linted: a template ({{{{ … }}}}: Helm, Jinja), whose values are known only once "
                "rendered: lint what it renders (`helm template`'s output, the chart's values file)")
    return None


def unread_notice(path: Path, operator: str) -> str:
    """The notice of a file left out that declares a PostgreSQL operator's objects pgvet does not read."""
    return (f"{path}: not linted: {operator}, whose manifests pgvet does not read (docs/integrations.md lists what it "
            "reads)")


def _document_text(path: Path, shown: str, root: Path) -> str | None:
    """The text of a file that may be a configuration document: a regular file no larger than one, readable."""
    try:
        status = path.lstat()
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_DOCUMENT_BYTES:
            return None
        return read_text(path, shown, root)
    except (OSError, InputError):
        return None


def _every_file(kind: InputKind, directory: Path, present: frozenset[str] | None, usable: Callable[[Path], bool],
                directory_usable: Callable[[Path], bool]) -> list[Path]:
    """The files of a kind of several: its directory's (sysctl.d/*.conf) in their order, then its files
    (sysctl --system applies /etc/sysctl.conf last)."""
    found: list[Path] = []
    if kind.directory is not None:
        folder = directory / kind.directory
        if (present is None or kind.directory in present) and directory_usable(folder):
            by_name = {entry.name: entry for entry in folder.iterdir()}
            found.extend(by_name[name] for name in kind.order(by_name) if usable(by_name[name]))
    found.extend(directory / name for name in kind.file_names
                 if (present is None or name in present) and usable(directory / name))
    return found


def _entries(directory: Path) -> dict[str, os.DirEntry[str]] | None:
    """The entries of a directory by name, from one listing; None when it cannot be listed (each name is
    then looked up)."""
    try:
        with os.scandir(directory) as listing:
            return {entry.name: entry for entry in listing}
    except OSError:
        return None


def _listed_as_regular(entries: dict[str, os.DirEntry[str]] | None, name: str) -> bool:
    """Whether the listing shows ``name`` as a regular file (on Linux the type comes with the names: no stat);
    False sends the caller to lstat it."""
    entry = entries.get(name) if entries is not None else None
    try:
        return entry is not None and entry.is_file(follow_symlinks=False)
    except OSError:
        return False
