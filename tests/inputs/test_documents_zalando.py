"""Zalando postgres-operator's postgresql manifests (pgvet.inputs.documents.zalando) on real files and on
mistakes planted in copies of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents_support import DOCUMENTS, corpus, kinds_recognising, line_of, lint_findings
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost
from pgvet.inputs.documents.zalando import parse_zalando
from pgvet.snapshot.load import load_hosts

COMPLETE = DOCUMENTS / "zalando" / "complete-postgres-manifest.yaml"


def parsed(text: str, path: str = "cluster.yaml") -> DeclaredHost:
    hosts = parse_zalando(text, path)
    assert len(hosts) == 1
    return hosts[0]


@pytest.mark.parametrize("path", corpus("zalando"), ids=lambda path: path.name)
def test_every_real_manifest_says_its_version_and_only_patroni_refuses_anything(path: Path) -> None:
    host = parsed(path.read_text(), str(path))
    assert host.host["pg_version"].value in (14, 18)
    assert all(problem.kind == "patroni-replaced" for problem in host.problems)


def test_the_complete_manifest_maps_name_version_instances_resources_and_parameters() -> None:
    text = COMPLETE.read_text()
    host = parsed(text)
    assert host.name == "acid-test-cluster" and host.source.line == 4
    assert host.host["pg_version"].value == 18 and host.host["pg_version"].source.line == line_of(text, 'version: "18"')
    assert host.host["instances"].value == 2
    limit = line_of(text, "memory: 500Mi")
    assert (host.host["ram"].value, host.host["ram"].source.line) == (500 * 1024**2, limit)
    assert host.host["memory_limit"].value == 500 * 1024**2
    assert host.host["memory_request"].value == 100 * 1024**2
    assert (host.host["cpus"].value, host.host["cpu_limit"].value) == (1, 0.5)  # 500m is part of one CPU
    assert [(s.name, s.value, s.source.line) for s in host.settings[-3:]] == [  # after Spilo's defaults
        ("shared_buffers", "32MB", line_of(text, 'shared_buffers: "32MB"')),
        ("max_connections", "100", line_of(text, 'max_connections: "10"')),  # what Patroni runs instead of 10
        ("log_statement", "all", line_of(text, 'log_statement: "all"'))]


def test_spilos_defaults_apply_before_the_manifests_parameters() -> None:
    text = (DOCUMENTS / "zalando" / "minimal-postgres-manifest.yaml").read_text()  # no parameter, no resources
    host = parsed(text)
    line = line_of(text, "postgresql:")
    values = {setting.name: (setting.value, setting.source.line) for setting in host.settings}
    assert values["ssl"] == ("on", line) and values["log_min_duration_statement"] == ("500", line)
    assert "pg_stat_statements" in values["shared_preload_libraries"][0]
    # without a memory limit Spilo's shared_buffers and max_connections are unknown, as its archive_command
    assert set(host.unknown) == {"pg.archive_command", "pg.shared_buffers", "pg.max_connections"}
    complete = parsed(COMPLETE.read_text())  # limits.memory 500Mi; shared_buffers set, max_connections not
    values = {setting.name: setting.value for setting in complete.settings}
    assert values["shared_buffers"] == "32MB" and set(complete.unknown) == {"pg.archive_command"}
    assert [s.value for s in complete.settings if s.name == "max_connections"] == ["100"]  # the manifest's, by Patroni
    bigger = parsed(COMPLETE.read_text().replace('      shared_buffers: "32MB"\n', "").replace(
        "memory: 500Mi", "memory: 6Gi"))
    values = {setting.name: setting.value for setting in bigger.settings}
    assert values["shared_buffers"] == "1228MB"  # a fifth of the limit


def test_a_variable_substituted_before_kubectl_is_a_fact_pgvet_cannot_know() -> None:
    # Flux's post-build substitution: a quantity ${PG_MEMORY} was "no memory quantity", the directory not linted
    text = COMPLETE.read_text().replace("name: acid-test-cluster", "name: ${CLUSTER}").replace(
        "memory: 500Mi", "memory: ${PG_MEMORY:=500Mi}").replace('log_statement: "all"', 'log_statement: "${LOG}"')
    host = parsed(text, "cluster.yaml")
    assert host.name == "cluster" and host.problems[0].kind == "patroni-replaced"  # max_connections "10" still
    assert {key: source.line for key, source in host.unknown.items()} == {
        "pg.log_statement": line_of(text, "log_statement"), "host.memory_limit": line_of(text, "PG_MEMORY"),
        "host.ram": line_of(text, "PG_MEMORY"), "pg.archive_command": line_of(text, "  postgresql:")}
    assert "ram" not in host.host and host.host["memory_request"].value == 100 * 1024**2
    assert [s.value for s in host.settings if s.name == "log_statement"] == []  # nor Spilo's ddl


def test_a_parameter_name_left_to_a_variable_may_be_any_but_those_set_beside_it() -> None:
    text = COMPLETE.read_text().replace('log_statement: "all"', 'log_statement: "all"\n      ${EXTRA}: "on"')
    host = parsed(text, "cluster.yaml")
    line = line_of(text, "${EXTRA}")
    assert host.unknown["pg.work_mem"].line == line and host.unknown["pg.ssl"].line == line
    assert "pg.log_statement" not in host.unknown and "pg.shared_buffers" not in host.unknown


def test_max_connections_below_patronis_minimum_is_replaced_by_its_default() -> None:
    # The operator's own example: Patroni's check of max_connections is "at least 25"; it logs "failed validation"
    # and runs 100, so pgvet reports the line (PGV441) and judges 100 there, the value that runs.
    text = COMPLETE.read_text()
    host = parsed(text)
    [problem] = host.problems
    assert problem.source.line == line_of(text, 'max_connections: "10"') and not problem.fatal
    assert problem.kind == "patroni-replaced" and "runs max_connections = 100 instead" in problem.message
    assert ("max_connections", "100") in [(setting.name, setting.value) for setting in host.settings]


def test_planted_typo_and_refused_value_stay_settings_at_their_lines() -> None:
    text = COMPLETE.read_text().replace('log_statement: "all"', 'log_statment: "all"\n      work_mem: "-5MB"')
    host = parsed(text)
    assert ("log_statment", "all", line_of(text, "log_statment")) in [
        (s.name, s.value, s.source.line) for s in host.settings]
    assert ("work_mem", "-5MB", line_of(text, "work_mem")) in [(s.name, s.value, s.source.line) for s in host.settings]


def test_planted_shared_buffers_above_the_memory_limit() -> None:
    text = COMPLETE.read_text().replace('shared_buffers: "32MB"', 'shared_buffers: "6GB"').replace(
        "memory: 500Mi", "memory: 4Gi")
    host = parsed(text)
    [shared_buffers] = [setting for setting in host.settings if setting.name == "shared_buffers"]
    assert shared_buffers.value == "6GB" and shared_buffers.source.line == line_of(text, "shared_buffers")
    assert host.host["memory_limit"].value == host.host["ram"].value == 4 * 1024**3


def test_planted_wal_level_minimal_with_replicas_is_replaced_by_patroni() -> None:
    text = COMPLETE.read_text().replace('log_statement: "all"', 'wal_level: "minimal"')
    host = parsed(text)
    problems = {problem.source.line: problem for problem in host.problems}
    problem = problems[line_of(text, "wal_level")]
    assert problem.kind == "patroni-replaced" and "runs wal_level = replica instead" in problem.message
    assert ("wal_level", "replica") in [(s.name, s.value) for s in host.settings] and host.host["instances"].value == 2


def test_parameters_patroni_sets_itself_are_ignored_and_said() -> None:
    text = COMPLETE.read_text().replace('log_statement: "all"', 'port: "5433"')
    host = parsed(text)
    problems = {problem.source.line: problem for problem in host.problems}
    problem = problems[line_of(text, "port:")]
    assert problem.kind == "patroni-ignored" and "Patroni sets it from postgresql.listen" in problem.message
    assert "port" not in [s.name for s in host.settings]


def test_streams_make_the_operator_set_wal_level_logical() -> None:
    text = COMPLETE.read_text().replace('log_statement: "all"', 'wal_level: "replica"')
    assert ("wal_level", "replica") in [(s.name, s.value) for s in parsed(text).settings]
    text = text.replace("#  streams:\n#  - applicationId: test-app\n#    database: foo\n",
                        "  streams:\n  - applicationId: test-app\n    database: foo\n")
    host = parsed(text)
    [problem] = [problem for problem in host.problems if problem.target == "wal_level"]
    assert problem.source.line == line_of(text, "wal_level") and "spec.streams" in problem.message
    assert ("wal_level", "logical") in [(s.name, s.value) for s in host.settings]


def test_an_unquoted_value_is_refused_by_the_crd() -> None:
    text = COMPLETE.read_text().replace('max_connections: "10"', "max_connections: 200")
    host = parsed(text)
    [problem] = host.problems
    assert problem.kind == "operator-refused" and problem.fatal
    assert problem.source.line == line_of(text, "max_connections: 200") and "quote it" in problem.message
    assert ("max_connections", "200") in [(s.name, s.value) for s in host.settings]


def test_local_parameters_skip_patronis_dynamic_check() -> None:
    # shared_buffers goes to Patroni's local configuration (the operator's isBootstrapOnlyParameter list): no check
    text = COMPLETE.read_text().replace('log_statement: "all"', 'ssl: "off"')
    host = parsed(text)
    assert ("ssl", "off") in [(s.name, s.value) for s in host.settings]


def test_huge_pages_and_a_disabled_shm_volume() -> None:
    text = COMPLETE.read_text().replace("#      hugepages-2Mi: 128Mi\n#      hugepages-1Gi: 1Gi\n  patroni:",
                                        "      hugepages-2Mi: 128Mi\n  patroni:").replace(
        "enableShmVolume: true", "enableShmVolume: false")
    host = parsed(text)
    assert host.host["hugepages"].value == 128 * 1024**2 and host.host["hugepage_size"].value == 2 * 1024**2
    assert host.host["shm_size"].value == 64 * 1024**2 and any("64 MiB" in note for note in host.notes)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("memory: 500Mi", "memory: 500 MB", "no memory quantity"),
    ("cpu: 500m", "cpu: lots", "no CPU quantity"),
    ("numberOfInstances: 2", "numberOfInstances: [2", "invalid YAML"),
])
def test_what_kubernetes_refuses_is_a_parse_error_at_its_line(old: str, new: str, message: str) -> None:
    text = COMPLETE.read_text().replace(old, new)
    with pytest.raises(ParseError, match=message) as raised:
        parse_zalando(text, "cluster.yaml")
    assert raised.value.source is not None and raised.value.source.line is not None


@pytest.mark.parametrize(("version", "message"), [
    ('"eighteen"', "is no PostgreSQL major version"), ('"180"', "is no PostgreSQL major version"),
    ("18", 'is not a string: the postgresql CRD takes a string'),
])
def test_a_version_kubernetes_refuses_is_a_fatal_problem_at_its_line(version: str, message: str) -> None:
    text = COMPLETE.read_text().replace('version: "18"', f"version: {version}")
    host = parsed(text)
    [problem] = [problem for problem in host.problems if problem.target == "version"]
    assert problem.fatal and message in problem.message and problem.source.line == line_of(text, "version:")
    assert ("pg_version" in host.host) == (version == "18")


def test_a_partial_manifest_joins_the_hosts_beside_it_or_declares_nothing() -> None:
    # a kustomize patch: no metadata.name, only the parameters it changes
    head = 'apiVersion: "acid.zalan.do/v1"\nkind: postgresql\n'
    patch = head + 'spec:\n  postgresql:\n    parameters:\n      work_mem: "64MB"\n'
    [host] = parse_zalando(patch, "overlay/patch.yaml")
    assert not host.hosting and [(s.name, s.source.line) for s in host.settings] == [("work_mem", 6)]
    assert "patch" in host.notes[0] and kinds_recognising(Path("patch.yaml"), patch) == ["zalando"]
    assertion = head + "metadata:\n  name: a\nstatus:\n  PostgresClusterStatus: Running\n"
    assert parse_zalando(assertion, "assert.yaml") == [] and kinds_recognising(Path("assert.yaml"), assertion) == []


def test_several_documents_and_other_kinds_in_one_file() -> None:
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\n"
            + (DOCUMENTS / "zalando" / "minimal-postgres-manifest.yaml").read_text()
            + "---\n" + (DOCUMENTS / "zalando" / "standby-manifest.yaml").read_text())
    hosts = parse_zalando(text, "all.yaml")
    standby = line_of(text, "acid-standby")
    assert [(host.name, host.source.line) for host in hosts] == [("acid-minimal-cluster", 9),
                                                                  ("acid-standby-cluster", standby)]


def test_a_template_of_a_manifest_is_not_read_until_rendered() -> None:
    text = COMPLETE.read_text().replace("numberOfInstances: 2", "numberOfInstances: {{ .Values.replicas }}")
    assert kinds_recognising(Path("templates/postgresql.yaml"), text) == []


def test_a_cnpg_cluster_or_a_patroni_file_is_not_zalandos() -> None:
    cnpg = "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: x\nspec:\n  instances: 3\n"
    assert "zalando" not in kinds_recognising(Path("cluster.yaml"), cnpg)
    patroni = "scope: acid\nname: n1\nrestapi:\n  listen: :8008\npostgresql:\n  parameters:\n    kind: postgresql\n"
    assert "zalando" not in kinds_recognising(Path("patroni.yml"), patroni)


Z = "apiVersion: acid.zalan.do/v1\nkind: postgresql\n"


@pytest.mark.parametrize("text", [
    Z + 'metadata:\n  name: a\nspec:\n  postgresql: 3\n  resources: [1]\n  numberOfInstances: "2"\n',
    Z + 'metadata:\n  name: a\nspec:\n  postgresql:\n    parameters: [a, b]\n  resources:\n    limits: [1]\n',
    Z + 'metadata:\n  name: a\nspec:\n  postgresql:\n    parameters:\n      1: 2\n      x: {a: 1}\n      y: null\n',
    Z + 'metadata:\n  name: [a]\n',
    '- a\n- b\n',
    '',
    '---\n---\n',
    Z + 'metadata:\n  name: a\nspec:\n  resources:\n    limits:\n      memory: 1e40Gi\n',
])
def test_odd_shapes_give_hosts_or_a_parse_error_never_a_traceback(text: str) -> None:
    try:
        found = parse_zalando(text, "odd.yaml")
    except ParseError as error:
        assert error.source is not None and error.source.line is not None
    else:
        assert isinstance(found, list)


def test_an_unquoted_yaml_1_1_boolean_is_no_string_to_kubernetes() -> None:
    # kubectl reads manifests with sigs.k8s.io/yaml (YAML 1.1): an unquoted off is a boolean, which the CRD refuses
    text = COMPLETE.read_text().replace('log_statement: "all"',
                                        'log_statement: "all"\n      jit: off\n      fsync: "off"')
    [problem] = [problem for problem in parsed(text).problems if problem.target in ("jit", "fsync")]
    assert (problem.target, problem.fatal, problem.source.line) == ("jit", True, line_of(text, "jit: off"))


def test_pgvet_lint_finds_the_planted_mistakes_at_their_yaml_lines(tmp_path: Path) -> None:
    text = COMPLETE.read_text().replace('shared_buffers: "32MB"', 'shared_buffers: "6GB"').replace(
        "memory: 500Mi", "memory: 4Gi").replace('max_connections: "10"', "max_connections: 200").replace(
        'log_statement: "all"', 'log_statment: "all"\n      work_mem: "-5MB"\n      wal_level: "minimal"')
    (tmp_path / "cluster.yaml").write_text(text)
    found = lint_findings(tmp_path)
    assert {("acid-test-cluster", rule, "cluster.yaml", line_of(text, needle)) for rule, needle in (
        ("PGV401", "log_statment"),  # a typo
        ("PGV403", "work_mem"),  # a value PostgreSQL refuses
        ("PGV501", "shared_buffers"),  # 150 % of the pod's memory limit
        ("PGV407", "max_connections: 200"),  # refused by the CRD: not a string
        ("PGV441", "wal_level"),  # minimal with replicas: Patroni runs replica
    )} <= found


def test_pgvet_lint_reads_the_real_files_without_a_false_error() -> None:
    hosts = load_hosts(DOCUMENTS / "zalando")
    assert {host.value("host.orchestrator") for host in hosts} == {"zalando"}  # snapshot/load.py sets it
    assert sorted(host.name for host in hosts) == [
        "acid-minimal-cluster",
        "acid-standby-cluster",
        "acid-test-cluster",
        "acid-upgrade-test",
    ]
    found = lint_findings(DOCUMENTS / "zalando")
    assert not [finding for finding in found if finding[1] in ("PGV401", "PGV403", "PGV407")]
    # Spilo runs ssl on, pg_stat_statements and its logging: not PostgreSQL's defaults
    assert not [finding for finding in found if finding[1] in ("PGV811", "PGV833", "PGV805", "PGV806", "PGV809")]


def test_a_manifest_without_resources_says_the_operator_gives_its_own() -> None:
    # the operator's configuration's default requests and limits (500Mi of memory in its default one) apply: the
    # pod's memory is not the manifest's to say, and the memory rules were not evaluated without a word why
    text = "\n".join(line for line in COMPLETE.read_text().splitlines()
                     if not line.startswith("  resources:") and not line.startswith(("    requests:", "    limits:",
                                                                                      "      cpu:", "      memory:")))
    host = parsed(text, "cluster.yaml")
    assert "ram" not in host.host and "memory_limit" not in host.host
    assert any("no spec.resources: the operator applies its configuration's default_memory_request and "
               "default_memory_limit" in note for note in host.notes)
    assert not any("no spec.resources" in note for note in parsed(COMPLETE.read_text(), "cluster.yaml").notes)
