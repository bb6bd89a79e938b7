"""CloudNativePG Cluster manifests (pgvet.inputs.documents.cnpg): CNPG's own samples read without a false
problem, and mistakes planted in copies of them found at their YAML line."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgvet.cli import app
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, recognise
from pgvet.inputs.documents._kubernetes import OVERRIDES, REFUSED
from pgvet.inputs.documents.cnpg import CNPG_DEFAULTS, KIND, parse_cnpg, parse_quantity
from pgvet.pgparams import did_you_mean, load_param_table
from pgvet.pgparams.units import InvalidValue, parse_value
from pgvet.provenance import Source
from pgvet.snapshot.load import load_hosts

CORPUS = Path(__file__).resolve().parents[1] / "data" / "documents" / "cnpg"
HELM_TEMPLATE = "helm-chart-cluster-template.yaml"  # no manifest until rendered: not claimed
FILES = sorted(path for path in CORPUS.glob("*.yaml") if path.name != HELM_TEMPLATE)
GiB = 2**30
MiB = 2**20


def _text(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


def _planted(name: str, old: str, new: str) -> tuple[str, str]:
    """A copy of a corpus file with one edit: ``old`` must occur exactly once."""
    text = _text(name)
    assert text.count(old) == 1, old
    return text.replace(old, new), name


def _one(text: str, path: str) -> DeclaredHost:
    hosts = parse_cnpg(text, path)
    assert len(hosts) == 1
    return hosts[0]


def _line(text: str, fragment: str) -> int:
    """The 1-based line holding ``fragment`` (once in the text)."""
    lines = [number for number, line in enumerate(text.splitlines(), 1) if fragment in line]
    assert len(lines) == 1, fragment
    return lines[0]


def _user_settings(host: DeclaredHost, text: str) -> list[tuple[str, str, int | None]]:
    """The settings written in spec.postgresql.parameters (the operator's all stand at the spec.postgresql line)."""
    operator_line = _line(text, "  postgresql:")
    return [(s.name, s.value, s.source.line) for s in host.settings if s.source.line != operator_line]


def test_the_corpus_is_there() -> None:
    assert len(FILES) >= 5
    assert (CORPUS / "SOURCES.md").is_file()


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_sample_is_a_host_whose_settings_are_at_their_lines_once_each(path: Path) -> None:
    hosts = parse_cnpg(path.read_text(encoding="utf-8"), path.name)
    for host in hosts:
        assert host.hosting
        assert all(setting.source.path == path.name and setting.source.line for setting in host.settings)
        # one line per parameter: a default the Cluster overrides is not written (PGV405 would call it dead)
        names = [setting.name for setting in host.settings]
        assert len(names) == len(set(names))


@pytest.mark.parametrize("major", [13, 14, 15, 16, 17, 18])
def test_the_operators_own_settings_are_valid_postgresql_settings(major: int) -> None:
    text = _text("cluster-example-full.yaml").replace("postgresql:18.6-system-trixie", f"postgresql:{major}.1")
    param_table = load_param_table(major)
    host = _one(text, "full.yaml")
    for setting in host.settings:
        param = param_table.get(setting.name)
        if param is None:
            assert "." in setting.name, setting.name  # an extension's (pg_stat_statements.max…)
            continue
        parse_value(param, setting.value)
    assert ("allow_alter_system" in {setting.name for setting in host.settings}) == (major >= 17)


def test_the_full_sample_maps_name_resources_and_parameters_at_their_lines() -> None:
    text = _text("cluster-example-full.yaml")
    hosts = parse_cnpg(text, "cluster-example-full.yaml")
    assert [host.name for host in hosts] == ["cluster-example-full"]  # the three Secrets are no hosts
    host = hosts[0]
    assert host.source == Source("cluster-example-full.yaml", _line(text, "kind: Cluster") - 1)
    facts = {key: (located.value, located.source.line) for key, located in host.host.items()}
    assert facts == {
        "instances": (3, _line(text, "instances: 3")),
        "pg_version": (18, _line(text, "imageName:")),
        "ram": (GiB, _line(text, 'memory: "1Gi"')),
        "memory_limit": (GiB, _line(text, 'memory: "1Gi"')),
        "memory_request": (512 * MiB, _line(text, 'memory: "512Mi"')),
        "cpus": (2, _line(text, 'cpu: "2"')),
        "cpu_limit": (2.0, _line(text, 'cpu: "2"')),
    }
    assert _user_settings(host, text) == [
        ("shared_buffers", "256MB", _line(text, "shared_buffers:")),
        ("pg_stat_statements.max", "10000", _line(text, "pg_stat_statements.max")),
        ("pg_stat_statements.track", "all", _line(text, "pg_stat_statements.track")),
        ("auto_explain.log_min_duration", "10s", _line(text, "auto_explain.log_min_duration")),
    ]
    operator = {setting.name: setting.value for setting in host.settings[:-4]}
    assert operator["shared_preload_libraries"] == "pg_stat_statements,auto_explain"  # the operator adds them
    assert operator["wal_level"] == "logical" and operator["shared_memory_type"] == "mmap"
    assert operator["archive_mode"] == "on" and operator["ssl"] == "on" and operator["listen_addresses"] == "*"
    assert all(operator[key] == value for key, value in CNPG_DEFAULTS.items() if key != "shared_preload_libraries")


def test_a_sexagesimal_looking_value_is_the_text_kubernetes_reads() -> None:
    # Kubernetes reads manifests with go-yaml, which has no base-60 numbers (go-yaml/yaml#293): 2:05 is the text
    # "2:05" (a string, which parameters must be), not PyYAML's 125
    text, path = _planted("cluster-example-full.yaml", "      shared_buffers: 256MB\n",
                          "      shared_buffers: 256MB\n      checkpoint_timeout: 2:05\n")
    host = _one(text, path)
    assert ("checkpoint_timeout", "2:05", _line(text, "checkpoint_timeout")) in _user_settings(host, text)
    assert not [problem for problem in host.problems if "checkpoint_timeout" in problem.message]


def test_a_parameter_the_cluster_sets_replaces_the_operators_default() -> None:
    text = _text("cluster-example-custom.yaml")
    host = _one(text, "custom.yaml")
    assert [(s.value, s.source.line) for s in host.settings if s.name == "max_worker_processes"] == [
        ("60", _line(text, "max_worker_processes"))]


def test_millicores_round_up_to_whole_cpus() -> None:
    text = _text("e2e-eviction-multi-instance-cluster.yaml")
    host = _one(text, "eviction.yaml")
    assert host.host["cpus"].value == 2 and host.host["cpu_limit"].value == 1.5  # 1500m
    text = _text("e2e-upgrade-cluster1.yaml")
    host = _one(text, "upgrade.yaml")
    assert host.host["cpus"].value == 1 and host.host["cpu_limit"].value == 0.5  # "0.5"
    assert host.host["memory_request"].value == 128 * MiB
    assert "pg_version" not in host.host and "no PostgreSQL version: spec.imageName is left to a template" in host.notes


def test_a_request_without_a_limit_is_the_ram_and_says_so() -> None:
    text, path = _planted("cluster-example-full.yaml", '    limits:\n      memory: "1Gi"\n', "    limits:\n")
    host = _one(text, path)
    assert host.host["ram"].value == 512 * MiB and "memory_limit" not in host.host
    assert any("memory request" in note for note in host.notes)
    assert host.unknown == {}


@pytest.mark.parametrize(("written", "expected"), [
    ("512Mi", 512 * MiB), ("1Gi", GiB), ("0.5Gi", GiB // 2), (".5Gi", GiB // 2), ("1.", 1), ("4G", 4 * 10**9),
    ("1k", 1000), ("1Ki", 1024), ("1M", 10**6), ("1Ei", 2**60), ("1e3", 1000), ("1E3", 1000), ("1E", 10**18),
    ("500m", Fraction(1, 2)), ("1500m", Fraction(3, 2)), ("100u", Fraction(1, 10**4)), ("+2", 2), ("2", 2), (2, 2),
    (0.5, Fraction(1, 2)), ("0", 0),
])
def test_kubernetes_quantities_are_exact(written: object, expected: Fraction) -> None:
    assert parse_quantity(written, "memory", Source("x.yaml", 3)) == expected


@pytest.mark.parametrize("written", ["'4GB'", "lots", "'-1Gi'", "1e99", "''", "1 Gi", "Gi", "1Gib", "'0x10'", "true"])
def test_a_malformed_quantity_is_refused_at_its_line(written: str) -> None:
    text, path = _planted("cluster-example-full.yaml", 'memory: "1Gi"', f"memory: {written}")
    with pytest.raises(ParseError) as raised:
        parse_cnpg(text, path)
    assert raised.value.source == Source(path, _line(text, f"memory: {written}"))
    assert "spec.resources.limits.memory" in raised.value.message


def test_shared_buffers_above_the_memory_limit_is_declared_for_the_memory_rules() -> None:
    """The issue's example: 6GB of shared_buffers under a 4Gi limit (a crash loop: the memory rules judge it)."""
    text, path = _planted("cluster-example-full.yaml", "shared_buffers: 256MB", "shared_buffers: 6GB")
    text = text.replace('memory: "1Gi"', 'memory: "4Gi"').replace('memory: "512Mi"', 'memory: "4Gi"')
    host = _one(text, path)
    assert ("shared_buffers", "6GB", _line(text, "shared_buffers:")) in _user_settings(host, text)
    assert host.host["ram"].value == host.host["memory_limit"].value == 4 * GiB
    # the webhook compares shared_buffers with the memory request: 6GB > 4Gi, refused at the parameter's line
    assert [(problem.kind, problem.source.line, problem.fatal) for problem in host.problems] == [
        (REFUSED, _line(text, "shared_buffers:"), True)]


def test_shared_buffers_within_the_request_or_a_huge_page_resource_passes_the_webhook() -> None:
    text, path = _planted("cluster-example-full.yaml", "shared_buffers: 256MB", "shared_buffers: 768MB")
    assert len(_one(text, path).problems) == 1  # above the 512Mi request
    text = text.replace('    limits:\n', '    limits:\n      hugepages-2Mi: "1Gi"\n')
    assert _one(text, path).problems == []
    text, path = _planted("cluster-example-full.yaml", "shared_buffers: 256MB", "shared_buffers: 8GiB")
    assert "cannot read '8GiB'" in _one(text, path).problems[0].message


def test_a_typo_in_a_parameter_name_is_a_setting_at_its_line_for_the_validity_rules() -> None:
    text, path = _planted("cluster-example-full.yaml", "pg_stat_statements.track: all", "pg_stat_statments.track: all")
    text = text.replace("shared_buffers: 256MB", "shared_bufers: 256MB")
    host = _one(text, path)
    settings = _user_settings(host, text)
    assert ("shared_bufers", "256MB", _line(text, "shared_bufers")) in settings
    assert did_you_mean("shared_bufers", load_param_table(18)) == "shared_buffers"
    assert host.problems == []  # a name is PostgreSQL's to judge, not the operator's


def test_a_value_postgresql_refuses_is_a_setting_at_its_line() -> None:
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"',
                          'max_worker_processes: "60"\n      work_mem: \'lots\'')
    host = _one(text, path)
    assert ("work_mem", "lots", _line(text, "work_mem")) in _user_settings(host, text)
    with pytest.raises(InvalidValue):
        parse_value(load_param_table(16).params["work_mem"], "lots")


@pytest.mark.parametrize(("line", "refused"), [
    ("data_directory: /var/lib/postgresql/data", True), ("listen_addresses: 'localhost'", True),
    ("port: '5433'", True), ("ssl_cert_file: /tmp/server.crt", True), ("archive_command: 'cp %p /wal/%f'", True),
    ("log_destination: stderr", True), ("unix_socket_directories: /tmp", True), ("primary_conninfo: 'host=x'", True),
    ("log_destination: csvlog", False), ("archive_mode: 'on'", False),  # the operator's own values are accepted
])
def test_a_parameter_the_operator_manages_is_a_fatal_problem_at_its_line(line: str, refused: bool) -> None:
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"',
                          f'max_worker_processes: "60"\n      {line}')
    host = _one(text, path)
    name = line.split(":", 1)[0]
    assert [(p.kind, p.source.line, p.fatal) for p in host.problems] == (
        [(REFUSED, _line(text, line), True)] if refused else [])
    assert all(setting.source.line != _line(text, line) for setting in host.settings)  # never a line of postgresql.conf
    if refused:
        assert name in host.problems[0].message and host.problems[0].target == name


def test_wal_level_minimal_with_replicas_is_refused_by_the_operator() -> None:
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"',
                          'max_worker_processes: "60"\n      wal_level: minimal')
    host = _one(text, path)
    line = _line(text, "wal_level")
    assert ("wal_level", "minimal", line) in _user_settings(host, text)  # PGV606, PGV409, PGV410 judge it too
    assert [(p.source.line, p.fatal) for p in host.problems] == [(line, True), (line, True)]
    assert "3 instances (streaming replicas)" in host.problems[0].message
    assert "max_wal_senders = 0" in host.problems[1].message
    assert [p.target for p in host.problems] == ["wal_level", "max_wal_senders"]


def test_wal_level_minimal_on_one_instance_without_archiving_is_accepted() -> None:
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"',
                          "wal_level: minimal\n      max_wal_senders: '0'")
    text = text.replace("instances: 3", "instances: 1").replace(
        "name: cluster-example-custom\n", "name: cluster-example-custom\n  annotations:\n"
        "    cnpg.io/skipWalArchiving: enabled\n")
    host = _one(text, path)
    assert host.problems == []
    assert {s.name: s.value for s in host.settings}["archive_mode"] == "off"


def test_wal_log_hints_off_with_replicas_and_an_unknown_wal_level_are_refused() -> None:
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"',
                          "wal_log_hints: 'off'\n      wal_level: archive")
    host = _one(text, path)
    assert {p.source.line for p in host.problems} == {_line(text, "wal_log_hints"), _line(text, "wal_level")}


def test_a_value_that_is_no_string_is_refused_by_kubernetes() -> None:
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"', "max_worker_processes: 60")
    host = _one(text, path)
    assert [(p.source.line, p.fatal) for p in host.problems] == [(_line(text, "max_worker_processes"), True)]
    assert 'quote it: max_worker_processes: "60"' in host.problems[0].message
    assert ("max_worker_processes", "60", _line(text, "max_worker_processes")) in _user_settings(host, text)


@pytest.mark.parametrize(("written", "kubernetes_reads"), [("on", "on"), ("off", "off"), ("yes", "on"), ("N", "off")])
def test_an_unquoted_yaml_1_1_boolean_is_no_string_to_kubernetes(written: str, kubernetes_reads: str) -> None:
    # kubectl, Helm, Argo CD and Flux read manifests with sigs.k8s.io/yaml (YAML 1.1): on, yes, N… are booleans
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"',
                          f"log_checkpoints: {written}\n      jit: '{written}'\n      log_connections: \"{written}\"")
    host = _one(text, path)
    problems = [(problem.kind, problem.source.line, problem.fatal) for problem in host.problems]
    assert problems == [(REFUSED, _line(text, "log_checkpoints"), True)]
    assert f'quote it: log_checkpoints: "{kubernetes_reads}"' in host.problems[0].message


def test_an_invalid_parameter_name_is_refused() -> None:
    text, path = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"', "'work mem': 4MB")
    assert "no PostgreSQL parameter name" in _one(text, path).problems[0].message


HUGEPAGES = '''  postgresql:
    parameters:
      shared_buffers: "128MB"

  resources:
    requests:
      memory: "512Mi"
    limits:
      hugepages-2Mi: "512Mi"
'''  # CNPG's docs/src/troubleshooting.md, "Error while bootstrapping the data directory"


def test_huge_page_resources_give_the_pool_and_the_page_size() -> None:
    synchronous = "  postgresql:\n    synchronous:\n      method: any\n      number: 1\n"
    text = _text("cluster-example.yaml").replace(synchronous, HUGEPAGES)
    host = _one(text, "hugepages.yaml")
    assert host.host["hugepages"].value == 512 * MiB and host.host["hugepage_size"].value == 2 * MiB
    assert host.host["hugepages"].source.line == _line(text, "hugepages-2Mi")
    assert host.problems == []


def test_huge_page_requests_must_equal_limits_and_need_cpu_or_memory() -> None:
    text = _text("cluster-example.yaml").replace(
        "  storage:", "  resources:\n    requests:\n      hugepages-1Gi: 2Gi\n    limits:\n      hugepages-1Gi: 1Gi\n"
        "  storage:")
    host = _one(text, "hugepages.yaml")
    assert sorted(p.message.split(" (")[0] for p in host.problems) == [
        "huge pages without a cpu or memory resource", "hugepages-1Gi: the request differs from the limit"]
    assert host.host["hugepages"].value == GiB and host.host["hugepage_size"].value == GiB


@pytest.mark.parametrize(("image", "major"), [
    ("ghcr.io/cloudnative-pg/postgresql:16.2", 16), ("ghcr.io/cloudnative-pg/postgresql:17", 17),
    ("registry.local:5000/pg/postgresql:15.6-3-bookworm@sha256:abc", 15), ("postgres:latest", None),
    ("ghcr.io/cloudnative-pg/postgresql", None),
])
def test_the_image_tag_gives_the_version_when_it_says_it(image: str, major: int | None) -> None:
    text, path = _planted("cluster-example-full.yaml", "ghcr.io/cloudnative-pg/postgresql:18.6-system-trixie", image)
    host = _one(text, path)
    assert (host.host["pg_version"].value if "pg_version" in host.host else None) == major
    assert bool(host.notes) == (major is None)


def test_an_image_catalog_gives_the_version_and_an_old_major_is_refused() -> None:
    image = "imageName: ghcr.io/cloudnative-pg/postgresql:18.6-system-trixie"
    text, path = _planted("cluster-example-full.yaml", image,
                          "imageCatalogRef:\n    apiGroup: postgresql.cnpg.io\n    kind: ImageCatalog\n"
                          "    name: postgresql\n    major: 12")
    host = _one(text, path)
    assert host.host["pg_version"].value == 12
    assert [p.source.line for p in host.problems] == [_line(text, "major: 12")]


@pytest.mark.parametrize(("major", "said"), [
    ('"{{ .Values.majorVersion }}"', "spec.imageCatalogRef.major is left to a template"),
    ('"16"', "spec.imageCatalogRef.major '16' is no integer (the CRD takes one)"),
])
def test_an_image_catalog_whose_major_is_not_read_is_said_at_its_line(major: str, said: str) -> None:
    # a chart's Cluster template of a catalog (imageCatalogRef.major: "{{ .Values.majorVersion }}"): the image is the
    # catalog's, not the operator's default one
    image = "imageName: ghcr.io/cloudnative-pg/postgresql:18.6-system-trixie"
    text, path = _planted("cluster-example-full.yaml", image,
                          "imageCatalogRef:\n    apiGroup: postgresql.cnpg.io\n    kind: ClusterImageCatalog\n"
                          f"    name: postgresql\n    major: {major}")
    host = _one(text, path)
    assert "pg_version" not in host.host
    assert f"{path}:{_line(text, 'major: ')}: no PostgreSQL version: {said}" in host.notes


def test_other_objects_and_other_operators_are_no_hosts() -> None:
    zalando = ("apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: acid-minimal-cluster\nspec:\n"
               "  postgresql:\n    version: '16'\n    parameters:\n      shared_buffers: 32MB\n")
    assert not KIND.recognises("zalando.yaml", zalando)
    pooler = _text("cluster-example-full.yaml").replace("kind: Cluster", "kind: Pooler")
    assert not KIND.recognises("pooler.yaml", pooler)
    other = ("apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: capi\n---\n"
             "apiVersion: postgresql.cnpg.io/v1\nkind: Database\nmetadata:\n  name: db\n")
    assert KIND.recognises("mixed.yaml", other) and parse_cnpg(other, "mixed.yaml") == []


@pytest.mark.parametrize(("edit", "message", "fragment"), [
    (("name: cluster-example-custom", "namespace: x"), "without metadata.name", "apiVersion"),
    (("instances: 3", "instances: three"), "no number of instances", "instances:"),
    (("  postgresql:\n", "  postgresql: [1]\n  ignored:\n"), "postgresql: a mapping expected", "postgresql: [1]"),
    (("  storage:\n", "  storage: [\n"), "invalid YAML", None),
])
def test_a_cluster_kubernetes_refuses_is_a_parse_error_at_its_line(
        edit: tuple[str, str], message: str, fragment: str | None) -> None:
    text, path = _planted("cluster-example-custom.yaml", *edit)
    with pytest.raises(ParseError) as raised:
        parse_cnpg(text, path)
    assert message in raised.value.message
    if fragment is not None:
        assert raised.value.source == Source(path, _line(text, fragment))


def test_a_template_whose_actions_shape_the_document_is_no_manifest_until_rendered() -> None:
    text = _text(HELM_TEMPLATE)  # the CNPG chart's cluster.yaml: {{- with … }}, {{ toYaml … | nindent 4 }}
    assert recognise(HELM_TEMPLATE, text) is None
    with pytest.raises(ParseError, match="helm template") as raised:
        parse_cnpg(text, HELM_TEMPLATE)
    assert raised.value.source == Source(HELM_TEMPLATE, _line(text, "{{- with .Values.cluster.annotations }}"))


def test_a_templated_value_is_a_fact_pgvet_cannot_know_never_guessed() -> None:
    text, path = _planted("cluster-example-full.yaml", "shared_buffers: 256MB",
                          "shared_buffers: '{{ .Values.sharedBuffers }}'")
    text = text.replace('memory: "1Gi"', "memory: {{ .Values.memory | quote }}").replace(
        "name: cluster-example-full", "name: {{ .Release.Name }}")
    assert recognise(path, text) is KIND
    host = _one(text, path)
    assert host.name == "cluster-example-full" and host.problems == []  # a templated name: the file's
    assert "shared_buffers" not in {setting.name for setting in host.settings}
    assert {key: source.line for key, source in host.unknown.items()} == {
        "pg.shared_buffers": _line(text, "shared_buffers"),
        "host.memory_limit": _line(text, ".Values.memory"), "host.ram": _line(text, ".Values.memory")}
    assert "memory_limit" not in host.host and "ram" not in host.host  # not the request's either: the limit is set
    assert host.host["memory_request"].value == 512 * MiB
    assert f"{path}:{_line(text, 'shared_buffers')}: spec.postgresql.parameters.shared_buffers is left to a " \
           "template: not read" in host.notes
    assert f"{path}:{_line(text, '.Release.Name')}: metadata.name is left to a template: the host is named after " \
           "its file" in host.notes


def test_a_variable_substituted_before_kubectl_is_a_fact_pgvet_cannot_know() -> None:
    text = _text("wanix-cnpg-cluster-postgresql.yaml")  # ${PGINSTANCESNUMBER} was "no number of instances"
    host = _one(text, "wanix-cnpg-cluster-postgresql.yaml")
    assert host.name == "wanix-cnpg-cluster-postgresql" and host.problems == []
    assert host.unknown == {"host.instances": Source("wanix-cnpg-cluster-postgresql.yaml", _line(text, "instances:"))}
    assert "no PostgreSQL version: spec.imageName is left to a template" in host.notes
    assert host.host["memory_limit"].value == 3 * GiB
    planted = text.replace('    limits:\n      memory: "3Gi"', "    limits:\n      memory: ${PG_MEMORY:=3Gi}")
    assert set(_one(planted, "c.yaml").unknown) == {"host.instances", "host.memory_limit", "host.ram"}


def test_a_parameter_name_left_to_a_variable_may_be_any_but_those_set_beside_it() -> None:
    text, path = _planted("cluster-example-full.yaml", "      shared_buffers:", "      ${EXTRA_PARAMETER}: '1'\n"
                          "      shared_buffers:")
    host = _one(text, path)
    line = _line(text, "EXTRA_PARAMETER")
    assert host.unknown["pg.work_mem"].line == line and host.unknown["pg.checkpoint_timeout"].line == line
    assert "pg.shared_buffers" not in host.unknown  # the Cluster's own
    assert "pg.listen_addresses" not in host.unknown  # the operator's, which no parameter replaces


def test_allow_alter_system_comes_from_enable_alter_system_not_from_the_parameters() -> None:
    text, path = _planted("cluster-example-full.yaml", "    pg_hba:\n",
                          "      allow_alter_system: 'on'\n    enableAlterSystem: false\n    pg_hba:\n")
    host = _one(text, path)
    assert [(s.value, s.source.line) for s in host.settings if s.name == "allow_alter_system"] == [
        ("off", _line(text, "  postgresql:"))]
    assert [(p.kind, p.source.line, p.fatal, p.target) for p in host.problems] == [
        (OVERRIDES, _line(text, "allow_alter_system"), False, "allow_alter_system")]


# End to end: `pgvet lint` on a directory holding a Cluster manifest, as a repository of manifests has them.

runner = CliRunner()


def _lint(directory: Path) -> list[dict[str, object]]:
    result = runner.invoke(app, ["lint", str(directory), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    findings: list[dict[str, object]] = json.loads(result.output)["findings"]
    return findings


def _placed(found: list[dict[str, object]]) -> set[tuple[object, ...]]:
    return {(finding["rule_id"], finding["host"], Path(str(finding["path"])).name, finding["line"])
            for finding in found if finding["path"]}


def _manifests(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True)
    (directory / "cluster.yaml").write_text(text, encoding="utf-8")
    return directory


def test_lint_finds_shared_buffers_above_the_pod_memory_limit_at_its_yaml_line(tmp_path: Path) -> None:
    """The issue's example: shared_buffers 6GB under limits.memory 4Gi, a crash loop caught on the commit."""
    text, _ = _planted("cluster-example-full.yaml", "shared_buffers: 256MB", "shared_buffers: 6GB")
    text = text.replace('memory: "1Gi"', 'memory: "4Gi"').replace('      memory: "512Mi"\n', "")
    found = _lint(_manifests(tmp_path / "k8s", text))
    assert ("PGV540", "cluster-example-full", "cluster.yaml", _line(text, "shared_buffers")) in _placed(found)
    pgv540 = next(finding for finding in found if finding["rule_id"] == "PGV540")
    assert pgv540["severity"] == "error" and "memory limit 4.0 GiB" in str(pgv540["message"])
    assert "PGV407" not in {finding["rule_id"] for finding in found}  # no request: the webhook lets it through


def test_lint_finds_the_planted_mistakes_at_their_yaml_lines(tmp_path: Path) -> None:
    text, _ = _planted("cluster-example-custom.yaml", 'max_worker_processes: "60"',
                       'max_worker_processes: "60"\n      shared_bufers: 1GB\n      work_mem: \'lots\'\n'
                       "      port: '5433'\n      wal_level: minimal")
    placed = _placed(_lint(_manifests(tmp_path / "k8s", text)))
    host, name = "cluster-example-custom", "cluster.yaml"
    assert {("PGV401", host, name, _line(text, "shared_bufers")),  # a typo
            ("PGV403", host, name, _line(text, "work_mem")),  # a value PostgreSQL refuses
            ("PGV407", host, name, _line(text, "port:")),  # a parameter the operator refuses
            ("PGV407", host, name, _line(text, "wal_level")),  # minimal with 3 instances: the webhook refuses it
            ("PGV410", host, name, _line(text, "wal_level")),  # and PostgreSQL would not start with it
            } <= placed


def test_lint_finds_huge_pages_on_without_a_huge_page_resource(tmp_path: Path) -> None:
    text, _ = _planted("cluster-example-full.yaml", "shared_buffers: 256MB",
                       "shared_buffers: 256MB\n      huge_pages: 'on'")
    found = _lint(_manifests(tmp_path / "none", text))
    assert ("PGV430", "cluster-example-full", "cluster.yaml", _line(text, "huge_pages")) in _placed(found)
    small = text.replace("    limits:\n", '    limits:\n      hugepages-2Mi: "128Mi"\n')
    found = _lint(_manifests(tmp_path / "small", small))
    assert ("PGV431", "cluster-example-full", "cluster.yaml", _line(small, "hugepages-2Mi")) in _placed(found)
    enough = text.replace("    limits:\n", '    limits:\n      hugepages-2Mi: "1Gi"\n')
    found = _lint(_manifests(tmp_path / "enough", enough))
    assert not {finding["rule_id"] for finding in found} & {"PGV430", "PGV431", "PGV540"}


def test_each_cluster_of_the_corpus_is_a_host_with_its_declared_facts(tmp_path: Path) -> None:
    hosts = {host.name: host for host in load_hosts(CORPUS)}
    full = hosts["cluster-example-full"]
    assert full.value("host.orchestrator") == "cnpg" and full.value("host.memory_limit") == GiB
    assert full.value("host.ram") == GiB and full.value("host.cpus") == 2 and full.value("pg.version") == 18
    assert full.value("host.instances") == 3 and full.value("pg.wal_level") == "logical"
    assert full.facts["pg.shared_buffers"].source.line == _line(_text("cluster-example-full.yaml"), "shared_buffers")


def test_lint_reads_the_corpus_without_an_error() -> None:
    found = _lint(CORPUS)
    assert {"cluster-example-full", "cluster-example-custom", "cluster1"} <= {finding["host"] for finding in found}
    assert [finding for finding in found if finding["severity"] == "error"] == []


def test_a_templated_parameter_makes_its_rules_not_evaluated(tmp_path: Path) -> None:
    text, _ = _planted("cluster-example-full.yaml", "shared_buffers: 256MB", "shared_buffers: '{{ .Values.sb }}'")
    directory = _manifests(tmp_path / "k8s", text)
    (host,) = load_hosts(directory)
    assert "pg.shared_buffers" not in host.facts and "template" in host.unread["pg.shared_buffers"]
    assert "PGV540" not in {finding["rule_id"] for finding in _lint(directory)}


CHART_VALUES = CORPUS / "chart-values.yaml"
CHART_OVERRIDE = """type: timescaledb
version:
  postgresql: "17"
  timescaledb: "2.17"
cluster:
  instances: 2
  resources:
    limits:
      memory: 2Gi
  monitoring:
    instrumentation:
      pgStatStatements: true
  postgresql:
    shared_preload_libraries: [pg_cron]
    parameters:
      shared_buffers: 1GB
"""


def test_the_cluster_charts_values_are_the_cluster_it_renders() -> None:
    """cloudnative-pg/charts' cluster chart: its values were no input (a3). Its own values.yaml is one Cluster of
    PostgreSQL 16 (version.postgresql), three instances, the operator's defaults; its comments hold a template."""
    text = CHART_VALUES.read_text(encoding="utf-8")
    assert recognise("chart-values.yaml", text) is KIND
    host = _one(text, "chart-values.yaml")
    assert (host.name, host.host["pg_version"].value, host.host["instances"].value) == ("chart-values", 16, 3)
    assert host.host["pg_version"].source.line == _line(text, 'postgresql: "16"')
    override = _one(CHART_OVERRIDE, "values-prod.yaml")
    assert override.host["pg_version"].value == 17 and override.host["ram"].value == 2 * GiB
    settings = {s.name: s.value for s in override.settings}
    assert settings["shared_preload_libraries"].split(",")[:3] == ["timescaledb", "pg_stat_statements", "pg_cron"]
    assert settings["shared_buffers"] == "1GB"
    for other in ("type: postgresql\ncluster: demo\n", "kind: Pod\ntype: postgresql\ncluster: {instances: 1}\n",
                  "type: redis\ncluster: {instances: 1}\n"):
        assert recognise("values.yaml", other) is None
