"""CloudNativePG ``Cluster`` manifests (apiVersion postgresql.cnpg.io/v1): each Cluster is a host.

Its PostgreSQL configuration is what the operator writes (pkg/postgres/configuration.go): its own defaults and
mandatory settings, then ``spec.postgresql.parameters``. Parameters the operator manages or blocks, and what its
admission webhook refuses (internal/webhook/v1/cluster_webhook.go), are fatal problems at their line: the Cluster
is never created. The pod's resources give the host's RAM, CPUs and huge pages. A value a Helm template fills in
(``{{ … }}``) is a fact pgvet cannot know; a template whose actions shape the document is no manifest until rendered.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind, any_parameter_unknown, conf_setting, get, yaml_line
from pgvet.inputs.documents._kubernetes import (
    OVERRIDES,
    REFUSED,
    at,
    exact_quantity,
    file_stem,
    listed,
    load_manifests,
    namespace,
    template_lines,
    unrendered,
    without_templates,
    without_variables,
)
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.numbers import size_text
from pgvet.pgparams.units import parse_bool
from pgvet.provenance import Located, Source

API_GROUP = "postgresql.cnpg.io/"

# The operator's defaults (GlobalDefaultSettings), then what it always sets (archive_mode, MandatorySettings):
# the parameters PostgreSQL starts with before the Cluster's own. Paths and commands as the operator writes them.
CNPG_DEFAULTS: dict[str, str] = {
    "archive_timeout": "5min",
    "dynamic_shared_memory_type": "posix",
    "full_page_writes": "on",
    "logging_collector": "on",
    "log_destination": "csvlog",
    "log_directory": "/controller/log",
    "log_filename": "postgres",
    "log_rotation_age": "0",
    "log_rotation_size": "0",
    "log_truncate_on_rotation": "false",
    "max_parallel_workers": "32",
    "max_worker_processes": "32",
    "max_replication_slots": "32",
    "shared_memory_type": "mmap",
    "ssl_max_protocol_version": "TLSv1.3",
    "ssl_min_protocol_version": "TLSv1.3",
    "wal_keep_size": "512MB",
    "wal_level": "logical",
    "wal_log_hints": "on",
    "wal_sender_timeout": "5s",
    "wal_receiver_timeout": "5s",
    "shared_preload_libraries": "",
}
CNPG_MANDATORY: dict[str, str] = {
    "archive_command": "/controller/manager wal-archive --log-destination /controller/log/postgres.json %p",
    "hot_standby": "true",
    "listen_addresses": "*",
    "port": "5432",
    "restart_after_crash": "false",
    "ssl": "on",
    "ssl_cert_file": "/controller/certificates/server.crt",
    "ssl_key_file": "/controller/certificates/server.key",
    "ssl_ca_file": "/controller/certificates/client-ca.crt",
    "unix_socket_directories": "/controller/run",
}
# FixedConfigurationParameters: set by the operator ("fixed") or left at PostgreSQL's default ("blocked").
FIXED_PARAMETERS = frozenset((
    "allow_system_table_mods", "archive_mode", "bonjour", "bonjour_name", "cluster_name", "config_file",
    "data_directory", "data_sync_retry", "event_source", "external_pid_file", "hba_file", "hot_standby",
    "ident_file", "jit_provider", "listen_addresses", "logging_collector", "port", "primary_conninfo",
    "primary_slot_name", "recovery_target", "recovery_target_action", "recovery_target_inclusive",
    "recovery_target_lsn", "recovery_target_name", "recovery_target_time", "recovery_target_timeline",
    "recovery_target_xid", "restore_command", "shared_preload_libraries", "temp_tablespaces",
    "unix_socket_directories", "unix_socket_group", "unix_socket_permissions", "archive_cleanup_command",
    "archive_command", "log_destination", "log_directory", "log_file_mode", "log_filename", "log_rotation_age",
    "log_rotation_size", "log_truncate_on_rotation", "pg_failover_slots.primary_dsn",
    "pg_failover_slots.standby_slot_names", "promote_trigger_file", "recovery_end_command",
    "recovery_min_apply_delay", "restart_after_crash", "ssl", "ssl_ca_file", "ssl_cert_file", "ssl_crl_file",
    "ssl_dh_params_file", "ssl_key_file", "ssl_passphrase_command", "ssl_passphrase_command_supports_reload",
    "ssl_prefer_server_ciphers", "stats_temp_directory", "synchronous_standby_names", "synchronized_standby_slots",
    "syslog_facility", "syslog_ident", "syslog_sequence_numbers", "syslog_split_messages",
))
# The extensions the operator adds to shared_preload_libraries when a parameter of theirs is set.
MANAGED_LIBRARIES = ("pgaudit", "pg_stat_statements", "auto_explain", "pg_failover_slots")
_PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?")
_KIND_LINE = re.compile(r"^kind:\s*[\"']?Cluster[\"']?\s*(#.*)?$", re.MULTILINE)
_IMAGE_TAG = re.compile(r"(\d+)(?:\.\d+)?(?:[-_.+].*)?")
_HUGEPAGES = "hugepages-"


def _recognises(name: str, text: str) -> bool:
    if API_GROUP in text and (_KIND_LINE.search(text) is not None or listed(text, "Cluster")):
        return "{{" not in text or not template_lines(text)[1]
    if _CHART_TYPE_LINE.search(text) is None or "cluster:" not in text:
        return False
    try:
        return any(_is_chart_values(document) for document in load_manifests(text, name))
    except ParseError:
        return False


# The values of cloudnative-pg/charts' cluster chart, which renders a Cluster: their type, and the cluster's spec
_CHART_TYPE_LINE = re.compile(r"^type:[ \t]*[\"']?(postgresql|postgis|timescaledb)[\"']?[ \t]*(#.*)?$", re.MULTILINE)


def _is_chart_values(document: Any) -> bool:
    return (isinstance(document, dict) and "kind" not in document and "apiVersion" not in document
            and document.get("type") in ("postgresql", "postgis", "timescaledb")
            and isinstance(document.get("cluster"), dict))


# What values given over the cluster chart's may set of the Cluster it renders, and of those what only its values set
_CHART_CLUSTER_KEYS = ("instances", "imageName", "resources", "postgresql")
_CHART_OWN_KEYS = ("instances", "postgresql")


def chart_override(text: str, path: str) -> list[str] | None:
    """What values given over the cluster chart's (``helm -f values.yaml -f values-production.yaml``: no ``type:`` of
    their own, the chart's values set it) set of the Cluster (``cluster.instances``…); None for any other text."""
    if "cluster:" not in text:
        return None
    try:
        documents = load_manifests(text, path)
    except ParseError:
        return None
    values = documents[0] if len(documents) == 1 else None
    cluster = values.get("cluster") if isinstance(values, dict) and not {"kind", "apiVersion", "type"} & set(values) \
        else None
    if not isinstance(cluster, dict) or not any(key in cluster for key in _CHART_OWN_KEYS):
        return None
    return [f"cluster.{key}" for key in _CHART_CLUSTER_KEYS if key in cluster]


def _chart_cluster(values: dict[str, Any], path: str) -> DeclaredHost:
    """The Cluster the cluster chart renders (templates/cluster.yaml): ``cluster`` is its spec; its image the
    ``version.postgresql`` of ``type`` (an image catalog's major too) unless ``cluster.imageName`` says another;
    shared_preload_libraries timescaledb for that type, pg_stat_statements with
    ``cluster.monitoring.instrumentation.pgStatStatements``, then the values' own. Named ``fullnameOverride``,
    else after the file (the Helm release's name is not in it)."""
    spec = values["cluster"]
    postgresql = spec.get("postgresql")
    if not isinstance(postgresql, dict):
        postgresql = spec["postgresql"] = {}
    own = postgresql.get("shared_preload_libraries")
    libraries = (["timescaledb"] if values["type"] == "timescaledb" else []) + (
        ["pg_stat_statements"] if get(spec, "monitoring", "instrumentation", "pgStatStatements") is True else [])
    if libraries:
        postgresql["shared_preload_libraries"] = libraries + (list(own) if isinstance(own, list) else [])
    version = get(values, "version", "postgresql")
    major = str(version).split(".", 1)[0]
    chart_image = not spec.get("imageName") and major.isdigit()
    if chart_image:  # the tag's major is what pgvet reads of it (postgis' tag is <postgresql>-<postgis>)
        spec["imageName"] = f"ghcr.io/cloudnative-pg/{values['type']}:{major}"
    name = values.get("fullnameOverride")
    document = {"apiVersion": f"{API_GROUP}v1", "kind": "Cluster",
                "metadata": {"name": name if isinstance(name, str) and name else file_stem(path)}, "spec": spec}
    declared = _cluster(document, path)
    if "parameters_path" in declared.host:  # the chart renders the Cluster's spec.postgresql from cluster.postgresql
        declared.host["parameters_path"] = Located("cluster.postgresql.parameters", declared.source)
    declared.source = at(values, "cluster", path)
    if chart_image and "pg_version" in declared.host:
        declared.host["pg_version"] = Located(declared.host["pg_version"].value, at(values["version"], "postgresql",
                                                                                    path))
    override = values.get("namespaceOverride")
    declared.namespace = override if isinstance(override, str) and override else None
    return declared


def parse_cnpg(text: str, path: str) -> list[DeclaredHost]:
    structural = template_lines(text)[1]
    # the cluster chart's values may hold a template in a text (its custom queries); a manifest may not
    if structural and API_GROUP in text and (_KIND_LINE.search(text) is not None or listed(text, "Cluster")):
        raise ParseError("a template of manifests ({{ … }} shaping the document): lint what `helm template` renders",
                         Source(path, structural[0]))
    hosts = []
    for document in load_manifests(without_variables(without_templates(text)), path):
        if (isinstance(document, dict) and document.get("kind") == "Cluster"
                and str(document.get("apiVersion", "")).startswith(API_GROUP)):
            hosts.append(_cluster(document, path))
        elif _is_chart_values(document):
            hosts.append(_chart_cluster(document, path))
    return hosts


def _cluster(document: dict[str, Any], path: str) -> DeclaredHost:
    here = Source(path, yaml_line(document) or 1)
    metadata = _mapping(document, "metadata", path)
    spec = _mapping(document, "spec", path)
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError("a Cluster without metadata.name (Kubernetes refuses it)", here)
    declared = DeclaredHost("cnpg", file_stem(path) if unrendered(name) else name, here,
                            namespace=namespace(document))
    if unrendered(name):
        declared.notes.append(f"{at(metadata, 'name', path)}: metadata.name is left to a template: the host is named "
                              "after its file")
    instances: int | None = spec.get("instances", 1)  # the CRD's default
    if unrendered(instances):
        instances = None
        _unknown(declared, "spec.instances", Source(path, yaml_line(spec, "instances")), "host.instances")
    elif isinstance(instances, bool) or not isinstance(instances, int) or instances < 1:
        raise ParseError(f"spec.instances: {instances!r} is no number of instances (at least 1)",
                         Source(path, yaml_line(spec, "instances")))
    else:
        declared.host["instances"] = Located(instances, Source(path, yaml_line(spec, "instances") or here.line))
    major = _major_version(spec, path, declared)
    postgresql = _mapping(spec, "postgresql", path)
    if not isinstance(postgresql.get("parameters"), dict):  # the fix says where its block goes
        declared.host["parameters_path"] = Located("spec.postgresql.parameters", here)
    parameters = _mapping(postgresql, "parameters", path)
    literal = [str(key) for key in parameters if not unrendered(key)]
    for key in [key for key, value in parameters.items() if unrendered(key) or unrendered(value)]:
        source = Source(path, yaml_line(parameters, key))
        # a parameter set to what pgvet cannot know is not judged on a default; a name left to a template may be any
        # but those the Cluster sets beside it and the operator's own
        _unknown(declared, f"spec.postgresql.parameters.{key}", source,
                 *(() if unrendered(key) else (f"pg.{str(key).strip().lower()}",)))
        if unrendered(key):
            any_parameter_unknown(declared, source, [*literal, *CNPG_MANDATORY])
        del parameters[key]  # the other keys keep their lines
    # what the webhook compares a fixed parameter with: the defaults and archive_mode, not the mandatory settings
    operator_value = dict(CNPG_DEFAULTS, archive_mode=_archive_mode(metadata, spec))
    _operator_settings(declared, postgresql, parameters, major, operator_value,
                       Source(path, yaml_line(spec, "postgresql") or here.line))
    for key, value in parameters.items():
        _parameter(declared, str(key), value, operator_value, Source(path, yaml_line(parameters, key)))
    _resources(declared, _mapping(spec, "resources", path), parameters, path)
    _webhook_wal_validations(declared, parameters, instances, metadata, spec, path)
    return declared


def _major_version(spec: dict[str, Any], path: str, declared: DeclaredHost) -> int | None:
    """The PostgreSQL major of spec.imageName's tag (ghcr.io/cloudnative-pg/postgresql:16.2 → 16) or of
    spec.imageCatalogRef.major; None, with a note, when neither says it."""
    image_catalog = spec.get("imageCatalogRef")
    if isinstance(image_catalog, dict) and isinstance(image_catalog.get("major"), int):
        major, line = int(image_catalog["major"]), yaml_line(image_catalog, "major")
    elif isinstance(image_catalog, dict) and "major" in image_catalog:  # the catalog's image, not imageName's
        catalog_major = image_catalog.get("major")
        declared.notes.append(f"{at(image_catalog, 'major', path)}: no PostgreSQL version: " + (
            "spec.imageCatalogRef.major is left to a template" if unrendered(catalog_major)
            else f"spec.imageCatalogRef.major {catalog_major!r} is no integer (the CRD takes one)"))
        return None
    else:
        image = spec.get("imageName")
        line = yaml_line(spec, "imageName")
        tag = str(image).split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2] if image else ""
        match = _IMAGE_TAG.fullmatch(tag)
        if match is None:
            declared.notes.append("no PostgreSQL version: " + (
                "spec.imageName is left to a template" if unrendered(image)
                else f"the tag of spec.imageName {image!r} does not say it" if image
                else "no spec.imageName (the operator's default image)"))
            return None
        major = int(match.group(1))
    source = Source(path, line)
    if not 10 <= major <= 99:
        declared.notes.append(f"no PostgreSQL version: {major} is no PostgreSQL major version pgvet knows")
        return None
    declared.host["pg_version"] = Located(major, source)
    if major < 13:
        _refuse(declared, f"PostgreSQL {major}: the operator supports PostgreSQL 13 or newer", source)
    return major


def _operator_settings(declared: DeclaredHost, postgresql: dict[str, Any], parameters: dict[str, Any],
                       major: int | None, operator_value: dict[str, str], source: Source) -> None:
    """What the operator writes before the Cluster's parameters (its mandatory ones apply last, but the Cluster
    may not set them: writing them first gives the same configuration), but for the parameters the Cluster sets."""
    settings = dict(operator_value, **CNPG_MANDATORY)
    if major is not None and major >= 17:
        settings["allow_alter_system"] = "on" if postgresql.get("enableAlterSystem") is True else "off"
    libraries = postgresql.get("shared_preload_libraries")
    wanted = [str(library) for library in libraries] if isinstance(libraries, list) else []
    wanted += [library for library in MANAGED_LIBRARIES
               if any(str(key).startswith(library + ".") for key in parameters)]
    settings["shared_preload_libraries"] = ",".join(dict.fromkeys(wanted))
    for key, value in settings.items():
        # a parameter the Cluster sets replaces the operator's default: one line each, as postgresql.conf has it
        if key in FIXED_PARAMETERS or key == "allow_alter_system" or key not in parameters:
            declared.settings.append(conf_setting(key, value, source))


def _parameter(declared: DeclaredHost, key: str, value: object, operator_value: dict[str, str],
               source: Source) -> None:
    if not _PARAMETER_NAME.fullmatch(key):
        _refuse(declared, f"{key!r} is no PostgreSQL parameter name: the operator refuses the Cluster", source, key)
        return
    if not isinstance(value, str):
        _refuse(declared, f"{key}: {value!r} is no string — Kubernetes refuses the Cluster "
                f"(spec.postgresql.parameters.{key} must be of type string); quote it: {key}: \"{_text(value)}\"",
                source, key)
    if key == "allow_alter_system":
        declared.problems.append(ConfProblem(
            OVERRIDES, "allow_alter_system is set by the operator from spec.postgresql.enableAlterSystem: "
            "this line is ignored", source, False, key))
        return
    if key in FIXED_PARAMETERS:
        # the operator ignores the Cluster's value; its webhook accepts only the value the operator writes itself
        if operator_value.get(key) != value:
            _refuse(declared, f"{key} is managed by the operator (\"Can't set fixed configuration parameter\"): "
                    "the operator refuses the Cluster; remove the line", source, key)
        return
    declared.settings.append(conf_setting(key, value, source))


def _resources(declared: DeclaredHost, resources: dict[str, Any], parameters: dict[str, Any], path: str) -> None:
    limits = _mapping(resources, "limits", path)
    requests = _mapping(resources, "requests", path)

    def quantity(group: dict[str, Any], key: str, where: str, *facts: str) -> tuple[Fraction, Source] | None:
        """The quantity, None when absent; None too, its facts unknown, when a template fills it in."""
        if key not in group:
            return None
        source = Source(path, yaml_line(group, key))
        if unrendered(group[key]):
            _unknown(declared, f"spec.resources.{where}.{key}", source, *facts)
            return None
        return parse_quantity(group[key], f"spec.resources.{where}.{key}", source), source

    memory_limit = quantity(limits, "memory", "limits", "host.memory_limit", "host.ram")
    memory_request = quantity(requests, "memory", "requests", "host.memory_request",
                              *(() if "memory" in limits else ("host.ram",)))
    if memory_limit is not None:
        declared.host["ram"] = declared.host["memory_limit"] = Located(math.ceil(memory_limit[0]), memory_limit[1])
    if memory_request is not None:
        declared.host["memory_request"] = Located(math.ceil(memory_request[0]), memory_request[1])
        if "memory" not in limits:
            declared.host["ram"] = declared.host["memory_request"]
            declared.notes.append("no spec.resources.limits.memory: the memory formulas use the memory request "
                                  f"({memory_request[0]} bytes); the pod may use more, up to the node's memory")
        elif memory_limit is not None and memory_request[0] > memory_limit[0]:
            _refuse(declared, "the memory request is greater than the limit: the operator refuses the Cluster",
                    memory_request[1])
    cpu_limit = quantity(limits, "cpu", "limits", "host.cpus", "host.cpu_limit")
    cpu_request = quantity(requests, "cpu", "requests", *(() if "cpu" in limits else ("host.cpus",)))
    if cpu_limit is not None:
        declared.host["cpus"] = Located(max(1, math.ceil(cpu_limit[0])), cpu_limit[1])
        declared.host["cpu_limit"] = Located(float(cpu_limit[0]), cpu_limit[1])
    elif cpu_request is not None and "cpu" not in limits:
        declared.host["cpus"] = Located(max(1, math.ceil(cpu_request[0])), cpu_request[1])
        declared.notes.append("no spec.resources.limits.cpu: the CPU count is the request's")
    hugepages: dict[str, tuple[Fraction, Source]] = {}
    for group, where in ((limits, "limits"), (requests, "requests")):
        for key in group:
            if str(key).startswith(_HUGEPAGES):
                found = quantity(group, str(key), where, "host.hugepages", "host.hugepage_size")
                if found is None:
                    continue
                if key in hugepages and hugepages[key][0] != found[0]:
                    _refuse(declared, f"{key}: the request differs from the limit (\"HugePages requests must equal "
                            "the limits\"): the operator refuses the Cluster", found[1])
                hugepages.setdefault(str(key), found)
    if hugepages:
        if not ({"memory", "cpu"} & (set(limits) | set(requests))):
            _refuse(declared, "huge pages without a cpu or memory resource (\"HugePages require cpu or memory\"): "
                    "the operator refuses the Cluster", next(iter(hugepages.values()))[1])
        _hugepages(declared, hugepages)
    _webhook_shared_buffers(declared, parameters, memory_request, hugepages, path)


def parse_quantity(value: object, what: str, source: Source) -> Fraction:
    """A quantity the API server accepts; ParseError at its line for one it refuses (``4GB``, ``-1Gi``, ``lots``)."""
    quantity = exact_quantity(value)
    if quantity is None:
        hint = " (Kubernetes writes Gi or G, never GB)" if str(value).strip().endswith("B") else ""
        raise ParseError(f"{what}: {value!r} is no Kubernetes quantity (such as 512Mi, 2Gi, 500m, 2){hint}", source)
    return quantity


def _hugepages(declared: DeclaredHost, hugepages: dict[str, tuple[Fraction, Source]]) -> None:
    key, (amount, source) = next(iter(hugepages.items()))
    if len(hugepages) > 1:
        declared.notes.append(f"huge pages of several sizes ({', '.join(hugepages)}): pgvet counts {key}'s only")
    size = parse_quantity(key[len(_HUGEPAGES):], f"the page size of {key}", source)
    declared.host["hugepages"] = Located(math.ceil(amount), source)
    declared.host["hugepage_size"] = Located(math.ceil(size), source)


def _webhook_shared_buffers(declared: DeclaredHost, parameters: dict[str, Any],
                            memory_request: tuple[Fraction, Source] | None,
                            hugepages: dict[str, tuple[Fraction, Source]], path: str) -> None:
    """The webhook reads shared_buffers as a quantity (a bare number in MB, ``kB/MB/GB`` as ``Ki/Mi/Gi``) and
    refuses a value it cannot read, and one above the memory request that no huge page resource covers."""
    value = parameters.get("shared_buffers")
    if not isinstance(value, str) or not value:
        return
    source = Source(path, yaml_line(parameters, "shared_buffers"))
    text = value + "MB" if value.isdigit() else value
    text = text[:-1].replace(" ", "") if text.endswith("B") else ""
    if not text.isdigit():
        text = (text + "i").replace("ki", "Ki")  # 1GB → 1Gi, 8kB → 8Ki; a bare number after B is bytes
    try:
        shared_buffers = parse_quantity(text, "shared_buffers", source)
    except ParseError:
        _refuse(declared, f"shared_buffers: the operator cannot read {value!r} (a number with kB, MB, GB or TB) "
                "and refuses the Cluster", source, "shared_buffers")
        return
    if (memory_request is not None and shared_buffers > memory_request[0]
            and all(shared_buffers > amount for amount, _ in hugepages.values())):
        request = size_text(float(memory_request[0]))
        _refuse(declared, f"shared_buffers = {value} is more than the memory request ({request}) and than any huge "
                "page resource: the operator refuses the Cluster", source, "shared_buffers")


def _webhook_wal_validations(declared: DeclaredHost, parameters: dict[str, Any], instances: int | None,
                             metadata: dict[str, Any], spec: dict[str, Any], path: str) -> None:
    """wal_level minimal needs one instance, no WAL archiving, no replica cluster and max_wal_senders 0;
    wal_log_hints must stay on with standbys."""
    wal_level = str(parameters.get("wal_level", CNPG_DEFAULTS["wal_level"]))
    source = Source(path, yaml_line(parameters, "wal_level") or yaml_line(spec, "postgresql"))
    archiving = _archive_mode(metadata, spec) != "off"
    if wal_level not in ("logical", "replica", "minimal"):
        _refuse(declared, f"wal_level {wal_level!r}: the operator accepts logical, replica or minimal", source,
                "wal_level")
    elif wal_level == "minimal":
        if (instances or 1) > 1 or archiving or _is_replica(spec):
            reason = (f"{instances} instances (streaming replicas)" if (instances or 1) > 1
                      else "a replica cluster" if _is_replica(spec) else "WAL archiving (on unless the annotation "
                      "cnpg.io/skipWalArchiving is enabled)")
            _refuse(declared, f"wal_level = minimal with {reason}: the operator refuses the Cluster (it needs "
                    "replica or logical)", source, "wal_level")
        if str(parameters.get("max_wal_senders")) != "0":
            _refuse(declared, "wal_level = minimal needs max_wal_senders = 0: the operator refuses the Cluster",
                    source, "max_wal_senders")
    hints = parameters.get("wal_log_hints")
    if hints is not None and (instances or 1) > 1 and parse_bool(str(hints)) is False:
        _refuse(declared, f"wal_log_hints = off with {instances} instances: the operator refuses the Cluster "
                "(pg_rewind needs it to turn a former primary into a standby)",
                Source(path, yaml_line(parameters, "wal_log_hints")), "wal_log_hints")


def _refuse(declared: DeclaredHost, message: str, source: Source, parameter: str | None = None) -> None:
    """A fatal problem: the API server or the operator's webhook refuses the Cluster (the parameter as its target)."""
    declared.problems.append(ConfProblem(REFUSED, message, source, True, parameter))


def _unknown(declared: DeclaredHost, what: str, source: Source, *facts: str) -> None:
    """What a template fills in: said, and its facts left unknown (their rules not evaluated, never guessed)."""
    declared.notes.append(f"{source}: {what} is left to a template: not read")
    for fact in facts:
        declared.unknown[fact] = source


def _archive_mode(metadata: dict[str, Any], spec: dict[str, Any]) -> str:
    if _annotation(metadata, "cnpg.io/skipWalArchiving") == "enabled":
        return "off"
    return "always" if _is_replica(spec) else "on"


def _is_replica(spec: dict[str, Any]) -> bool:
    replica = spec.get("replica")
    return isinstance(replica, dict) and replica.get("enabled") is True


def _annotation(metadata: dict[str, Any], key: str) -> str | None:
    annotations = metadata.get("annotations")
    return str(annotations[key]) if isinstance(annotations, dict) and key in annotations else None


def _text(value: object) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else "" if value is None else str(value)


def _mapping(node: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """A mapping under ``key`` ({} when absent); ParseError when it is something else (Kubernetes refuses it)."""
    value = node.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(f"{key}: a mapping expected, not {type(value).__name__}", Source(path, yaml_line(node, key)))
    return value


KIND = DocumentKind("cnpg", "a CloudNativePG Cluster (postgresql.cnpg.io/v1), or the cluster chart's values: its "
                    "parameters, resources, instances",
                    (".yml", ".yaml"), _recognises, parse_cnpg)
