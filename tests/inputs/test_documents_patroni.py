"""Patroni's configuration files: real ones (tests/data/documents/patroni) read as Patroni reads them, and planted
mistakes in copies of them found at their line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import PROJECT
from documents_support import line_of, lint_findings, settings
from pgvet.cli import app
from pgvet.errors import ParseError
from pgvet.inputs.documents import DeclaredHost, document_kinds
from pgvet.inputs.documents.patroni import PATRONI_DEFAULT, _patronictl_argument, parse_patroni
from pgvet.snapshot.load import load_hosts

CORPUS = PROJECT / "tests" / "data" / "documents" / "patroni"
FILES = sorted(path for path in CORPUS.iterdir() if path.name != "SOURCES.md")


def parsed(text: str, path: str = "patroni.yml") -> DeclaredHost:
    hosts = parse_patroni(text, path)
    assert len(hosts) == 1
    return hosts[0]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_real_file_is_one_member(path: Path) -> None:
    parsed(path.read_text(), str(path))


def test_patronis_own_member_file_its_settings_at_their_lines() -> None:
    path = CORPUS / "postgres1.yml"
    text = path.read_text()
    host = parsed(text, str(path))
    assert host.name == "postgresql1"
    assert host.source.line == 3
    assert settings(host) == [
        ("wal_log_hints", "on", None), ("wal_keep_size", "128MB", None),  # Patroni's, unlike PostgreSQL's defaults
        ("unix_socket_directories", "..", line_of(text, "unix_socket_directories: '..'")),
        ("listen_addresses", "127.0.0.1", line_of(text, "listen: 127.0.0.1:5433")),
        ("port", "5433", line_of(text, "listen: 127.0.0.1:5433")),
        ("cluster_name", "batman", 1),
    ]
    assert host.settings[0].source.path == PATRONI_DEFAULT
    assert "pg_version" not in host.host  # neither bin_dir nor data_dir says it


def test_dcs_parameters_then_local_and_the_version_from_bin_dir() -> None:
    path = CORPUS / "mrheed-patroni.yml"
    text = path.read_text()
    host = parsed(text, str(path))
    assert host.name == "mrheed-patroni"  # no name, no scope: the file's
    assert host.host["pg_version"].value == 17
    assert host.host["pg_version"].source.line == line_of(text, "bin_dir:")
    assert ("shared_buffers", "4GB", line_of(text, "shared_buffers: 4GB")) in settings(host)
    assert ("wal_keep_size", "4GB", line_of(text, "wal_keep_size: 4GB")) in settings(host)
    assert [name for name, _, _ in settings(host)].count("wal_keep_size") == 1  # the DCS's, not Patroni's default


def test_parameters_a_merge_key_brings_are_at_the_line_that_writes_them() -> None:
    # a block of parameters shared by an anchor and merged into the member's (<<: *tuning)
    text = (CORPUS / "postgres1.yml").read_text().replace(
        "    unix_socket_directories: '..'", "    <<: *tuning\n    unix_socket_directories: '..'") + (
        "x-tuning: &tuning\n  shared_buffers: 1GB\n  work_mem: 8MB\n")
    text = text[text.index("x-tuning"):] + text[:text.index("x-tuning")]  # the anchor before its alias
    host = parsed(text)
    assert ("shared_buffers", "1GB", line_of(text, "shared_buffers: 1GB")) in settings(host)
    assert ("work_mem", "8MB", line_of(text, "work_mem: 8MB")) in settings(host)


def test_a_jinja_template_is_read_where_literal_and_the_rest_noted() -> None:
    path = CORPUS / "autobase-patroni.yml.j2"
    host = parsed(path.read_text(), str(path))
    assert host.name == "autobase-patroni"  # name: {{ ansible_hostname }}
    assert [setting.source.path for setting in host.settings] == [PATRONI_DEFAULT, PATRONI_DEFAULT]
    assert any("template" in note for note in host.notes)
    assert any(":206: unix_socket_directories" in note for note in host.notes)


def test_parameters_a_template_names_are_unknown_not_judged_on_their_defaults() -> None:
    # autobase's {% for parameter in postgresql_parameters %}{{ parameter.option }}: … (its role sets
    # checkpoint_timeout 15min, track_io_timing on…): any parameter may be set, in the DCS's section and, under an
    # {% if %}, in the member's (line 209)
    path = CORPUS / "autobase-patroni.yml.j2"
    text = path.read_text()
    host = parsed(text, str(path))
    loop = line_of(text, '        {{ parameter.option }}: "{{ parameter.value }}"')
    assert host.unknown["pg.checkpoint_timeout"].line == 209
    # the member's loop, applied last, and stats_temp_directory, which an {% if %} writes from a template's value
    assert {source.line for source in host.unknown.values()} == {209, 213}
    assert host.unknown["pg.stats_temp_directory"].line == 213
    assert any(f":{loop}: a parameter's name is left to a template" in note for note in host.notes)
    # a literal key after the loop is read; one before it may be replaced by what the loop writes
    text = ("scope: demo\npostgresql:\n  listen: 0.0.0.0:5432\n  parameters:\n    work_mem: 8MB\n"
            "{% for p in params %}\n    {{ p.option }}: {{ p.value }}\n{% endfor %}\n    shared_buffers: 1GB\n"
            "restapi:\n  listen: 0.0.0.0:8008\n")
    host = parsed(text)
    assert "pg.shared_buffers" not in host.unknown and ("shared_buffers", "1GB", 9) in settings(host)
    assert host.unknown["pg.work_mem"].line == 7 and host.unknown["pg.ssl"].line == 7


@pytest.mark.parametrize("block", [
    "{{ include \"postgresql.parameters\" | indent 4 }}\n",  # gomplate's, at the line's start
    "    work_mem: 8MB\n    {{ patroni_parameters | to_nice_yaml | indent(4) }}\n",  # Ansible's, after a key
])
def test_a_line_a_template_writes_under_parameters_may_set_any_of_them(block: str) -> None:
    text = ("scope: demo\nrestapi:\n  listen: 0.0.0.0:8008\npostgresql:\n  listen: 0.0.0.0:5432\n  parameters:\n"
            + block + "  data_dir: /data\n")
    host = parsed(text)
    line = text.count("\n", 0, text.index("{{")) + 1
    assert host.unknown["pg.ssl"].line == line and host.unknown["pg.work_mem"].line == line
    assert ("port", "5432", 5) in settings(host)  # what follows the block is read as before


def test_a_template_naming_parameters_leaves_no_finding_on_defaults(tmp_path: Path) -> None:
    (tmp_path / "patroni.yml.j2").write_text((CORPUS / "autobase-patroni.yml.j2").read_text())
    assert lint_findings(tmp_path) == set()


def test_the_first_branch_of_a_jinja_if_is_read() -> None:
    text = ("scope: demo\n{% if big %}\npostgresql:\n  listen: 0.0.0.0:5432\n  parameters:\n    work_mem: 64MB\n"
            "{% else %}\npostgresql:\n  listen: 0.0.0.0:5433\n{% endif %}\nrestapi:\n  listen: 0.0.0.0:8008\n")
    host = parsed(text)
    assert ("work_mem", "64MB", 6) in settings(host)
    assert ("port", "5432", 4) in settings(host)


# Pigsty's Patroni templates (Vonng/pigsty roles/pgsql/templates/oltp.yml and crit.yml at
# 3cf01e42a5a7c807166bc2f359cf506314d107ef), their lines under an {% if %} (a long comment shortened):
PIGSTY_PARAMETERS = """\
scope: demo
restapi:
  listen: 0.0.0.0:8008
bootstrap:
  dcs:
    postgresql:
      parameters:
        wal_level: logical                          # force logical level
{% if pgbackrest_enabled|bool %}
        archive_mode: 'on'
        archive_command: 'pgbackrest --stanza={{ pg_cluster }} archive-push %p'
{% endif %}
{% if pg_version|int <= 15 %}
        vacuum_defer_cleanup_age: 500000        # 0->500000 last 500000 xact changes will not be vacuumed
{% endif %}
{% if pg_version|int >= 13 %}
        hash_mem_multiplier: 8.0                # use 8x work mem in hash-based operations
{% endif %}
{% if pg_storage_type == 'SSD' %}
        random_page_cost: 1.1                   # 4 for HDD, 1.1 for SSD
{% endif %}
postgresql:
  listen: 0.0.0.0:5432
"""


def test_a_value_a_template_writes_under_an_if_is_unknown_not_the_default() -> None:
    # archive_command is set, to what the template renders: not PostgreSQL's empty default
    host = parsed(PIGSTY_PARAMETERS)
    assert host.unknown["pg.archive_command"].line == line_of(PIGSTY_PARAMETERS, "archive_command:")
    assert "archive_command" not in [name for name, _, _ in settings(host)]
    assert ("archive_mode", "on", line_of(PIGSTY_PARAMETERS, "archive_mode:")) in settings(host)


def test_a_line_an_if_renders_for_some_versions_only_is_unknown() -> None:
    # {% if pg_version|int <= 15 %}: the template writes vacuum_defer_cleanup_age only where it exists; pgvet, not
    # knowing the version it renders for, judges neither the name nor the value
    host = parsed(PIGSTY_PARAMETERS)
    names = [name for name, _, _ in settings(host)]
    assert "vacuum_defer_cleanup_age" not in names and "hash_mem_multiplier" not in names
    assert host.unknown["pg.hash_mem_multiplier"].line == line_of(PIGSTY_PARAMETERS, "hash_mem_multiplier:")
    assert ("random_page_cost", "1.1", line_of(PIGSTY_PARAMETERS, "random_page_cost:")) in settings(host)


def test_pigstys_template_has_no_removed_parameter_finding(tmp_path: Path) -> None:
    (tmp_path / "crit.yml").write_text(PIGSTY_PARAMETERS)
    assert not {finding for finding in lint_findings(tmp_path) if finding[1] == "PGV402"}


# Planted mistakes in copies of the real files.

def test_a_typo_and_a_refused_value_are_settings_at_their_lines() -> None:
    text = (CORPUS / "mrheed-patroni.yml").read_text()
    text = text.replace("shared_buffers: 4GB", "shared_bufers: 4GB").replace("wal_compression: on",
                                                                             "wal_compression: maybe")
    host = parsed(text)
    assert ("shared_bufers", "4GB", line_of(text, "shared_bufers")) in settings(host)
    assert ("wal_compression", "maybe", line_of(text, "wal_compression")) in settings(host)


def test_wal_level_minimal_in_the_dcs_is_replaced_by_patroni() -> None:
    text = (CORPUS / "mrheed-patroni.yml").read_text().replace(
        "        max_wal_senders: 10\n", "        max_wal_senders: 10\n        wal_level: minimal\n")
    host = parsed(text)
    line = line_of(text, "wal_level: minimal")
    assert ("wal_level", "replica", line) in settings(host)
    [problem] = host.problems
    assert (problem.kind, problem.source.line, problem.fatal) == ("patroni-replaced", line, False)
    assert "wal_level = minimal" in problem.message and "wal_level = replica" in problem.message


@pytest.mark.parametrize(("real", "planted", "runs"), [
    ('hot_standby: "on"', "hot_standby: off", "on"), ("max_connections: 100", "max_connections: 10", "100"),
    ("max_wal_senders: 10", "max_wal_senders: 2", "10"), ("wal_keep_size: 1GB", "wal_keep_size: 8MB", "128MB")])
def test_a_dcs_value_patroni_refuses_is_its_default(real: str, planted: str, runs: str) -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace(real, planted)
    host = parsed(text)
    name = planted.split(":")[0]
    assert [(setting.value, setting.source.line) for setting in host.settings if setting.name == name] == [
        (runs, line_of(text, planted))]
    assert [problem.kind for problem in host.problems] == ["patroni-replaced"]


@pytest.mark.parametrize(("section", "name"), [("local", "effective_cache_size"), ("dcs", "temp_buffers")])
def test_a_parameter_without_a_value_is_no_line_of_patronis(section: str, name: str) -> None:
    # Patroni writes no line for a null value (a parameter left empty): PostgreSQL runs its default, no error; a
    # local one replaces the DCS's value (effective_cache_size: 12GB in the DCS here)
    anchor = "  bin_dir: /usr/lib/postgresql/17/bin\n" if section == "local" else "        shared_buffers: 4GB\n"
    planted = f"  parameters:\n    {name}:\n" if section == "local" else f"        {name}:\n"
    text = (CORPUS / "mrheed-patroni.yml").read_text().replace(anchor, anchor + planted)
    host = parsed(text)
    assert name not in [setting_name for setting_name, _, _ in settings(host)]
    [problem] = host.problems
    line = text.split("\n").index(planted.split("\n")[-2]) + 1
    assert (problem.kind, problem.source.line, problem.fatal) == ("patroni-ignored", line, False)
    assert "no value" in problem.message


def test_a_local_value_of_a_dcs_only_parameter_is_ignored() -> None:
    text = (CORPUS / "mrheed-patroni.yml").read_text().replace(
        "  bin_dir: /usr/lib/postgresql/17/bin\n",
        "  bin_dir: /usr/lib/postgresql/17/bin\n  parameters:\n    max_connections: 50\n    work_mem: 8MB\n")
    host = parsed(text)
    line = line_of(text, "max_connections: 50")
    [problem] = host.problems
    assert (problem.kind, problem.source.line, problem.fatal) == ("patroni-ignored", line, False)
    assert f"the DCS's value (line {line_of(text, 'max_connections: 600')})" in problem.message
    assert [(value, source) for name, value, source in settings(host) if name == "max_connections"] == [
        ("600", line_of(text, "max_connections: 600"))]
    # the local value replaces the DCS's: the one line of postgresql.conf Patroni writes (not a repeated line)
    assert [(value, source) for name, value, source in settings(host) if name == "work_mem"] == [("8MB", line + 1)]


def test_the_parameters_the_dcs_holds_are_those_no_local_value_replaces() -> None:
    text = (CORPUS / "mrheed-patroni.yml").read_text().replace(
        "  bin_dir: /usr/lib/postgresql/17/bin\n",
        "  bin_dir: /usr/lib/postgresql/17/bin\n  parameters:\n    work_mem: 8MB\n    track_io_timing: 'on'\n")
    held = parsed(text).host["dcs_parameters"]
    names = str(held.value).split()
    assert "shared_buffers" in names and "max_connections" in names and "wal_keep_size" in names
    assert "work_mem" not in names and "track_io_timing" not in names  # the member's own value runs
    assert held.source.line == line_of(text, "    parameters:")  # bootstrap.dcs.postgresql.parameters
    assert "dcs_parameters" not in parsed("scope: a\npostgresql:\n  parameters:\n    work_mem: 8MB\n").host


@pytest.mark.parametrize(("value", "argument"), [
    ("1024MB", "shared_buffers=1024MB"),
    ("200", "shared_buffers=200"),  # PyYAML's integer 200, which Patroni writes as 200
    ("on", '"shared_buffers=\'on\'"'),  # unquoted, PyYAML's boolean True
    ("1:30", '"shared_buffers=\'1:30\'"'),  # unquoted, YAML 1.1's sexagesimal 90
    ("0770", '"shared_buffers=\'0770\'"'),  # unquoted, an octal 504
    ("%m [%p] ", '"shared_buffers=\'%m [%p] \'"'),
    ("it's", '"shared_buffers=it\'s"'),  # a plain YAML text, which a shell takes between double quotes
    ("$HOME", "'shared_buffers=$HOME'"),  # a shell would expand it between double quotes
])
def test_a_value_is_given_to_patronictl_as_pyyaml_and_a_shell_read_it_back(value: str, argument: str) -> None:
    assert _patronictl_argument("shared_buffers", value) == argument


def test_a_local_dcs_only_parameter_without_a_dcs_value_runs_patronis_default() -> None:
    text = (CORPUS / "postgres0.yml").read_text().replace("    unix_socket_directories: '..'",
                                                          "    unix_socket_directories: '..'\n    wal_level: logical")
    host = parsed(text)
    [problem] = host.problems
    assert problem.source.line == line_of(text, "wal_level: logical")
    assert "its default replica" in problem.message
    assert all(setting.name != "wal_level" for setting in host.settings)


@pytest.mark.parametrize("section", ["dcs", "local"])
def test_listen_addresses_port_and_cluster_name_are_patronis(section: str) -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text()
    if section == "dcs":
        text = text.replace("        wal_writer_delay: 200ms\n", "        wal_writer_delay: 200ms\n"
                            "        port: 5999\n")
    else:
        text = text.replace("    unix_socket_directories: \".\"", "    unix_socket_directories: \".\"\n    port: 5999")
    host = parsed(text)
    [problem] = host.problems
    assert problem.source.line == line_of(text, "port: 5999")
    assert "Patroni sets it from postgresql.listen" in problem.message
    assert [setting.value for setting in host.settings if setting.name == "port"] == ["5430"]
    assert ("cluster_name", "batman", 1) in settings(host)


def test_wal_keep_segments_is_wal_keep_size_from_postgresql_13() -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace("wal_keep_size: 1GB", "wal_keep_segments: 64")
    host = parsed(text)
    assert ("wal_keep_size", "1024MB", line_of(text, "wal_keep_segments")) in settings(host)
    assert all(setting.name != "wal_keep_segments" for setting in host.settings)


def test_synchronous_standby_names_is_patronis_in_synchronous_mode() -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace(
        "    maximum_lag_on_failover: 1048576\n", "    maximum_lag_on_failover: 1048576\n    synchronous_mode: true\n"
    ).replace("        wal_writer_delay: 200ms\n", "        wal_writer_delay: 200ms\n"
              "        synchronous_standby_names: '*'\n")
    host = parsed(text)
    [problem] = host.problems
    assert problem.source.line == line_of(text, "synchronous_standby_names")
    assert all(setting.name != "synchronous_standby_names" for setting in host.settings)


def test_environment_placeholders_are_skipped_with_a_note() -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace("shared_buffers: 128MB", "shared_buffers: ${PG_SB}")
    host = parsed(text)
    assert all(setting.name != "shared_buffers" for setting in host.settings)
    assert any(f":{line_of(text, 'PG_SB')}: shared_buffers" in note for note in host.notes)


def test_a_shell_variable_in_a_command_is_a_value() -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace(
        "        wal_writer_delay: 200ms\n", "        wal_writer_delay: 200ms\n        archive_command: "
        "pgbackrest --stanza=$STANZA archive-push %p\n")
    host = parsed(text)
    command = "pgbackrest --stanza=$STANZA archive-push %p"
    assert ("archive_command", command, line_of(text, "$STANZA")) in settings(host)
    assert host.notes == []


def test_parameters_that_are_no_mapping_are_refused_at_their_line() -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace('  parameters:\n    unix_socket_directories: "."',
                                                              "  parameters: [unix_socket_directories]")
    with pytest.raises(ParseError) as raised:
        parse_patroni(text, "p.yml")
    assert raised.value.source is not None and raised.value.source.line == line_of(text, "  parameters: [")
    assert "postgresql.parameters is not a mapping" in raised.value.message


def test_invalid_yaml_is_a_parse_error_at_its_line() -> None:
    with pytest.raises(ParseError) as raised:
        parse_patroni("scope: a\npostgresql:\n  listen: [1\nrestapi: {}\n", "p.yml")
    assert raised.value.source is not None and raised.value.source.line == 4  # where YAML sees the bracket unclosed
    assert raised.value.message.startswith("invalid YAML")


@pytest.mark.parametrize("text", [
    "services:\n  db:\n    image: postgres:16\n    command: postgres -c scope=x\n",  # a compose file
    "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nspec:\n  postgresql:\n    parameters: {}\n",  # CNPG
    "postgresql:\n  version: 16\n",  # no Patroni section beside it
    "scope: x\npostgresql: 16\n",  # postgresql is no mapping
])
def test_other_documents_are_not_patroni(text: str) -> None:
    assert not [kind for kind in document_kinds() if kind.name == "patroni" and kind.recognises("x.yml", text)]


def test_a_yaml_1_1_octal_is_passed_as_patroni_passes_it() -> None:
    # Patroni's YAML 1.1 reads 0770 as octal 504, and passes 504 (0770 to PostgreSQL's octal display)
    text = (CORPUS / "lerry-patroni.yml").read_text().replace(
        '    unix_socket_directories: "."', '    unix_socket_directories: "."\n    unix_socket_permissions: 0770')
    assert ("unix_socket_permissions", "504", line_of(text, "0770")) in settings(parsed(text))


@pytest.mark.parametrize(("written", "patroni_passes"), [("0o770", "0o770"), ("0o0770", "0o0770"), ("0x1F", "31")])
def test_an_octal_yaml_1_1_does_not_know_is_passed_as_the_text_it_is(written: str, patroni_passes: str) -> None:
    # 0o is YAML 1.2's octal; to Patroni's YAML 1.1 it is a text (which PostgreSQL refuses), not 504 (nor 0504)
    text = (CORPUS / "lerry-patroni.yml").read_text().replace(
        '    unix_socket_directories: "."', f'    unix_socket_directories: "."\n    unix_socket_permissions: {written}')
    assert ("unix_socket_permissions", patroni_passes, line_of(text, written)) in settings(parsed(text))


@pytest.mark.parametrize("where", ["    unix_socket_directories: \".\"", "        wal_writer_delay: 200ms"])
def test_a_sexagesimal_number_is_read_as_patronis_yaml_1_1_reads_it(where: str) -> None:
    # PyYAML reads 2:05 as 125 (base 60) and Patroni passes 125; in YAML 1.2 it would be the text "2:05", which
    # PostgreSQL refuses. In the DCS, max_connections passes Patroni's check of its integers only as the number.
    indent = where[:len(where) - len(where.lstrip())]
    dcs = indent == "        "
    text = (CORPUS / "lerry-patroni.yml").read_text()
    assert where in text
    more = f"\n{indent}max_connections: 3:20" if dcs else ""
    text = text.replace(where, f"{where}\n{indent}checkpoint_timeout: 2:05{more}", 1)
    host = parsed(text)
    assert ("checkpoint_timeout", "125", line_of(text, "checkpoint_timeout: 2:05")) in settings(host)
    if dcs:
        assert ("max_connections", "200", line_of(text, "max_connections: 3:20")) in settings(host)
        assert not [problem for problem in host.problems if "max_connections" in problem.message]


@pytest.mark.parametrize(("anchor", "indent", "target"), [
    ("  data_dir: /var/lib/postgresql/data\n", "  ", "postgresql.parameters"),
    ("      use_pg_rewind: true\n", "      ", "bootstrap.dcs.postgresql.parameters"),
    ("    ttl: 30\n", "    ", "bootstrap.dcs.postgresql.parameters")])
def test_a_parameter_beside_parameters_is_ignored_by_patroni(anchor: str, indent: str, target: str) -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace(anchor, f"{anchor}{indent}work_mem: 64MB\n")
    host = parsed(text)
    [problem] = host.problems
    assert (problem.kind, problem.source.line) == ("patroni-ignored", line_of(text, "work_mem: 64MB"))
    assert problem.message.endswith(f"it belongs in {target}")
    assert all(setting.name != "work_mem" for setting in host.settings)


def test_pg_hba_lines_are_unused_with_an_hba_file() -> None:
    text = (CORPUS / "lerry-patroni.yml").read_text().replace(
        '    unix_socket_directories: "."', '    unix_socket_directories: "."\n    hba_file: /etc/pg_hba.conf')
    [problem] = parsed(text).problems
    assert problem.source.line == line_of(text, "      pg_hba:") and "hba_file" in problem.message


# End to end: `pgvet lint` on a directory of members.

def lint(directory: Path) -> list[tuple[str, str, int]]:
    result = CliRunner().invoke(app, ["lint", str(directory), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return [(finding["rule_id"], Path(finding["path"]).name, finding["line"])
            for finding in json.loads(result.output)["findings"] if finding["path"]]


def test_patronis_three_members_are_three_hosts_without_errors(tmp_path: Path) -> None:
    for index in range(3):
        (tmp_path / f"postgres{index}.yml").write_bytes((CORPUS / f"postgres{index}.yml").read_bytes())
    hosts = load_hosts(tmp_path)
    assert [host.name for host in hosts] == ["postgresql0", "postgresql1", "postgresql2"]
    assert [host.value("pg.port") for host in hosts] == [5432, 5433, 5434]
    assert {host.value("pg.cluster_name") for host in hosts} == {"batman"}
    assert {host.value("pg.wal_log_hints") for host in hosts} == {True}  # Patroni's default
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json"])
    assert [finding for finding in json.loads(result.output)["findings"] if finding["severity"] == "error"] == []


def test_planted_mistakes_are_found_at_their_lines(tmp_path: Path) -> None:
    text = (CORPUS / "mrheed-patroni.yml").read_text().replace("shared_buffers: 4GB", "shared_bufers: 4GB").replace(
        "wal_compression: on", "wal_compression: maybe").replace(
        "        max_wal_senders: 10\n", "        max_wal_senders: 10\n        wal_level: minimal\n").replace(
        "  bin_dir: /usr/lib/postgresql/17/bin\n",
        "  bin_dir: /usr/lib/postgresql/17/bin\n  parameters:\n    max_connections: 50\n    work_mem: 20GB\n")
    (tmp_path / "patroni.yml").write_text(text)
    (tmp_path / "host.yaml").write_text("ram: 16GB\ncpus: 8\n")
    found = set(lint(tmp_path))
    assert {("PGV401", "patroni.yml", line_of(text, "shared_bufers")),  # a typo
            ("PGV403", "patroni.yml", line_of(text, "wal_compression: maybe")),  # a value PostgreSQL refuses
            ("PGV441", "patroni.yml", line_of(text, "wal_level: minimal")),  # Patroni runs replica
            ("PGV440", "patroni.yml", line_of(text, "max_connections: 50")),  # local: Patroni ignores it
            ("PGV530", "patroni.yml", line_of(text, "work_mem: 20GB"))} <= found  # beyond the host's memory
    assert not [rule for rule, _, line in found if rule == "PGV410"]  # minimal never runs


def test_a_repeated_key_takes_its_last_value_as_patronis_loader_reads_it() -> None:
    # musenwill/pgha's node1/patroni.yml has `listen:` twice under postgresql: PyYAML keeps the last
    text = ("scope: s\nname: m\nrestapi:\n  listen: :8008\npostgresql:\n  listen: 10.0.0.1:5432\n"
            "  parameters:\n    work_mem: 4MB\n    work_mem: 8MB\n  listen: 0.0.0.0:5433\n")
    host = parsed(text)
    assert ("work_mem", "8MB", 9) in settings(host)
    assert ("port", "5433", 10) in settings(host) and ("port", "5432", 6) not in settings(host)


def test_a_local_value_over_the_dcss_is_no_repeated_line(tmp_path: Path) -> None:
    # the DCS's value still sets the other members: "keep one line" (PGV405) would change them
    (tmp_path / "patroni.yml").write_text(
        "scope: batman\nname: pg-b\nrestapi:\n  listen: 127.0.0.1:8008\nbootstrap:\n  dcs:\n    postgresql:\n"
        "      parameters:\n        shared_buffers: 3GB\npostgresql:\n  listen: 127.0.0.1:5432\n"
        "  bin_dir: /usr/lib/postgresql/16/bin\n  parameters:\n    shared_buffers: 2GB\n")
    found = lint_findings(tmp_path)
    assert not [finding for finding in found if finding[1] == "PGV405"], found
