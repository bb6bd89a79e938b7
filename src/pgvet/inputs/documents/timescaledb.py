"""The values of Timescale's timescaledb-single Helm chart (timescale/helm-charts charts/timescaledb-single).

The chart renders ``patroni:`` as the members' Patroni configuration (templates/configmap-patroni.yaml: toYaml of
the values), read here as a Patroni file is, each parameter at its line of the values. Its pods' init container
``tstune`` (templates/statefulset-timescaledb.yaml, under ``timescaledbTune.enabled``, true by default) runs
timescaledb-tune on the pod's resources and writes what it recommends into a file that postgresql.base.conf
includes at its end: below what Patroni sets. What it recommends depends on its version and on the resources the
pod gets: each parameter it tunes that Patroni does not set is unknown, said in a note. max_wal_size and
min_wal_size too: the init container appends them from the volumes' sizes, after timescaledb-tune ran in some
versions of the chart and before it (which then writes its own) in later ones. The replicaCount members are one
host (the file's), its RAM the container's ``resources``.
"""

from __future__ import annotations

import re
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind, get, load_document
from pgvet.inputs.documents._kubernetes import apply_resources, at, file_stem
from pgvet.inputs.documents.patroni import CMDLINE_OPTIONS, patroni_member
from pgvet.provenance import Located, Source

KIND_NAME = "timescaledb-single"
_MARKERS = ("timescaledbTune", "timescale/timescaledb-ha", "timescaledb-single")
_TOP_LEVEL_PATRONI = re.compile(r"^patroni:[ \t]*(#.*)?$", re.MULTILINE)
_IMAGE_TAG = re.compile(r"^pg(\d{2})(?:[.-]|$)")
# What timescaledb-tune recommends (timescale/timescaledb-tune pkg/pgtune: memory.go, parallel.go — with more than
# one CPU —, wal.go, misc.go); max_connections is left out: Patroni passes its own on postgres' command line
_TUNED = ("shared_buffers", "effective_cache_size", "maintenance_work_mem", "work_mem",
          "timescaledb.max_background_workers", "max_worker_processes", "max_parallel_workers_per_gather",
          "max_parallel_workers", "wal_buffers", "min_wal_size", "max_wal_size", "default_statistics_target",
          "random_page_cost", "checkpoint_completion_target", "max_locks_per_transaction", "effective_io_concurrency")


def _recognises(name: str, text: str) -> bool:
    if not _TOP_LEVEL_PATRONI.search(text) or not any(marker in text for marker in _MARKERS):
        return False
    try:
        values = load_document(text, name, pyyaml=True)
    except ParseError:  # the chart's own keys in an invalid file: claimed, parse() says what is wrong
        return True
    return isinstance(values, dict) and isinstance(values.get("patroni"), dict)


def parse_timescaledb(text: str, path: str) -> list[DeclaredHost]:
    values = load_document(text, path, pyyaml=True)
    if not isinstance(values, dict) or not isinstance(values.get("patroni"), dict):
        return []
    declared = patroni_member(DeclaredHost(KIND_NAME, file_stem(path), at(values, "patroni", path)),
                              values["patroni"], path)
    _version(declared, values, path)
    count = values.get("replicaCount", 3)
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        declared.host["instances"] = Located(count, at(values, "replicaCount", path) if "replicaCount" in values
                                             else declared.source)
    apply_resources(declared, values.get("resources"), path, "resources")
    tune = get(values, "timescaledbTune", "enabled")
    if tune is not False:
        _tuned(declared, at(values["timescaledbTune"], "enabled", path) if tune is not None else declared.source)
    return [declared]


def _version(declared: DeclaredHost, values: dict[str, Any], path: str) -> None:
    """The major version: ``version`` (the chart puts its bin directory first in PATH), else the image's tag
    (pg14.5-ts2.8.1-p1)."""
    version = values.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        declared.host["pg_version"] = Located(version, at(values, "version", path))
        return
    tag = get(values, "image", "tag")
    match = _IMAGE_TAG.match(tag) if isinstance(tag, str) else None
    if match is not None:
        declared.host["pg_version"] = Located(int(match.group(1)), at(values["image"], "tag", path))


def _tuned(declared: DeclaredHost, source: Source) -> None:
    """What the tstune init container writes below Patroni's settings: unknown where Patroni leaves it out."""
    own = {setting.name for setting in declared.settings}  # Patroni's own defaults too: all written after it
    # and what Patroni passes on postgres' command line (max_worker_processes…), its default where nothing sets it
    unknown = [name for name in _TUNED if name not in own and name not in CMDLINE_OPTIONS]
    for name in unknown:
        declared.unknown[f"pg.{name}"] = source
    if unknown:
        declared.notes.append(f"{source}: timescaledbTune.enabled: timescaledb-tune sets {', '.join(unknown)} from "
                              "the pod's resources, in a file pgvet cannot see: not judged")


KIND = DocumentKind(KIND_NAME, "timescaledb-single Helm chart values: its patroni: configuration, and what its "
                    "tstune init container sets", (".yaml", ".yml"), _recognises, parse_timescaledb)
