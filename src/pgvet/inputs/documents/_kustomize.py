"""Kustomize's kustomization files, read only to tell whether a directory is an overlay: pgvet does not build one
(its bases are elsewhere, its patches change the documents beside it), so it says so rather than judge the partial
documents as if they were what ``kustomize build`` renders. A private module: no document kind of its own."""

from __future__ import annotations

from typing import Any

from pgvet.safeyaml import load_yaml

# the names kustomize looks for in a directory
KUSTOMIZATION_NAMES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})
_SOURCES = ("resources", "bases", "components")
_PATCHES = ("patches", "patchesStrategicMerge", "patchesJson6902")


def overlay(text: str) -> str | None:
    """What ``kustomize build`` would take from outside the directory or change in its files, said in a few words
    (``bases ../base; patches cluster.yaml``); None for a kustomization that gathers the directory's own files
    unchanged. YamlError when the text is no YAML."""
    document: Any = load_yaml(text)
    if not isinstance(document, dict):
        return None
    # an entry that is no file of this directory (a directory, a path up or down, a remote URL) is read elsewhere
    bases = [str(entry) for key in _SOURCES for entry in _entries(document.get(key)) if "/" in str(entry)]
    patches = []
    for key in _PATCHES:
        for entry in _entries(document.get(key)):
            path = entry.get("path") if isinstance(entry, dict) else entry
            patches.append(path if isinstance(path, str) and "\n" not in path else "an inline patch")
    said = [f"{name} {', '.join(entries)}" for name, entries in (("bases", bases), ("patches", patches)) if entries]
    return "; ".join(said) or None


def _entries(node: object) -> list[Any]:
    return node if isinstance(node, list) else []
