"""Kustomize's kustomization files. pgvet does not build them (a base is elsewhere, a patch changes a document
beside it): it says so rather than judge the partial documents as if they were what ``kustomize build`` renders;
an overlay's hosts are named after it, since every overlay of a base declares the base's objects under their names;
and what a kustomization applies to its own resources is read with its directory, as kustomize reads it — the
patches and resources it lists in its subdirectories, and its components (``kind: Component``, listed under
``components:``: their patches change the resources of the kustomization that lists them), never a host of their
own. A private module: no document kind of its own."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from pgvet.errors import InputError
from pgvet.inputs.documents import MAX_DOCUMENT_BYTES, yaml_line
from pgvet.inputs.reading import read_text
from pgvet.paths import is_inside, real_path_within, repository_of
from pgvet.safeyaml import YamlError, load_yaml

# the names kustomize looks for in a directory, in its order (it refuses a directory holding more than one)
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_RESOURCES = ("resources", "bases")
_PATCHES = ("patches", "patchesStrategicMerge", "patchesJson6902")
INLINE = "an inline patch"
# Components read for one kustomization, nested ones included: a repository's overlays list a few; a hostile one
# must not make every overlay of a search read thousands of files.
MAX_COMPONENTS = 50
# Warnings said of one directory's kustomization and its components: a file of a million entries that name nothing
# must not print a million lines.
MAX_WARNINGS = 20
# Entries read of each list of a kustomization (resources, components, patches): real ones list a few dozen.
MAX_ENTRIES = 1000


class Entry(NamedTuple):
    """A path a kustomization lists (INLINE for a patch written in it), at its line."""

    path: str
    line: int | None


class Kustomization(NamedTuple):
    """A kustomization's entries that name files or directories (``bases`` among the resources, as kustomize reads
    them); ``component``: one of ``kind: Component``."""

    component: bool
    resources: tuple[Entry, ...]
    components: tuple[Entry, ...]
    patches: tuple[Entry, ...]
    unread: int = 0  # entries beyond MAX_ENTRIES of a list, left out


def parse_kustomization(text: str) -> Kustomization | None:
    """A kustomization's entries; None for a file that is no mapping. YamlError when the text is no YAML."""
    document: Any = load_yaml(text)
    if not isinstance(document, dict):
        return None

    unread = 0

    def entries(*keys: str) -> tuple[Entry, ...]:
        nonlocal unread
        found = []
        for key in keys:
            node = document.get(key)
            listed = node if isinstance(node, list) else []
            unread += max(0, len(listed) - MAX_ENTRIES)
            for index, entry in enumerate(listed[:MAX_ENTRIES]):
                path = entry.get("path") if isinstance(entry, dict) else entry
                if key in _PATCHES and (not isinstance(path, str) or "\n" in path):
                    path = INLINE  # a patch written in the kustomization (patch:, or a text of patchesStrategicMerge)
                if isinstance(path, str) and path:
                    found.append(Entry(path, yaml_line(node, index)))
        return tuple(found)

    return Kustomization(document.get("kind") == "Component", entries(*_RESOURCES), entries("components"),
                         entries(*_PATCHES), unread)


class Overlay(NamedTuple):
    """What ``kustomize build`` would take from outside a directory (``bases``: directories, paths up or down,
    remote URLs; ``components``) or change in its files (``patches``: their paths, ``an inline patch``)."""

    bases: tuple[str, ...]
    components: tuple[str, ...]
    patches: tuple[str, ...]

    def said(self) -> str:
        """In a few words: ``bases ../base; components ../components/ha; patches cluster.yaml``."""
        return "; ".join(f"{name} {', '.join(entries)}" for name, entries in (
            ("bases", self.bases), ("components", self.components), ("patches", self.patches)) if entries)


@dataclass(slots=True, eq=False, repr=False)
class Listed:
    """What a directory's kustomization (``shown``, its file's name) lists that pgvet reads with the directory
    (read_listed), besides the directory's own files. ``files``: (path, the directory it is read beneath), in
    kustomize's order — its patches and resources in subdirectories, then each component's files. ``resources``,
    ``patches``: the real paths of the files listed as such (the directory's own, a component's); ``components``:
    each component's file → the component as its kustomization names it. ``overlay``: what it takes from elsewhere
    or patches (None for one that gathers its own files unchanged). ``warnings``: what could not be read, each at
    its line."""

    shown: str
    component: bool = False
    overlay: Overlay | None = None
    files: list[tuple[str, str]] = field(default_factory=list)
    resources: set[str] = field(default_factory=set)
    patches: set[str] = field(default_factory=set)
    components: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    unsaid: int = 0  # warnings beyond MAX_WARNINGS, counted in the last one

    def warn(self, text: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)
            return
        self.unsaid += 1
        self.warnings[-1:] = [f"{self.shown}: {self.unsaid} more entries not read (the first {MAX_WARNINGS - 1} "
                              "are said)"]


def kustomization_file(directory: Path) -> Path | None:
    """The directory's kustomization file, None when it has none."""
    for name in KUSTOMIZATION_NAMES:
        candidate = directory / name
        try:
            if candidate.is_file():
                return candidate
        except (OSError, ValueError):  # a name too long, a NUL in it, a directory not searchable: none there
            return None
    return None


def read_listed(directory: Path) -> Listed | None:
    """What the directory's kustomization lists that pgvet reads with it: None when it has no kustomization.

    A patch or a resource file in a subdirectory is read beneath the directory (kustomize reads no patch outside
    it); a component inside the directory's repository (outside any repository, inside the directory itself), with
    the patches and resources it lists beneath it: pgvet reads nothing outside the repository it lints. A component
    elsewhere (``../../..``, an absolute path, a link out) is refused with a warning at its line; a remote one
    (a URL) is not read."""
    real = os.path.realpath(directory)
    path = kustomization_file(Path(real))
    if path is None:
        return None
    listed = Listed(path.name)
    kustomization = _kustomization(path, path.name, real, listed)
    if kustomization is None:
        return listed
    listed.component = kustomization.component
    bases = _own_files(kustomization, real, listed.shown, listed)
    boundary = repository_of(real) or real
    pending = [(entry, real, listed.shown) for entry in kustomization.components]
    seen = {real}
    while pending:
        entry, parent, shown = pending.pop(0)
        where = f"{shown}:{entry.line}" if entry.line else shown
        if "\0" in entry.path:
            listed.warn(f"{where}: component {entry.path!r}: not read, no such path")
            continue
        # resolved beneath the boundary: where a path or a link out leads is not looked up
        component = real_path_within(os.path.join(parent, entry.path), boundary, boundary)
        if component is None:
            what = "repository" if boundary != real else "directory (no repository holds it)"
            # where it resolves is not said: a chain of links outside would show what they name (a host's files)
            listed.warn(f"{where}: component {entry.path}: refused, it lies outside the {what}: pgvet reads "
                        "nothing outside the repository it lints")
            continue
        if component in seen:
            continue
        if len(seen) > MAX_COMPONENTS:
            listed.warn(f"{where}: component {entry.path}: not read, more than {MAX_COMPONENTS} "
                                   "components for one kustomization")
            break
        seen.add(component)
        found = kustomization_file(Path(component))
        if found is None:
            listed.warn(f"{where}: component {entry.path}: not read, no kustomization found there (a "
                                   "remote one, or a directory that is not there)")
            continue
        display = os.path.relpath(found, real)
        inner = _kustomization(found, display, boundary, listed)
        if inner is None:
            continue
        if not inner.component:
            listed.warn(f"{where}: component {entry.path}: not read, its kustomization is no Component "
                                   "(kind: Component): kustomize refuses it under components:")
            continue
        before = len(listed.files)
        _own_files(inner, component, display, listed, beneath=boundary)
        for file, _ in listed.files[before:]:
            listed.components.setdefault(os.path.realpath(file), os.path.relpath(component, real))
        pending.extend((nested, component, display) for nested in inner.components)
    if bases or kustomization.components or kustomization.patches:
        listed.overlay = Overlay(bases, tuple(entry.path for entry in kustomization.components),
                                 tuple(entry.path for entry in kustomization.patches))
    return listed


def _kustomization(path: Path, shown: str, beneath: str, listed: Listed) -> Kustomization | None:
    """A kustomization read beneath a directory; None, with a warning, when it cannot be read."""
    try:
        status = path.stat()
        if status.st_size > MAX_DOCUMENT_BYTES:
            raise InputError(f"more than {MAX_DOCUMENT_BYTES} bytes, more than pgvet reads in a kustomization")
        parsed = _parsed(str(path), shown, beneath, (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns))
        if parsed is not None and parsed.unread:
            listed.warn(f"{shown}: {parsed.unread} entries not read, beyond the first {MAX_ENTRIES} of a list")
        return parsed
    except (OSError, InputError, YamlError) as error:
        reason = error.strerror or str(error) if isinstance(error, OSError) else error.message
        said = " (if this directory is a kustomize overlay, its documents are judged without their bases and " \
               "patches)" if shown == listed.shown else ""
        listed.warn(f"{shown}: not read: {reason}{said}")
    return None


@lru_cache(maxsize=256)
def _parsed(path: str, shown: str, beneath: str, identity: tuple[int, int, int, int]) -> Kustomization | None:
    """A kustomization's entries, parsed once a run for the file as it is (``identity``: its device, inode, size and
    time): every overlay of a search reads the components it lists, and the search and the lint both read them."""
    return parse_kustomization(read_text(Path(path), shown, Path(beneath)))


def _own_files(kustomization: Kustomization, directory: str, shown: str, listed: Listed,
               beneath: str | None = None) -> tuple[str, ...]:
    """The files a kustomization (of ``directory``, a real path) lists in it and below, noted in ``listed``: those
    in subdirectories, or all of them with ``beneath`` (a component's: its repository), added to its files; the
    resources it takes from elsewhere (a path up or down, a URL) are returned."""
    elsewhere = []
    for kind, entries in (("resource", kustomization.resources), ("patch", kustomization.patches)):
        for entry in entries:
            if entry.path == INLINE:
                continue
            path = os.path.normpath(os.path.join(directory, entry.path))
            inside = is_inside(path, directory)
            if inside and os.path.isfile(path):
                (listed.resources if kind == "resource" else listed.patches).add(os.path.realpath(path))
                if beneath is not None or os.path.dirname(path) != directory:
                    listed.files.append((path, beneath or directory))
            elif kind == "resource":
                if "/" in entry.path:  # a directory (a base), a path up, a URL: what kustomize takes from elsewhere
                    elsewhere.append(entry.path)
            else:
                where = f"{shown}:{entry.line}" if entry.line else shown
                why = "no such file" if inside else "it is not in or below the kustomization's directory, and " \
                                                    "kustomize refuses it"
                listed.warn(f"{where}: patch {entry.path}: not read, {why}")
    return tuple(elsewhere)


def overlay_path(directory: str, bases: tuple[str, ...], repository: str | None) -> str | None:
    """How an overlay's hosts are told from its base's and its sibling overlays' (which declare the same objects):
    its directory (a real path) relative to its repository's root (``overlays/staging``), the same whatever path
    or directory pgvet is run from; outside a repository, relative to the directory holding it and the bases it
    takes from above (``../../base``), else its name. None for a repository's root itself: nothing to tell apart
    in it, and its directory's name is the checkout's, which differs from one clone to another."""
    if repository is not None and os.path.normpath(directory) == os.path.normpath(repository):
        return None
    if repository is not None and directory.startswith(repository.rstrip(os.sep) + os.sep):
        return os.path.relpath(directory, repository)
    above = [os.path.normpath(os.path.join(directory, base)) for base in bases
             if base.startswith("../") or base == ".."]
    if above:
        relative = os.path.relpath(directory, os.path.commonpath([directory, *above]))
        if relative != ".":
            return relative
    return os.path.basename(directory)
