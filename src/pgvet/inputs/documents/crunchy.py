"""Crunchy Data PGO's ``PostgresCluster`` manifests (apiVersion postgres-operator.crunchydata.com/v1beta1 or v1),
and the values of the helm/postgres chart of CrunchyData/postgres-operator-examples, which renders one.

Each instance set (``spec.instances[]``) is a host named ``<cluster>-<set>`` (a set without a name is PGO's "00",
"01"… by its place): the sets share the cluster's parameters, each has its pods' resources; ``instances`` is the
sum of every set's ``replicas`` (1 when not said). The parameters are
``spec.patroni.dynamicConfiguration.postgresql.parameters`` then ``spec.config.parameters`` (which wins), as
PGO merges them (internal/controller/postgrescluster/postgres.go). PGO then sets some parameters itself
(internal/postgres/parameters.go, internal/pgbackrest/postgres.go): a line setting one is ignored; the CRD refuses
some names in ``spec.config.parameters`` outright (CEL rules of PostgresConfigSpec), and takes only integers and
strings there. All of it reaches Patroni's dynamic configuration, which Patroni takes as it takes its own file's
(patroni.dcs_parameter).
"""

from __future__ import annotations

import re
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind, any_parameter_unknown, conf_setting, get, yaml_line
from pgvet.inputs.documents._kubernetes import (
    OVERRIDES,
    REFUSED,
    apply_resources,
    at,
    file_stem,
    listed,
    load_manifests,
    namespace,
)
from pgvet.inputs.documents.patroni import dcs_parameter
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.provenance import Located, Source

KIND_NAME = "crunchy"
_API_GROUP = "postgres-operator.crunchydata.com/"
_KIND_LINE = re.compile(r"^kind:[ \t]*[\"']?PostgresCluster[\"']?[ \t]*(#.*)?$", re.MULTILINE)
_TEMPLATE = re.compile(r"\$\{|\{\{|^\(")  # kuttl's ${VAR}, Helm's {{ }}, chainsaw's (expression)

_MAX_CONFIG_PARAMETERS = 50  # PostgresConfigSpec's MaxProperties
# What PGO always sets itself, whatever the manifest says.
_MANDATORY = {"unix_socket_directories": "/tmp/postgres", "wal_level": "logical", "ssl": "on",
              "ssl_cert_file": "/pgconf/tls/tls.crt", "ssl_key_file": "/pgconf/tls/tls.key",
              "ssl_ca_file": "/pgconf/tls/ca.crt", "log_file_mode": "0660", "archive_mode": "on",
              "archive_command": "", "restore_command": ""}  # "": a command PGO builds for the cluster's pgBackRest
_MANDATORY_BY = {"archive_command": "pgBackRest's archive-push", "restore_command": "pgBackRest's archive-get"}
# spec.config.parameters' names the CRD refuses (the CEL rules' messages, or PGO's reason where the rule has none).
_REFUSED_NAMES = {
    "config_file": "cannot change PGDATA path", "data_directory": "cannot change PGDATA path",
    "external_pid_file": "cannot change external_pid_file", "hba_file": "cannot change authentication path",
    "ident_file": "cannot change authentication path", "listen_addresses": "network connectivity is always enabled",
    "port": "change port using .spec.port instead", "ssl": "TLS is always enabled",
    "wal_log_hints": "wal_log_hints are always enabled", "archive_mode": "PGO archives WAL with pgBackRest",
    "archive_command": "PGO archives WAL with pgBackRest", "restore_command": "PGO restores WAL with pgBackRest",
    "recovery_target": "recovery is PGO's (spec.dataSource)", "hot_standby": "hot_standby is always enabled",
    "synchronous_standby_names": "synchronous replication is Patroni's (synchronous_mode)",
    "primary_conninfo": "replication is Patroni's", "primary_slot_name": "replication is Patroni's",
    "recovery_min_apply_delay": "delayed replication is not supported at this time",
    "cluster_name": "cluster_name is derived from the PostgresCluster name",
    "logging_collector": "disabling logging_collector is unsafe", "log_file_mode": "log_file_mode cannot be changed"}


def _recognises(name: str, text: str) -> bool:
    if "{{" in text:  # a template (Helm's, Jinja's) is no manifest until rendered: pgvet does not guess its values
        return False
    manifest = _API_GROUP in text and (_KIND_LINE.search(text) is not None or listed(text, "PostgresCluster"))
    if not manifest and "postgresVersion:" not in text:
        return False
    try:  # a file of partial manifests that set nothing (a test's assertions) declares nothing: no document
        return bool(parse_crunchy(text, name))
    except ParseError:  # a manifest the API server refuses is said at its line; other YAML is no document
        return manifest


def _is_chart_values(document: Any, documents: list[Any]) -> bool:
    """The values of CrunchyData/postgres-operator-examples' helm/postgres chart, which renders a PostgresCluster:
    a top-level ``postgresVersion`` (and ``apiVersion``, the PostgresCluster's: v1 or v1beta1) in a file of no
    Kubernetes object (a manifest file's stray document is no chart's values)."""
    return (isinstance(document, dict) and "postgresVersion" in document and "spec" not in document
            and not any(isinstance(other, dict) and "kind" in other for other in documents))


def parse_crunchy(text: str, path: str) -> list[DeclaredHost]:
    hosts: list[DeclaredHost] = []
    documents = load_manifests(text, path)
    for document in documents:
        if (isinstance(document, dict) and str(document.get("apiVersion", "")).startswith(_API_GROUP)
                and document.get("kind") == "PostgresCluster"):
            metadata, spec = document.get("metadata"), document.get("spec")
            name = get(metadata, "name")
            named = isinstance(name, str) and bool(name)
            if isinstance(spec, dict):
                found = _cluster(name if named else file_stem(path), at(metadata, "name", path) if named
                                 else Source(path, yaml_line(document) or 1), spec, path, chart=False)
                for host in found:
                    host.namespace = namespace(document)
                hosts.extend(found)
        elif _is_chart_values(document, documents):
            # the chart names the cluster .Values.name, else the Helm release's name (not in the file: its stem)
            name = document.get("name")
            if not isinstance(name, str) or not name:
                name = file_stem(path)
            hosts.extend(_cluster(name, at(document, "postgresVersion", path), document, path, chart=True))
    return hosts


def _cluster(name: str, source: Source, spec: dict[str, Any], path: str, *, chart: bool) -> list[DeclaredHost]:
    """The hosts of one cluster: its instance sets. A PostgresCluster without instances (a kustomize patch, a test's
    assertion) is what it says of the clusters beside it, or nothing when it sets no parameter."""
    shared = DeclaredHost(KIND_NAME, name, source)
    version = spec.get("postgresVersion")
    if isinstance(version, str) and _TEMPLATE.search(version):
        shared.notes.append(f"postgresVersion {version!r} is left for a tool to fill in: not read")
    elif isinstance(version, int) and not isinstance(version, bool) and 9 <= version <= 99:
        shared.host["pg_version"] = Located(version, at(spec, "postgresVersion", path))
    elif version is not None:
        shared.problems.append(ConfProblem(
            REFUSED, f"postgresVersion {version!r} is no PostgreSQL major version (an integer): Kubernetes refuses "
            "the manifest", at(spec, "postgresVersion", path), True, "postgresVersion"))
    parameters = get(spec, "patroni", "dynamicConfiguration", "postgresql", "parameters")
    config = get(spec, "config", "parameters")
    if isinstance(config, dict) and len(config) > _MAX_CONFIG_PARAMETERS:
        shared.problems.append(ConfProblem(
            REFUSED, f"spec.config.parameters has {len(config)} parameters: the PostgresCluster CRD takes at most "
            f"{_MAX_CONFIG_PARAMETERS}, and Kubernetes refuses the manifest", at(spec["config"], "parameters", path),
            True, "parameters"))
    if not isinstance(parameters, dict) and not isinstance(config, dict):  # the fix says where a block goes
        # (the Patroni path every PGO 5 release takes; spec.config.parameters only came with 5.8)
        shared.host["parameters_path"] = Located("spec.patroni.dynamicConfiguration.postgresql.parameters", source)
    literal = [str(key) for mapping in (parameters, config) if isinstance(mapping, dict) for key in mapping
               if not _filled_in(key)]
    for mapping, in_config in ((parameters, False), (config, True)):
        if isinstance(mapping, dict):
            for key, value in mapping.items():
                at_line = Source(path, yaml_line(mapping, key))
                if _filled_in(key):  # a name a tool fills in may be any but those set beside it and PGO's own
                    shared.notes.append(f"{at_line}: {key} is left for a tool to fill in: every parameter it may "
                                        "name is unknown, not judged on its default")
                    any_parameter_unknown(shared, at_line, [*literal, *_MANDATORY])
                elif _filled_in(value):
                    shared.notes.append(f"{at_line}: {key} is left for a tool to fill in: not read")
                    shared.unknown[f"pg.{str(key).strip().lower()}"] = at_line
                else:
                    _parameter(shared, str(key), value, at_line, in_config)
    sets = spec.get("instances")
    if chart and sets is None:
        return [_chart_instance_set(_with_mandatory(shared), spec, path)]
    if not isinstance(sets, list) or not sets:
        if not shared.settings and not shared.problems:
            return []
        shared.hosting = False
        shared.notes.append(f"{source}: a PostgresCluster without spec.instances (a patch?): its parameters join the "
                            "hosts of its directory")
        return [shared]
    total = sum(_replicas(item) for item in sets)
    shared = _with_mandatory(shared)
    hosts = []
    for index, item in enumerate(sets):
        hosts.append(_instance_set(shared, item if isinstance(item, dict) else {}, index, total,
                                   Source(path, yaml_line(sets, index) or shared.source.line), path))
    return hosts


def _filled_in(text: object) -> bool:
    """A name or a value a tool fills in before kubectl (Flux's or envsubst's ${VAR}, Helm's {{ }})."""
    return isinstance(text, str) and ("${" in text or "{{" in text)


def _with_mandatory(shared: DeclaredHost) -> DeclaredHost:
    """The cluster with what PGO sets where its manifest says nothing, at the cluster's line: that runs too (ssl =
    on, not PostgreSQL's off). A line that sets one has PGO's value already (_parameter)."""
    set_here = {setting.name for setting in shared.settings}
    shared.settings[:0] = [conf_setting(key, value, shared.source) for key, value in _MANDATORY.items()
                           if value and key not in set_here]
    return shared


def _chart_instance_set(shared: DeclaredHost, values: dict[str, Any], path: str) -> DeclaredHost:
    """The chart's one instance set when its values give no ``instances``: instanceName (instance1),
    instanceReplicas (1), instanceMemory and instanceCPU as limits (helm/postgres/templates/postgres.yaml)."""
    item = {"name": values.get("instanceName") or "instance1", "replicas": values.get("instanceReplicas")}
    declared = _instance_set(shared, item, 0, _replicas(item), shared.source, path)
    for key, resource in (("instanceMemory", "memory"), ("instanceCPU", "cpu")):
        if values.get(key):
            apply_resources(declared, {"limits": {resource: values[key]}}, path, declared.name, at(values, key, path))
    return declared


def _replicas(item: Any) -> int:
    replicas = get(item, "replicas")
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1


def _instance_set(shared: DeclaredHost, item: dict[str, Any], index: int, total: int, source: Source,
                  path: str) -> DeclaredHost:
    set_name = str(item.get("name") or f"{index:02d}")
    declared = DeclaredHost(KIND_NAME, f"{shared.name}-{set_name}", source, list(shared.settings),
                            dict(shared.host), [], list(shared.problems), list(shared.notes),
                            dict(shared.unknown))
    declared.host["instances"] = Located(total, source)
    apply_resources(declared, item.get("resources"), path, declared.name)
    return declared


def _parameter(declared: DeclaredHost, key: str, value: object, source: Source, in_config: bool) -> None:
    setting = conf_setting(key, value, source)
    if in_config:
        reason = _refused(key, value)
        if reason is not None:
            declared.problems.append(ConfProblem(
                REFUSED, f"{key}: {setting.value}: the PostgresCluster CRD refuses it in spec.config.parameters "
                f"({reason}), and Kubernetes refuses the manifest", source, True, key))
            return
    mandatory = _MANDATORY.get(setting.name, "")
    if setting.name in _MANDATORY and setting.value.lower() != mandatory:
        declared.problems.append(ConfProblem(
            OVERRIDES, f"PGO sets {setting.name} itself ({mandatory or _MANDATORY_BY[setting.name]}): "
            f"{setting.name} = {setting.value} is ignored", source, False, key))
        if mandatory:  # the value that runs, at the line that meant to set it
            declared.settings.append(conf_setting(key, mandatory, source))
        return
    value, problem = dcs_parameter(setting.name, value, source)
    if problem is not None:
        declared.problems.append(problem)
    if value is not None:
        declared.settings.append(conf_setting(key, value, source))


def _refused(key: str, value: object) -> str | None:
    """Why the CRD refuses a spec.config.parameters entry (its CEL rules compare names as written)."""
    if isinstance(value, (bool, float)) or not isinstance(value, (int, str)):
        return "a value must be an integer or a string: quote it"
    if key in _REFUSED_NAMES:
        return _REFUSED_NAMES[key]
    if key.startswith("ssl_") and key not in ("ssl_groups", "ssl_ecdh_curve"):
        return "TLS is always enabled"
    if key.startswith("unix_socket_"):
        return "domain socket paths cannot be changed"
    if key.startswith("recovery_target_"):
        return "recovery is PGO's (spec.dataSource)"
    if key == "wal_level" and value != "logical":
        return 'wal_level must be "replica" or higher'
    return None


KIND = DocumentKind(KIND_NAME, "a Crunchy PGO PostgresCluster: its parameters, version and each instance set's pods",
                    (".yaml", ".yml"), _recognises, parse_crunchy)
