"""The Bitnami PostgreSQL Helm chart's values (bitnami/charts bitnami/postgresql values.yaml, the values files that
override it, or an umbrella chart's values holding them under ``postgresql:``).

The primary is a host named after the file (Helm's release name is not in it), the read replicas (``architecture:
replication``) a host ``<file>-read``. Their settings, in the order the container applies them:
``postgresqlSharedPreloadLibraries`` (an environment variable the container writes into postgresql.conf), then
``primary.configuration`` (a whole postgresql.conf, the primary's alone: the chart mounts it in no replica), then
``primary.extendedConfiguration`` or ``readReplicas.extendedConfiguration`` (conf.d/override.conf). Those are
postgresql.conf text in YAML block scalars: read by pgvet's postgresql.conf parser, each line at its line of the YAML
file. The chart renders them as templates: a line with ``{{`` is skipped with a note.
"""

from __future__ import annotations

import re
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import (
    DeclaredHost,
    DocumentKind,
    conf_parameter,
    conf_setting,
    get,
    yaml_line,
)
from pgvet.inputs.documents._kubernetes import (
    RUNTIME_SHM_SIZE,
    apply_resources,
    at,
    file_stem,
    load_manifests,
    memory_size,
)
from pgvet.inputs.postgresql_conf import ConfDirective, ConfProblem, ConfSetting, parse_conf_text
from pgvet.pgparams import HOT_STANDBY_MINIMUMS, NEWEST_MAJOR, SUPPORTED_MAJORS, Param, load_param_table
from pgvet.pgparams.units import InvalidValue, parse_bool, parse_value
from pgvet.provenance import Located, Source

KIND_NAME = "bitnami"
# bitnami/common templates/_resources.tpl, "common.resources.preset": (requests, limits) of cpu and memory.
RESOURCE_PRESETS: dict[str, dict[str, dict[str, str]]] = {
    "nano": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "150m", "memory": "192Mi"}},
    "micro": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "375m", "memory": "384Mi"}},
    "small": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "750m", "memory": "768Mi"}},
    "medium": {"requests": {"cpu": "500m", "memory": "1024Mi"}, "limits": {"cpu": "750m", "memory": "1536Mi"}},
    "large": {"requests": {"cpu": "1.0", "memory": "2048Mi"}, "limits": {"cpu": "1.5", "memory": "3072Mi"}},
    "xlarge": {"requests": {"cpu": "1.0", "memory": "3072Mi"}, "limits": {"cpu": "3.0", "memory": "6144Mi"}},
    "2xlarge": {"requests": {"cpu": "1.0", "memory": "3072Mi"}, "limits": {"cpu": "6.0", "memory": "12288Mi"}},
}
# What the container's own postgresql.conf holds, beside PostgreSQL's defaults (its sample file's), when the chart's
# values set none: its replication setup writes max_wal_senders = 16 on the primary and the replicas alike.
_CONTAINER_VALUES = {"max_wal_senders": 16}
# What can set a parameter outside the snippets pgvet reads: environment variables (POSTGRESQL_EXTRA_FLAGS), the
# container's command or arguments.
_OUTSIDE_SNIPPETS = ("extraEnvVars", "extraEnvVarsCM", "extraEnvVarsSecret", "args", "command")
_MARKERS = ("extendedConfiguration", "postgresqlSharedPreloadLibraries", "postgresPassword", "bitnami/postgresql")
_HELM_RELEASE = "HelmRelease"
_IMAGE_TAG = re.compile(r"^([0-9]{1,2})(?:\.[0-9]+)*(?:-|$)")


def _recognises(name: str, text: str) -> bool:
    if "primary:" not in text or not (any(marker in text for marker in _MARKERS) or _HELM_RELEASE in text):
        return False
    try:
        documents = load_manifests(text, name)
    except ParseError:  # the chart's own keys in an invalid file: claimed, so that its error is said
        return any(marker in text for marker in _MARKERS)
    return any(_chart_values(document) is not None for document in documents)


def _chart_values(document: Any) -> dict[str, Any] | None:
    """The chart's values: the document's own, a Flux HelmRelease's ``spec.values`` for the chart, or an umbrella
    chart's ``postgresql:`` (the chart as a dependency, unless its ``enabled: false`` leaves it out for an external
    database)."""
    if _is_chart_values(document):
        return document  # type: ignore[no-any-return]
    if _release_name(document) is not None:
        values = get(document, "spec", "values")
        return values if isinstance(values, dict) and isinstance(values.get("primary"), dict) else None
    nested = get(document, "postgresql")
    if _is_chart_values(nested) and nested.get("enabled") is not False:
        return nested  # type: ignore[no-any-return]
    return None


def _release_name(document: Any) -> str | None:
    """The release a Flux HelmRelease of the chart (``spec.chart.spec.chart``: postgresql, bitnami/postgresql)
    installs: ``spec.releaseName``, else its name; None for any other document."""
    if not (isinstance(document, dict) and document.get("kind") == _HELM_RELEASE
            and str(document.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/")):
        return None
    chart = str(get(document, "spec", "chart", "spec", "chart") or "")
    if chart.rsplit("/", 1)[-1] != "postgresql":
        return None
    name = get(document, "spec", "releaseName") or get(document, "metadata", "name")
    return str(name) if name else None


def _is_chart_values(values: Any) -> bool:
    """The chart's own keys: ``primary`` a mapping, no Kubernetes object, and one the PostgreSQL chart alone has."""
    if not isinstance(values, dict) or "kind" in values or not isinstance(values.get("primary"), dict):
        return False
    primary = values["primary"]
    return ("extendedConfiguration" in primary or "postgresqlSharedPreloadLibraries" in values
            or "postgresPassword" in (get(values, "auth") or {})
            or str(get(values, "image", "repository") or "").endswith("bitnami/postgresql"))


def parse_bitnami(text: str, path: str) -> list[DeclaredHost]:
    # Helm reads values with sigs.k8s.io/yaml, as Kubernetes reads manifests: an unquoted no or off is false
    return [host for document in load_manifests(text, path) for host in _release(document, path)]


def _release(document: Any, path: str) -> list[DeclaredHost]:
    values = _chart_values(document)
    if values is None:
        return []
    stem = _release_name(document) or file_stem(path)  # a values file does not name its release
    primary = values["primary"]
    replicas = values.get("architecture") == "replication"
    read: dict[str, Any] = values["readReplicas"] if isinstance(values.get("readReplicas"), dict) else {}
    hosts = [_host(values, primary, stem, at(values, "primary", path), primary, path)]
    if replicas:
        hosts.append(_host(values, read, f"{stem}-read", at(values, "readReplicas", path) if read else
                           at(values, "architecture", path), primary, path))
        if _replicas_compared(primary, read):
            _standby_below_primary(hosts[0], hosts[1], custom_configuration=bool(primary.get("configuration")))
    instances = 1
    if replicas:
        count = read.get("replicaCount", 1)
        instances += count if isinstance(count, int) and not isinstance(count, bool) else 1
    for host in hosts:
        host.host["instances"] = Located(instances, at(values, "architecture", path) if replicas else host.source)
        _shm(host, values.get("shmVolume"), path)
    return hosts


def _replicas_compared(primary: dict[str, Any], read: dict[str, Any]) -> bool:
    """Whether the replicas' parameters are compared with the primary's: replicas there are (replicaCount not 0)
    of this primary (not itself the standby of a server elsewhere, whose values are the ones to meet), and pgvet
    reads every place that can set them — no snippet in a ConfigMap, no template line, nothing from the
    container's environment or command line."""
    if read.get("replicaCount") == 0 or get(primary, "standby", "enabled") is True:
        return False
    elsewhere = (*_OUTSIDE_SNIPPETS, "existingConfigmap", "existingExtendedConfigmap")
    snippets = ("configuration", "extendedConfiguration")
    return all(not any(section.get(key) for key in elsewhere)
               and all("{{" not in str(section.get(key) or "") for key in snippets) for section in (primary, read))


def _standby_below_primary(primary: DeclaredHost, replicas: DeclaredHost, *, custom_configuration: bool) -> None:
    """A problem of the read replicas for each parameter they have less of than the primary: they do not start
    (a hot standby's check: none with hot_standby off). ``custom_configuration``: the primary runs a
    primary.configuration of its own, where the container writes no max_wal_senders (PostgreSQL's 10 then)."""
    hot_standby = _last(replicas, "hot_standby")
    if hot_standby is not None and parse_bool(hot_standby.value) is False:
        return
    version = replicas.host.get("pg_version")
    major = version.value if version is not None and version.value in SUPPORTED_MAJORS else NEWEST_MAJOR
    param_table = load_param_table(major)
    for name in sorted(HOT_STANDBY_MINIMUMS):
        param = param_table.params[name]
        container_value = _CONTAINER_VALUES.get(name, int(param.boot_val))
        ours, theirs = _last(replicas, name), _last(primary, name)
        primary_default = int(param.boot_val) if custom_configuration else container_value
        has = container_value if ours is None else _integer(param, ours)
        needed = primary_default if theirs is None else _integer(param, theirs)
        if has is None or needed is None or has >= needed:  # None: a value PostgreSQL refuses, PGV403's finding
            continue
        written = f"{name} = {has}" + (" (the container's value)" if ours is None else "")
        primary_place = (str(theirs.source) if theirs is not None else "PostgreSQL's default"
                         if custom_configuration else "the container's value")
        replicas.problems.append(ConfProblem(
            "standby-below-primary",
            f"{written} on the read replicas is less than the primary's {needed} ({primary_place}): set {name} = "
            f"{needed} or more in readReplicas.extendedConfiguration",
            replicas.source if ours is None else ours.source, True, name))


def _integer(param: Param, setting: ConfSetting) -> int | None:
    try:
        value = parse_value(param, setting.value).native
    except InvalidValue:
        return None
    return value if isinstance(value, int) else None


def _last(declared: DeclaredHost, name: str) -> ConfSetting | None:
    """The setting of ``name`` that applies (the last one written)."""
    return next((setting for setting in reversed(declared.settings) if setting.name == name), None)


def _shm(declared: DeclaredHost, volume: Any, path: str) -> None:
    """/dev/shm: the chart mounts a memory-backed volume unless ``shmVolume.enabled`` is false (then the runtime's
    64 MiB), of ``shmVolume.sizeLimit`` when set."""
    if not isinstance(volume, dict):
        return
    if volume.get("enabled") is False:
        declared.host["shm_size"] = Located(RUNTIME_SHM_SIZE, at(volume, "enabled", path))
        declared.notes.append("shmVolume.enabled: false: /dev/shm is the container runtime's default of 64 MiB")
    elif volume.get("sizeLimit"):
        declared.host["shm_size"] = Located(memory_size(volume, "sizeLimit", path, "shmVolume"),
                                            at(volume, "sizeLimit", path))


def _host(values: dict[str, Any], section: dict[str, Any], name: str, source: Source, primary: dict[str, Any],
          path: str) -> DeclaredHost:
    declared = DeclaredHost(KIND_NAME, name, source)
    tag = get(values, "image", "tag")
    match = _IMAGE_TAG.match(str(tag)) if isinstance(tag, (str, int, float)) else None
    if match is not None and int(match.group(1)) >= 9:
        declared.host["pg_version"] = Located(int(match.group(1)), at(values["image"], "tag", path))
    libraries = values.get("postgresqlSharedPreloadLibraries")
    if isinstance(libraries, bool):  # the chart passes it through Helm's quote, which writes a boolean so
        libraries = "true" if libraries else "false"
    if isinstance(libraries, str) and libraries.strip():
        declared.settings.append(conf_setting("shared_preload_libraries", libraries,
                                              at(values, "postgresqlSharedPreloadLibraries", path)))
    # primary.configuration: mounted in the primary's pods alone (since chart 11), the whole postgresql.conf
    reads_conf_d = _snippet(declared, primary, "configuration", "existingConfigmap", path) if section is primary \
        else True
    if reads_conf_d:
        _snippet(declared, section, "extendedConfiguration", "existingExtendedConfigmap", path)
    elif isinstance(section.get("extendedConfiguration"), str) and section["extendedConfiguration"].strip():
        declared.notes.append(f"{at(section, 'extendedConfiguration', path)}: extendedConfiguration not read: "
                              "primary.configuration, the whole postgresql.conf, has no include_dir = 'conf.d', "
                              "where the chart mounts it, so PostgreSQL never reads it")
    _resources(declared, section, path)
    return declared


def _snippet(declared: DeclaredHost, section: dict[str, Any], key: str, configmap_key: str, path: str) -> bool:
    """A postgresql.conf text in a YAML value: each line at its line of the YAML file (a literal block keeps the
    lines; any other scalar is one place, its key's line). Syntax errors keep PostgreSQL's message, which names the
    file the chart writes the text to. Whether PostgreSQL reads the chart's conf.d after it: a text read that has
    no include_dir of it does not (the container's own postgresql.conf, when there is no text, does)."""
    configmap = section.get(configmap_key)
    if isinstance(configmap, str) and configmap:
        declared.notes.append(f"{configmap_key}: {configmap}: that ConfigMap's configuration is not in this file "
                              f"(the chart ignores {key} then)")
        return True  # not seen: not judged
    text = section.get(key)
    if text is not None and not isinstance(text, str):
        declared.notes.append(f"{at(section, key, path)}: {key} is no text (the postgresql.conf lines the chart "
                              "writes): not read")
        return True
    if text is None or not text.strip():
        return True
    key_line = yaml_line(section, key) or 1
    exact = type(text).__name__ == "LiteralScalarString"  # ruamel's type for a | block scalar

    def place(line: int | None) -> Source:
        return Source(path, key_line + (line or 1) if exact else key_line)

    lines = text.split("\n")
    for index, line in enumerate(lines):
        if "{{" in line:
            lines[index] = ""
            declared.notes.append(f"{place(index + 1)}: a line left for Helm's template rendering: not read")
    # Ended by a newline: a last line's error is then at that line (a file without one counts it one line up)
    entries, problems = parse_conf_text("\n".join(lines).rstrip("\n") + "\n", _WRITTEN_TO[key])
    reads_conf_d = False
    for entry in entries:
        if isinstance(entry, ConfDirective) and key == "configuration" and entry.kind == "include_dir" and \
                entry.target.rstrip("/") in _CHART_CONF_D:
            reads_conf_d = True  # where the chart mounts extendedConfiguration, read after it here too
            continue
        if isinstance(entry, ConfDirective):
            declared.problems.append(ConfProblem(
                "missing-include", f"{entry.kind} '{entry.target}' in {key}: the chart mounts no file beside it, "
                "pgvet cannot follow it", place(entry.source.line), entry.kind != "include_if_exists", entry.target))
        else:
            declared.settings.append(entry._replace(source=place(entry.source.line)))
    for problem in problems:
        declared.problems.append(ConfProblem(problem.kind, problem.message, place(problem.source.line), problem.fatal,
                                             problem.target))
    return reads_conf_d


_WRITTEN_TO = {"configuration": "postgresql.conf", "extendedConfiguration": "conf.d/override.conf"}
# the directory an include_dir of primary.configuration names to read extendedConfiguration's override.conf
_CHART_CONF_D = ("conf.d", "/opt/bitnami/postgresql/conf/conf.d")


def _resources(declared: DeclaredHost, section: dict[str, Any], path: str) -> None:
    """``resources`` when set; else the ``resourcesPreset``'s numbers (the chart's default preset applies only when
    this file says it: a values file overriding the chart's gives no preset of its own)."""
    resources = section.get("resources")
    if isinstance(resources, dict) and resources:
        apply_resources(declared, resources, path, declared.name)
        return
    preset = section.get("resourcesPreset")
    if preset is None or preset == "none":
        return
    if preset not in RESOURCE_PRESETS:
        raise ParseError(f"resourcesPreset {preset!r}: Helm refuses it (the presets are none, "
                         f"{', '.join(RESOURCE_PRESETS)})", at(section, "resourcesPreset", path))
    before = len(declared.host)
    apply_resources(declared, RESOURCE_PRESETS[preset], path, declared.name, at(section, "resourcesPreset", path))
    if len(declared.host) > before:
        declared.notes.append(f"resourcesPreset {preset}: the chart's preset numbers were used (limits "
                              f"{RESOURCE_PRESETS[preset]['limits']['memory']} of memory, "
                              f"{RESOURCE_PRESETS[preset]['limits']['cpu']} CPU)")


KIND = DocumentKind(KIND_NAME, "the Bitnami PostgreSQL Helm chart's values: postgresql.conf snippets, resources, "
                    "replicas", (".yaml", ".yml"), _recognises, parse_bitnami, conf_parameter)
