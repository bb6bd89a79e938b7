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

``timescaledbTune.args`` are passed on after the chart's own flags (``--key "value"``, by the keys' order: Helm's
``range`` over a map), where Go's flag package reads them: a later flag wins (``--memory`` over the script's
``-memory`` from the pod's resources), a flag it does not define makes it exit, and a boolean flag takes no value:
the value, a separate argument, ends the flags there. A run that writes nothing into the included file
(``--dry-run``, ``--version``, ``--out-path`` or ``--conf-path`` elsewhere) tunes nothing.
"""

from __future__ import annotations

import re
from typing import Any

from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, DocumentKind, get, load_document
from pgvet.inputs.documents._kubernetes import apply_resources, at, file_stem, helm_text, load_manifests
from pgvet.inputs.documents.patroni import CMDLINE_OPTIONS, patroni_member
from pgvet.inputs.postgresql_conf import ConfProblem
from pgvet.provenance import Located, Source

KIND_NAME = "timescaledb-single"
_MARKERS = ("timescaledbTune", "timescale/timescaledb-ha", "timescaledb-single")
_TOP_LEVEL_PATRONI = re.compile(r"^patroni:[ \t]*(#.*)?$", re.MULTILINE)
_IMAGE = "timescale/timescaledb-ha"
_HELM_RELEASE = "HelmRelease"
# the parameters the chart's values.yaml sets in patroni.bootstrap.dcs.postgresql.parameters (timescale/helm-charts
# at 8b6fe06, the chart's last version), which Helm keeps under a user's values that do not set them
_CHART_PARAMETERS = (
    "archive_command", "archive_mode", "archive_timeout", "autovacuum_analyze_scale_factor", "autovacuum_max_workers",
    "autovacuum_naptime", "autovacuum_vacuum_cost_limit", "autovacuum_vacuum_scale_factor", "hot_standby",
    "log_autovacuum_min_duration", "log_checkpoints", "log_connections", "log_disconnections", "log_line_prefix",
    "log_lock_waits", "log_min_duration_statement", "log_statement", "max_connections", "max_prepared_transactions",
    "shared_preload_libraries", "ssl", "ssl_cert_file", "ssl_key_file", "tcp_keepalives_idle",
    "tcp_keepalives_interval", "temp_file_limit", "timescaledb.passfile", "unix_socket_directories",
    "unix_socket_permissions", "wal_level", "wal_log_hints")
# the chart's top-level keys: values.schema.json's properties (additionalProperties false: helm refuses others), and
# those of its earlier versions (loadBalancer, credentials…: every values.yaml of the chart's history)
_CHART_KEYS = frozenset({
    "affinity", "backup", "bootstrapFromBackup", "callbacks", "clusterName", "curlImage", "debug", "enabled", "env",
    "envFrom", "fullnameOverride", "global", "image", "networkPolicy", "nodeSelector", "patroni", "persistentVolumes",
    "pgBouncer", "podAnnotations", "podLabels", "podManagementPolicy", "podMonitor", "postInit", "prometheus", "rbac",
    "readinessProbe", "replicaCount", "resources", "schedulerName", "secrets", "service", "serviceAccount",
    "sharedMemory", "timescaledbTune", "tolerations", "topologySpreadConstraints", "version",
    "affinityTemplate", "nameOverride", "loadBalancer", "replicaLoadBalancer", "credentials", "tls",
    "fullWalPrevention", "secretNames", "unsafe", "persistentVolume", "serviceMonitor", "kubernetes",
    "postgresExporter"})
# of those, the keys no other chart has: values made up of the chart's keys are its own with one of them
_OWN_KEYS = ("timescaledbTune", "persistentVolumes", "loadBalancer", "replicaLoadBalancer", "bootstrapFromBackup",
             "sharedMemory", "fullWalPrevention", "pgBouncer", "postInit")
_OWN_KEY_LINE = re.compile(rf"^(?:{'|'.join(_OWN_KEYS)}):", re.MULTILINE)
# what an override sets that is read: the host's keys
_OVERRIDES_READ = frozenset({"replicaCount", "version", "image", "resources"})
_IMAGE_TAG = re.compile(r"^pg(\d{2})(?:[.-]|$)")
# What timescaledb-tune recommends (timescale/timescaledb-tune pkg/pgtune: memory.go, parallel.go — with more than
# one CPU —, wal.go, misc.go); max_connections is left out: Patroni passes its own on postgres' command line
_TUNED = ("shared_buffers", "effective_cache_size", "maintenance_work_mem", "work_mem",
          "timescaledb.max_background_workers", "max_worker_processes", "max_parallel_workers_per_gather",
          "max_parallel_workers", "wal_buffers", "min_wal_size", "max_wal_size", "default_statistics_target",
          "random_page_cost", "checkpoint_completion_target", "max_locks_per_transaction", "effective_io_concurrency")
# timescaledb-tune's flags (cmd/timescaledb-tune/main.go): the boolean ones, then those that take a value
_TUNE_BOOLEANS = frozenset({"yes", "quiet", "color", "dry-run", "restore", "version"})
_TUNE_VALUED = frozenset({"memory", "cpus", "pg-version", "wal-disk-size", "max-conns", "max-bg-workers",
                          "conf-path", "out-path", "pg-config", "profile"})
# the file the init container's script has timescaledb-tune write, which postgresql.base.conf includes
_TSTUNE_FILE = "/var/run/postgresql/timescaledb.conf"
# the chart's archive_command (patroni.bootstrap.dcs.postgresql.parameters), a script archiving only with backups on
_ARCHIVE_SCRIPT = "/etc/timescaledb/scripts/pgbackrest_archive.sh"
# what the script appends to that file from the volumes' sizes, whether timescaledb-tune writes there or not
_SCRIPT_WRITES = ("max_wal_size", "min_wal_size")


def _recognises(name: str, text: str) -> bool:
    marked = any(marker in text for marker in _MARKERS)
    if not marked and not _OWN_KEY_LINE.search(text):
        return False
    if _HELM_RELEASE in text:
        try:
            return any(_release(document) is not None for document in load_manifests(text, name))
        except ParseError:
            return False
    try:
        values = load_document(text, name, pyyaml=True)
    except ParseError:  # the chart's own keys in an invalid file: claimed, parse() says what is wrong
        return marked and _TOP_LEVEL_PATRONI.search(text) is not None
    if not isinstance(values, dict):
        return False
    if isinstance(values.get(KIND_NAME), dict):  # an umbrella chart's values of it as a dependency
        return True
    return (marked or _of_the_chart(values)) if isinstance(values.get("patroni"), dict) else _override(values)


def _release(document: Any) -> dict[str, Any] | None:
    """A Flux HelmRelease of the chart (``spec.chart.spec.chart``: timescaledb-single, timescale/timescaledb-single);
    None for any other document."""
    if not (isinstance(document, dict) and document.get("kind") == _HELM_RELEASE
            and str(document.get("apiVersion", "")).startswith("helm.toolkit.fluxcd.io/")):
        return None
    chart = str(get(document, "spec", "chart", "spec", "chart") or "")
    return document if chart.rsplit("/", 1)[-1] == KIND_NAME else None


def _override(values: dict[Any, Any]) -> bool:
    """Values without ``patroni:`` that only the chart's documented keys make up, one of them its own: a file
    given after the chart's values (``helm -f values.yaml -f prod.yaml``), which Helm merges over them."""
    return "patroni" not in values and _of_the_chart(values)


def _of_the_chart(values: dict[Any, Any]) -> bool:
    """Only the chart's keys, one of them its own (or its image)."""
    return (all(isinstance(key, str) and key in _CHART_KEYS for key in values)
            and (any(key in values for key in _OWN_KEYS) or _IMAGE in str(get(values, "image", "repository"))))


def parse_timescaledb(text: str, path: str) -> list[DeclaredHost]:
    if _HELM_RELEASE in text:
        releases = [release for release in map(_release, load_manifests(text, path)) if release is not None]
        if releases:
            return [_released(release, path) for release in releases]
    values = load_document(text, path, pyyaml=True)
    if not isinstance(values, dict):
        return []
    dependency = values.get(KIND_NAME)
    if isinstance(dependency, dict):  # an umbrella chart's: what it gives the chart, unless it leaves the chart out
        return [] if dependency.get("enabled") is False else [
            _values_host(dependency, path, file_stem(path), at(values, KIND_NAME, path))]
    if not isinstance(values.get("patroni"), dict):
        return [_overriding(values, path)] if _override(values) else []
    return [_values_host(values, path, file_stem(path))]


def _released(release: dict[str, Any], path: str) -> DeclaredHost:
    """A HelmRelease's host: its ``spec.values``, the user's values Helm merges into the chart's (its releaseName,
    else its name); ``valuesFrom`` (a ConfigMap's, a Secret's) said not read."""
    spec = release.get("spec")
    values = get(release, "spec", "values")
    name = get(release, "spec", "releaseName") or get(release, "metadata", "name") or file_stem(path)
    declared = _values_host(values if isinstance(values, dict) else {}, path, str(name),
                            at(spec, "values", path) if isinstance(values, dict) else at(release, "spec", path))
    if isinstance(spec, dict) and spec.get("valuesFrom"):
        declared.notes.append(f"{at(spec, 'valuesFrom', path)}: spec.valuesFrom: values from a ConfigMap or a Secret, "
                              "merged over spec.values, which pgvet does not see: not read")
    return declared


def _values_host(values: dict[str, Any], path: str, name: str, source: Source | None = None) -> DeclaredHost:
    """The host of the chart's values (a file of them, a HelmRelease's ``spec.values``)."""
    patroni = values.get("patroni")
    patroni = patroni if isinstance(patroni, dict) else {}
    declared = patroni_member(DeclaredHost(KIND_NAME, name, at(values, "patroni", path) if "patroni" in values
                                           else source or Source(path, 1)), patroni, path)
    _version(declared, values, path)
    count = values.get("replicaCount", 3)
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        declared.host["instances"] = Located(count, at(values, "replicaCount", path) if "replicaCount" in values
                                             else declared.source)
    apply_resources(declared, values.get("resources"), path, "resources")
    _archiving(declared, values, path)
    _chart_parameters(declared, patroni, path)
    tune = get(values, "timescaledbTune", "enabled")
    if tune is not False:
        _tuned(declared, values, at(values["timescaledbTune"], "enabled", path) if tune is not None
               else declared.source, path)
    return declared


def _chart_parameters(declared: DeclaredHost, patroni: dict[str, Any], path: str) -> None:
    """Helm merges the values it is given into the chart's (``helm -f mine.yaml``): each parameter the chart sets in
    ``bootstrap.dcs.postgresql.parameters`` that these values do not set keeps the chart's value, which pgvet does
    not hold: unknown, with a note (the chart's values.yaml itself sets them all)."""
    local, dcs = get(patroni, "postgresql", "parameters"), get(patroni, "bootstrap", "dcs", "postgresql", "parameters")
    # a parameter Patroni takes from the DCS only (max_connections…) is the chart's there, whatever the local says
    own = {str(name).lower() for name in local if str(name).lower() not in CMDLINE_OPTIONS} \
        if isinstance(local, dict) else set()
    own |= {str(name).lower() for name in dcs} if isinstance(dcs, dict) else set()
    unknown = [name for name in _CHART_PARAMETERS if name not in own]
    for index, problem in enumerate(declared.problems):  # "and runs its default 100": the chart's value, not it
        name = problem.message.removeprefix("Patroni ignores ").partition(" ")[0]
        if problem.kind == "patroni-ignored" and name in unknown and " and runs its default " in problem.message:
            said = problem.message.partition(" and runs its default ")[0]
            declared.problems[index] = problem._replace(
                message=f"{said} and runs the chart's value (its bootstrap.dcs.postgresql.parameters)")
    source = at(patroni, "bootstrap", path) if isinstance(patroni.get("bootstrap"), dict) else declared.source
    for name in unknown:
        declared.unknown[f"pg.{name}"] = source
    if unknown:
        declared.notes.append(f"{source}: values given over the chart's own, which set " + ", ".join(unknown)
                              + " in patroni.bootstrap.dcs.postgresql.parameters (Helm keeps them where these values "
                              "do not set them; pgvet does not hold the chart's values): not judged; lint the chart's "
                              "values merged with these (`helm template`'s output)")


def _overriding(values: dict[str, Any], path: str) -> DeclaredHost:
    """An override: what it sets of the host (replicaCount, version, image.tag, resources) laid over the chart's
    values beside it, as Helm's later values file wins (no host of its own); what else it sets is not read, said."""
    declared = DeclaredHost(KIND_NAME, file_stem(path), Source(path, 1), hosting=False, laid_over=KIND_NAME)
    _version(declared, values, path)
    count = values.get("replicaCount")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        declared.host["instances"] = Located(count, at(values, "replicaCount", path))
    apply_resources(declared, values.get("resources"), path, "resources")
    unread = [key for key in values if key not in _OVERRIDES_READ]
    declared.notes.append(
        f"{path}:1: timescaledb-single values without patroni: (an override given after the chart's values, "
        "helm's later -f): its replicaCount, version, image.tag and resources are laid over the chart's values "
        "beside it" + (f"; {', '.join(unread)} not read: the host is judged on what the chart's values beside it "
                       "say of them; lint what the chart renders (`helm template`'s output)" if unread else ""))
    return declared


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


def _archiving(declared: DeclaredHost, values: dict[str, Any], path: str) -> None:
    """A note where archive_command is the chart's script and backups are off: the script exits 0 without archiving
    unless the pod's PGBACKREST_BACKUP_ENABLED, backup.enabled, is "true" (scripts/pgbackrest_archive.sh), so
    PostgreSQL takes each WAL segment as archived and recycles it: archive_mode on, and nothing kept."""
    last = {setting.name: setting for setting in declared.settings}
    mode, command = last.get("archive_mode"), last.get("archive_command")
    if (mode is None or mode.value.lower() not in ("on", "always") or command is None
            or not command.value.startswith(_ARCHIVE_SCRIPT) or get(values, "backup", "enabled") in (True, "true")):
        return  # the chart passes it through Helm's quote: true and "true" are the same "true"
    backup = values.get("backup")
    place = (str(at(backup, "enabled", path)) if isinstance(backup, dict) and "enabled" in backup
             else "the chart's default, false")
    declared.notes.append(f"{command.source}: archive_command runs the chart's pgbackrest_archive.sh, which exits 0 "
                          f"without archiving while backup.enabled is not true ({place}): PostgreSQL takes every WAL "
                          "segment as archived and recycles it; archive_mode = on keeps nothing (no point-in-time "
                          "recovery, no replica restored from the archive)")


def _tuned(declared: DeclaredHost, values: dict[str, Any], source: Source, path: str) -> None:
    """What the tstune init container writes below Patroni's settings: unknown where Patroni leaves it out, said
    with what the values determine of it (``timescaledbTune.args``)."""
    # None: timescaledb-tune exits, the pod does not start (a problem of the host); what it would tune stays unknown
    args = _tune_args(declared, values, path) or {}
    own = {setting.name for setting in declared.settings}  # Patroni's own defaults too: all written after it
    writes = _writes(args)
    tuned = _TUNED if writes is None else _SCRIPT_WRITES
    # and what Patroni passes on postgres' command line (max_worker_processes…), its default where nothing sets it
    unknown = [name for name in tuned if name not in own and name not in CMDLINE_OPTIONS]
    for name in unknown:
        declared.unknown[f"pg.{name}"] = source
    if writes is not None:
        declared.notes.append(f"{writes[1]}: timescaledbTune.args {writes[0]}: timescaledb-tune writes nothing into "
                              "the file postgresql.base.conf includes: it tunes nothing"
                              + (f"; {', '.join(unknown)}, which the init container's script appends there from the "
                                 "volumes' sizes (as the chart's version computes them), not judged" if unknown
                                 else ""))
    elif unknown:
        declared.notes.append(f"{source}: timescaledbTune.enabled: timescaledb-tune sets {', '.join(unknown)} from "
                              f"{_inputs(args)}, in a file pgvet cannot see: not judged")


def _tune_args(declared: DeclaredHost, values: dict[str, Any], path: str) -> dict[str, tuple[str, Source]] | None:
    """The flags ``timescaledbTune.args`` give timescaledb-tune as it reads them (name → value, place); None where
    it exits on one, a fatal problem of the host (the init container fails: the pod never starts)."""
    args = get(values, "timescaledbTune", "args")
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise ParseError("timescaledbTune.args is not a mapping (the chart passes each key as a flag of "
                         "timescaledb-tune, with its value)", at(values["timescaledbTune"], "args", path))
    read: dict[str, tuple[str, Source]] = {}
    for key in sorted(args, key=str):
        name, place = str(key), at(args, key, path)
        if name not in _TUNE_BOOLEANS and name not in _TUNE_VALUED:
            declared.problems.append(ConfProblem(
                "timescaledb-tune-flag", f"timescaledbTune.args: timescaledb-tune has no flag -{name}: it exits "
                "(flag provided but not defined), so the tstune init container fails and the pod never starts",
                place, True))
            return None
        read[name] = (helm_text(args[key]) or "", place)  # as Helm's quote prints it (null: nothing)
        if name in _TUNE_BOOLEANS:  # set whatever its value says ("false" too); that value ends the flags
            ignored = [str(later) for later in sorted(args, key=str) if str(later) > name]
            if ignored:
                declared.notes.append(f"{place}: timescaledbTune.args {name}: a boolean flag of timescaledb-tune "
                                      f"takes no value: --{name} is set, and its value ends the flags: those after it "
                                      f"({', '.join(ignored)}) are not read")
            break
    return read


def _writes(args: dict[str, tuple[str, Source]]) -> tuple[str, Source] | None:
    """The flag by which timescaledb-tune writes nothing into the file postgresql.base.conf includes, with its
    place; None where it writes there."""
    for name in ("version", "dry-run"):
        if name in args:
            return f"--{name}", args[name][1]
    # out-path: where it writes (empty: where it read); conf-path: what it reads and writes (empty: a file it looks
    # for, perhaps the one Patroni writes over: left unknown)
    for name, same in (("out-path", ("", _TSTUNE_FILE)), ("conf-path", ("", _TSTUNE_FILE))):
        if name in args and args[name][0] not in same:
            return f"--{name} {args[name][0]}", args[name][1]
    return None


def _inputs(args: dict[str, tuple[str, Source]]) -> str:
    """What timescaledb-tune's recommendations depend on, as the values give it."""
    memory = (f"--memory {args['memory'][0]} ({args['memory'][1]})" if "memory" in args
              else "the container's memory request, else its limit")
    cpus = f"--cpus {args['cpus'][0]} ({args['cpus'][1]})" if "cpus" in args else "its CPU request, else its limit"
    others = [f"--{name} {value} ({place})" for name, (value, place) in args.items()
              if name not in ("memory", "cpus", "yes", "quiet", "color", "pg-config")]
    return f"{memory}, {cpus}" + "".join(f", {other}" for other in others) + " and its own version"


KIND = DocumentKind(KIND_NAME, "timescaledb-single Helm chart values: its patroni: configuration, and what its "
                    "tstune init container sets", (".yaml", ".yml"), _recognises, parse_timescaledb)
