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
from pgvet.inputs.documents import DeclaredHost, DocumentKind, any_parameter_unknown, conf_setting, get, yaml_line
from pgvet.inputs.documents._kubernetes import (
    OVERRIDES,
    REFUSED,
    RUNTIME_SHM_SIZE,
    apply_resources,
    at,
    file_stem,
    listed,
    load_manifests,
    namespace,
    unrendered,
    without_variables,
)
from pgvet.inputs.documents.patroni import dcs_parameter
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.provenance import Located, Source

KIND_NAME = "zalando"
_KIND_LINE = re.compile(r"^kind:[ \t]*[\"']?postgresql[\"']?[ \t]*(#.*)?$", re.MULTILINE)


def _recognises(name: str, text: str) -> bool:
    # a template of manifests (Helm's, Jinja's {{ }}) is no manifest until rendered: pgvet does not guess its values
    if "acid.zalan.do/" not in text or "{{" in text or (_KIND_LINE.search(text) is None
                                                        and not listed(text, "postgresql")):
        return False
    try:  # a file of partial manifests that set nothing (a test's assertions) declares nothing: no document
        return bool(parse_zalando(text, name))
    except ParseError:  # a manifest the API server refuses: said at its line
        return True


def parse_zalando(text: str, path: str) -> list[DeclaredHost]:
    hosts = [_cluster(document, path) for document in load_manifests(without_variables(text), path)
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
    declared = DeclaredHost(KIND_NAME, name if isinstance(name, str) and name and not unrendered(name)
                            else file_stem(path), source, hosting=whole, namespace=namespace(document))
    if unrendered(name):
        declared.notes.append(f"{source}: metadata.name is left to a variable: the host is named after its file")
    if not isinstance(spec, dict):
        return None
    postgresql = spec.get("postgresql")
    version = get(postgresql, "version")
    if unrendered(version):
        declared.notes.append(f"{at(postgresql, 'version', path)}: spec.postgresql.version is left to a variable")
    elif version is not None:
        _version(declared, version, at(postgresql, "version", path))
    parameters = get(postgresql, "parameters")
    if isinstance(parameters, dict):
        streams = bool(spec.get("streams"))
        literal = [str(key) for key in parameters if not unrendered(key)]
        for key, value in parameters.items():
            if unrendered(key) or unrendered(value):  # not judged on a default: its rules are not evaluated
                _unknown(declared, f"spec.postgresql.parameters.{key}", Source(path, yaml_line(parameters, key)),
                         *(() if unrendered(key) else (f"pg.{str(key).strip().lower()}",)))
                if unrendered(key):  # it may name any parameter but those set beside it
                    any_parameter_unknown(declared, Source(path, yaml_line(parameters, key)), literal)
                continue
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
    apply_resources(declared, _known_resources(declared, spec.get("resources"), path), path, declared.name)
    if not spec.get("resources"):
        # the operator gives the pod the requests and limits of its own configuration (default_memory_limit: 500Mi
        # in its default one), which the manifest does not hold
        declared.notes.append(f"{at(document, 'spec', path)}: no spec.resources: the operator applies its "
                              "configuration's default_memory_request and default_memory_limit (500Mi in its default "
                              "configuration), which pgvet does not see: the pod's memory is not known, and the "
                              "rules that need it are not evaluated")
    _spilo_defaults(declared, parameters if isinstance(parameters, dict) else {},
                    Source(path, yaml_line(spec, "postgresql") or yaml_line(document, "spec")))
    if spec.get("enableShmVolume") is False:
        declared.host["shm_size"] = Located(RUNTIME_SHM_SIZE, at(spec, "enableShmVolume", path))
        declared.notes.append("enableShmVolume: false: /dev/shm is the container runtime's default of 64 MiB")
    return declared


def _unknown(declared: DeclaredHost, field: str, source: Source, *facts: str) -> None:
    declared.notes.append(f"{source}: {field} is left to a variable (Flux's substitution, envsubst): not read")
    for fact in facts:
        declared.unknown[fact] = source


def _known_resources(declared: DeclaredHost, resources: Any, path: str) -> Any:
    """The resources without the quantities left to a variable, which are facts pgvet cannot know."""
    if not isinstance(resources, dict):
        return resources
    known = dict(resources)
    for group, facts in (("limits", {"memory": ("host.memory_limit", "host.ram"), "cpu": ("host.cpus",)}),
                         ("requests", {"memory": ("host.memory_request",)})):
        quantities = resources.get(group)
        if isinstance(quantities, dict) and any(unrendered(value) for value in quantities.values()):
            known[group] = {key: value for key, value in quantities.items() if not unrendered(value)}
            for key in [key for key, value in quantities.items() if unrendered(value)]:
                _unknown(declared, f"spec.resources.{group}.{key}", at(quantities, key, path),
                         *facts.get(str(key), ()))
    return known


def _spilo_defaults(declared: DeclaredHost, parameters: dict[str, Any], source: Source) -> None:
    """What Spilo writes before the manifest's parameters, which replace them (one line each, as postgresql.conf has
    it); shared_buffers and max_connections from the container's memory limit; archive_command from the operator's
    backup configuration, which pgvet does not read."""
    defaults = dict(SPILO_DEFAULTS)
    limit = declared.host.get("memory_limit")
    if limit is not None:
        megabytes = limit.value / 1024**2
        defaults["shared_buffers"] = f"{int(megabytes / 5)}MB"  # a fifth on Kubernetes
        defaults["max_connections"] = str(min(max(100, int(megabytes / 30)), 1000))
    set_here = {str(key).strip().lower() for key in parameters}
    unknown = [name for name in ("archive_command", "shared_buffers", "max_connections")
               if name not in defaults and name not in set_here]
    for name in unknown:  # set by Spilo to what pgvet cannot know: not judged on PostgreSQL's default
        declared.unknown[f"pg.{name}"] = source
    if unknown:
        declared.notes.append(f"{source}: Spilo sets {', '.join(unknown)} from what the manifest does not say "
                              "(the operator's configuration, the pod's memory): not judged")
    declared.settings[:0] = [conf_setting(name, value, source) for name, value in defaults.items()
                             if name not in set_here]


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


# Spilo's configuration template (postgres-appliance/scripts/configure_spilo.py): its bootstrap.dcs parameters and
# the local ones, where they differ from PostgreSQL's defaults.
SPILO_DEFAULTS: dict[str, str] = {
    "archive_mode": "on", "archive_timeout": "1800s", "wal_level": "hot_standby", "wal_log_hints": "on",
    "wal_compression": "on", "max_wal_senders": "10", "max_replication_slots": "10", "hot_standby": "on",
    "tcp_keepalives_idle": "900", "tcp_keepalives_interval": "100",
    "log_line_prefix": "%t [%p]: [%l-1] %c %x %d %u %a %h ",
    "log_checkpoints": "on", "log_lock_waits": "on", "log_min_duration_statement": "500",
    "log_autovacuum_min_duration": "0", "log_connections": "on", "log_disconnections": "on", "log_statement": "ddl",
    "log_temp_files": "0", "track_functions": "all", "checkpoint_completion_target": "0.9",
    "autovacuum_max_workers": "5", "autovacuum_vacuum_scale_factor": "0.05", "autovacuum_analyze_scale_factor": "0.02",
    "logging_collector": "on", "log_destination": "csvlog", "log_directory": "../pg_log",
    "log_filename": "postgresql-%u.log", "log_file_mode": "0644", "log_rotation_age": "1d",
    "log_truncate_on_rotation": "on", "ssl": "on", "ssl_cert_file": "/run/certs/server.crt",
    "ssl_key_file": "/run/certs/server.key",
    "shared_preload_libraries": "bg_mon,pg_stat_statements,pgextwlist,pg_auth_mon,set_user",
}


KIND = DocumentKind(KIND_NAME, "a Zalando postgres-operator postgresql manifest: its parameters, version, instances "
                    "and pod resources", (".yaml", ".yml"), _recognises, parse_zalando)
