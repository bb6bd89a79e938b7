"""Kustomize's kustomization files, read only to tell whether a directory is an overlay: pgvet does not build one
(its bases are elsewhere, its patches change the documents beside it), so it says so rather than judge the partial
documents as if they were what ``kustomize build`` renders; and an overlay's hosts are named after it, since every
overlay of a base declares the base's objects under their names. A private module: no document kind of its own."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pgvet.safeyaml import load_yaml

# the names kustomize looks for in a directory
KUSTOMIZATION_NAMES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})
_SOURCES = ("resources", "bases", "components")
_PATCHES = ("patches", "patchesStrategicMerge", "patchesJson6902")


@dataclass(frozen=True, slots=True)
class Overlay:
    """What ``kustomize build`` would take from outside a directory (``bases``: directories, paths up or down,
    remote URLs) or change in its files (``patches``: their paths, ``an inline patch``); ``files``: the resources
    it takes from the directory itself."""

    bases: tuple[str, ...]
    patches: tuple[str, ...]
    files: tuple[str, ...]

    def said(self) -> str:
        """In a few words: ``bases ../base; patches cluster.yaml``."""
        return "; ".join(f"{name} {', '.join(entries)}"
                         for name, entries in (("bases", self.bases), ("patches", self.patches)) if entries)


def overlay(text: str) -> Overlay | None:
    """What a kustomization takes from elsewhere or patches; None for one that gathers the directory's own files
    unchanged. YamlError when the text is no YAML."""
    document: Any = load_yaml(text)
    if not isinstance(document, dict):
        return None
    # an entry that is no file of this directory (a directory, a path up or down, a remote URL) is read elsewhere
    sources = [str(entry) for key in _SOURCES for entry in _entries(document.get(key))]
    bases = tuple(entry for entry in sources if "/" in entry)
    patches = []
    for key in _PATCHES:
        for entry in _entries(document.get(key)):
            path = entry.get("path") if isinstance(entry, dict) else entry
            patches.append(path if isinstance(path, str) and "\n" not in path else "an inline patch")
    files = tuple(entry for entry in sources if "/" not in entry)
    return Overlay(bases, tuple(patches), files) if bases or patches else None


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


def _entries(node: object) -> list[Any]:
    return node if isinstance(node, list) else []
