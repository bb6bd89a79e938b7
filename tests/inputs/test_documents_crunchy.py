"""Crunchy PGO's PostgresCluster manifests (pgvet.inputs.documents.crunchy) on real files and on mistakes planted
in copies of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents_support import DOCUMENTS, corpus, kinds_recognising, line_of, lint_findings
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost
from pgvet.inputs.documents.crunchy import _MANDATORY, parse_crunchy
from pgvet.inputs.postgresql_conf import ConfSetting
from pgvet.snapshot.load import load_hosts

HA = DOCUMENTS / "crunchy" / "high-availability.yaml"
CHART = DOCUMENTS / "crunchy" / "helm-values.yaml"
PARAMETERS = """  patroni:
    dynamicConfiguration:
      postgresql:
        parameters:
          shared_buffers: 256MB
          max_connections: 200
"""
RESOURCES = """      resources:
        limits:
          cpu: "2"
          memory: 2Gi
          hugepages-2Mi: 512Mi
        requests:
          memory: 1Gi
"""
PGO_SETS = {name: value for name, value in _MANDATORY.items() if value}


def written(host: DeclaredHost) -> list[ConfSetting]:
    """The settings the manifest's lines give: not those PGO sets where it says nothing (first, at one line)."""
    first = [s.source for s in host.settings if PGO_SETS.get(s.name) == s.value][:1]
    return [s for s in host.settings if not (PGO_SETS.get(s.name) == s.value and [s.source] == first)]


def tuned(extra: str = "", config: str = "") -> str:
    """The real HA example with parameters, resources and a second instance set planted in it."""
    text = HA.read_text().replace("      replicas: 2\n", "      replicas: 2\n" + RESOURCES, 1)
    text = text.replace("  backups:\n", PARAMETERS + extra + config + "  backups:\n", 1)
    return text.replace("  instances:\n", "  instances:\n    - name: small\n      dataVolumeClaimSpec: {}\n", 1)


def by_name(text: str) -> dict[str, DeclaredHost]:
    return {host.name: host for host in parse_crunchy(text, "cluster.yaml")}


def test_instance_sets_are_hosts_named_after_the_cluster_and_the_set() -> None:
    names = {path.name: [host.name for host in parse_crunchy(path.read_text(), str(path))]
             for path in corpus("crunchy")}
    assert names["high-availability.yaml"] == ["hippo-ha-pgha1"]
    assert names["keycloak.yaml"] == ["keycloakdb-00"]  # no name: PGO's 00
    assert names["postgres.yaml"] == ["hippo-instance1"]


def test_the_charts_values_are_one_instance_set_from_its_instance_keys() -> None:
    # the chart's own example lines, uncommented, with a parameter planted the way its comment shows
    text = CHART.read_text()
    for line in ("# name: hippo", "# instanceMemory: 2Gi", "# instanceCPU: 1000m", "# instanceReplicas: 1",
                 "# patroni:", "#   dynamicConfiguration:", "#     postgresql:", "#       parameters:"):
        text = text.replace(line, line[2:], 1)
    text = text.replace("#         synchronous_commit: \"on\"", "        shared_buffers: 3GB", 1)
    text = text.replace("instanceReplicas: 1", "instanceReplicas: 3")
    assert kinds_recognising(CHART, text) == ["crunchy"]
    [host] = parse_crunchy(text, str(CHART))
    assert host.name == "hippo-instance1" and host.host["instances"].value == 3
    assert (host.host["memory_limit"].value, host.host["memory_limit"].source.line) == (
        2 * 1024**3, line_of(text, "instanceMemory: 2Gi"))
    assert (host.host["cpus"].value, host.host["cpus"].source.line) == (1, line_of(text, "instanceCPU: 1000m"))
    assert [(s.name, s.value, s.source.line) for s in written(host)] == [
        ("shared_buffers", "3GB", line_of(text, "shared_buffers: 3GB"))]
    [default] = parse_crunchy(CHART.read_text(), "deploy/pg.yaml")
    assert default.name == "pg-instance1" and "ram" not in default.host  # the release's name: the file's


def test_a_template_of_a_manifest_is_not_read_until_rendered() -> None:
    text = HA.read_text().replace("replicas: 2", "replicas: {{ .Values.replicas }}")
    assert kinds_recognising(Path("templates/postgres.yaml"), text) == []


def test_a_stray_document_of_a_manifest_file_is_no_charts_values() -> None:
    path = DOCUMENTS / "crunchy" / "s3.yaml"  # ends with a document holding postgresVersion and apiVersion only
    assert [host.name for host in parse_crunchy(path.read_text(), str(path))] == ["hippo-s3-00"]
    assert kinds_recognising(Path("values.yaml"), "postgresVersion: 16\nkind: Thing\n") == []


def test_version_replicas_and_template_placeholders() -> None:
    [ha] = parse_crunchy(HA.read_text(), "ha.yaml")
    assert ha.host["pg_version"].value == 18 and ha.host["instances"].value == 2
    path = DOCUMENTS / "crunchy" / "major-upgrade-cluster.yaml"
    [upgrade] = parse_crunchy(path.read_text(), str(path))
    assert "pg_version" not in upgrade.host and "KUTTL_PG_UPGRADE_FROM_VERSION" in upgrade.notes[0]
    assert upgrade.host["instances"].value == 3
    assert [(s.name, s.source.line) for s in written(upgrade)] == [
        ("shared_preload_libraries", line_of(path.read_text(), "shared_preload_libraries"))]


def test_parameters_and_each_sets_resources() -> None:
    text = tuned()
    hosts = by_name(text)
    assert list(hosts) == ["hippo-ha-small", "hippo-ha-pgha1"]
    for host in hosts.values():
        assert host.host["instances"].value == 3  # 1 + 2 replicas
        assert [(s.name, s.value, s.source.line) for s in written(host)] == [
            ("shared_buffers", "256MB", line_of(text, "shared_buffers")),
            ("max_connections", "200", line_of(text, "max_connections"))]
    pgha1 = hosts["hippo-ha-pgha1"].host
    assert (pgha1["ram"].value, pgha1["ram"].source.line) == (2 * 1024**3, line_of(text, "memory: 2Gi"))
    assert pgha1["memory_limit"].value == 2 * 1024**3 and pgha1["memory_request"].value == 1024**3
    assert pgha1["cpus"].value == 2 and pgha1["hugepages"].value == 512 * 1024**2
    assert "ram" not in hosts["hippo-ha-small"].host


def test_a_name_or_a_value_a_tool_fills_in_is_unknown_in_every_instance_set() -> None:
    # ${EXTRA} (Flux's or envsubst's) was PGV401 "unrecognized configuration parameter ${extra}"
    text = tuned(extra="          ${EXTRA}: 'on'\n          work_mem: ${WORK_MEM}\n")
    for host in by_name(text).values():
        line = line_of(text, "${EXTRA}")
        assert host.unknown["pg.checkpoint_timeout"].line == line and host.unknown["pg.work_mem"].line == line + 1
        assert "pg.shared_buffers" not in host.unknown and "pg.ssl" not in host.unknown  # set beside it; PGO's
        assert {s.name for s in written(host)} == {"shared_buffers", "max_connections"}
        assert f"cluster.yaml:{line + 1}: work_mem is left for a tool to fill in: not read" in host.notes


def test_planted_shared_buffers_above_the_memory_limit_typo_and_refused_value() -> None:
    text = tuned().replace("shared_buffers: 256MB", "shared_buffers: 6GB\n          shared_bufers: 1GB\n"
                           "          effective_io_concurrency: 5000")
    host = by_name(text)["hippo-ha-pgha1"]
    settings = {s.name: (s.value, s.source.line) for s in host.settings}
    assert settings["shared_buffers"] == ("6GB", line_of(text, "shared_buffers:"))
    assert settings["shared_bufers"] == ("1GB", line_of(text, "shared_bufers"))
    assert settings["effective_io_concurrency"] == ("5000", line_of(text, "effective_io_concurrency"))
    assert host.host["memory_limit"].value == 2 * 1024**3 and not host.problems


def test_planted_wal_level_minimal_is_overridden_by_pgo() -> None:
    text = tuned(extra="          wal_level: minimal\n")
    host = by_name(text)["hippo-ha-pgha1"]
    [problem] = host.problems
    assert problem.kind == "operator-overrides" and not problem.fatal and problem.target == "wal_level"
    assert problem.source.line == line_of(text, "wal_level")
    assert "PGO sets wal_level itself (logical)" in problem.message
    assert ("wal_level", "logical", line_of(text, "wal_level")) in [
        (s.name, s.value, s.source.line) for s in written(host)]  # the value that runs, at the line


def test_wal_level_logical_is_what_pgo_sets_anyway() -> None:
    host = by_name(tuned(extra="          wal_level: logical\n"))["hippo-ha-pgha1"]
    assert not host.problems and ("wal_level", "logical") in [(s.name, s.value) for s in written(host)]


def test_patronis_checks_apply_to_the_dynamic_configuration() -> None:
    text = tuned().replace("max_connections: 200", "max_connections: 20")
    host = by_name(text)["hippo-ha-pgha1"]
    [problem] = host.problems
    assert problem.source.line == line_of(text, "max_connections") and problem.kind == "patroni-replaced"
    assert ("max_connections", "100") in [(s.name, s.value) for s in written(host)]


@pytest.mark.parametrize(("line", "reason"), [
    ("port: 5433", "change port using .spec.port instead"),
    ("ssl_cert_file: /x.crt", "TLS is always enabled"),
    ("wal_level: minimal", 'wal_level must be "replica" or higher'),
    ("checkpoint_completion_target: 0.9", "an integer or a string"),
    ("jit: off", "an integer or a string"),  # a boolean to Kubernetes (YAML 1.1), as off unquoted is
    ("recovery_target_time: x", "recovery"),
])
def test_planted_parameters_the_crd_refuses_in_spec_config(line: str, reason: str) -> None:
    text = tuned(config=f"  config:\n    parameters:\n      {line}\n      work_mem: 64MB\n")
    host = by_name(text)["hippo-ha-pgha1"]
    [problem] = host.problems
    assert problem.kind == "operator-refused" and problem.fatal and reason in problem.message
    assert problem.target == line.split(":")[0]
    assert problem.source.line == line_of(text, line)
    assert [s.name for s in written(host)] == ["shared_buffers", "max_connections", "work_mem"]


def test_more_than_50_parameters_in_spec_config_are_refused() -> None:
    lines = "".join(f"      log_parameter_{index}: x\n" for index in range(51))
    text = tuned(config="  config:\n    parameters:\n" + lines)
    problems = [p for p in by_name(text)["hippo-ha-pgha1"].problems if p.target == "parameters"]
    assert [(p.fatal, p.source.line) for p in problems] == [(True, line_of(text, "  config:") + 1)]
    assert "at most 50" in problems[0].message


def test_spec_config_parameters_apply_after_the_patroni_ones() -> None:
    text = tuned(config="  config:\n    parameters:\n      shared_buffers: 512MB\n")
    settings = [(s.name, s.value) for s in written(by_name(text)["hippo-ha-pgha1"])]
    assert settings == [("shared_buffers", "256MB"), ("max_connections", "200"), ("shared_buffers", "512MB")]


@pytest.mark.parametrize("version", ["eighteen", "1800", '"18"'])
def test_a_version_kubernetes_refuses_is_a_fatal_problem_at_its_line(version: str) -> None:
    text = tuned().replace("postgresVersion: 18", f"postgresVersion: {version}")
    host = by_name(text)["hippo-ha-pgha1"]
    [problem] = [problem for problem in host.problems if problem.target == "postgresVersion"]
    assert problem.fatal and "no PostgreSQL major version" in problem.message
    assert problem.source.line == line_of(text, "postgresVersion") and "pg_version" not in host.host


def test_a_partial_manifest_joins_the_hosts_beside_it_or_declares_nothing() -> None:
    patch = tuned().replace("  instances:\n", "  instancez:\n")  # a patch of parameters: no instance sets
    [host] = parse_crunchy(patch, "patch.yaml")
    assert not host.hosting and host.name == "hippo-ha" and "patch" in host.notes[0]
    assert [s.name for s in written(host)] == ["shared_buffers", "max_connections"]
    path = DOCUMENTS / "crunchy" / "postgres.yaml"  # the real example without its instances nor parameters
    assertion = path.read_text().replace("  instances:\n", "  instancez:\n")
    assert parse_crunchy(assertion, "assert.yaml") == [] and kinds_recognising(Path("assert.yaml"), assertion) == []
    chainsaw = HA.read_text().replace("postgresVersion: 18", "postgresVersion: (to_number($postgres.version))")
    [host] = parse_crunchy(chainsaw, "chainsaw.yaml")
    assert "left for a tool to fill in" in host.notes[0] and not host.problems


@pytest.mark.parametrize(("old", "new", "message"), [
    ("memory: 2Gi", "memory: two", "no memory quantity"),
])
def test_what_kubernetes_refuses_is_a_parse_error(old: str, new: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_crunchy(tuned().replace(old, new, 1), "cluster.yaml")


C = "apiVersion: postgres-operator.crunchydata.com/v1beta1\nkind: PostgresCluster\n"


@pytest.mark.parametrize("text", [
    C + 'metadata:\n  name: a\nspec:\n  instances: [1, null, {name: 5, replicas: true}]\n',
    C + 'metadata:\n  name: a\nspec:\n  instances: {}\n',
    C + 'metadata:\n  name: a\nspec:\n  instances: [{}]\n  patroni: [1]\n  config: {parameters: [1]}\n',
    C + 'metadata:\n  name: a\nspec:\n  instances: [{resources: {limits: {cpu: 0}}}]\n',
    C + 'metadata:\n  name: a\nspec:\n  instances: [{}]\n  config: {parameters: {x: [1], wal_level: 5}}\n',
])
def test_odd_shapes_give_hosts_or_a_parse_error_never_a_traceback(text: str) -> None:
    try:
        found = parse_crunchy(text, "odd.yaml")
    except ParseError as error:
        assert error.source is not None and error.source.line is not None
    else:
        assert isinstance(found, list)


def test_pgvet_lint_finds_the_planted_mistakes_at_their_yaml_lines(tmp_path: Path) -> None:
    text = tuned(extra="          wal_level: minimal\n          shared_bufers: 1GB\n          work_mem: -5MB\n",
                 config="  config:\n    parameters:\n      port: 5433\n").replace("shared_buffers: 256MB",
                                                                           "shared_buffers: 6GB")
    (tmp_path / "postgres.yaml").write_text(text)
    found = lint_findings(tmp_path)
    assert {("hippo-ha-pgha1", rule, "postgres.yaml", line_of(text, needle)) for rule, needle in (
        ("PGV401", "shared_bufers"),  # a typo
        ("PGV403", "work_mem"),  # a value PostgreSQL refuses
        ("PGV501", "shared_buffers:"),  # 300 % of the instance set's memory limit
        ("PGV407", "port: 5433"),  # refused by the CRD
        ("PGV435", "wal_level"),  # minimal with replicas: PGO runs logical
    )} <= found
    assert ("hippo-ha-small", "PGV407", "postgres.yaml", line_of(text, "port: 5433")) in found


def test_pgvet_lint_reads_the_real_files_without_a_false_error() -> None:
    assert sorted(host.name for host in load_hosts(DOCUMENTS / "crunchy")) == [
        "helm-values-instance1",
        "hippo-ha-pgha1",
        "hippo-instance1",
        "hippo-s3-00",
        "keycloakdb-00",
        "major-upgrade-00",
        "otel-cluster-instance1",
    ]
    found = lint_findings(DOCUMENTS / "crunchy")
    assert not [finding for finding in found if finding[1] in ("PGV401", "PGV403", "PGV407")]


def test_pgvet_lint_joins_a_patch_to_its_cluster_and_leaves_assertions_out(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "postgres.yaml").write_text(tuned())
    patch = (C + "metadata:\n  name: hippo-ha\nspec:\n  patroni:\n    dynamicConfiguration:\n      postgresql:\n"
             "        parameters:\n          shared_bufers: 6GB\n")
    (tmp_path / "base" / "patch.yaml").write_text(patch)
    (tmp_path / "e2e").mkdir()
    (tmp_path / "e2e" / "00-assert.yaml").write_text(C + "metadata:\n  name: hippo-ha\nstatus:\n  instances: []\n")
    found = lint_findings(tmp_path)
    # the patch's lines are judged with each host of its directory (before the hosts' own: snapshot/load.py's order)
    assert {(host, "PGV401", "patch.yaml", line_of(patch, "shared_bufers"))
            for host in ("hippo-ha-pgha1", "hippo-ha-small")} <= found
    assert {host for host, _, _, _ in found} <= {"hippo-ha-pgha1", "hippo-ha-small"}


def test_a_cluster_that_sets_no_parameter_runs_pgos_settings_on_postgresqls_defaults(tmp_path: Path) -> None:
    """The real kustomize/postgres example sets no parameter: PGO still turns TLS on (a3: ssl-off was
    reported on it once a parameter was added, and no PostgreSQL rule at all was evaluated without one)."""
    (tmp_path / "postgres.yaml").write_text((DOCUMENTS / "crunchy" / "postgres.yaml").read_text())
    rules = {rule for _, rule, _, _ in lint_findings(tmp_path)}
    assert "PGV805" in rules  # log_min_duration_statement judged at PostgreSQL's default
    assert "PGV833" not in rules  # ssl = on, as PGO sets it
    host = by_name((tmp_path / "postgres.yaml").read_text())["hippo-instance1"]
    assert {s.name: s.value for s in host.settings}["ssl"] == "on" and written(host) == []
