"""Zalando postgres-operator's ``postgresql`` manifests (apiVersion acid.zalan.do/v1, kind postgresql): one host per
object, its Spilo pods running Patroni.

``spec.postgresql.parameters`` are the settings: the operator hands Patroni a few of them as local parameters
(shared_buffers, logging, ssl, shared_preload_libraries…) and the rest as dynamic configuration, which Patroni
takes as it takes its own file's (patroni.dcs_parameter). The CRD takes parameters' values as strings only: the API
server refuses an unquoted number or boolean. ``spec.patroni`` holds Patroni's settings (synchronous_mode, ttl…),
no PostgreSQL parameter.
"""

from __future__ import annotations

import re
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind, conf_setting, get, yaml_line
from pgvet.inputs.documents._kubernetes import (
    OVERRIDES,
    REFUSED,
    RUNTIME_SHM_SIZE,
    apply_resources,
    at,
    file_stem,
    load_manifests,
)
from pgvet.inputs.documents.patroni import dcs_parameter
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.provenance import Located, Source

KIND_NAME = "zalando"
_KIND_LINE = re.compile(r"^kind:[ \t]*[\"']?postgresql[\"']?[ \t]*(#.*)?$", re.MULTILINE)


def _recognises(name: str, text: str) -> bool:
    # a template of manifests (Helm's, Jinja's {{ }}) is no manifest until rendered: pgvet does not guess its values
    if "acid.zalan.do/" not in text or "{{" in text or _KIND_LINE.search(text) is None:
        return False
    try:  # a file of partial manifests that set nothing (a test's assertions) declares nothing: no document
        return bool(parse_zalando(text, name))
    except ParseError:  # a manifest the API server refuses: said at its line
        return True


def parse_zalando(text: str, path: str) -> list[DeclaredHost]:
    hosts = [_cluster(document, path) for document in load_manifests(text, path)
             if isinstance(document, dict) and str(document.get("apiVersion", "")).startswith("acid.zalan.do/")
             and document.get("kind") == "postgresql"]
    return [host for host in hosts if host is not None]


def _cluster(document: dict[str, Any], path: str) -> DeclaredHost | None:
    """One manifest's host; a partial one (no metadata.name or spec: a kustomize patch, a test's assertion) is
    what it says of the clusters beside it, or nothing when it sets no parameter."""
    metadata, spec = document.get("metadata"), document.get("spec")
    name = get(metadata, "name")
    whole = isinstance(name, str) and bool(name) and isinstance(spec, dict)
    source = at(metadata, "name", path) if isinstance(name, str) and name else Source(path, yaml_line(document) or 1)
    declared = DeclaredHost(KIND_NAME, name if isinstance(name, str) and name else file_stem(path), source,
                            hosting=whole)
    if not isinstance(spec, dict):
        return None
    postgresql = spec.get("postgresql")
    version = get(postgresql, "version")
    if version is not None:
        _version(declared, version, at(postgresql, "version", path))
    parameters = get(postgresql, "parameters")
    if isinstance(parameters, dict):
        streams = bool(spec.get("streams"))
        for key, value in parameters.items():
            _parameter(declared, str(key), value, Source(path, yaml_line(parameters, key)), streams)
    if not whole:
        if not declared.settings and not declared.problems:
            return None
        declared.notes.append(f"{source}: a postgresql manifest without metadata.name (a patch?): its parameters "
                              "join the hosts of its directory")
        return declared
    instances = spec.get("numberOfInstances")
    if isinstance(instances, int) and not isinstance(instances, bool):
        declared.host["instances"] = Located(instances, at(spec, "numberOfInstances", path))
    apply_resources(declared, spec.get("resources"), path, declared.name)
    if spec.get("enableShmVolume") is False:
        declared.host["shm_size"] = Located(RUNTIME_SHM_SIZE, at(spec, "enableShmVolume", path))
        declared.notes.append("enableShmVolume: false: /dev/shm is the container runtime's default of 64 MiB")
    return declared


def _version(declared: DeclaredHost, version: object, source: Source) -> None:
    """spec.postgresql.version: a string in the CRD (an unquoted 18 is refused, as a parameter's number is)."""
    if not re.fullmatch(r"[0-9]{1,2}", str(version)) or isinstance(version, bool):
        declared.problems.append(ConfProblem(
            REFUSED, f"spec.postgresql.version {version!r} is no PostgreSQL major version: Kubernetes refuses the "
            "manifest", source, True, "version"))
        return
    if not isinstance(version, str):
        declared.problems.append(ConfProblem(
            REFUSED, f"spec.postgresql.version {version} is not a string: the postgresql CRD takes a string, and "
            f'Kubernetes refuses the manifest (quote it: "{version}")', source, True, "version"))
    declared.host["pg_version"] = Located(int(str(version)), source)


def _parameter(declared: DeclaredHost, key: str, value: object, source: Source, streams: bool) -> None:
    setting = conf_setting(key, value, source)
    if streams and setting.name == "wal_level" and setting.value.lower() != "logical":
        # change data capture (spec.streams) makes the operator set wal_level = logical (pkg/cluster/sync.go)
        declared.problems.append(ConfProblem(
            OVERRIDES, f"spec.streams makes Zalando's operator set wal_level = logical: wal_level = {setting.value} "
            "is ignored", source, False, key))
        declared.settings.append(conf_setting(key, "logical", source))  # the value that runs, at the line
        return
    if not isinstance(value, str):
        declared.problems.append(ConfProblem(
            REFUSED, f"{key}: {setting.value} is not a string: the postgresql CRD takes parameters' values as "
            f"strings, and Kubernetes refuses the manifest (quote it: \"{setting.value}\")", source, True, key))
    if setting.name not in _LOCAL_PARAMETERS:
        value, problem = dcs_parameter(setting.name, value, source)
        if problem is not None:
            declared.problems.append(problem)
        if value is None:
            return
        setting = conf_setting(key, value, source)  # the value Patroni runs, at the line that led to it
    declared.settings.append(setting)


# The parameters the operator writes to Patroni's local configuration, not to the dynamic one
# (isBootstrapOnlyParameter is False: pkg/cluster/k8sres.go).
_LOCAL_PARAMETERS = frozenset({
    "archive_command", "shared_buffers", "logging_collector", "log_destination", "log_directory", "log_filename",
    "log_file_mode", "log_rotation_age", "log_truncate_on_rotation", "ssl", "ssl_ca_file", "ssl_crl_file",
    "ssl_cert_file", "ssl_key_file", "shared_preload_libraries", "bg_mon.listen_address", "bg_mon.history_buckets",
    "pg_stat_statements.track_utility", "extwlist.extensions", "extwlist.custom_path"})


KIND = DocumentKind(KIND_NAME, "a Zalando postgres-operator postgresql manifest: its parameters, version, instances "
                    "and pod resources", (".yaml", ".yml"), _recognises, parse_zalando)
