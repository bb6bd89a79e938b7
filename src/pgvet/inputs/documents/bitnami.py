"""The Bitnami PostgreSQL Helm chart's values (bitnami/charts bitnami/postgresql values.yaml, the values files that
override it, or an umbrella chart's values holding them under ``postgresql:``).

The primary is a host named after the file (Helm's release name is not in it), the read replicas (``architecture:
replication``) a host ``<file>-read``. Their settings, in the order PostgreSQL applies them: the container's own
postgresql.conf, holding ``postgresqlSharedPreloadLibraries`` (an environment variable the container writes into
it), then ``primary.extendedConfiguration`` or ``readReplicas.extendedConfiguration`` (conf.d/override.conf, which
that file includes at its end). ``primary.configuration`` (the primary's alone: the chart mounts it in no replica)
replaces that file: the container then writes nothing into it, and conf.d is read where its ``include_dir =
'conf.d'`` is. Those are postgresql.conf text in YAML block scalars: read by pgvet's postgresql.conf parser, each
line at its line of the YAML file. The chart renders them as templates: a line with ``{{`` is skipped with a note.
Values of the chart before 11 (``postgresqlMaxConnections``, ``postgresqlConfiguration``,
``postgresqlExtendedConf``…) are read as chart 10 renders them.
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
    yaml_parameter,
)
from pgvet.inputs.documents._bitnami_conf import apply_conf, conf_text, rendered_conf
from pgvet.inputs.documents._bitnami_image import (
    CONTAINER_SOURCE,
    Variables,
    container_values,
    env_entries,
    extra_environment,
    set_properties,
    synchronous_settings,
)
from pgvet.inputs.documents._kubernetes import (
    RUNTIME_SHM_SIZE,
    apply_resources,
    at,
    file_stem,
    helm_text,
    load_manifests,
    memory_size,
    namespace,
    template_lines,
)
from pgvet.inputs.postgresql_conf import ConfProblem, ConfSetting
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
# What can set a parameter outside the snippets pgvet reads: environment variables (POSTGRESQL_EXTRA_FLAGS), the
# container's command or arguments.
_OUTSIDE_SNIPPETS = ("extraEnvVars", "extraEnvVarsCM", "extraEnvVarsSecret", "args", "command")
_MARKERS = ("extendedConfiguration", "postgresqlSharedPreloadLibraries", "postgresPassword", "bitnami/postgresql")
_PRELOAD = "postgresqlSharedPreloadLibraries"
# Values of the chart before 11 (chart 10 and older; 11 took them out) that set parameters: the environment variable
# each is passed as (POSTGRESQL_MAX_CONNECTIONS…), which the container writes into the postgresql.conf it generates
# (libpostgresql.sh, postgresql_configure_connections); the two mappings of parameters its ConfigMaps write and the
# ConfigMaps that replace them, with the key of chart 11 that took each one's place
_BEFORE_11_ENVIRONMENT = {
    "postgresqlMaxConnections": "max_connections",
    "postgresqlTcpKeepalivesIdle": "tcp_keepalives_idle",
    "postgresqlTcpKeepalivesInterval": "tcp_keepalives_interval",
    "postgresqlTcpKeepalivesCount": "tcp_keepalives_count",
    "postgresqlStatementTimeout": "statement_timeout",
}
# The chart's defaults of what the primary's synchronous replication reads (values.yaml's replication.*), where a
# values file overriding the chart's leaves them out
_REPLICATION_DEFAULTS = {"synchronousCommit": "off", "numSynchronousReplicas": 0, "applicationName": "my_application"}
_BEFORE_11_REPLACED = {"postgresqlConfiguration": "primary.configuration",
                       "postgresqlExtendedConf": "primary.extendedConfiguration",
                       "configurationConfigMap": "primary.existingConfigmap",
                       "extendedConfConfigMap": "primary.existingExtendedConfigmap"}
_BEFORE_11_SETTING = (*_BEFORE_11_ENVIRONMENT, *_BEFORE_11_REPLACED)
# The keys of the chart before 11 alone, and those of 11 and later alone: values with the first and none of the
# second are read as chart 10 reads them
_BEFORE_11_KEYS = (*((key,) for key in _BEFORE_11_SETTING), ("postgresqlPassword",), ("postgresqlUsername",),
                   ("postgresqlDatabase",), ("postgresqlPostgresPassword",), ("replication", "enabled"))
_CHART_11_KEYS = (("architecture",), ("auth",), ("primary", "configuration"), ("primary", "extendedConfiguration"),
                  ("primary", "existingConfigmap"), ("primary", "existingExtendedConfigmap"), ("primary", "resources"),
                  ("primary", "resourcesPreset"), ("readReplicas", "replicaCount"),
                  ("readReplicas", "extendedConfiguration"))
_HELM_RELEASE = "HelmRelease"
_IMAGE_TAG = re.compile(r"^([0-9]{1,2})(?:\.[0-9]+)*(?:-|$)")


def _recognises(name: str, text: str) -> bool:
    if not (("primary:" in text and (any(marker in text for marker in _MARKERS) or _HELM_RELEASE in text
                                     or "valuesInline:" in text))
            or any(key in text for key in _BEFORE_11_SETTING)):
        return False
    try:
        documents = load_manifests(text, name)
    except ParseError:  # the chart's own keys in an invalid file: claimed, so that its error is said
        # unless it is a chart's template ({{- if … }} lines shaping it), which no values file is
        return not template_lines(text)[1] and any(marker in text for marker in (*_MARKERS, *_BEFORE_11_SETTING))
    return any(_chart_values(document) is not None or _kustomize_charts(document) for document in documents)


def _chart_values(document: Any) -> dict[str, Any] | None:
    """The chart's values: the document's own, a Flux HelmRelease's ``spec.values`` for the chart, or an umbrella
    chart's ``postgresql:`` (the chart as a dependency, unless its ``enabled: false`` leaves it out for an external
    database)."""
    if _is_chart_values(document):
        return document  # type: ignore[no-any-return]
    if _release_name(document) is not None:
        values = get(document, "spec", "values")
        return values if isinstance(values, dict) and (isinstance(values.get("primary"), dict)
                                                       or _before_11(values)) else None
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
    """The chart's own keys: no Kubernetes object, and ``primary`` a mapping with one key the PostgreSQL chart alone
    has (its ``auth.postgresPassword`` also as the global override, ``global.postgresql.auth``), or a value of the
    chart before 11 that sets parameters (its values need no ``primary``)."""
    if not isinstance(values, dict) or "kind" in values:
        return False
    if _before_11(values):
        return True
    primary = values.get("primary")
    return isinstance(primary, dict) and (
        "extendedConfiguration" in primary or _PRELOAD in values
        or any("postgresPassword" in (get(values, *keys) or {})
               for keys in (("auth",), ("global", "postgresql", "auth")))
        or str(get(values, "image", "repository") or "").endswith("bitnami/postgresql"))


def _before_11(values: dict[str, Any], *, setting: bool = True) -> bool:
    """Values of the chart before 11: one of its own keys, none of 11's. ``setting``: one that sets parameters, set
    (what makes values that have no ``primary`` the chart's)."""
    if any(_has(values, keys) for keys in _CHART_11_KEYS):
        return False
    if setting:
        return any(values.get(key) for key in _BEFORE_11_SETTING)
    return any(_has(values, keys) for keys in _BEFORE_11_KEYS)


def _has(values: dict[str, Any], keys: tuple[str, ...]) -> bool:
    node = get(values, *keys[:-1]) if len(keys) > 1 else values
    return isinstance(node, dict) and keys[-1] in node


def _kustomize_charts(document: Any) -> list[dict[str, Any]]:
    """The chart's entries kustomize inflates with Helm: a kustomization's ``helmCharts`` items, or a
    ``HelmChartInflationGenerator`` (``apiVersion: builtin``), of the chart (``name: postgresql``) whose
    ``valuesInline`` are its values."""
    if not isinstance(document, dict):
        return []
    if document.get("kind") == "HelmChartInflationGenerator" and document.get("apiVersion") == "builtin":
        entries: list[Any] = [document]
    elif document.get("kind", "Kustomization") == "Kustomization" and isinstance(document.get("helmCharts"), list):
        entries = document["helmCharts"]
    else:
        return []
    return [entry for entry in entries if isinstance(entry, dict) and entry.get("name") == "postgresql"
            and "bitnami" in str(entry.get("repo") or "bitnami").lower()
            and _is_inline_values(entry.get("valuesInline"))]


def _is_inline_values(values: Any) -> bool:
    return isinstance(values, dict) and (isinstance(values.get("primary"), dict) or _before_11(values))


def parse_bitnami(text: str, path: str) -> list[DeclaredHost]:
    # Helm reads values with sigs.k8s.io/yaml, as Kubernetes reads manifests: an unquoted no or off is false
    hosts: list[DeclaredHost] = []
    for document in load_manifests(text, path):
        charts = _kustomize_charts(document)
        if not charts:
            hosts.extend(_release(document, path))
        for chart in charts:  # kustomize names the release releaseName (its default: "release-name")
            release = str(chart.get("releaseName") or "release-name")
            found = _release_of(chart["valuesInline"], release, path)
            for host in found:
                host.namespace = chart["namespace"] if isinstance(chart.get("namespace"), str) else None
                for key in ("valuesFile", "additionalValuesFiles"):
                    if chart.get(key):
                        host.notes.append(f"{at(chart, key, path)}: {key} not read: its values, which valuesInline's "
                                          "override, are left at the chart's defaults")
            hosts.extend(found)
    return hosts


def _release(document: Any, path: str) -> list[DeclaredHost]:
    values = _chart_values(document)
    if values is None:
        return []
    release = _release_name(document)
    hosts = _release_of(values, release, path)
    for host in hosts:
        host.namespace = namespace(document) if release is not None else None  # a HelmRelease's
    return hosts


def _release_of(values: dict[str, Any], release: str | None, path: str) -> list[DeclaredHost]:
    """The hosts of the chart's values: the primary, and with replication the read replicas."""
    stem = release or file_stem(path)  # a values file does not name its release
    primary: dict[str, Any] = values["primary"] if isinstance(values.get("primary"), dict) else {}
    if _before_11(values, setting=False):
        return [_release_before_11(values, stem, primary, path)]
    replicas = values.get("architecture") == "replication"
    read: dict[str, Any] = values["readReplicas"] if isinstance(values.get("readReplicas"), dict) else {}
    hosts = [_host(values, primary, stem, at(values, "primary", path), primary, path, before_11=False)]
    if replicas:
        hosts.append(_host(values, read, f"{stem}-read", at(values, "readReplicas", path) if read else
                           at(values, "architecture", path), primary, path, before_11=False))
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


def _release_before_11(values: dict[str, Any], stem: str, primary: dict[str, Any], path: str) -> DeclaredHost:
    """The primary of values of the chart before 11, read as chart 10 renders them. Its read replicas
    (``replication.enabled``, ``replication.readReplicas`` of them) take the same ConfigMaps and environment, and
    count among the instances; they are no host of their own here."""
    host = _host(values, values, stem, at(values, "primary", path) if primary else Source(path, yaml_line(values)),
                 primary, path, before_11=True)
    instances = Located(1, host.source)
    if get(values, "replication", "enabled") is True:
        count = get(values, "replication", "readReplicas")
        count = count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 1
        instances = Located(1 + count, at(values["replication"], "enabled", path))
        host.notes.append(f"{instances.source}: replication.enabled: the {count} read replicas of the chart before 11 "
                          "take the primary's configuration; pgvet judges the primary's alone")
    host.host["instances"] = instances
    host.host["parameter_form"] = Located(_MAPPING_FORM, host.source)
    _shm(host, values.get("shmVolume"), path)
    return host


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
        ours, theirs = _last(replicas, name), _last(primary, name)
        has = int(param.boot_val) if ours is None else _integer(param, ours)
        needed = int(param.boot_val) if theirs is None else _integer(param, theirs)
        if has is None or needed is None or has >= needed:  # None: a value PostgreSQL refuses, PGV403's finding
            continue
        own = ours is not None and ours.source.path != CONTAINER_SOURCE
        written = f"{name} = {has}" + ("" if own else " (the container's value)")
        primary_place = (str(theirs.source) if theirs is not None and theirs.source.path != CONTAINER_SOURCE
                         else "PostgreSQL's default" if custom_configuration else "the container's value")
        replicas.problems.append(ConfProblem(
            "standby-below-primary",
            f"{written} on the read replicas is less than the primary's {needed} ({primary_place}): set {name} = "
            f"{needed} or more in readReplicas.extendedConfiguration",
            ours.source if own and ours is not None else replicas.source, True, name))


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
          path: str, *, before_11: bool) -> DeclaredHost:
    declared = DeclaredHost(KIND_NAME, name, source)
    tag = get(values, "image", "tag")
    match = _IMAGE_TAG.match(str(tag)) if isinstance(tag, (str, int, float)) else None
    if match is not None and int(match.group(1)) >= 9:
        declared.host["pg_version"] = Located(int(match.group(1)), at(values["image"], "tag", path))
    environment = _environment(values, path, before_11=before_11)
    synchronous: list[tuple[str, ConfSetting]] = []
    if not before_11:
        environment += extra_environment(declared, section.get("extraEnvVars"), path)
        if section is primary:
            synchronous = synchronous_settings(declared, _variables(values, primary, path))
    if before_11:  # chart 10 mounts its two ConfigMaps in the replicas too; its replicas are not a host here
        main = rendered_conf(declared, values, "postgresqlConfiguration", "configurationConfigMap", path)
        extended = rendered_conf(declared, values, "postgresqlExtendedConf", "extendedConfConfigMap", path)
        replaced = _configmap(values.get("configurationConfigMap"))
        unseen = _configmap(values.get("extendedConfConfigMap"))
        mount_path = _MOUNT_PATH  # where chart 10 mounts them, whatever persistence.mountPath says
    else:
        # primary.configuration: mounted in the primary's pods alone (since chart 11), the whole postgresql.conf;
        # the replicas' extendedConfiguration has no existing ConfigMap to take instead (the chart reads none)
        own = section is primary
        main = conf_text(declared, primary, "primary", "configuration", "existingConfigmap", path) if own else None
        extended = conf_text(declared, section, "primary" if own else "readReplicas", "extendedConfiguration",
                         "existingExtendedConfigmap" if own else None, path)
        replaced = _configmap(primary.get("existingConfigmap")) if own else None
        unseen = _configmap(primary.get("existingExtendedConfigmap")) if own else None
        mount_path = get(primary, "persistence", "mountPath")
        mount_path = mount_path if isinstance(mount_path, str) and mount_path.startswith("/") else _MOUNT_PATH
        if own:
            _ignored_before_11_keys(declared, values, path)
    if replaced is not None:  # a postgresql.conf pgvet cannot see: the container generates none
        declared.unseen_configuration = True
        for key, setting in environment:
            declared.notes.append(f"{setting.source}: {key} not applied: the container writes it into the "
                                  f"postgresql.conf it generates, and the ConfigMap {replaced} replaces that file")
        environment = []
    elif main is None:  # the container generates postgresql.conf: its own values, then its environment's
        version = declared.host.get("pg_version")
        generated = container_values(version.value if version is not None and isinstance(version.value, int) else None)
        environment = [(setting.name, setting) for setting in generated] + environment + synchronous
        synchronous = []  # in the sample file's lines, above conf.d
    apply_conf(declared, main, extended, environment, mount_path, conf_d_unseen=unseen is not None)
    set_properties(declared, synchronous)
    _resources(declared, values if before_11 else section, path)
    return declared


def _configmap(value: object) -> str | None:
    """The existing ConfigMap a value names (an empty one names none)."""
    return value if isinstance(value, str) and value else None


def _environment(values: dict[str, Any], path: str, *, before_11: bool) -> list[tuple[str, ConfSetting]]:
    """The settings the container writes into the postgresql.conf it generates from the environment variables the
    chart sets from values: POSTGRESQL_SHARED_PRELOAD_LIBRARIES (``postgresqlSharedPreloadLibraries``, passed
    whatever it is), and before chart 11 POSTGRESQL_MAX_CONNECTIONS and the others of _BEFORE_11_ENVIRONMENT
    (passed only when true to Helm: not empty, not 0). Helm's ``quote`` writes a number as Go prints it."""
    settings: list[tuple[str, ConfSetting]] = []
    keys = {_PRELOAD: "shared_preload_libraries", **(_BEFORE_11_ENVIRONMENT if before_11 else {})}
    for key, parameter in keys.items():
        value = values.get(key)
        if key != _PRELOAD and not value:
            continue
        text = helm_text(value)
        if text is not None and text.strip():
            settings.append((key, conf_setting(parameter, text, at(values, key, path))))
    return settings


def _variables(values: dict[str, Any], primary: dict[str, Any], path: str) -> Variables:
    """The primary container's variables its synchronous replication reads, as the chart sets them (its POSTGRES_
    names: templates/primary/statefulset.yaml, under architecture replication or a standby primary) and then
    ``primary.extraEnvVars`` (the last of a name wins in Kubernetes); None for a value pgvet cannot know."""
    variables: Variables = {}
    standby = get(primary, "standby", "enabled") is True
    if values.get("architecture") == "replication" or standby:
        replication: dict[str, Any] = values["replication"] if isinstance(values.get("replication"), dict) else {}
        where = at(values, "architecture", path) if not standby else at(primary["standby"], "enabled", path)
        variables["POSTGRES_REPLICATION_MODE"] = ("slave" if standby else "master", where)

        def value(key: str) -> tuple[str | None, Source]:
            if key not in replication:
                return helm_text(_REPLICATION_DEFAULTS[key]), where
            return helm_text(replication[key]), at(replication, key, path)

        mode = value("synchronousCommit")
        if mode[0] != "off":  # the chart passes both only then
            variables["POSTGRES_SYNCHRONOUS_COMMIT_MODE"] = mode
            variables["POSTGRES_NUM_SYNCHRONOUS_REPLICAS"] = value("numSynchronousReplicas")
        variables["POSTGRES_CLUSTER_APP_NAME"] = value("applicationName")
    for name, text, source in env_entries(primary.get("extraEnvVars"), path):
        if name.startswith("POSTGRES"):
            variables[name] = (text, source)
    return variables


def _ignored_before_11_keys(declared: DeclaredHost, values: dict[str, Any], path: str) -> None:
    """A note for each key of the chart before 11 that sets parameters, in values of chart 11 or later, which
    ignores it: the parameter it set is not set."""
    chart_11 = next((".".join(keys) for keys in _CHART_11_KEYS if _has(values, keys)), None)
    if chart_11 is None:
        return
    for key in _BEFORE_11_SETTING:
        if values.get(key):
            instead = (f"set {_BEFORE_11_ENVIRONMENT[key]} in primary.extendedConfiguration"
                       if key in _BEFORE_11_ENVIRONMENT else f"{_BEFORE_11_REPLACED[key]} took its place")
            declared.notes.append(f"{at(values, key, path)}: {key} not read: a value of the chart before 11, which "
                                  f"chart 11 and later, those of {chart_11}, ignore ({instead})")


_MOUNT_PATH = "/bitnami/postgresql"  # primary.persistence.mountPath's default
# host.parameter_form of values of the chart before 11: parameters are keys of postgresqlExtendedConf (a key in snake
# case stays as it is), not postgresql.conf lines
_MAPPING_FORM = "mapping"


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
                    "replicas", (".yaml", ".yml"), _recognises, parse_bitnami, conf_parameter,
                    {_MAPPING_FORM: yaml_parameter})
