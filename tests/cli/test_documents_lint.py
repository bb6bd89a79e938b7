"""Configuration documents linted end to end (inputs/documents/, snapshot/load.py, run/paths.py): each host a
document declares is a host of its own, named after it, with the directory's other inputs; findings point at
the document's lines; a repository is searched for hosts; YAML that is no document is left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import PROJECT
from documents_support import DOCUMENTS
from pgvet.cli import app
from pgvet.errors import InputError
from pgvet.inputs.documents import DocumentKind, recognise
from pgvet.inputs.documents._kustomize import MAX_ENTRIES, MAX_WARNINGS, overlay_path
from pgvet.provenance import Source
from pgvet.run.paths import host_directories
from pgvet.snapshot import declared_hosts
from pgvet.snapshot.declared_hosts import MAX_DECLARED_HOSTS
from pgvet.snapshot.discovery import discover
from pgvet.snapshot.load import load_hosts

runner = CliRunner()

# A member's file down to its DCS parameters (the others follow): its name, formatted in.
PATRONI_HEAD = """\
scope: batman
name: {name}
restapi:
  listen: 127.0.0.1:8008
bootstrap:
  dcs:
    postgresql:
      parameters:
        max_connections: 100
"""
PATRONI = PATRONI_HEAD + """\
        wal_level: minimal
        shared_bufers: 1GB
postgresql:
  listen: 127.0.0.1:5432
  parameters:
    shared_buffers: 1GB
    work_mem: lots
"""


def members(directory: Path, *names: str, host_yaml: str = "ram: 4GB\ncpus: 4\npg_version: 16\n") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(names):
        (directory / f"postgres{index}.yml").write_text(PATRONI.format(name=name))
    if host_yaml:
        (directory / "host.yaml").write_text(host_yaml)
    return directory


def findings(*args: str) -> tuple[int, list[dict[str, object]]]:
    result = runner.invoke(app, ["lint", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.output)["findings"]


def places(found: list[dict[str, object]], host: str) -> set[tuple[object, ...]]:
    return {(finding["rule_id"], Path(str(finding["path"])).name, finding["line"]) for finding in found
            if finding["host"] == host and finding["path"]}


def test_each_member_is_a_host_with_its_mistakes_at_their_yaml_lines(tmp_path: Path) -> None:
    directory = members(tmp_path / "cluster", "pg-a", "pg-b")
    code, found = findings(str(directory))
    assert code == 1
    assert {finding["host"] for finding in found} == {"pg-a", "pg-b"}
    for host, file in (("pg-a", "postgres0.yml"), ("pg-b", "postgres1.yml")):
        assert {("PGV441", file, 10), ("PGV401", file, 11), ("PGV403", file, 16)} <= places(found, host)


def test_the_directorys_other_inputs_join_each_declared_host(tmp_path: Path) -> None:
    directory = members(tmp_path / "cluster", "pg-a", "pg-b", host_yaml="ram: 6GB\ncpus: 8\npg_version: 15\n")
    hosts = load_hosts(directory)
    assert [host.name for host in hosts] == ["pg-a", "pg-b"]
    for host in hosts:
        assert host.value("host.ram") == 6 * 1024**3 and host.value("pg.version") == 15
        assert host.value("host.orchestrator") == "patroni"
        assert host.facts["pg.shared_buffers"].source.path.startswith("postgres")


def test_hosts_of_one_name_in_a_directory_are_told_apart_by_their_file(tmp_path: Path) -> None:
    directory = members(tmp_path / "cluster", "same", "same")
    assert [host.name for host in load_hosts(directory)] == ["same (postgres0.yml)", "same (postgres1.yml)"]


def test_a_repository_is_searched_for_hosts_and_other_yaml_is_no_input(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    members(repository / "patroni" / "east", "east-1", host_yaml="")
    snapshot = repository / "hosts" / "db1"
    snapshot.mkdir(parents=True)
    (snapshot / "postgresql.conf").write_text("shared_buffers = 128MB\n")
    (snapshot / "conf.d").mkdir()
    (repository / ".github" / "workflows").mkdir(parents=True)
    (repository / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")
    (repository / "docs").mkdir()
    (repository / "docs" / "mkdocs.yml").write_text("site_name: x\n")
    given = host_directories([repository], stop=tmp_path)
    assert [path.relative_to(repository).as_posix() for path in given.hosts] == ["hosts/db1", "patroni/east"]
    _, found = findings(str(repository))
    assert {finding["host"] for finding in found} == {"db1", "east-1"}


def test_a_yaml_file_given_that_is_no_document_is_left_out_with_a_notice(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    members(tmp_path / "cluster", "pg-a", host_yaml="")
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "pipeline.yml").write_text("stages: [test]\n")
    monkeypatch.chdir(tmp_path)  # pre-commit runs from the repository's root, passing the files changed
    result = runner.invoke(app, ["lint", "cluster/postgres0.yml", "ci/pipeline.yml", "--format", "concise"])
    assert result.exit_code == 1, result.output
    assert "cluster/postgres0.yml:11: ERROR PGV401" in result.output
    assert "ci/pipeline.yml: not linted" in result.output and "ERROR input" not in result.output


def test_a_document_committed_beside_yaml_that_is_none_is_linted(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # pre-commit passes the files of a commit: a Patroni file beside a YAML that is no document (a kustomization, a
    # ScheduledBackup) lost its host with it — the commit passed unchecked, or, alone, was refused (exit 2)
    members(tmp_path / "cluster", "pg-a", host_yaml="")
    (tmp_path / "cluster" / "kustomization.yaml").write_text("resources: [postgres0.yml]\n")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")
    monkeypatch.chdir(tmp_path)
    for given in (["cluster/postgres0.yml", "cluster/kustomization.yaml"],
                  ["cluster/kustomization.yaml", "cluster/postgres0.yml", ".github/workflows/ci.yml"]):
        result = runner.invoke(app, ["lint", *given, "--format", "concise"])
        assert result.exit_code == 1, result.output
        assert "cluster/postgres0.yml:11: ERROR PGV401" in result.output
        assert "cluster/kustomization.yaml: not linted" in result.output
    # a commit of nothing pgvet reads passes, saying what it left out
    result = runner.invoke(app, ["lint", ".github/workflows/ci.yml", "cluster/kustomization.yaml"])
    assert result.exit_code == 0, result.output
    assert ".github/workflows/ci.yml: not linted" in result.output and "on 0 hosts" in result.output


def test_unrelated_yaml_inside_a_host_directory_is_not_an_input_error(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    directory = members(tmp_path / "cluster", "pg-a")
    (directory / "notes.yaml").write_text("owner: dba-team\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["lint", "cluster/notes.yaml", "cluster/postgres0.yml", "--format", "concise"])
    assert result.exit_code == 1 and "not an input" not in result.output, result.output


def test_fix_leaves_a_documents_parameters_to_its_document(tmp_path: Path) -> None:
    directory = members(tmp_path / "one", "pg-a")
    before = (directory / "postgres0.yml").read_text()
    result = runner.invoke(app, ["fix", str(directory), "--write"])
    # wal_level minimal in the DCS is Patroni's to replace (PGV441, no fix): a default the fix changes instead
    assert "log_lock_waits = 'on': not written — patroni writes postgresql.conf from its document: set it in " \
           "postgres0.yml's postgresql.parameters" in result.output, result.output
    assert (directory / "postgres0.yml").read_text() == before and not (directory / "postgresql.conf").exists()


def test_fix_of_a_directory_of_several_hosts_works_on_the_one_host_names(tmp_path: Path) -> None:
    directory = members(tmp_path / "two", "pg-a", "pg-b")
    result = runner.invoke(app, ["fix", str(directory)])
    assert result.exit_code == 2 and "holds 2 hosts (pg-a, pg-b): choose one with --host NAME" in result.output
    chosen = runner.invoke(app, ["fix", str(directory), "--host", "pg-b"])
    assert chosen.output.startswith("# pgvet fix for pg-b: "), chosen.output
    unknown = runner.invoke(app, ["fix", str(directory), "--host", "pg-c"])
    assert unknown.exit_code == 2
    assert "--host pg-c: " in unknown.output and "holds no host of that name (the hosts: pg-a, pg-b)" in unknown.output


def test_a_document_too_large_to_be_one_is_not_read_and_said(tmp_path: Path) -> None:
    directory = members(tmp_path / "cluster", "pg-a")
    (directory / "dump.yaml").write_text("x: " + "y" * (1024 * 1024 + 1) + "\n")
    host, = load_hosts(directory)
    assert any("dump.yaml: not read as a configuration document" in note for note in host.notes)
    # alone in its directory, the error that nothing was found says why
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.move(directory / "dump.yaml", alone / "dump.yaml")
    with pytest.raises(InputError, match=r"no inputs found \(dump.yaml: not read as a configuration document: "):
        load_hosts(alone)


def test_a_helm_chart_s_templates_are_not_read_and_said(tmp_path: Path) -> None:
    """A chart's templates directory (templates/_helpers.tpl, manifests with ``{{ }}``) was "no inputs found" alone:
    the error says which files were left out and why (their values exist only once rendered)."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "_helpers.tpl").write_text('{{- define "pg.fullname" -}}{{ .Release.Name }}{{- end }}\n')
    (templates / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include "
                                       '"pg.fullname" . }}\ndata:\n  max_connections: "{{ .Values.max }}"\n')
    with pytest.raises(InputError) as refused:
        load_hosts(templates)
    message = refused.value.message
    assert message.startswith("no inputs found (_helpers.tpl: not read: a template file (Helm's helpers, or a "
                              "configuration that gomplate, envsubst or sed renders)"), message
    assert "cm.yaml: not read: a template ({{ … }}: Helm, Jinja), whose values are known only once rendered: lint " \
           "what it renders (`helm template`'s output" in message, message
    # beside a host's inputs, a note (--verbose)
    (templates / "postgresql.conf").write_text("max_connections = 100\n")
    host, = load_hosts(templates)
    assert [note for note in host.notes if "template" in note] == [
        "_helpers.tpl: not read: a template file (Helm's helpers, or a configuration that gomplate, envsubst or sed "
        "renders), whose values are known only once rendered: lint what it renders (`helm template`'s output, the "
        "chart's values file)",
        "cm.yaml: not read: a template ({{ … }}: Helm, Jinja), whose values are known only once rendered: lint what "
        "it renders (`helm template`'s output, the chart's values file)"]


def test_the_values_of_a_chart_pgvet_does_not_read_are_said_as_such(tmp_path: Path) -> None:
    # timescaledb-single's values.yaml holds `fullnameOverride: "{{ .Release.Name }}"`, a string Helm passes on: it
    # was called a template, and the note said to lint "the chart's values file" — the file itself
    (tmp_path / "values.yaml").write_text('fullnameOverride: "{{ .Release.Name }}"\n'
                                          "patroni:\n  log: {level: WARNING}\n")
    with pytest.raises(InputError) as refused:
        load_hosts(tmp_path)
    assert "values.yaml: not read: the values of a Helm chart pgvet does not read (it reads the Bitnami PostgreSQL " \
           "charts', CloudNativePG's cluster chart's and timescaledb-single's own): lint what the chart renders " \
           "(`helm template`'s output)" \
        in refused.value.message


CLUSTER_WITHOUT_PARAMETERS = """\
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: pg
spec:
  instances: 3
  storage:
    size: 1Gi
  resources:
    limits:
      memory: 8Gi
"""
POSTGRESCLUSTER_WITHOUT_PARAMETERS = """\
apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: hippo
spec:
  postgresVersion: 16
  instances:
    - name: instance1
      resources:
        limits:
          memory: 8Gi
"""


@pytest.mark.parametrize(("text", "block"), [
    (CLUSTER_WITHOUT_PARAMETERS, "spec.postgresql.parameters"),
    (POSTGRESCLUSTER_WITHOUT_PARAMETERS, "spec.patroni.dynamicConfiguration.postgresql.parameters"),
    # the cloudnative-pg/charts cluster chart's values (its templates/cluster.yaml renders cluster.postgresql)
    ("type: postgresql\nmode: standalone\ncluster:\n  instances: 3\n  resources:\n    limits:\n      memory: 8Gi\n",
     "cluster.postgresql.parameters"),
])
def test_the_fix_of_a_manifest_without_parameters_says_where_their_block_goes(
        tmp_path: Path, text: str, block: str) -> None:
    """A CNPG Cluster or a Crunchy PostgresCluster with no parameters block: the fix named the file alone, not the
    key path the parameters go under (cnpg: spec.postgresql.parameters; PGO 5: Patroni's dynamic configuration)."""
    directory = tmp_path / "cluster"
    directory.mkdir()
    (directory / "cluster.yaml").write_text(text)
    shown = runner.invoke(app, ["fix", str(directory)])
    assert f"# --- cluster.yaml: its PostgreSQL parameters, a block to add at {block} (" in shown.output, shown.output
    written = runner.invoke(app, ["fix", str(directory), "--write"])
    assert f"set it among the parameters of cluster.yaml (a block to add at {block})" in written.output, written.output
    # a manifest with the block: its lines say where
    path = block.split(".")[1:]
    nested = "".join(f"{'  ' * depth}{key}:\n" for depth, key in enumerate(path, 1))
    (directory / "cluster.yaml").write_text(f"{text}{nested}{'  ' * (len(path) + 1)}max_connections: '100'\n")
    assert "a block to add" not in runner.invoke(app, ["fix", str(directory)]).output


def test_facts_of_a_directory_of_several_hosts_shows_the_one_host_names(tmp_path: Path) -> None:
    two = members(tmp_path / "two", "pg-a", "pg-b")
    refused = runner.invoke(app, ["facts", str(two)])
    assert refused.exit_code == 2 and "holds 2 hosts (pg-a, pg-b): choose one with --host NAME" in refused.output
    chosen = json.loads(runner.invoke(app, ["facts", str(two), "--host", "pg-b", "--format", "json"]).output)
    assert chosen["host"] == "pg-b"
    explained = runner.invoke(app, ["explain", "PGV501", str(two), "--host", "pg-a"])
    assert explained.exit_code == 0 and "pg-a" in explained.output, explained.output
    shown = runner.invoke(app, ["facts", str(members(tmp_path / "one", "pg-a")), "--format", "json"])
    facts = json.loads(shown.output)["facts"]
    assert facts["host.orchestrator"]["value"] == "patroni"
    assert facts["pg.shared_buffers"]["source"] == {"path": "postgres0.yml", "line": 15}


def test_the_fix_of_a_document_host_applied_to_its_document_fixes_and_a_second_fix_changes_nothing(
        tmp_path: Path) -> None:
    directory = members(tmp_path / "one", "pg-a")
    document = directory / "postgres0.yml"
    document.write_text(document.read_text().replace("shared_bufers: 1GB", "shared_buffers: 1GB")
                        .replace("work_mem: lots", "work_mem: 4MB"))
    first = runner.invoke(app, ["fix", str(directory)]).output
    header = "# --- postgres0.yml: its PostgreSQL parameters (patroni writes postgresql.conf from them"
    assert header in first and "ALTER SYSTEM SET" not in first, first
    block = first.split(header, 1)[1].split("\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert block and all(": '" in line for line in block)
    apply_to_patroni_file(document, block)
    second = runner.invoke(app, ["fix", str(directory)]).output
    assert "# PostgreSQL (" not in second and header not in second, second


PATRONI_SHARED_BUFFERS = PATRONI_HEAD.format(name="pg-a") + """\
        shared_buffers: 3GB
postgresql:
  listen: 127.0.0.1:5432
  bin_dir: /usr/lib/postgresql/16/bin
  parameters:
    work_mem: 4MB
"""


def patroni_member(directory: Path, text: str = PATRONI_SHARED_BUFFERS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "postgres0.yml").write_text(text)
    (directory / "host.yaml").write_text("ram: 4GB\ncpus: 4\n")
    return directory


def by_hand(directory: Path) -> list[dict[str, object]]:
    document = json.loads(runner.invoke(app, ["lint", str(directory), "--format", "json"]).output)
    return document["hosts"][0]["target"]["by_hand"]  # type: ignore[no-any-return]


def test_a_patroni_fix_of_a_parameter_the_dcs_holds_says_patronictl_edit_config(tmp_path: Path) -> None:
    """bootstrap.dcs is written to the DCS only when Patroni creates the cluster: on a running one the fix is
    `patronictl edit-config`, and shared_buffers a restart, said in the finding, the steps by hand and `pgvet fix`."""
    directory = patroni_member(tmp_path / "cluster")
    _, found = findings(str(directory), "--select", "PGV501")
    fix, = (finding["fix"] for finding in found)
    value = fix["postgresql"]["shared_buffers"]  # type: ignore[index]  # the target's value, not the rule's own
    edit = f"`patronictl -c postgres0.yml edit-config batman --pg shared_buffers={value} --force`"
    restart = ("the replicas first: `patronictl -c postgres0.yml restart batman --role replica --pending`, then "
               "`patronictl -c postgres0.yml restart batman --pending`.")
    text = str(fix["text"])  # type: ignore[index]
    assert "bootstrap.dcs only when it creates the cluster" in text and edit in text and restart in text, text
    step, = (step for step in by_hand(directory) if "edit-config" in str(step["text"]))
    assert step["rules"] == ["PGV501"] and edit in str(step["text"]) and step["setting"] is None
    output = runner.invoke(app, ["fix", str(directory)]).output
    assert edit in output and f"shared_buffers: '{value}'" in output, output  # the file's edit kept, for a new cluster
    written = runner.invoke(app, ["fix", str(directory), "--write"]).output
    assert (f"shared_buffers = '{value}': not written — patroni writes postgresql.conf from its document: set it at "
            "postgres0.yml:10; the running system needs its step by hand too") in written, written


def test_a_parameter_only_the_dcs_sets_is_changed_there_even_when_the_file_sets_it_nowhere(tmp_path: Path) -> None:
    """Patroni takes max_connections from the DCS only (a member's own value is ignored): a fix raising it goes to
    bootstrap.dcs and `patronictl edit-config`, the replicas restarted before the primary."""
    directory = patroni_member(tmp_path / "cluster", PATRONI_SHARED_BUFFERS.replace(
        "shared_buffers: 3GB", "shared_buffers: 1GB").replace("work_mem: 4MB", "superuser_reserved_connections: 110")
        .replace("        max_connections: 100\n", ""))
    _, found = findings(str(directory), "--select", "PGV414")
    fix, = (finding["fix"] for finding in found)
    assert fix["postgresql"] == {"max_connections": "111"}  # type: ignore[index]
    text = str(fix["text"])  # type: ignore[index]
    assert "in postgres0.yml's bootstrap.dcs.postgresql.parameters, it is a new cluster's" in text, text
    assert "`patronictl -c postgres0.yml edit-config batman --pg max_connections=111 --force`" in text
    assert ("the replicas first (a standby with a lower max_connections than its primary does not start): "
            "`patronictl -c postgres0.yml restart batman --role replica --pending`") in text
    # fix --write names where it goes: a member's own postgresql.parameters would be ignored
    written = runner.invoke(app, ["fix", str(directory), "--write", "--select", "PGV414"]).output
    assert ("max_connections = '111': not written — patroni writes postgresql.conf from its document: set it in "
            "postgres0.yml's bootstrap.dcs.postgresql.parameters (read when the cluster is created); the running "
            "system needs its step by hand too") in written, written


def test_a_patroni_template_is_no_file_patronictl_reads(tmp_path: Path) -> None:
    """Ansible's patroni.yml.j2 renders the member's file: patronictl is given that file, not the template."""
    directory = tmp_path / "roles" / "patroni"
    patroni_member(directory, PATRONI_SHARED_BUFFERS.replace("    work_mem: 4MB\n", "    track_io_timing: 'off'\n"))
    (directory / "postgres0.yml").rename(directory / "patroni.yml.j2")
    _, found = findings(str(directory), "--select", "PGV804")
    text = str(found[0]["fix"]["text"])  # type: ignore[index]
    assert ("`patronictl -c patroni.yml reload batman` (-c: the file patroni.yml.j2 renders on the member)"
            in text), text


def test_a_patroni_fix_of_a_members_own_parameter_is_a_reload_not_edit_config(tmp_path: Path) -> None:
    """A parameter of the member's postgresql.parameters (a local value wins over the DCS's) is read again when
    Patroni reloads its file: no patronictl edit-config, whose DCS value the member's own would override."""
    directory = patroni_member(tmp_path / "cluster", PATRONI_SHARED_BUFFERS.replace(
        "    work_mem: 4MB\n", "    work_mem: 4MB\n    shared_buffers: 3GB\n    track_io_timing: 'off'\n"))
    _, found = findings(str(directory), "--select", "PGV501,PGV804")
    texts = {str(finding["rule_id"]): str(finding["fix"]["text"]) for finding in found}  # type: ignore[index]
    assert all("edit-config" not in text for text in texts.values()), texts
    assert texts["PGV804"] == ("Patroni reads its file's postgresql.parameters again when it reloads: once the "
                               "member's postgres0.yml holds track_io_timing, `patronictl -c postgres0.yml reload "
                               "batman`.")
    assert "reload batman`; then, as shared_buffers takes effect at a restart" in texts["PGV501"]
    steps = [str(step["text"]) for step in by_hand(directory)]
    assert not any("edit-config" in step for step in steps) and any("reload batman" in step for step in steps)
    assert "edit-config" not in runner.invoke(app, ["fix", str(directory)]).output


def apply_to_patroni_file(document: Path, block: list[str]) -> None:
    """`pgvet fix`'s parameter lines applied as a DBA would: a parameter set in the document gets the new value on
    its line (`fix --write` names that line), the others go among the member's parameters."""
    lines = document.read_text().splitlines()
    for entry in block:
        name = entry.split(":", 1)[0]
        at = next((index for index, line in enumerate(lines) if line.strip().startswith(f"{name}:")), None)
        if at is None:
            lines.insert(lines.index("  parameters:", lines.index("postgresql:")) + 1, f"    {entry}")
        else:
            lines[at] = lines[at].split(name, 1)[0] + entry
    document.write_text("\n".join(lines) + "\n")


def test_a_patroni_fix_applied_to_its_file_then_again_changes_nothing(tmp_path: Path) -> None:
    directory = patroni_member(tmp_path / "cluster")
    document = directory / "postgres0.yml"
    header = "# --- postgres0.yml: its PostgreSQL parameters (patroni writes postgresql.conf from them"
    for _ in range(2):
        output = runner.invoke(app, ["fix", str(directory)]).output
        block = output.split(header, 1)[1].split("\n", 1)[1].split("\n\n", 1)[0].splitlines() if (
            header in output) else []
        before = document.read_text()
        apply_to_patroni_file(document, block)
    assert document.read_text() == before and not block  # the second pass had nothing to apply
    assert "patronictl" not in output and "# PostgreSQL (" not in output, output


def test_reports_give_a_document_hosts_fix_as_its_parameters_without_alter_system(tmp_path: Path) -> None:
    directory = members(tmp_path / "one", "pg-a")
    _, found = findings(str(directory), "--select", "PGV807")
    fix, = (finding["fix"] for finding in found)
    assert fix["postgresql"] == {"log_lock_waits": "on"} and fix["alter_system"] == []  # type: ignore[index]
    for fmt, expected in (("text", "fix    postgres0.yml: log_lock_waits: 'on'"),
                          ("junit", "fix: postgres0.yml: log_lock_waits: 'on'"),
                          ("html", "postgres0.yml: log_lock_waits: &#x27;on&#x27;")):
        output = runner.invoke(app, ["lint", str(directory), "--select", "PGV807", "--format", fmt]).output
        assert expected in output and "ALTER SYSTEM" not in output, (fmt, output)


def test_a_value_left_to_an_environment_variable_leaves_its_rules_not_evaluated_not_judged_on_a_default(
        tmp_path: Path) -> None:
    directory = tmp_path / "compose"
    directory.mkdir()
    (directory / "docker-compose.yml").write_text(
        "services:\n  db:\n    image: postgres:16\n    command: postgres -c shared_buffers=${SB} -c ssl=${SSL}\n"
        "    mem_limit: 2g\n")
    host, = load_hosts(directory)
    assert "pg.shared_buffers" not in host.facts and "pg.ssl" not in host.facts
    assert host.unread["pg.ssl"].startswith("ssl is set at docker-compose.yml:4 to a value pgvet cannot know")
    result = runner.invoke(app, ["lint", str(directory), "--format", "json", "--verbose"])
    document = json.loads(result.output)
    assert "PGV833" not in {finding["rule_id"] for finding in document["findings"]}  # ssl = off, its default
    skipped = {entry["rule_id"]: entry["reason"] for entry in document["not_evaluated"]}
    assert skipped["PGV833"].startswith("ssl is set at docker-compose.yml:4")
    assert skipped["PGV501"].startswith("shared_buffers is set at docker-compose.yml:4")


def test_each_kind_writes_the_fix_as_its_document_does(tmp_path: Path) -> None:
    directory = tmp_path / "compose"
    directory.mkdir()
    (directory / "docker-compose.yml").write_text(
        "services:\n  db:\n    image: postgres:16\n    command: postgres -c log_lock_waits=off\n")
    output = runner.invoke(app, ["fix", str(directory)]).output
    assert "\n-c log_lock_waits=on\n" in output, output
    # Bitnami's chart takes parameters as postgresql.conf lines (primary.extendedConfiguration), not YAML entries
    directory = tmp_path / "chart"
    directory.mkdir()
    (directory / "values.yaml").write_text(
        "primary:\n  extendedConfiguration: |\n    log_lock_waits = off\n    log_line_prefix = '%m [%p] '\n")
    output = runner.invoke(app, ["fix", str(directory)]).output
    assert "\nlog_lock_waits = 'on'\n" in output and "log_lock_waits: " not in output, output


@pytest.mark.parametrize(("command", "written"), [
    ('["postgres", "-c", "log_lock_waits=off"]', '"-c", "log_lock_waits=on"'),
    ("\n      - postgres\n      - -c\n      - log_lock_waits=off", '- "-c"\n- "log_lock_waits=on"'),
    ("postgres -c log_lock_waits=off", "-c log_lock_waits=on")])
def test_a_compose_fix_is_written_in_the_form_of_the_services_command(tmp_path: Path, command: str,
                                                                      written: str) -> None:
    """A list-form command passes each item to postgres as one word, and postgres refuses "-c name=value" as one
    (it reads the name " name", space included): the fix of a list is two items, in the list's own style; a
    string is split by Compose as a shell would, so it keeps "-c name=value"."""
    directory = tmp_path / "compose"
    directory.mkdir()
    (directory / "docker-compose.yml").write_text(f"services:\n  db:\n    image: postgres:16\n    command: {command}\n")
    output = runner.invoke(app, ["fix", str(directory)]).output
    assert f"\n{written}\n" in output, output
    output = runner.invoke(app, ["lint", str(directory), "--select", "PGV807"]).output
    assert f"docker-compose.yml: {written.splitlines()[0]}" in output, output


def test_a_compose_fix_says_compose_passes_the_parameters_on_the_command_line(tmp_path: Path) -> None:
    """Compose writes no postgresql.conf: it runs postgres with the command's -c options, which outrank postgresql.conf
    and ALTER SYSTEM (a value set with ALTER SYSTEM is not overwritten but never runs)."""
    directory = tmp_path / "compose"
    directory.mkdir()
    (directory / "docker-compose.yml").write_text(
        "services:\n  db:\n    image: postgres:16\n    command: postgres -c log_lock_waits=off\n")
    output = runner.invoke(app, ["fix", str(directory)]).output
    assert ("# --- docker-compose.yml: its PostgreSQL parameters (compose passes them on postgres' command line, "
            "which outranks postgresql.conf and ALTER SYSTEM) ---") in output, output
    written = runner.invoke(app, ["fix", "--write", str(directory)]).output
    assert ("log_lock_waits = 'on': not written — compose passes its parameters on postgres' command line: set it at "
            "docker-compose.yml:4") in " ".join(written.split()), written


def test_a_directory_declaring_hosts_beyond_the_bound_is_an_error_at_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "many"
    directory.mkdir()
    services = "".join(f"  db{index}:\n    image: postgres:16\n" for index in range(MAX_DECLARED_HOSTS + 1))
    (directory / "compose.yaml").write_text(f"services:\n{services}")
    with pytest.raises(InputError, match=f"declare more than {MAX_DECLARED_HOSTS} hosts") as raised:
        load_hosts(directory)
    assert raised.value.source is not None and raised.value.source.path == "compose.yaml"


def test_the_documents_of_a_directory_are_read_once_for_all_its_hosts(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    directory = members(tmp_path / "cluster", "pg-a", "pg-b", "pg-c")
    read: list[str] = []

    def recognising(name: str, text: str) -> DocumentKind | None:
        read.append(name)
        return recognise(name, text)

    monkeypatch.setattr(declared_hosts, "recognise", recognising)
    assert [host.name for host in load_hosts(directory)] == ["pg-a", "pg-b", "pg-c"]
    assert sorted(read) == ["postgres0.yml", "postgres1.yml", "postgres2.yml"]


def test_suppression_comments_work_in_a_yaml_document(tmp_path: Path) -> None:
    directory = tmp_path / "member"
    directory.mkdir()
    (directory / "p.yml").write_text(
        "scope: s\nname: m1\nrestapi:\n  listen: :8008\npostgresql:\n  parameters:\n"
        "    # pgvet: ignore[unknown-parameter] an extension's parameter (OPS-1)\n    shared_bufers: 1GB\n"
        "    work_mem: lots  # pgvet: ignore[PGV403] templated by the deploy (OPS-2)\n")
    _, found = findings(str(directory), "--select", "PGV401,PGV403")
    assert {(finding["rule_id"], finding["line"], bool(finding["suppressed"])) for finding in found} == {
        ("PGV401", 8, True), ("PGV403", 9, True)}


def test_a_partial_manifest_beside_its_base_applies_after_it_as_a_patch_does(tmp_path: Path) -> None:
    directory = tmp_path / "overlay"
    directory.mkdir()
    (directory / "base.yaml").write_text(
        "apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: acid-main\nspec:\n  teamId: acid\n"
        "  numberOfInstances: 2\n  postgresql:\n    version: '16'\n    parameters:\n      work_mem: 4MB\n")
    (directory / "patch.yaml").write_text(
        "apiVersion: acid.zalan.do/v1\nkind: postgresql\nspec:\n  postgresql:\n    parameters:\n"
        "      work_mem: 64MB\n")
    host, = load_hosts(directory)
    assert host.name == "acid-main"
    assert host.value("pg.work_mem") == 64 * 1024**2 and host.facts["pg.work_mem"].source.path == "patch.yaml"


CNPG_PATCH = ("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: orders\nspec:\n"
              "  postgresql:\n    parameters:\n      work_mem: 48MB\n")


@pytest.mark.parametrize(("kustomization", "said"), [
    ("resources:\n  - ../../base\npatches:\n  - path: cluster.yaml\n", "bases ../../base; patches cluster.yaml"),
    ("bases: [../base]\npatchesStrategicMerge: [cluster.yaml]\n", "bases ../base; patches cluster.yaml"),
    ("resources:\n  - cluster.yaml\npatches:\n  - target: {kind: Cluster}\n    patch: |-\n      - op: replace\n",
     "patches an inline patch")])
def test_a_kustomize_overlay_read_without_its_base_is_said_not_judged_silently(
        tmp_path: Path, kustomization: str, said: str) -> None:
    """pgvet does not build kustomize overlays: a directory whose kustomization.yaml takes bases from elsewhere or
    patches its resources is judged as its files are written, and every host of it says so (a warning)."""
    directory = tmp_path / "overlays" / "prod"
    directory.mkdir(parents=True)
    (directory / "cluster.yaml").write_text(CNPG_PATCH)
    (directory / "kustomization.yaml").write_text(kustomization)
    host, = load_hosts(directory)
    [warning] = [warning for warning in host.warnings if "kustomize" in warning]
    assert warning.startswith(f"kustomization.yaml: a kustomize overlay ({said})"), warning
    assert "kustomize build" in warning
    output = runner.invoke(app, ["lint", str(directory)]).output
    assert "a kustomize overlay" in output, output


def test_a_kustomization_of_its_own_files_only_is_read_without_a_warning(tmp_path: Path) -> None:
    directory = tmp_path / "app"
    directory.mkdir()
    (directory / "cluster.yaml").write_text(CNPG_PATCH.replace("spec:\n", "spec:\n  instances: 2\n"))
    (directory / "kustomization.yaml").write_text("namespace: db\nresources:\n  - cluster.yaml\n")
    host, = load_hosts(directory)
    assert not [warning for warning in host.warnings if "kustomize" in warning]
    assert host.name == "orders"  # no overlay: the object's name, as before


def test_a_patch_of_an_object_of_its_own_directory_is_no_second_host(tmp_path: Path) -> None:
    # read whole, the patch was a host of its own named after the object, judged on one instance and no limit
    directory = tmp_path / "app"
    directory.mkdir()
    (directory / "cluster.yaml").write_text(CNPG_PATCH.replace("spec:\n", "spec:\n  instances: 3\n").replace(
        "work_mem: 48MB", "work_mem: 16MB\n  resources:\n    limits:\n      memory: 2Gi"))
    (directory / "patch.yaml").write_text(CNPG_PATCH)
    (directory / "kustomization.yaml").write_text("resources:\n  - cluster.yaml\npatches:\n  - path: patch.yaml\n")
    host, = load_hosts(directory)
    assert host.name == "orders" and host.value("host.instances") == 3 and host.value("pg.work_mem") == 16 * 1024**2
    assert "patch.yaml: a kustomize patch of orders, which cluster.yaml declares: not a host of its own, and not " \
           "applied" in host.notes
    [warning] = [warning for warning in host.warnings if "kustomize" in warning]
    assert "(patches patch.yaml)" in warning and "patches not applied" in warning
    # a resource that patches itself is the object's only file: judged
    (directory / "kustomization.yaml").write_text("resources:\n  - patch.yaml\npatches:\n  - path: patch.yaml\n")
    (directory / "cluster.yaml").rename(directory / "cluster.txt")
    assert [each.name for each in load_hosts(directory)] == ["orders"]
    (directory / "cluster.txt").rename(directory / "cluster.yaml")
    # a patch of an object from elsewhere (a base) is the overlay's host, as before
    (directory / "cluster.yaml").unlink()
    (directory / "kustomization.yaml").write_text("resources:\n  - ../base\npatches:\n  - path: patch.yaml\n")
    assert [each.name for each in load_hosts(directory)] == ["orders (app)"]


# One host of each kind of Kubernetes manifest, every overlay of a base declaring it under the same name.
OVERLAID = {
    "cnpg": ("orders", "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: orders\nspec:\n"
                       "  instances: 2\n  postgresql:\n    parameters:\n      work_mem: {work_mem}\n"),
    "zalando": ("orders", "apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: orders\nspec:\n"
                          "  teamId: acid\n  numberOfInstances: 2\n  postgresql:\n    version: '16'\n"
                          "    parameters:\n      work_mem: {work_mem}\n"),
    "crunchy": ("orders-pgha1", "apiVersion: postgres-operator.crunchydata.com/v1beta1\nkind: PostgresCluster\n"
                                "metadata:\n  name: orders\nspec:\n  postgresVersion: 16\n  instances:\n"
                                "    - name: pgha1\n      replicas: 2\n  patroni:\n    dynamicConfiguration:\n"
                                "      postgresql:\n        parameters:\n          work_mem: {work_mem}\n"),
    "bitnami": ("orders", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: orders\n"
                          "spec:\n  chart:\n    spec:\n      chart: postgresql\n  values:\n    primary:\n"
                          "      extendedConfiguration: |\n        work_mem = {work_mem}\n"),
}
OVERLAYS = ("staging", "production")


def overlaid(repository: Path, kind: str) -> Path:
    """A kustomize layout: base/ and overlays/staging/, overlays/production/, each declaring the base's object."""
    text = OVERLAID[kind][1]
    (repository / "base").mkdir(parents=True)
    (repository / "base" / "db.yaml").write_text(text.format(work_mem="4MB"))
    (repository / "base" / "kustomization.yaml").write_text("resources:\n  - db.yaml\n")
    for environment, work_mem in zip(OVERLAYS, ("8MB", "64MB"), strict=True):
        directory = repository / "overlays" / environment
        directory.mkdir(parents=True)
        (directory / "db.yaml").write_text(text.format(work_mem=work_mem))
        (directory / "kustomization.yaml").write_text("resources:\n  - ../../base\npatches:\n  - path: db.yaml\n")
    return repository


def fingerprints_by_host(*args: str) -> tuple[dict[str, set[str]], list[str]]:
    """``pgvet lint ARGS``' hosts (their names) with their findings' fingerprints, and the run's notices."""
    result = runner.invoke(app, ["lint", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.output)
    hosts: dict[str, set[str]] = {str(host["name"]): set() for host in report["hosts"]}
    for finding in report["findings"]:
        hosts[str(finding["host"])].add(str(finding["fingerprint"]))
    return hosts, report["notices"]


@pytest.mark.parametrize("kind", sorted(OVERLAID))
def test_hosts_of_a_base_and_its_overlays_have_names_and_fingerprints_of_their_own(tmp_path: Path, kind: str) -> None:
    """Every overlay of a base declares the base's objects under their names: each overlay's hosts are named after
    it too, the base's keep their names, and no two hosts share a fingerprint (baselines, tickets, SARIF)."""
    repository = overlaid(tmp_path / "repo", kind)
    (repository / ".git").mkdir()
    name = OVERLAID[kind][0]
    hosts, notices = fingerprints_by_host(str(repository))
    assert sorted(hosts) == sorted([name, f"{name} (overlays/production)", f"{name} (overlays/staging)"])
    assert all(hosts.values())
    for host, fingerprints in hosts.items():
        assert not fingerprints & set().union(*(other for named, other in hosts.items() if named != host)), host
    assert not [notice for notice in notices if "same host name" in notice]


def test_an_overlays_hosts_keep_their_names_and_fingerprints_whatever_is_linted_from_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name that depended on the hosts linted with it would change between pre-commit (the overlay whose file
    changed) and CI (the repository): the overlay is named from its repository's root, wherever pgvet runs."""
    repository = overlaid(tmp_path / "repo", "cnpg")
    (repository / ".git").mkdir()
    whole, _ = fingerprints_by_host(str(repository))
    assert fingerprints_by_host(str(repository))[0] == whole
    monkeypatch.chdir(repository / "overlays" / "staging")
    alone, _ = fingerprints_by_host(".")
    assert alone == {"orders (overlays/staging)": whole["orders (overlays/staging)"]}
    monkeypatch.chdir(tmp_path)
    files, _ = fingerprints_by_host("repo/overlays/production/db.yaml", "repo/overlays/staging/db.yaml")
    assert files == {name: whole[name] for name in ("orders (overlays/production)", "orders (overlays/staging)")}


def test_two_documents_of_one_name_in_an_overlay_are_told_apart_by_the_overlay_and_their_file(tmp_path: Path) -> None:
    repository = overlaid(tmp_path / "repo", "cnpg")
    staging = repository / "overlays" / "staging"
    shutil.copy(staging / "db.yaml", staging / "other.yaml")
    assert [host.name for host in load_hosts(staging)] == [
        "orders (overlays/staging, db.yaml)", "orders (overlays/staging, other.yaml)"]


COMPONENT = ("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: orders\nspec:\n  instances: 3\n"
             "  postgresql:\n    parameters:\n      random_page_cost: '1.1'\n")


def with_component(repository: Path) -> Path:
    """overlaid()'s layout with a kustomize Component (components/ha) that overlays/production lists, the overlays'
    patches moved to a subdirectory (patches/db.yaml), and overlays/ha taking the base and the component alone."""
    overlaid(repository, "cnpg")
    (repository / ".git").mkdir()
    component = repository / "components" / "ha"
    component.mkdir(parents=True)
    (component / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                                                  "patches:\n  - path: cluster.yaml\n")
    (component / "cluster.yaml").write_text(COMPONENT)
    for environment in OVERLAYS:
        (repository / "overlays" / environment / "patches").mkdir()
        (repository / "overlays" / environment / "db.yaml").rename(
            repository / "overlays" / environment / "patches" / "db.yaml")
    (repository / "overlays" / "staging" / "kustomization.yaml").write_text(
        "resources:\n  - ../../base\npatches:\n  - path: patches/db.yaml\n")
    production = repository / "overlays" / "production"
    (production / "kustomization.yaml").write_text("resources:\n  - ../../base\ncomponents:\n  - ../../components/ha\n"
                                                   "patches:\n  - path: patches/db.yaml\n")
    (repository / "overlays" / "ha").mkdir()
    (repository / "overlays" / "ha" / "kustomization.yaml").write_text(
        "resources:\n  - ../../base\ncomponents:\n  - ../../components/ha\n")
    return repository


def test_a_hostile_component_list_is_warned_of_within_bounds_and_the_other_hosts_linted(tmp_path: Path) -> None:
    """A NUL or a name longer than the system takes in a component's path ended the whole run (a traceback, exit 2);
    a kustomization of a million entries that name nothing printed a warning for each."""
    repository = with_component(tmp_path / "repo")
    staging = repository / "overlays" / "staging" / "kustomization.yaml"
    staging.write_text(staging.read_text() + "components:\n  - \"../../components/ha\\0x\"\n"
                       f"  - ../../components/{'a' * 300}\n")
    patches = "".join(f"  - path: p{index}.yaml\n" for index in range(MAX_ENTRIES + 30))
    (repository / "components" / "ha" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - path: cluster.yaml\n" + patches)
    hosts, _ = fingerprints_by_host(str(repository))
    assert "orders (overlays/staging)" in hosts and "orders (overlays/production)" in hosts
    [staging_host] = load_hosts(repository / "overlays" / "staging")
    assert any("component '../../components/ha\\x00x': not read, no such path" in warning
               for warning in staging_host.warnings), staging_host.warnings
    [production] = load_hosts(repository / "overlays" / "production")
    said = [warning for warning in production.warnings if "not read" in warning]
    assert len(said) <= MAX_WARNINGS
    assert any("31 entries not read, beyond the first" in warning for warning in said), said
    assert said[-1].endswith("more entries not read (the first 19 are said)"), said


def test_a_component_and_a_patch_in_a_subdirectory_are_the_overlays_not_hosts_of_their_own(tmp_path: Path) -> None:
    """kustomize applies a Component's patches, and a kustomization's patches in its subdirectories, to the
    resources of the kustomization that lists them: each was a host of its own named after the base's object."""
    repository = with_component(tmp_path / "repo")
    hosts, notices = fingerprints_by_host(str(repository))
    assert sorted(hosts) == ["orders", "orders (overlays/ha)", "orders (overlays/production)",
                             "orders (overlays/staging)"]
    for host, fingerprints in hosts.items():
        assert fingerprints and not fingerprints & set().union(*(other for named, other in hosts.items()
                                                                 if named != host)), host
    assert not [notice for notice in notices if "same host name" in notice]
    production, = load_hosts(repository / "overlays" / "production")
    # the overlay's own patch is its host; the component's patch of the same object is left out, said
    assert production.facts["pg.work_mem"].source.path == "patches/db.yaml"
    assert not [fact for fact in production.facts.values() if fact.source.path.startswith("../../components")]
    assert "../../components/ha/cluster.yaml: orders of the kustomize component ../../components/ha, which " \
           "patches/db.yaml declares too: not a host of its own, and not applied" in production.notes
    [warning] = [warning for warning in production.warnings if "kustomize overlay" in warning]
    assert "(bases ../../base; components ../../components/ha; patches patches/db.yaml)" in warning
    # an overlay declaring nothing of its own: the component's patch is its host
    ha, = load_hosts(repository / "overlays" / "ha")
    assert ha.name == "orders (overlays/ha)" and ha.value("host.instances") == 3
    assert ha.facts["pg.random_page_cost"].source.path == "../../components/ha/cluster.yaml"
    # outside any repository, pgvet reads nothing outside the overlay's directory
    (repository / ".git").rmdir()
    with pytest.raises(InputError, match=r"no inputs found \(kustomization.yaml:4: component \.\./\.\./components/ha: "
                                         r"refused, it lies outside the directory \(no repository holds it\)"):
        load_hosts(repository / "overlays" / "ha")


def test_a_suppression_comment_in_a_components_file_holds_for_the_overlays_host(tmp_path: Path) -> None:
    repository = with_component(tmp_path / "repo")
    component = repository / "components" / "ha" / "cluster.yaml"
    component.write_text(COMPONENT.replace("  postgresql:\n", "  postgresql:  # pgvet: ignore[PGV811] reviewed\n"))
    _, found = findings(str(repository / "overlays" / "ha"), "--select", "PGV811")
    assert [(finding["path"], finding["line"], finding["suppressed"]) for finding in found] == [
        (str(component), 7, "reviewed")]


def test_a_components_files_given_are_linted_with_the_overlays_that_list_it(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """pre-commit passes the files changed: a patch in an overlay's subdirectory is linted with its overlay, a
    component's file is left out (nothing in it says which overlays list it), and a component is no host."""
    monkeypatch.chdir(with_component(tmp_path / "repo"))
    hosts, notices = fingerprints_by_host("overlays/production/patches/db.yaml", "components/ha/cluster.yaml",
                                          "overlays/ha/kustomization.yaml")
    assert sorted(hosts) == ["orders (overlays/ha)", "orders (overlays/production)"]
    assert "components/ha/cluster.yaml: not linted alone: a file of the kustomize Component components/ha, read " \
           "with the kustomizations that list it under components: (lint those)" in notices
    alone = runner.invoke(app, ["lint", "components/ha/cluster.yaml"])
    assert alone.exit_code == 0 and "on 0 hosts" in alone.output, alone.output
    given = runner.invoke(app, ["lint", "components/ha", "--format", "concise"])
    assert given.exit_code == 2, given.output
    assert "components/ha/kustomization.yaml: ERROR input: a kustomize Component (kind: Component)" in given.output


def in_namespace(text: str, namespace: str) -> str:
    """A manifest of OVERLAID with a metadata.namespace."""
    named = "  name: orders\n"
    return text.replace(named, f"{named}  namespace: {namespace}\n", 1)


def as_list(*manifests: str) -> str:
    """Manifests as the items of a List, as kubectl get -o yaml writes several objects."""
    items = ["\n".join(f"{'- ' if number == 0 else '  '}{line}" for number, line in enumerate(manifest.splitlines()))
             for manifest in manifests]
    return "apiVersion: v1\nitems:\n" + "\n".join(items) + "\nkind: List\nmetadata:\n  resourceVersion: ''\n"


@pytest.mark.parametrize("kind", sorted(OVERLAID))
@pytest.mark.parametrize("form", ["documents", "list"])
def test_objects_of_one_name_in_one_file_are_told_apart_by_their_namespace(tmp_path: Path, kind: str,
                                                                           form: str) -> None:
    """A manifest of each environment's object (an all.yaml, kubectl get -A -o yaml's List): one name, one file.
    They were one host name, fingerprints shared and --host reaching only the first (a List was not read at all);
    kubectl tells them by namespace/name."""
    name, text = OVERLAID[kind]
    directory = tmp_path / "db"
    directory.mkdir()
    manifests = [in_namespace(text, namespace).format(work_mem=work_mem)
                 for namespace, work_mem in (("staging", "8MB"), ("prod", "64MB"))]
    (directory / "all.yaml").write_text("---\n".join(manifests) if form == "documents" else as_list(*manifests))
    staging, prod = f"{name} (all.yaml, namespace staging)", f"{name} (all.yaml, namespace prod)"
    hosts, _ = fingerprints_by_host(str(directory))
    assert list(hosts) == [staging, prod]
    assert hosts[staging] and not hosts[staging] & hosts[prod]
    for chosen, work_mem in ((staging, 8), (prod, 64)):
        facts = json.loads(runner.invoke(app, ["facts", str(directory), "--host", chosen, "--format", "json"]).output)
        assert facts["host"] == chosen and facts["facts"]["pg.work_mem"]["value"] == work_mem * 1024**2


def test_objects_one_namespace_does_not_tell_apart_are_told_apart_by_their_order(tmp_path: Path) -> None:
    text = OVERLAID["cnpg"][1]
    directory = tmp_path / "db"
    directory.mkdir()
    (directory / "all.yaml").write_text("---\n".join(in_namespace(text, namespace).format(work_mem="8MB")
                                                    for namespace in ("staging", "prod", "staging")))
    (directory / "other.yaml").write_text(text.format(work_mem="8MB"))
    names = ["orders (all.yaml, namespace staging, #1)", "orders (all.yaml, namespace prod)",
             "orders (all.yaml, namespace staging, #2)", "orders (other.yaml)"]  # no clash: its name as before
    assert [host.name for host in load_hosts(directory)] == names
    result = runner.invoke(app, ["fix", str(directory), "--host", names[2]])
    assert result.output.startswith(f"# pgvet fix for {names[2]}: "), result.output
    # without namespaces, by their order alone
    (directory / "all.yaml").write_text("---\n".join([text.format(work_mem="8MB")] * 2))
    (directory / "other.yaml").unlink()
    assert [host.name for host in load_hosts(directory)] == ["orders (all.yaml, #1)", "orders (all.yaml, #2)"]


@pytest.mark.parametrize(("directory", "bases", "repository", "named"), [
    ("/r/k8s/overlays/staging", ("../../base",), "/r", "k8s/overlays/staging"),
    ("/r/k8s/overlays/staging", ("github.com/org/pg//base?ref=v1",), "/r", "k8s/overlays/staging"),
    # outside a repository: from the directory holding it and its bases, else its own name
    ("/r/k8s/overlays/staging", ("../../base",), None, "overlays/staging"),
    ("/r/k8s/overlays/staging", ("../../base",), "/elsewhere", "overlays/staging"),
    ("/r/k8s/overlays/staging", ("../../base", "../../../components/ha"), None, "k8s/overlays/staging"),
    ("/r/k8s/overlays/staging", ("github.com/org/pg//base?ref=v1", "sub/dir"), None, "staging"),
    # the repository's root: nothing to tell apart, and its name is the checkout's (ck-a, ck-b: two clones)
    ("/r", ("github.com/org/pg//base?ref=v1",), "/r", None)])
def test_an_overlay_is_named_from_its_repositorys_root_else_from_the_directory_holding_its_bases(
        directory: str, bases: tuple[str, ...], repository: str | None, named: str | None) -> None:
    assert overlay_path(directory, bases, repository) == named


def test_a_host_yaml_beside_an_overlays_kustomization_names_its_host(tmp_path: Path) -> None:
    repository = overlaid(tmp_path / "repo", "cnpg")
    (repository / "overlays" / "staging" / "host.yaml").write_text("name: orders-staging\npg_version: 16\n")
    hosts, _ = fingerprints_by_host(str(repository))
    assert sorted(hosts) == ["orders", "orders (overlays/production)", "orders-staging"]
    assert not hosts["orders-staging"] & hosts["orders (overlays/production)"]


def test_host_yamls_name_names_a_directorys_one_document_host_and_tells_several_apart(tmp_path: Path) -> None:
    """host.yaml's name is the user's word: it names the one host of the directory (the object's name lost,
    whatever the documents say), and several it cannot all be: each is its object's name, told apart by it."""
    single = members(tmp_path / "single", "pg-a", host_yaml="name: east-db\n")
    assert [host.name for host in load_hosts(single)] == ["east-db"]
    several = members(tmp_path / "several", "pg-a", "pg-b", "pg-b", host_yaml="name: east\n")
    assert [host.name for host in load_hosts(several)] == [
        "pg-a (east)", "pg-b (east, postgres1.yml)", "pg-b (east, postgres2.yml)"]
    chart = tmp_path / "chart"
    chart.mkdir()
    (chart / "values.yaml").write_text("architecture: replication\nprimary:\n  extendedConfiguration: |\n"
                                       "    work_mem = 8MB\n")
    (chart / "host.yaml").write_text("name: orders-prod\n")
    assert [host.name for host in load_hosts(chart)] == ["orders-prod/values", "orders-prod/values-read"]


def test_documents_of_one_name_in_two_directories_out_of_kustomize_are_told_apart_by_host_yaml(
        tmp_path: Path) -> None:
    """Out of kustomize, nothing in a directory says another declares its object: the run says so, and the host.yaml
    its notice advises does tell them apart."""
    for environment in OVERLAYS:
        members(tmp_path / "envs" / environment, "pg-a", host_yaml="")
    hosts, notices = fingerprints_by_host(str(tmp_path / "envs"))
    assert list(hosts) == ["pg-a"]
    assert [notice for notice in notices if "same host name" in notice and "`name:` in host.yaml" in notice]
    for environment in OVERLAYS:
        (tmp_path / "envs" / environment / "host.yaml").write_text(f"name: pg-a-{environment}\n")
    hosts, notices = fingerprints_by_host(str(tmp_path / "envs"))
    assert sorted(hosts) == ["pg-a-production", "pg-a-staging"]
    assert not hosts["pg-a-production"] & hosts["pg-a-staging"]
    assert not [notice for notice in notices if "same host name" in notice]


def _apply_document_fix(document: Path, fix_output: str) -> None:
    """The fix's parameters put in the document as a DBA would: a parameter the document sets gets the new value
    on its line, the others go at the top of the parameters block it has."""
    block = fix_output.split(f"# --- {document.name}: its PostgreSQL parameters", 1)[1].split("\n", 1)[1]
    entries = block.split("\n\n", 1)[0].splitlines()
    lines = document.read_text().splitlines()
    for entry in entries:
        name = entry.split(":", 1)[0]
        at = next((index for index, line in enumerate(lines) if line.strip().startswith(f"{name}:")), None)
        if at is None:
            parameters = next(index for index, line in enumerate(lines) if line.strip() == "parameters:")
            indent = len(lines[parameters + 1]) - len(lines[parameters + 1].lstrip())
            lines.insert(parameters + 1, " " * indent + entry)
        else:
            lines[at] = lines[at].split(name, 1)[0] + entry
    document.write_text("\n".join(lines) + "\n")


def test_the_bundled_cloudnativepg_cluster_once_fixed_as_pgvet_says_starts_and_a_second_fix_changes_nothing(
        tmp_path: Path) -> None:
    directory = tmp_path / "cnpg"
    shutil.copytree(PROJECT / "fixtures" / "documents-repo" / "cnpg", directory)
    _, before = findings(str(directory))
    assert {"PGV407", "PGV501", "PGV540"} <= {finding["rule_id"] for finding in before}
    _apply_document_fix(directory / "cluster.yaml", runner.invoke(app, ["fix", str(directory)]).output)
    _, after = findings(str(directory))
    assert not [finding for finding in after if finding["severity"] == "error"], after
    assert not {"PGV501", "PGV540"} & {finding["rule_id"] for finding in after}
    second = runner.invoke(app, ["fix", str(directory)]).output
    assert "# PostgreSQL (" not in second, second


def test_the_readme_shows_the_bundled_documents_repository_as_pgvet_lints_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT)
    output = runner.invoke(app, ["lint", "fixtures/documents-repo", "--format", "concise"]).output
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    shown = readme.split("$ pgvet lint fixtures/documents-repo --format concise", 1)[1].split("\n…\n```", 1)[0]
    lines = shown.splitlines()[1:]
    assert lines and all(line in output.splitlines() for line in lines), (lines, output)


def test_a_systemd_drop_in_in_its_units_folder_is_read_with_the_directory_that_holds_the_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repository = tmp_path / "repo"
    host = repository / "db1"
    (host / "postgresql@16-main.service.d").mkdir(parents=True)
    (host / "postgresql@16-main.service.d" / "override.conf").write_text("[Service]\nMemoryMax=2G\n")
    (host / "postgresql.conf").write_text("shared_buffers = 4GB\n")
    (host / "host.yaml").write_text("ram: 64GB\npg_version: 16\n")
    loaded, = load_hosts(host)
    assert loaded.value("host.ram") == 2 * 1024**3
    assert loaded.facts["host.memory_limit"].source == Source("postgresql@16-main.service.d/override.conf", 2)
    # a repository searched finds it; pre-commit passing the drop-in alone lints its host
    only_drop_in = repository / "db2"
    shutil.copytree(host / "postgresql@16-main.service.d", only_drop_in / "postgresql@16-main.service.d")
    assert host_directories([repository], stop=tmp_path).hosts == [host, only_drop_in]
    monkeypatch.chdir(repository)
    result = runner.invoke(app, ["lint", "db1/postgresql@16-main.service.d/override.conf", "--format", "concise"])
    assert "db1/postgresql.conf:1: WARNING PGV501" in result.output and "ERROR input" not in result.output, \
        result.output


def test_a_drop_in_folder_that_is_a_link_is_not_followed_by_a_host_nor_by_the_search(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "override.conf").write_text("[Service]\nMemoryMax=2G\n")
    repository = tmp_path / "repo"
    (repository / "db").mkdir(parents=True)
    (repository / "db" / "postgresql.service.d").symlink_to(elsewhere, target_is_directory=True)
    assert discover(repository / "db").documents == []
    assert host_directories([repository], stop=tmp_path).hosts == [repository]  # no host found: said to hold none


def test_hosts_named_after_a_file_name_the_tool_fixes_take_their_directorys_name(tmp_path: Path) -> None:
    repository = tmp_path / "charts"
    for chart in ("orders", "billing"):
        (repository / chart).mkdir(parents=True)
        (repository / chart / "docker-compose.yml").write_text(
            "services:\n  docker-compose:\n    image: postgres:16\n")
        (repository / chart / "values.yaml").write_text(
            "architecture: standalone\nauth:\n  database: app\nprimary:\n  extendedConfiguration: |\n"
            "    work_mem = 8MB\n  persistence:\n    size: 8Gi\n")
    names = sorted(host.name for directory in host_directories([repository], stop=tmp_path).hosts
                   for host in load_hosts(directory))
    assert names == ["billing/docker-compose", "billing/values", "orders/docker-compose", "orders/values"]


def test_a_broken_document_in_a_repository_is_an_error_at_its_line_not_skipped(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    (repository / "app").mkdir(parents=True)
    (repository / "app" / "docker-compose.yml").write_text(
        "services:\n  db:\n    image: postgres:16\n    mem_limit: 1g\n    mem_limit: 2g\n")  # compose refuses it
    (repository / "values").mkdir()
    (repository / "values" / "values.yaml").write_text("primary:\n  extendedConfiguration: |\n    a = 1\n  x: [\n")
    result = runner.invoke(app, ["lint", str(repository), "--format", "json"])
    assert result.exit_code == 2, result.output
    errors = {error["host"]: error for error in json.loads(result.output)["errors"]}
    assert set(errors) == {"app", "values"}
    assert "duplicate key" in errors["app"]["message"] and errors["app"]["line"] == 5
    assert str(errors["values"]["path"]).endswith("values/values.yaml") and errors["values"]["line"] == 5


def test_a_host_wide_finding_of_a_document_host_is_anchored_at_its_own_document(tmp_path: Path) -> None:
    # two members in one directory: code scanning showed the second's host-wide findings (no line of their own,
    # PGV805 here) on the first file by name
    members(tmp_path / "cluster", "pg-a", "pg-b", host_yaml="")
    _, found = findings(str(tmp_path / "cluster"))
    assert {finding["host"] for finding in found if finding["rule_id"] == "PGV805" and finding["path"] is None} == {
        "pg-a", "pg-b"}
    result = runner.invoke(app, ["lint", str(tmp_path / "cluster"), "--format", "sarif"])
    uris = {each["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1]
            for each in json.loads(result.output)["runs"][0]["results"] if each["ruleId"] == "PGV805"}
    assert uris == {"postgres0.yml", "postgres1.yml"}


def test_shared_buffers_in_a_pods_huge_pages_are_not_counted_against_its_memory_limit(tmp_path: Path) -> None:
    # a CNPG pod of 2 GiB of memory and 4 GiB of huge pages holding its 3 GB of shared_buffers: the huge pages are
    # charged to the hugetlb controller, not memory.max. PGV501 called it 150 % of the RAM and the fix halved it, and
    # PGV530 counted it against the 2 GiB (with the pages taken for surplus ones out of it: a negative limit)
    (tmp_path / "cluster.yaml").write_text(
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: hp-db\nspec:\n  instances: 1\n"
        "  imageName: ghcr.io/cloudnative-pg/postgresql:16.4-bookworm\n  postgresql:\n    parameters:\n"
        '      shared_buffers: "3GB"\n      huge_pages: "on"\n      work_mem: "4MB"\n  resources:\n'
        "    requests:\n      memory: 2Gi\n      hugepages-2Mi: 4Gi\n    limits:\n      memory: 2Gi\n"
        "      hugepages-2Mi: 4Gi\n")
    _, found = findings(str(tmp_path))
    rules = {finding["rule_id"]: finding for finding in found}
    assert "PGV501" not in rules and "PGV431" not in rules and "PGV540" not in rules
    budget = rules.get("PGV530")
    assert budget is None or budget["values"]["limit"] == 2 * 1024**3


def test_concise_shows_a_hostwide_finding_where_its_document_declares_the_host(tmp_path: Path) -> None:
    # two services of one compose file: their host-wide findings (PGV833 ssl off) are told apart by the line
    compose = ("services:\n  orders:\n    image: postgres:17\n    command: postgres -c shared_buffers=256MB\n"
               "  billing:\n    image: postgres:17\n    command: postgres -c shared_buffers=512MB\n")
    (tmp_path / "docker-compose.yml").write_text(compose)
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "concise", "--select", "PGV833"])
    places = sorted(line.split(": ", 1)[0] for line in result.output.splitlines())
    assert places == [f"{tmp_path}/docker-compose.yml:2", f"{tmp_path}/docker-compose.yml:5"], result.output


def test_concise_lines_of_a_document_host_are_in_file_order() -> None:
    output = runner.invoke(app, ["lint", str(PROJECT / "fixtures" / "documents-repo" / "cnpg"), "--format",
                                 "concise"]).output
    numbers = [int(line.split(":", 2)[1]) for line in output.splitlines() if "cluster.yaml:" in line.split(" ", 1)[0]]
    assert len(numbers) > 3 and numbers == sorted(numbers), output


def test_a_template_of_postgresql_given_by_name_is_said_a_template(tmp_path: Path) -> None:
    # a chart's templates/postgresql.yaml (a Zalando postgresql with {{ include … }} lines, as nais' documentation
    # gives one) passed by pre-commit was "no configuration document pgvet reads"; its directory says "a template"
    (tmp_path / "templates").mkdir()
    template = tmp_path / "templates" / "postgresql.yaml"
    template.write_text('apiVersion: "acid.zalan.do/v1"\nkind: postgresql\nmetadata:\n'
                        '  name: {{ include "my_feature.name" . }}\n  labels:\n'
                        '      {{- include "my_feature.labels" . | nindent 4 }}\nspec:\n  numberOfInstances: 3\n'
                        '  postgresql:\n    version: "17"\n')
    said = " ".join(runner.invoke(app, ["lint", str(template)]).output.split())
    assert f"{template}: not linted: a template ({{{{ … }}}}: Helm, Jinja), whose values are known only once rendered" \
        in said


def test_values_given_over_the_cnpg_cluster_charts_are_said_not_merged(tmp_path: Path) -> None:
    # a production override beside the chart's values (helm -f values.yaml -f values-production.yaml): was a note
    # that pgvet reads only the Bitnami and timescaledb-single charts' values, while the chart's own were read and
    # judged without the override's shared_buffers and memory limit
    shutil.copy(DOCUMENTS / "cnpg" / "chart-values.yaml", tmp_path / "values.yaml")
    (tmp_path / "values-production.yaml").write_text(
        "cluster:\n  instances: 3\n  resources:\n    limits:\n      memory: 2Gi\n  postgresql:\n    parameters:\n"
        "      shared_buffers: 1500MB\n")
    host, = load_hosts(tmp_path)
    said = ("values-production.yaml: not read: values given over CloudNativePG's cluster chart's values (Helm merges "
            "them over the chart's values file; pgvet does not merge values files): its cluster.instances, "
            "cluster.resources and cluster.postgresql are not judged")
    assert any(warning.startswith(said) for warning in host.warnings), host.warnings
    assert not any("Bitnami PostgreSQL charts'" in note for note in host.notes)
    given = runner.invoke(app, ["lint", str(tmp_path / "values-production.yaml")]).output  # as pre-commit passes it
    assert "values-production.yaml: not linted: values given over CloudNativePG's cluster chart's values" in " ".join(
        given.split())


# The head of percona/percona-postgresql-operator deploy/cr.yaml (adafb34ff17cb2df8b491d725cccdd46c0607d44) and of
# an SGPostgresConfig of magebase/base-infra (infra/pipeline/base-infrastructure/extra-manifests/citus/genfix/
# uat-cluster.yaml.tpl at bac82b65d10e749fecd5b5e06b33c492fe190ce9): operators whose manifests pgvet does not read.
PERCONA = """\
apiVersion: pgv2.percona.com/v2
kind: PerconaPGCluster
metadata:
  name: cluster1
spec:
  postgresVersion: 18
"""
STACKGRES = """\
apiVersion: stackgres.io/v1
kind: SGPostgresConfig
metadata:
  namespace: citus
  name: genfix-uat-postgres-config
spec:
  postgresVersion: "15"
  postgresql.conf:
    shared_buffers: '128MB'
"""

# The head of reactive-tech/kubegres internal/test/resourceConfigs/customConfig/configMap_with_postgres_conf.yaml
# (4d08d616066b9e39b010da688e492317e369cc2c): a ConfigMap holding the postgresql.conf of a server declared elsewhere.
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: config-with-postgres-conf
  namespace: default
  labels:
    environment: acceptancetesting

data:

  postgres.conf: |
    # Replication configs
    listen_addresses = '*'
    max_wal_senders = 10
    max_connections = 100
    shared_buffers = 128MB
"""


@pytest.mark.parametrize(("text", "said"), [
    (PERCONA, "objects of Percona's PostgreSQL operator (PerconaPGCluster), whose manifests pgvet does not read"),
    (STACKGRES, "objects of StackGres (SGPostgresConfig), whose manifests pgvet does not read"),
    (CONFIGMAP, "a ConfigMap's postgresql.conf (postgres.conf), whose manifests pgvet does not read"),
], ids=["percona", "stackgres", "configmap"])
def test_an_operators_manifest_pgvet_does_not_read_is_said_by_name(tmp_path: Path, text: str, said: str) -> None:
    # were "no configuration document pgvet reads" given by name, and nothing at all in a repository's search or
    # beside other documents: a PostgreSQL cluster's configuration left unjudged without a word of what it is
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "cluster.yaml").write_text(text)
    with pytest.raises(InputError) as refused:
        load_hosts(alone)
    assert f"(cluster.yaml: not read: {said}" in refused.value.message
    (alone / "host.yaml").write_text("ram: 8GiB\n")
    host, = load_hosts(alone)
    assert any(warning.startswith(f"cluster.yaml: not read: {said}") for warning in host.warnings)
    repository = tmp_path / "repository"
    shutil.copytree(DOCUMENTS / "cnpg", repository / "cnpg", ignore=shutil.ignore_patterns("SOURCES.md"))
    (repository / "operator").mkdir()
    (repository / "operator" / "cluster.yaml").write_text(text)
    for given in (repository, repository / "operator" / "cluster.yaml"):
        result = runner.invoke(app, ["lint", str(given), "--format", "concise"])
        assert f"{repository / 'operator' / 'cluster.yaml'}: not linted: {said}" in " ".join(result.output.split())
    (alone / "host.yaml").unlink()
    said_once = " ".join(runner.invoke(app, ["lint", str(alone)]).output.split())  # in the error alone
    assert said_once.count(said) == 1 and f"cluster.yaml: not read: {said}" in said_once
    assert recognise("cluster.yaml", text) is None


def test_bitnami_postgresql_ha_values_are_said_not_read_whatever_the_files_name(tmp_path: Path) -> None:
    # were "the values of a Helm chart pgvet does not read (it reads the Bitnami PostgreSQL charts'…)", a note,
    # named values*.yaml, and nothing at all named otherwise
    text = (DOCUMENTS / "bitnami" / "postgresql-ha" / "values.yaml").read_text()
    said = ("not read: the values of Bitnami's postgresql-ha chart (repmgr, Pgpool-II), which pgvet does not read (it "
            "reads Bitnami's postgresql chart's): its PostgreSQL hosts are not judged")
    for name, content in (("values.yaml", text), ("ha-prod.yaml", text),
                          ("umbrella.yaml", "postgresql-ha:\n  " + text.replace("\n", "\n  ").rstrip() + "\n"),
                          ("release.yaml", "spec:\n  chart:\n    spec:\n      chart: postgresql-ha\n")):
        directory = tmp_path / name
        directory.mkdir()
        (directory / name).write_text(content)
        with pytest.raises(InputError) as refused:
            load_hosts(directory)
        assert f"({name}: {said}" in refused.value.message, name
        (directory / "host.yaml").write_text("ram: 8GiB\n")
        host, = load_hosts(directory)
        assert any(warning.startswith(f"{name}: {said}") for warning in host.warnings), name
