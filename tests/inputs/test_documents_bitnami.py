"""The Bitnami PostgreSQL chart's values (pgvet.inputs.documents.bitnami) on real files and on mistakes planted in
copies of them: postgresql.conf snippets read by pgvet's postgresql.conf parser, each line at its YAML line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from documents_support import DOCUMENTS, corpus, kinds_recognising, line_of, lint_findings
from pgvet.cli import app
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost
from pgvet.inputs.documents._bitnami_conf import snake_case
from pgvet.inputs.documents._bitnami_image import CONTAINER_SOURCE
from pgvet.inputs.documents._kubernetes import go_number
from pgvet.inputs.documents.bitnami import parse_bitnami
from pgvet.snapshot.load import load_hosts

VALUES = DOCUMENTS / "bitnami" / "values.yaml"
SNIPPET = """  extendedConfiguration: |
    # tuned for the app
    max_connections = 200
    shared_buffers = '1GB'

    work_mem = 16MB   # per sort
"""


def planted(snippet: str = SNIPPET, text: str | None = None) -> str:
    """The chart's real values.yaml with a primary.extendedConfiguration planted in it."""
    return (text or VALUES.read_text()).replace('  extendedConfiguration: ""\n', snippet, 1)


def hosts(text: str) -> dict[str, DeclaredHost]:
    return {host.name: host for host in parse_bitnami(text, "deploy/values.yaml")}


def settings(host: DeclaredHost) -> list[tuple[str, str, int | None]]:
    """The settings the values give (those the container writes whatever they say left out)."""
    return [(setting.name, setting.value, setting.source.line) for setting in host.settings
            if setting.source.path != CONTAINER_SOURCE]


@pytest.mark.parametrize("path", [path for path in corpus("bitnami") if path.name != "ci-replication.yaml"],
                         ids=lambda path: path.name)
def test_every_real_values_file_is_one_standalone_host_named_after_its_file(path: Path) -> None:
    [host] = parse_bitnami(path.read_text(), str(path))
    assert host.name == path.stem and not host.problems
    assert host.kind == "bitnami" and host.host["instances"].value == 1


def test_a_values_file_without_the_charts_own_keys_is_not_claimed() -> None:
    # the corpus's ci-replication.yaml is one (test_documents_kinds.py)
    mysql = "architecture: replication\nauth:\n  rootPassword: x\nprimary:\n  configuration: |\n    [mysqld]\n"
    assert kinds_recognising(Path("values.yaml"), mysql) == []
    manifest = "apiVersion: v1\nkind: ConfigMap\nprimary:\n  extendedConfiguration: x\n"
    assert kinds_recognising(Path("values.yaml"), manifest) == []


def test_a_flux_helmrelease_of_the_chart_holds_its_values_under_spec_values() -> None:
    # the real CI snippet as a gitops repository writes it: a HelmRepository and the chart's HelmRelease in one file
    snippet = (DOCUMENTS / "bitnami" / "ci-extended-config.yaml").read_text()
    text = ("apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: bitnami\n---\n"
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: db\nspec:\n"
            "  releaseName: orders-db\n  chart:\n    spec:\n      chart: postgresql\n  values:\n"
            + "".join(f"    {line}\n" for line in snippet.splitlines()))
    assert kinds_recognising(Path("release.yaml"), text) == ["bitnami"]
    [host] = parse_bitnami(text, "release.yaml")
    assert host.name == "orders-db"
    assert settings(host) == [("pg_stat_statements.max", "10000", line_of(text, "pg_stat_statements.max")),
                              ("pg_stat_statements.track", "all", line_of(text, "pg_stat_statements.track"))]


def test_an_umbrella_charts_values_hold_the_charts_under_postgresql() -> None:
    text = ("backend:\n  replicas: 2\npostgresql:\n  enabled: true\n  auth:\n    postgresPassword: x\n"
            "  primary:\n    resources:\n      limits:\n        memory: 1Gi\n"
            "    extendedConfiguration: |\n      shared_buffers = 2GB\n")
    assert kinds_recognising(Path("values.yaml"), text) == ["bitnami"]
    [host] = parse_bitnami(text, "values.yaml")
    assert settings(host) == [("shared_buffers", "2GB", 12)] and host.host["memory_limit"].value == 1024**3
    # a dependency left out (an external database): no PostgreSQL host in these values
    assert kinds_recognising(Path("values.yaml"), text.replace("enabled: true", "enabled: false")) == []


def test_the_harbor_charts_values_hold_a_real_umbrella_snippet() -> None:
    path = DOCUMENTS / "bitnami" / "harbor-values.yaml"
    text = path.read_text()
    [host] = parse_bitnami(text, str(path))
    assert host.name == "harbor-values"
    assert ("max_connections", "1024", line_of(text, "max_connections = 1024")) in settings(host)


def test_the_charts_values_the_image_version_preload_libraries_and_the_nano_preset() -> None:
    text = VALUES.read_text()
    host = hosts(text)["values"]
    assert host.host["pg_version"].value == 17  # image.tag 17.6.0-debian-12-r4
    assert settings(host) == [("shared_preload_libraries", "pgaudit",
                               line_of(text, 'postgresqlSharedPreloadLibraries: "pgaudit"'))]
    preset = text.splitlines().index('  resourcesPreset: "nano"') + 1  # the primary's is the first
    assert (host.host["memory_limit"].value, host.host["memory_limit"].source.line) == (192 * 1024**2, preset)
    assert host.host["ram"].value == 192 * 1024**2 and host.host["memory_request"].value == 128 * 1024**2
    assert (host.host["cpus"].value, host.host["cpu_limit"].value) == (1, 0.15)
    assert host.notes == ["resourcesPreset nano: the chart's preset numbers were used (limits 192Mi of memory, "
                          "150m CPU)"]


def test_extended_configuration_lines_are_at_their_yaml_lines() -> None:
    text = planted()
    host = hosts(text)["values"]
    assert settings(host)[1:] == [("max_connections", "200", line_of(text, "max_connections = 200")),
                                  ("shared_buffers", "1GB", line_of(text, "shared_buffers = '1GB'")),
                                  ("work_mem", "16MB", line_of(text, "work_mem = 16MB"))]


def test_the_real_ci_snippet_is_at_its_lines() -> None:
    path = DOCUMENTS / "bitnami" / "ci-extended-config.yaml"
    [host] = parse_bitnami(path.read_text(), str(path))
    assert settings(host) == [("pg_stat_statements.max", "10000", 3), ("pg_stat_statements.track", "all", 4)]


def test_planted_shared_buffers_above_resources_limits_and_a_typo() -> None:
    text = planted(SNIPPET.replace("shared_buffers = '1GB'", "shared_buffers = 6GB\n    shared_bufers = 1GB"))
    text = text.replace("  resources: {}\n", "  resources:\n    limits:\n      memory: 4Gi\n      cpu: 2\n", 1)
    host = hosts(text)["values"]
    assert ("shared_buffers", "6GB", line_of(text, "shared_buffers = 6GB")) in settings(host)
    assert ("shared_bufers", "1GB", line_of(text, "shared_bufers")) in settings(host)
    assert host.host["memory_limit"].value == host.host["ram"].value == 4 * 1024**3
    assert host.host["cpus"].value == 2 and not host.notes  # resources win over the preset


def test_planted_value_postgresql_refuses_and_a_syntax_error_at_their_lines() -> None:
    text = planted(SNIPPET.replace("work_mem = 16MB", "work_mem = -5MB\n    max_wal_size == 1GB"))
    host = hosts(text)["values"]
    assert ("work_mem", "-5MB", line_of(text, "work_mem = -5MB")) in settings(host)
    [problem] = host.problems
    assert problem.kind == "syntax" and problem.fatal and problem.source.line == line_of(text, "max_wal_size")
    assert problem.message == 'syntax error in file "conf.d/override.conf" line 6, near token "="'


def test_planted_wal_level_minimal_with_read_replicas() -> None:
    text = planted(SNIPPET.replace("work_mem = 16MB", "wal_level = minimal")).replace(
        "architecture: standalone", "architecture: replication")
    found = hosts(text)
    assert list(found) == ["values", "values-read"]
    assert ("wal_level", "minimal", line_of(text, "wal_level = minimal")) in settings(found["values"])
    assert all(host.host["instances"].value == 2 for host in found.values())  # readReplicas.replicaCount: 1
    assert "wal_level" not in [name for name, _, _ in settings(found["values-read"])]  # the primary's snippet


def test_read_replicas_have_their_own_snippet_and_not_the_primarys_configuration() -> None:
    text = VALUES.read_text().replace("architecture: standalone", "architecture: replication")
    text = text.replace('  configuration: ""\n', "  configuration: |-\n    max_connections = 300\n", 1)
    head, _, tail = text.partition("readReplicas:\n")
    tail = tail.replace('  extendedConfiguration: ""\n', "  extendedConfiguration: |\n    hot_standby_feedback = on\n",
                        1)
    text = head + "readReplicas:\n" + tail.replace("  replicaCount: 1\n", "  replicaCount: 3\n", 1)
    read = hosts(text)["values-read"]
    assert [(name, value) for name, value, _ in settings(read)] == [
        ("shared_preload_libraries", "pgaudit"), ("hot_standby_feedback", "on")]  # chart 11 on: the primary's alone
    assert read.host["instances"].value == 4


def test_template_lines_are_skipped_with_a_note_and_other_scalars_sit_at_their_key() -> None:
    text = planted("  extendedConfiguration: |\n    work_mem = {{ .Values.workMem }}\n    max_connections = 50\n")
    host = hosts(text)["values"]
    assert [name for name, _, _ in settings(host)] == ["shared_preload_libraries", "max_connections"]
    assert f"deploy/values.yaml:{line_of(text, 'work_mem')}: a line left for Helm" in host.notes[0]
    text = planted('  extendedConfiguration: "max_connections = 50"\n')
    assert ("max_connections", "50", line_of(text, "max_connections = 50")) in settings(hosts(text)["values"])


def test_an_existing_configmap_is_said_not_read() -> None:
    values = VALUES.read_text().replace('  existingExtendedConfigmap: ""', "  existingExtendedConfigmap: pg")
    text = planted(text=values)
    host = hosts(text)["values"]
    assert [name for name, _, _ in settings(host)] == ["shared_preload_libraries"]
    assert any("existingExtendedConfigmap: pg" in note for note in host.notes)


def test_an_include_in_a_snippet_cannot_be_followed() -> None:
    text = planted("  extendedConfiguration: |\n    include 'more.conf'\n")
    [problem] = hosts(text)["values"].problems
    assert problem.kind == "missing-include" and problem.source.line == line_of(text, "include 'more.conf'")


def test_shm_volume_size_or_the_runtimes_64_mib() -> None:
    assert "shm_size" not in hosts(VALUES.read_text())["values"].host  # a memory-backed /dev/shm, no limit
    text = VALUES.read_text().replace('  sizeLimit: ""', "  sizeLimit: 1Gi", 1)
    host = hosts(text)["values"]
    shm = host.host["shm_size"]
    assert (shm.value, shm.source.line) == (1024**3, line_of(text, "sizeLimit: 1Gi"))
    head, _, tail = VALUES.read_text().partition("shmVolume:\n")
    text = head + "shmVolume:\n" + tail.replace("  enabled: true\n", "  enabled: false\n", 1)
    host = hosts(text)["values"]
    assert host.host["shm_size"].value == 64 * 1024**2 and "64 MiB" in host.notes[-1]


@pytest.mark.parametrize("false", ["no", "off", "N", "False"])
def test_helm_reads_an_unquoted_yaml_1_1_boolean_of_the_values_as_a_boolean(false: str) -> None:
    """Helm reads values with sigs.k8s.io/yaml (go-yaml's YAML 1.1 booleans: y, yes, on, n, no, off…; helm/helm#12179,
    #10657): shmVolume.enabled: no leaves out the chart's /dev/shm volume, postgresql.enabled: off the dependency."""
    head, _, tail = VALUES.read_text().partition("shmVolume:\n")
    text = head + "shmVolume:\n" + tail.replace("  enabled: true\n", f"  enabled: {false}\n", 1)
    host = hosts(text)["values"]
    assert host.host["shm_size"].value == 64 * 1024**2 and "64 MiB" in host.notes[-1]
    quoted = head + "shmVolume:\n" + tail.replace("  enabled: true\n", f"  enabled: '{false}'\n", 1)
    assert "shm_size" not in hosts(quoted)["values"].host  # a text: truthy to the chart's {{ if }}
    umbrella = ("postgresql:\n  enabled: true\n  auth:\n    postgresPassword: x\n  primary:\n"
                "    extendedConfiguration: |\n      shared_buffers = 2GB\n")
    assert kinds_recognising(Path("values.yaml"), umbrella.replace("enabled: true", f"enabled: {false}")) == []
    assert parse_bitnami(umbrella.replace("enabled: true", f"enabled: {false}"), "values.yaml") == []


def test_preload_libraries_given_as_a_boolean_are_the_text_helm_renders() -> None:
    # the chart passes {{ .Values.postgresqlSharedPreloadLibraries | quote }}: an unquoted on is "true" to PostgreSQL
    text = VALUES.read_text().replace('postgresqlSharedPreloadLibraries: "pgaudit"',
                                      "postgresqlSharedPreloadLibraries: on")
    assert ("shared_preload_libraries", "true", line_of(text, "postgresqlSharedPreloadLibraries: on")) in settings(
        hosts(text)["values"])


def test_an_unknown_preset_is_refused_like_helm() -> None:
    text = VALUES.read_text().replace('resourcesPreset: "nano"', 'resourcesPreset: "huge"', 1)
    with pytest.raises(ParseError, match="resourcesPreset 'huge'"):
        parse_bitnami(text, "values.yaml")


def test_a_snippet_that_is_no_text_is_said_not_read_and_a_one_line_error_is_at_its_key() -> None:
    text = planted("  extendedConfiguration:\n    max_connections: 200\n")
    host = hosts(text)["values"]
    assert [name for name, _, _ in settings(host)] == ["shared_preload_libraries"]
    key = text.splitlines().index("  extendedConfiguration:") + 1
    assert f"deploy/values.yaml:{key}: extendedConfiguration is no text" in host.notes[0]
    text = planted('  extendedConfiguration: "max_connections"\n')
    [problem] = hosts(text)["values"].problems
    assert problem.source.line == line_of(text, "max_connections") and "line 1, near end of line" in problem.message


B = "primary:\n"


@pytest.mark.parametrize("text", [
    B + '  extendedConfiguration: "x"\n  resources: {limits: []}\n  resourcesPreset: [1]\n',
    B + '  extendedConfiguration: a\narchitecture: replication\nreadReplicas: 3\n',
    B + '  extendedConfiguration: a\narchitecture: replication\nreadReplicas: {replicaCount: x}\nimage: {tag: [1]}\n',
    B + '  extendedConfiguration: a\n  existingConfigmap: [1]\nimage: 5\n',
    B + '  extendedConfiguration: |\n    a = 1\n    \\x00\n',
])
def test_odd_shapes_give_hosts_or_a_parse_error_never_a_traceback(text: str) -> None:
    try:
        found = parse_bitnami(text, "odd.yaml")
    except ParseError as error:
        assert error.source is not None and error.source.line is not None
    else:
        assert isinstance(found, list)


def test_pgvet_lint_finds_the_planted_mistakes_at_their_yaml_lines(tmp_path: Path) -> None:
    text = planted("  extendedConfiguration: |\n    shared_buffers = 6GB\n    shared_bufers = 1GB\n"
                   "    work_mem = -5MB\n    wal_level = minimal\n    max_wal_size == 1GB\n")
    text = text.replace("architecture: standalone", "architecture: replication").replace(
        "  resources: {}\n", "  resources:\n    limits:\n      memory: 4Gi\n", 1)
    (tmp_path / "values.yaml").write_text(text)
    found = lint_findings(tmp_path)
    # a host named after values.yaml, a name the chart fixes, has its directory's name before it
    assert {(f"{tmp_path.name}/values", rule, "values.yaml", line_of(text, needle)) for rule, needle in (
        ("PGV401", "shared_bufers"),  # a typo
        ("PGV403", "work_mem"),  # a value PostgreSQL refuses
        ("PGV501", "shared_buffers ="),  # 150 % of the primary's memory limit
        ("PGV410", "wal_level"),  # minimal with streaming replicas: PostgreSQL does not start
        ("PGV407", "max_wal_size"),  # a syntax error in override.conf
    )} <= found


def test_pgvet_lint_reads_the_real_files_without_a_false_error() -> None:
    assert sorted(host.name for host in load_hosts(DOCUMENTS / "bitnami")) == [
        "bitnami/values",  # the chart's own values.yaml, named after its directory
        "ci-extended-config",
        "harbor-values",
        "values-chart-10",
        "values-chart-12",
    ]
    found = lint_findings(DOCUMENTS / "bitnami")
    assert not [finding for finding in found if finding[1] in ("PGV401", "PGV403", "PGV407")]


def replication(primary_snippet: str, replicas_snippet: str = "", text: str | None = None) -> str:
    """The chart's values.yaml with read replicas, a primary.extendedConfiguration and a readReplicas one planted."""
    text = planted(primary_snippet, text).replace("architecture: standalone", "architecture: replication")
    if not replicas_snippet:
        return text
    head, _, tail = text.partition("readReplicas:\n")
    return head + "readReplicas:\n" + tail.replace('  extendedConfiguration: ""\n', replicas_snippet, 1)


def test_read_replicas_with_less_than_the_primary_do_not_start() -> None:
    # the primary's snippet is the primary's alone: the replicas keep the container's max_connections = 100
    text = replication("  extendedConfiguration: |\n    max_connections = 500\n    max_wal_senders = 16\n",
                       "  extendedConfiguration: |\n    max_locks_per_transaction = 32\n")
    found = hosts(text)
    assert not found["values"].problems
    problems = {problem.target: problem for problem in found["values-read"].problems}
    assert set(problems) == {"max_connections", "max_locks_per_transaction"}  # 16 WAL senders: as the container's
    problem = problems["max_connections"]
    assert problem.kind == "standby-below-primary" and problem.fatal
    assert problem.message == (
        "max_connections = 100 (the container's value) on the read replicas is less than the primary's 500 "
        f"(deploy/values.yaml:{line_of(text, 'max_connections = 500')}): set max_connections = 500 or more in "
        "readReplicas.extendedConfiguration")
    assert problem.source.line == line_of(text, "readReplicas:")
    assert problems["max_locks_per_transaction"].message.startswith(
        "max_locks_per_transaction = 32 on the read replicas is less than the primary's 64 (the container's value)")
    assert problems["max_locks_per_transaction"].source.line == line_of(text, "max_locks_per_transaction = 32")
    # the replicas' own lower value is pointed at
    lower = replication("  extendedConfiguration: |\n    max_prepared_transactions = 10\n",
                        "  extendedConfiguration: |\n    max_prepared_transactions = 5\n")
    [problem] = hosts(lower)["values-read"].problems
    assert problem.source.line == line_of(lower, "max_prepared_transactions = 5")
    assert problem.message.startswith(
        "max_prepared_transactions = 5 on the read replicas is less than the primary's 10")


@pytest.mark.parametrize("primary, replicas", [
    ("  extendedConfiguration: |\n    max_connections = 500\n",
     "  extendedConfiguration: |\n    max_connections = 0x200\n"),  # 512, as PostgreSQL reads it
    ("  extendedConfiguration: |\n    work_mem = 8MB\n", ""),  # none set: the container's values on both
    ("  extendedConfiguration: |\n    max_connections = lots\n", ""),  # refused: PGV403's
    ("  extendedConfiguration: |\n    max_connections = {{ .Values.connections }}\n", ""),  # left to Helm
])
def test_read_replicas_with_as_much_or_what_pgvet_cannot_see_are_not_blamed(primary: str, replicas: str) -> None:
    assert not hosts(replication(primary, replicas))["values-read"].problems


def test_read_replicas_given_flags_in_their_environment_are_not_blamed() -> None:
    text = replication("  extendedConfiguration: |\n    max_connections = 500\n")
    head, _, tail = text.partition("readReplicas:\n")
    flags = "  extraEnvVars:\n    - name: POSTGRESQL_EXTRA_FLAGS\n      value: -c max_connections=500\n"
    assert "  extraEnvVars: []\n" in tail
    assert not hosts(head + "readReplicas:\n" + tail.replace("  extraEnvVars: []\n", flags, 1))["values-read"].problems


def test_the_primarys_own_configuration_leaves_the_replicas_below_it() -> None:
    # primary.configuration is mounted in the primary's pods alone; the container then writes no max_wal_senders
    # there (PostgreSQL's 10, below the replicas' 16: no problem), and its include_dir of conf.d is the chart's
    text = VALUES.read_text().replace("architecture: standalone", "architecture: replication")
    text = text.replace('  configuration: ""\n', "  configuration: |-\n    max_connections = 300\n"
                        "    include_dir = 'conf.d'\n", 1)
    found = hosts(text)
    assert not found["values"].problems
    [problem] = found["values-read"].problems
    assert problem.message.startswith("max_connections = 100 (the container's value) on the read replicas is less "
                                      "than the primary's 300 (deploy/values.yaml:")
    # the same, raised on the replicas too: nothing
    head, _, tail = text.partition("readReplicas:\n")
    raised = head + "readReplicas:\n" + tail.replace(
        '  extendedConfiguration: ""\n', "  extendedConfiguration: |\n    max_connections = 300\n", 1)
    assert not hosts(raised)["values-read"].problems


@pytest.mark.parametrize("change", [
    ("  replicaCount: 1\n", "  replicaCount: 0\n"),  # no replica
    ("  standby:\n    enabled: false\n", "  standby:\n    enabled: true\n"),  # the values to meet: another server's
])
def test_no_replica_or_a_primary_that_follows_another_server_is_not_compared(change: tuple[str, str]) -> None:
    text = replication("  extendedConfiguration: |\n    max_connections = 500\n")
    assert hosts(text)["values-read"].problems
    assert not hosts(text.replace(*change, 1))["values-read"].problems


def test_replicas_with_hot_standby_off_are_not_held_to_the_primarys_values() -> None:
    text = replication("  extendedConfiguration: |\n    max_connections = 500\n",
                       "  extendedConfiguration: |\n    hot_standby = off\n")
    assert not hosts(text)["values-read"].problems


def test_pgvet_lint_says_the_read_replicas_do_not_start(tmp_path: Path) -> None:
    text = replication("  extendedConfiguration: |\n    max_connections = 500\n")
    (tmp_path / "values.yaml").write_text(text)
    found = lint_findings(tmp_path)
    assert (f"{tmp_path.name}/values-read", "PGV442", "values.yaml", line_of(text, "readReplicas:")) in found
    assert not [finding for finding in found if finding[1] == "PGV407"]


def test_pgvet_fix_of_the_read_replicas_says_what_to_set_where(tmp_path: Path) -> None:
    (tmp_path / "values.yaml").write_text(replication("  extendedConfiguration: |\n    max_connections = 500\n"))
    result = CliRunner().invoke(app, ["fix", str(tmp_path), "--host", f"{tmp_path.name}/values-read"])
    assert ("PGV442 standby-below-primary: max_connections = 100 (the container's value) on the read replicas is less "
            "than the primary's 500 (values.yaml:") in result.output, result.output
    assert ("set max_connections = 500 or more in readReplicas.extendedConfiguration, and restart them; when both "
            "change, raise it on the replicas before the primary.") in result.output


def test_extended_configuration_under_a_configuration_without_include_dir_is_not_read() -> None:
    # the whole postgresql.conf of primary.configuration decides whether the chart's conf.d is read at all
    text = planted("  extendedConfiguration: |\n    work_mem = 64MB\n").replace(
        '  configuration: ""\n', "  configuration: |-\n    max_connections = 300\n", 1)
    host = hosts(text)["values"]
    assert ("work_mem", "64MB") not in [(name, value) for name, value, _ in settings(host)]
    assert any("extendedConfiguration not read: primary.configuration, the whole postgresql.conf, has no "
               "include_dir = 'conf.d'" in note for note in host.notes), host.notes
    included = text.replace("max_connections = 300\n", "max_connections = 300\n    include_dir = 'conf.d'\n", 1)
    assert ("work_mem", "64MB") in [(name, value) for name, value, _ in settings(hosts(included)["values"])]


CONFIGURATION = """  configuration: |
    max_connections = 200
    work_mem = 4MB
    {include}
    work_mem = 8MB
"""
EXTENDED = "  extendedConfiguration: |\n    max_connections = 300\n    work_mem = 16MB\n"


def configured(include: str, extended: str = EXTENDED, text: str | None = None) -> str:
    """The chart's values.yaml with a primary.configuration holding ``include`` between its settings."""
    return planted(extended, text).replace('  configuration: ""\n', CONFIGURATION.format(include=include), 1)


@pytest.mark.parametrize("include", [
    "include_dir 'conf.d'", "include_dir='conf.d'", "INCLUDE_DIR = './conf.d/'",
    "include_dir '/opt/bitnami/postgresql/conf/conf.d'",  # where the container copies the chart's conf/
    "include_dir = '/bitnami/postgresql/conf/conf.d'",  # where the chart mounts it (primary.persistence.mountPath)
    "include 'conf.d/override.conf'", "include_if_exists '../conf/conf.d/override.conf'",
])
def test_extended_configuration_is_read_where_the_configuration_includes_conf_d(include: str) -> None:
    """PostgreSQL reads an included file at the include line's place (a setting below it wins, one above it loses):
    checked with PostgreSQL 15's `postgres -C` and pg_file_settings on such a postgresql.conf and conf.d/."""
    text = configured(include)
    host = hosts(text)["values"]
    assert settings(host) == [("max_connections", "200", line_of(text, "max_connections = 200")),
                              ("work_mem", "4MB", line_of(text, "work_mem = 4MB")),
                              ("max_connections", "300", line_of(text, "max_connections = 300")),
                              ("work_mem", "16MB", line_of(text, "work_mem = 16MB")),
                              ("work_mem", "8MB", line_of(text, "work_mem = 8MB"))]
    assert not host.problems


def test_pgvet_lint_says_which_line_wins_around_the_include_dir(tmp_path: Path) -> None:
    text = configured("include_dir 'conf.d'")
    (tmp_path / "values.yaml").write_text(text)
    duplicates = {finding[3] for finding in lint_findings(tmp_path) if finding[1] == "PGV405"}
    # the last line of each wins: extendedConfiguration's max_connections, primary.configuration's last work_mem
    assert duplicates == {line_of(text, "max_connections = 300"), line_of(text, "work_mem = 8MB")}


def test_conf_d_elsewhere_or_override_conf_missing_is_a_problem() -> None:
    text = configured("include_dir '/etc/postgresql/conf.d'")
    host = hosts(text)["values"]
    assert [(problem.kind, problem.fatal, problem.source.line) for problem in host.problems] == [
        ("missing-include", True, line_of(text, "include_dir '/etc"))]
    assert ("max_connections", "300") not in [(name, value) for name, value, _ in settings(host)]
    assert any("extendedConfiguration not read" in note for note in host.notes)
    # a mountPath of its own moves the chart's mounted conf.d
    moved = configured("include_dir '/data/conf/conf.d'").replace(
        "    mountPath: /bitnami/postgresql\n", "    mountPath: /data\n", 1)
    assert not hosts(moved)["values"].problems
    # no extendedConfiguration: the container's conf.d is empty, conf.d/override.conf is not there
    for include, fatal in (("include_dir 'conf.d'", None), ("include_if_exists 'conf.d/override.conf'", None),
                           ("include 'conf.d/override.conf'", True)):
        text = configured(include, '  extendedConfiguration: ""\n')
        problems = hosts(text)["values"].problems
        assert [problem.fatal for problem in problems] == ([fatal] if fatal else []), include
        if fatal:
            assert "the chart writes no conf.d/override.conf" in problems[0].message
    # an existing ConfigMap mounted as conf.d: what it holds is not known
    text = configured("include 'conf.d/override.conf'", '  extendedConfiguration: ""\n').replace(
        '  existingExtendedConfigmap: ""', "  existingExtendedConfigmap: theirs", 1)
    assert not hosts(text)["values"].problems


def test_preload_libraries_are_not_written_into_the_primarys_own_configuration() -> None:
    # libpostgresql.sh writes POSTGRESQL_SHARED_PRELOAD_LIBRARIES into postgresql.conf only when it generates it
    text = replication("", text=configured("include_dir 'conf.d'"))
    found = hosts(text)
    assert "shared_preload_libraries" not in [name for name, _, _ in settings(found["values"])]
    key = line_of(text, "postgresqlSharedPreloadLibraries:")
    assert (f"deploy/values.yaml:{key}: postgresqlSharedPreloadLibraries not applied: the container writes it into "
            "the postgresql.conf it generates, and primary.configuration replaces that file (set "
            "shared_preload_libraries in primary.configuration)") in found["values"].notes
    # the replicas run the container's own postgresql.conf
    assert ("shared_preload_libraries", "pgaudit", key) in settings(found["values-read"])


def test_read_replicas_have_no_existing_configmap_for_their_extended_configuration() -> None:
    # the chart's read StatefulSet mounts readReplicas.extendedConfiguration alone: no ConfigMap replaces it
    text = replication("", "  extendedConfiguration: |\n    hot_standby_feedback = on\n")
    head, _, tail = text.partition("readReplicas:\n")
    text = head + "readReplicas:\n" + tail.replace("  extendedConfiguration: |\n",
                                                   "  existingExtendedConfigmap: theirs\n  extendedConfiguration: |\n")
    read = hosts(text)["values-read"]
    assert ("hot_standby_feedback", "on", line_of(text, "hot_standby_feedback")) in settings(read)
    assert not [note for note in read.notes if "ConfigMap" in note]


CHART_10 = DOCUMENTS / "bitnami" / "values-chart-10.yaml"
# chart 10 values under an umbrella chart's postgresql:, as applications' charts wrote them
UMBRELLA_10 = """postgresql:
  enabled: true
  postgresqlUsername: postgres
  postgresqlDatabase: app
  postgresqlMaxConnections: 200
  postgresqlTcpKeepalivesIdle: "60"
  resources:
    limits:
      memory: 1Gi
"""


def test_values_of_the_chart_before_11_set_parameters_through_the_container() -> None:
    # chart 10 passes postgresqlMaxConnections as POSTGRESQL_MAX_CONNECTIONS (when set), which libpostgresql.sh writes
    # into the postgresql.conf it generates; its resources are the top-level ones
    assert kinds_recognising(Path("values.yaml"), UMBRELLA_10) == ["bitnami"]
    [host] = parse_bitnami(UMBRELLA_10, "values.yaml")
    assert settings(host) == [("max_connections", "200", 5), ("tcp_keepalives_idle", "60", 6)]
    assert all(setting.quoted for setting in host.settings)  # the container writes name = 'value'
    assert host.host["memory_limit"].value == 1024**3 and host.host["parameter_form"].value == "mapping"
    # the chart's own values.yaml of 10.16.3: every such value empty, and the preload libraries
    text = CHART_10.read_text().replace('postgresqlMaxConnections: ""', "postgresqlMaxConnections: 500")
    assert settings(hosts(text)["values"]) == [
        ("shared_preload_libraries", "pgaudit", line_of(text, "postgresqlSharedPreloadLibraries:")),
        ("max_connections", "500", line_of(text, "postgresqlMaxConnections: 500"))]
    # a number as Helm's quote prints it (a float64): 1e+06, which PostgreSQL reads for an integer too
    big = hosts(text.replace("postgresqlMaxConnections: 500", "postgresqlMaxConnections: 1000000"))["values"]
    assert big.settings[-1].value == "1e+06"


def test_values_that_only_name_the_chart_before_11_declare_nothing() -> None:
    assert kinds_recognising(Path("values.yaml"), "postgresql:\n  postgresqlPassword: x\n") == []
    assert kinds_recognising(Path("values.yaml"), "config:\n  postgresqlMaxConnections: 200\n") == []
    assert kinds_recognising(Path("values.yaml"), UMBRELLA_10.replace("200", '""').replace('"60"', '""')) == []


def test_a_flux_helmrelease_of_the_chart_before_11_needs_no_primary() -> None:
    text = ("apiVersion: helm.toolkit.fluxcd.io/v2beta1\nkind: HelmRelease\nmetadata:\n  name: db\nspec:\n"
            "  chart:\n    spec:\n      chart: postgresql\n      version: 10.13.9\n  values:\n"
            "    postgresqlMaxConnections: \"500\"\n")
    assert kinds_recognising(Path("release.yaml"), text) == ["bitnami"]
    [host] = parse_bitnami(text, "release.yaml")
    assert host.name == "db" and settings(host) == [("max_connections", "500", 11)]


def test_postgresql_configuration_of_the_chart_before_11_is_written_as_its_template_writes_it() -> None:
    # {{ $key | snakecase }} = '{{ $value }}' for a text, {{ $value }} otherwise, in the keys' order; includeDir is a
    # key like any other: conf.d is read where it sorts
    text = CHART_10.read_text().replace("postgresqlConfiguration: {}", """postgresqlConfiguration:
  sharedBuffers: 512MB
  maxConnections: 300
  includeDir: conf.d
  listenAddresses: "*"
  fsync: on
  workMem: 4MB""").replace("postgresqlExtendedConf: {}", """postgresqlExtendedConf:
  workMem: 64MB
  sharedBuffers: 1GB""").replace('postgresqlMaxConnections: ""', "postgresqlMaxConnections: 500")
    host = hosts(text)["values"]
    # includeDir < listenAddresses < maxConnections < sharedBuffers < workMem: the two last win over conf.d
    assert [(name, value) for name, value, _ in settings(host)] == [
        ("fsync", "true"), ("shared_buffers", "1GB"), ("work_mem", "64MB"), ("listen_addresses", "*"),
        ("max_connections", "300"), ("shared_buffers", "512MB"), ("work_mem", "4MB")]
    assert host.settings[0].source.line == line_of(text, "fsync: on")
    assert host.settings[1].source.line == line_of(text, "sharedBuffers: 1GB")
    assert not host.problems
    # the container writes none of its environment's settings into a postgresql.conf the chart mounts
    assert [note.split(": ", 1)[1].split(" not applied")[0] for note in host.notes] == [
        "postgresqlSharedPreloadLibraries", "postgresqlMaxConnections"]
    # without includeDir, postgresqlExtendedConf is never read
    host = hosts(text.replace("  includeDir: conf.d\n", ""))["values"]
    assert ("work_mem", "64MB") not in [(name, value) for name, value, _ in settings(host)]
    assert any("postgresqlExtendedConf not read: postgresqlConfiguration, the whole postgresql.conf, has no "
               "include_dir" in note for note in host.notes)


def test_a_number_of_a_mapping_is_printed_as_go_prints_a_float() -> None:
    text = UMBRELLA_10 + "  postgresqlExtendedConf:\n    maxWalSize: 1000000\n    walKeepSize: 1234567\n"
    [host] = parse_bitnami(text, "values.yaml")
    [problem] = host.problems  # max_wal_size = 1e+06: PostgreSQL's syntax error (15 checked), at the key's line
    assert problem.message == 'syntax error in file "conf.d/override.conf" line 1, near token "+06"'
    assert problem.source.line == line_of(text, "maxWalSize")
    assert ("wal_keep_size", "1.234567e+06", line_of(text, "walKeepSize")) in settings(host)


@pytest.mark.parametrize("number, printed", [
    (0, "0"), (5, "5"), (-5, "-5"), (999999, "999999"), (1000000, "1e+06"), (1234567, "1.234567e+06"),
    (0.9, "0.9"), (0.0001, "0.0001"), (0.00001, "1e-05"), (1.5e21, "1.5e+21"), (2**53 + 1, "9.007199254740992e+15"),
])
def test_go_number(number: float, printed: str) -> None:
    assert go_number(number) == printed


@pytest.mark.parametrize("key, snake", [
    ("sharedBuffers", "shared_buffers"), ("shared_buffers", "shared_buffers"), ("maxWALSize", "max_wal_size"),
    ("pgStatStatements.track", "pg_stat_statements.track"), ("SharedBuffers", "shared_buffers"),
    ("log-line-prefix", "log_line_prefix"),
])
def test_snake_case(key: str, snake: str) -> None:
    assert snake_case(key) == snake


def test_configmaps_and_odd_values_of_the_chart_before_11_are_said_not_read() -> None:
    text = UMBRELLA_10 + ("  extendedConfConfigMap: mine\n  postgresqlExtendedConf:\n    workMem: 4MB\n"
                          "  postgresqlConfiguration: [a]\n")
    [host] = parse_bitnami(text, "values.yaml")
    assert [name for name, _, _ in settings(host)] == ["max_connections", "tcp_keepalives_idle"]
    assert host.notes == [
        f"values.yaml:{line_of(text, 'postgresqlConfiguration')}: postgresqlConfiguration is no mapping (of "
        "parameters in camelCase): not read",
        "extendedConfConfigMap: mine: that ConfigMap's configuration is not in this file (the chart ignores "
        "postgresqlExtendedConf then)"]
    text = UMBRELLA_10 + "  postgresqlExtendedConf:\n    sharedPreloadLibraries: [a, b]\n"
    [host] = parse_bitnami(text, "values.yaml")
    assert host.notes == [f"values.yaml:{line_of(text, 'sharedPreloadLibraries')}: postgresqlExtendedConf."
                          "sharedPreloadLibraries is no text, number or boolean: not read"]


def test_read_replicas_of_the_chart_before_11_count_among_the_instances() -> None:
    text = CHART_10.read_text().replace("replication:\n  enabled: false", "replication:\n  enabled: true").replace(
        "  readReplicas: 1\n", "  readReplicas: 2\n", 1)
    [host] = parse_bitnami(text, "values.yaml")
    assert host.host["instances"].value == 3
    enabled = text.splitlines().index("replication:") + 2
    assert host.notes == [f"values.yaml:{enabled}: replication.enabled: the 2 read replicas "
                          "of the chart before 11 take the primary's configuration; pgvet judges the primary's alone"]


def test_keys_of_the_chart_before_11_in_values_of_a_later_chart_are_said_ignored() -> None:
    # chart 11 and later ignore postgresqlMaxConnections: max_connections stays as it was
    text = VALUES.read_text().replace('postgresqlSharedPreloadLibraries: "pgaudit"\n',
                                      'postgresqlSharedPreloadLibraries: "pgaudit"\npostgresqlMaxConnections: 500\n')
    host = hosts(text)["values"]
    assert "max_connections" not in [name for name, _, _ in settings(host)]
    assert (f"deploy/values.yaml:{line_of(text, 'postgresqlMaxConnections')}: postgresqlMaxConnections not read: a "
            "value of the chart before 11, which chart 11 and later, those of architecture, ignore (set "
            "max_connections in primary.extendedConfiguration)") in host.notes
    text = text.replace("postgresqlMaxConnections: 500\n", "extendedConfConfigMap: mine\n")
    assert [note for note in hosts(text)["values"].notes if "chart before 11" in note] == [
        f"deploy/values.yaml:{line_of(text, 'extendedConfConfigMap')}: extendedConfConfigMap not read: a value of "
        "the chart before 11, which chart 11 and later, those of architecture, ignore (primary."
        "existingExtendedConfigmap took its place)"]


def test_pgvet_lint_reads_the_chart_before_11_at_its_yaml_lines(tmp_path: Path) -> None:
    text = UMBRELLA_10 + "  postgresqlExtendedConf:\n    sharedBuffers: 2GB\n    sharedBufers: 1GB\n"
    (tmp_path / "values.yaml").write_text(text)
    found = lint_findings(tmp_path)
    host = f"{tmp_path.name}/values"
    assert (host, "PGV401", "values.yaml", line_of(text, "sharedBufers")) in found  # shared_bufers: a typo
    assert (host, "PGV501", "values.yaml", line_of(text, "sharedBuffers: 2GB")) in found  # 200 % of the limit


def test_an_existing_configmap_replaces_the_file_the_container_would_write_its_environment_into() -> None:
    # with a postgresql.conf of a ConfigMap pgvet cannot see, as with primary.configuration, the container generates
    # none: postgresqlSharedPreloadLibraries is not applied (it was judged as loaded)
    text = ("image:\n  repository: bitnami/postgresql\n  tag: 16.4.0\npostgresqlSharedPreloadLibraries: "
            "\"pgaudit,pg_stat_statements\"\nprimary:\n  existingConfigmap: my-pg-conf\n")
    [host] = hosts(text).values()
    assert not [name for name, _, _ in settings(host) if name == "shared_preload_libraries"]
    assert any("postgresqlSharedPreloadLibraries not applied" in note and "my-pg-conf replaces that file" in note
               for note in host.notes), host.notes
    old = "postgresqlMaxConnections: 300\nconfigurationConfigMap: old-conf\n"
    [before_11] = hosts(old).values()
    assert not settings(before_11) and any("old-conf replaces that file" in note for note in before_11.notes)


def test_a_negative_count_of_old_read_replicas_is_no_count() -> None:
    [host] = hosts("postgresqlMaxConnections: 300\nreplication:\n  enabled: true\n  readReplicas: -3\n").values()
    assert host.host["instances"].value == 2  # the chart's default of one replica, not -2 instances


# The head of a deployment's values for the chart (a3's corpus: a Blockscout deployment): no snippet, the maximum of
# connections through the container's environment.
OVERRIDE = """global:
  postgresql:
    auth:
      database: blockscout
      postgresPassword: secretref+k8s://v1/Secret/default/postgresql/postgres-password

image:
  tag: 15 # Use version supported by Blockscout

primary:
  resourcesPreset: "xlarge"
  extraEnvVars:
    - name: POSTGRESQL_MAX_CONNECTIONS
      value: "200"
    - name: POSTGRESQL_STATEMENT_TIMEOUT
      valueFrom: {configMapKeyRef: {name: pg, key: timeout}}
    - name: TZ
      value: Europe/Paris
"""


def test_an_override_file_with_the_global_password_and_extra_environment_variables() -> None:
    """global.postgresql.auth is the chart's own (the file was not claimed); POSTGRESQL_MAX_CONNECTIONS in
    extraEnvVars is written by the container into its postgresql.conf: max_connections was judged as 100."""
    assert kinds_recognising(Path("values.yaml"), OVERRIDE) == ["bitnami"]
    [host] = parse_bitnami(OVERRIDE, "values.yaml")
    assert settings(host)[-1] == ("max_connections", "200", line_of(OVERRIDE, 'value: "200"'))
    assert host.unknown == {"pg.statement_timeout": host.unknown["pg.statement_timeout"]}
    assert host.unknown["pg.statement_timeout"].line == line_of(OVERRIDE, "POSTGRESQL_STATEMENT_TIMEOUT")
    assert host.host["pg_version"].value == 15 and host.host["ram"].value == 6144 * 2**20


def test_extra_environment_variables_are_not_applied_under_a_whole_configuration() -> None:
    text = OVERRIDE.replace("primary:\n", "primary:\n  configuration: |\n    max_connections = 50\n", 1)
    [host] = parse_bitnami(text, "values.yaml")
    assert settings(host) == [("max_connections", "50", line_of(text, "max_connections = 50"))]
    assert any("extraEnvVars POSTGRESQL_MAX_CONNECTIONS not applied" in note for note in host.notes)


def test_the_charts_values_inline_in_a_kustomization_and_a_helm_inflation_generator(tmp_path: Path) -> None:
    """kustomize inflates the chart with its valuesInline (a3's corpus: a HelmChartInflationGenerator of chart
    13.4.3); they were not read, the directory no input."""
    generator = ("apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: &name postgresql\n"
                 "releaseName: *name\nname: postgresql\nrepo: https://charts.bitnami.com/bitnami\nversion: 13.4.3\n"
                 "namespace: beta9\nvaluesInline:\n  primary:\n    extendedConfiguration: |\n"
                 "      max_connections=400\n      shared_buffers='400MB'\n")
    [host] = parse_bitnami(generator, "postgresql.yaml")
    assert (host.name, host.namespace) == ("postgresql", "beta9")
    assert settings(host)[-2:] == [("max_connections", "400", 13), ("shared_buffers", "400MB", 14)]
    kustomization = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nhelmCharts:\n"
                     "  - name: redis\n    repo: https://charts.bitnami.com/bitnami\n    valuesInline: {primary: {}}\n"
                     "  - name: postgresql\n    repo: oci://registry-1.docker.io/bitnamicharts\n    releaseName: db\n"
                     "    valuesFile: values-prod.yaml\n    valuesInline:\n      primary:\n"
                     "        resources: {limits: {memory: 2Gi}}\n")
    assert kinds_recognising(Path("kustomization.yaml"), kustomization) == ["bitnami"]
    [host] = parse_bitnami(kustomization, "kustomization.yaml")
    assert host.name == "db" and host.host["ram"].value == 2 * 2**30
    assert any("valuesFile not read" in note for note in host.notes)
    (tmp_path / "kustomization.yaml").write_text(kustomization.replace("memory: 2Gi", "memory: 100Mi"))
    assert {"PGV501", "PGV540"} <= {rule for host, rule, _, _ in lint_findings(tmp_path) if host == "db"}
    other = kustomization.replace("oci://registry-1.docker.io/bitnamicharts", "https://example.org/charts")
    assert kinds_recognising(Path("kustomization.yaml"), other) == []


# The lines of bitnami/postgresql-ha's templates/postgresql/statefulset.yaml (charts 5165628) that matter here:
# invalid YAML until Helm renders it, naming the chart's helpers postgresqlConfigurationCM and
# postgresqlExtendedConfCM, which hold chart 10's postgresqlConfiguration and postgresqlExtendedConf.
HA_TEMPLATE = """{{- /*
Copyright Broadcom, Inc. All Rights Reserved.
SPDX-License-Identifier: APACHE-2.0
*/}}

apiVersion: {{ include "common.capabilities.statefulset.apiVersion" . }}
kind: StatefulSet
metadata:
  name: {{ include "postgresql-ha.postgresql" . }}
  namespace: {{ include "common.names.namespace" . | quote }}
spec:
  template:
    spec:
      volumes:
        {{- if or .Values.postgresql.repmgrConfiguration .Values.postgresql.configuration }}
        - name: postgresql-config
          configMap:
            name: {{ include "postgresql-ha.postgresqlConfigurationCM" . }}
        {{- end }}
        {{- if or .Values.postgresql.extendedConf .Values.postgresql.extendedConfCM }}
        - name: postgresql-extended-config
          configMap:
            name: {{ template "postgresql-ha.postgresqlExtendedConfCM" . }}
        {{- end }}
"""


def test_a_charts_template_naming_the_charts_keys_is_no_values_file(tmp_path: Path) -> None:
    """pre-commit passing the template of a repository's chart stopped the commit: 'invalid YAML' (exit 2)."""
    assert kinds_recognising(Path("statefulset.yaml"), HA_TEMPLATE) == []
    (tmp_path / "statefulset.yaml").write_text(HA_TEMPLATE)
    result = CliRunner().invoke(app, ["lint", str(tmp_path / "statefulset.yaml"), "--format", "concise"])
    assert result.exit_code == 0 and "not linted" in result.output
    broken = "primary:\n  extendedConfiguration: |\n    work_mem = 4MB\n  resources: [\n"
    assert kinds_recognising(Path("values.yaml"), broken) == ["bitnami"]  # a values file's error is still said


def test_the_charts_default_preset_is_too_small_once_its_connections_are_open(tmp_path: Path) -> None:
    """The chart's own values (resourcesPreset nano: 192Mi): its 143 MiB of shared memory fit, its 100 connections at
    2 MiB each do not. PGV540 said the OOM killer strikes 'once its buffers fill', which alone it does not."""
    (tmp_path / "values.yaml").write_text(VALUES.read_text())
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json", "--select", "PGV540"])
    [finding] = json.loads(result.output)["findings"]
    assert "once its buffers fill and its connections are open, and again" in finding["message"]


def test_values_whose_postgresql_conf_is_an_existing_configmap_are_not_judged_on_defaults(tmp_path: Path) -> None:
    """A host that sets no parameter runs PostgreSQL's defaults (a3), but not when its postgresql.conf is a
    ConfigMap pgvet cannot see: effective_cache_size and the rest may be anything there."""
    text = "auth:\n  postgresPassword: x\nprimary:\n  existingConfigmap: my-pg-conf\n  resources:\n    limits:\n" \
           "      memory: 1Gi\n"
    [host] = parse_bitnami(text, "values.yaml")
    assert host.unseen_configuration and host.settings == []
    (tmp_path / "values.yaml").write_text(text)
    assert lint_findings(tmp_path) == set()
    (tmp_path / "values.yaml").write_text(text.replace("  existingConfigmap: my-pg-conf\n", ""))
    assert "PGV533" in {rule for _, rule, _, _ in lint_findings(tmp_path)}


def test_the_container_writes_its_replication_values_into_the_postgresql_conf_it_generates() -> None:
    # libpostgresql.sh's postgresql_configure_replication_parameters runs on every node whose postgresql.conf the
    # container generates, standalone too: max_wal_size = 400MB there, not PostgreSQL's 1GB (pgvet judged 1GB)
    container = {(setting.name, setting.value) for setting in hosts(planted())["values"].settings
                 if setting.source.path == CONTAINER_SOURCE}
    assert container == {("max_wal_size", "400MB"), ("max_wal_senders", "16"), ("hot_standby", "on"),
                         ("wal_keep_size", "128MB")}
    # before 13, WAL segments; what the values set comes after and wins (conf.d is read last)
    old = hosts(planted("  extendedConfiguration: |\n    max_wal_size = 2GB\n").replace(
        "tag: 17.", "tag: 12.", 1))["values"]
    assert [setting.value for setting in old.settings if setting.name == "max_wal_size"] == ["400MB", "2GB"]
    assert ("wal_keep_segments", "12") in {(setting.name, setting.value) for setting in old.settings}
    # the environment's: POSTGRESQL_WAL_LEVEL, POSTGRESQL_FSYNC (the container writes what they say)
    text = VALUES.read_text()
    head, _, tail = text.partition("primary:\n")
    env = ("  extraEnvVars:\n    - name: POSTGRESQL_FSYNC\n      value: \"off\"\n"
           "    - name: POSTGRESQL_WAL_LEVEL\n      value: logical\n")
    assert "  extraEnvVars: []\n" in tail
    found = hosts(head + "primary:\n" + tail.replace("  extraEnvVars: []\n", env, 1))["values"]
    assert {"fsync": "off", "wal_level": "logical"}.items() <= {
        setting.name: setting.value for setting in found.settings}.items()
    # a whole postgresql.conf of the values: the container writes none of them
    own = VALUES.read_text().replace('  configuration: ""\n', "  configuration: |-\n    max_connections = 300\n", 1)
    assert not [setting for setting in hosts(own)["values"].settings if setting.source.path == CONTAINER_SOURCE]


def _primary_env(env: str, text: str | None = None) -> str:
    head, _, tail = (text or VALUES.read_text()).partition("primary:\n")
    return head + "primary:\n" + tail.replace("  extraEnvVars: []\n", "  extraEnvVars:\n" + env, 1)


def _synchronous(host: DeclaredHost) -> list[tuple[str, str, int | None]]:
    return [(setting.name, setting.value, setting.source.line) for setting in host.settings
            if setting.name.startswith("synchronous_")]


def test_the_container_writes_synchronous_replication_on_a_primary_with_synchronous_replicas(tmp_path: Path) -> None:
    # libpostgresql.sh, postgresql_configure_synchronous_replication: only with POSTGRESQL_NUM_SYNCHRONOUS_REPLICAS
    # above 0 (the chart's default 0, and synchronousCommit "off" passes neither variable)
    assert not _synchronous(hosts(VALUES.read_text())["values"])
    text = VALUES.read_text().replace("architecture: standalone", "architecture: replication", 1).replace(
        'synchronousCommit: "off"', 'synchronousCommit: "remote_apply"', 1).replace(
        "numSynchronousReplicas: 0", "numSynchronousReplicas: 1", 1)
    found = hosts(text)
    assert _synchronous(found["values"]) == [
        ("synchronous_commit", "remote_apply", line_of(text, "synchronousCommit: ")),
        ("synchronous_standby_names", '1 ("my_application")', line_of(text, "numSynchronousReplicas: "))]
    assert not _synchronous(found["values-read"])  # a standby's mode is slave: nothing written
    # extraEnvVars' POSTGRESQL_ names win over the chart's POSTGRES_ ones, on a standalone primary too (master is
    # the container's default mode); a list of nodes is named by each host's first label
    env = ('    - name: POSTGRESQL_SYNCHRONOUS_COMMIT_MODE\n      value: "off"\n'
           '    - name: POSTGRESQL_NUM_SYNCHRONOUS_REPLICAS\n      value: "2"\n'
           '    - name: POSTGRESQL_CLUSTER_APP_NAME\n      value: "pg-0.db:5432,tcp://pg-1.db"\n')
    standalone = _primary_env(env)
    assert _synchronous(hosts(standalone)["values"]) == [
        ("synchronous_commit", "off", line_of(standalone, 'value: "off"')),
        ("synchronous_standby_names", '2 ("pg-0","pg-1")', line_of(standalone, 'value: "2"'))]
    (tmp_path / "values.yaml").write_text(standalone)
    assert ("PGV603", "values.yaml", line_of(standalone, 'value: "off"')) in {
        finding[1:] for finding in lint_findings(tmp_path)}  # judged at PostgreSQL's on before
    # the container writes them into the copy of a whole postgresql.conf too: its line replaced where it is
    whole = _primary_env(env, VALUES.read_text().replace(
        '  configuration: ""\n', "  configuration: |\n    synchronous_commit = on\n    include_dir = 'conf.d'\n", 1))
    names = [setting.name for setting in hosts(whole)["values"].settings]
    assert names[0] == "synchronous_commit" and names[-1] == "synchronous_standby_names"
    assert _synchronous(hosts(whole)["values"])[0][1] == "off"
    # a number pgvet cannot know leaves both unknown, said
    unknown = hosts(_primary_env("    - name: POSTGRESQL_NUM_SYNCHRONOUS_REPLICAS\n      valueFrom: {}\n"))["values"]
    assert {"pg.synchronous_commit", "pg.synchronous_standby_names"} <= unknown.unknown.keys()
