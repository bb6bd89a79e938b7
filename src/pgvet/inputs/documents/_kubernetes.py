"""What Kubernetes operators' manifests share: multi-document YAML, resource quantities, a container's resources as
host keys. A private module (its name starts with ``_``): no document kind of its own."""

from __future__ import annotations

import math
import re
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, yaml_line
from pgvet.provenance import Located, Source
from pgvet.safeyaml import YamlError, load_yaml, load_yaml_documents

MAX_DOCUMENT_CHARS = 1024 * 1024
# The problem kind of what the API server or the operator refuses (fatal: the manifest is not applied, PGV407);
# its target is the parameter's name.
REFUSED = "operator-refused"
# The problem kind of a parameter the operator sets itself whatever the manifest says (PGV435); its target is the
# parameter's name. What Patroni does with its dynamic configuration is patroni.dcs_parameter's.
OVERRIDES = "operator-overrides"

# Kubernetes' quantity suffixes (apimachinery resource.Quantity): binary, decimal and milli.
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?\s*$")
_FACTORS = {None: 1, "m": 0.001, "k": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4, "P": 1000**5, "E": 1000**6,
            "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5, "Ei": 1024**6}
RUNTIME_SHM_SIZE = 64 * 1024**2  # /dev/shm of a container without a memory-backed volume (Docker, containerd)
HUGEPAGE_SIZES = {"hugepages-2Mi": 2 * 1024**2, "hugepages-1Gi": 1024**3}


def quantity(value: object) -> float | None:
    """A Kubernetes quantity (``500Mi``, ``1G``, ``250m``, ``2``, ``1e3``) as a number; None when it is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value)
    if match is None or (match.group(2) is not None and match.group(3) is not None):
        return None
    exponent = int(match.group(2) or 0)
    if abs(exponent) > 30:
        return None
    return float(match.group(1)) * 10.0**exponent * _FACTORS[match.group(3)]


def load_manifests(text: str, path: str) -> list[Any]:
    """Every document of a manifest file; ParseError at the line of invalid YAML."""
    return _loaded(text, path, every=True)  # type: ignore[no-any-return]


def load_values(text: str, path: str) -> Any:
    """One YAML document (a Helm values file); ParseError at the line of invalid YAML."""
    return _loaded(text, path, every=False)


def _loaded(text: str, path: str, *, every: bool) -> Any:
    if len(text) > MAX_DOCUMENT_CHARS:
        raise ParseError(f"{len(text)} characters: more than pgvet reads in a configuration document "
                         f"({MAX_DOCUMENT_CHARS})", Source(path, 1))
    try:
        return load_yaml_documents(text) if every else load_yaml(text)
    except YamlError as error:
        raise ParseError(f"invalid YAML: {error.message}", Source(path, error.line or 1)) from None


def file_stem(path: str) -> str:
    """A file's name without its directory and suffix: the name of a host whose file does not name it (a Helm
    values file: the release's name is given on helm's command line)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]


def get(node: Any, *keys: str) -> Any:
    """The value at a path of mapping keys, None where one is missing or not a mapping."""
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def at(node: Any, key: str, path: str) -> Source:
    """The place of a key of a mapping."""
    return Source(path, yaml_line(node, key) or yaml_line(node))



def apply_resources(declared: DeclaredHost, resources: Any, path: str, what: str, placed: Source | None = None) -> None:
    """A container's ``resources`` (limits, requests) as host keys: the memory limit is the RAM of every memory
    formula (``ram`` and ``memory_limit``), the CPU limit the CPUs (rounded up: 500m is part of one CPU),
    ``hugepages-2Mi``/``hugepages-1Gi`` the huge page pool. ``what`` names the object in messages; ``placed``, when
    given, is the place of every value (resources a preset stands for)."""
    if not isinstance(resources, dict):
        return

    def where(node: Any, key: str) -> Source:
        return placed or at(node, key, path)

    limits, requests = resources.get("limits"), resources.get("requests")
    for node, targets in ((limits, ("ram", "memory_limit")), (requests, ("memory_request",))):
        if isinstance(node, dict) and "memory" in node:
            size = _bytes(node, "memory", where(node, "memory"), what)
            for target in targets:
                declared.host[target] = Located(size, where(node, "memory"))
    if isinstance(limits, dict) and "cpu" in limits:
        cores = quantity(limits["cpu"])
        if cores is None or cores <= 0:
            raise ParseError(f"{what}: resources.limits.cpu {limits['cpu']!r} is no CPU quantity Kubernetes accepts "
                             "(2, 1.5, 500m)", where(limits, "cpu"))
        declared.host["cpus"] = Located(max(1, math.ceil(cores - 1e-9)), where(limits, "cpu"))
        declared.host["cpu_limit"] = Located(cores, where(limits, "cpu"))
    for node in (limits, requests):  # Kubernetes requires huge pages in limits; requests must equal them
        if not isinstance(node, dict):
            continue
        for key, page in HUGEPAGE_SIZES.items():
            if key in node and "hugepages" not in declared.host:
                declared.host["hugepages"] = Located(_bytes(node, key, where(node, key), what), where(node, key))
                declared.host["hugepage_size"] = Located(page, where(node, key))


def memory_size(node: dict[str, Any], key: str, path: str, what: str) -> int:
    """A memory quantity of a mapping, in bytes (ParseError at its line when Kubernetes would refuse it)."""
    return _bytes(node, key, at(node, key, path), what)


def _bytes(node: dict[str, Any], key: str, source: Source, what: str) -> int:
    size = quantity(node[key])
    if size is None:
        raise ParseError(f"{what}: {key} {node[key]!r} is no memory quantity Kubernetes accepts (512Mi, 4Gi, 1G)",
                         source)
    return round(size)
