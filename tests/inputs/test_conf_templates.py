"""A repository's postgresql.conf that a renderer writes (inputs/conf_templates.py): template lines set aside."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app
from pgvet.inputs.conf_templates import TemplateLine, without_template_lines
from pgvet.snapshot.load import load_host

TEMPLATE = """\
shared_buffers = __SHARED_BUFFERS__
work_mem = '@WORK_MEM@'
max_connections = ${MAX_CONNECTIONS}
effective_cache_size = {{ effective_cache_size }}
maintenance_work_mem = %MAINTENANCE_WORK_MEM%
dynamic_library_path = '$libdir'
archive_command = 'cp %p ${ARCHIVE}/%f'   # the shell's, when PostgreSQL runs it
# wal_level = {{ in_a_comment }}
log_line_prefix = '%m [%p] '   # {{ in_a_comment }}
{% if large %}
random_page_cost = 1.1
{% else %}
random_page_cost = 4
{% endif %}
checkpoint_timeout = <%= @checkpoint_timeout %>
{{- if .Values.replication }}
wal_level = {{ .Values.walLevel }}
{{- end }}
seq_page_cost = 1 {# a comment the renderer drops #}
"""


def test_template_lines_are_set_aside_with_the_parameter_each_sets() -> None:
    text, lines = without_template_lines(TEMPLATE)
    assert [(line.line, line.name) for line in lines] == [
        (1, "shared_buffers"), (2, "work_mem"), (3, "max_connections"), (4, "effective_cache_size"),
        (5, "maintenance_work_mem"), (15, "checkpoint_timeout"), (17, "wal_level")]
    kept = text.split("\n")
    assert len(kept) == len(TEMPLATE.split("\n"))  # line numbers hold
    # PostgreSQL's own values, a shell's variable in a quoted command and comments are no template's
    assert kept[5:9] == TEMPLATE.split("\n")[5:9]
    assert kept[10] == "random_page_cost = 1.1" and kept[12] == ""  # an if's first branch is read
    assert kept[18] == "seq_page_cost = 1 "


def test_a_line_a_template_names_may_set_any_parameter() -> None:
    for line in ("{{ key }} = '{{ value }}'", "{{ .Values.extraConfig }}", "<%= name %> = <%= value %>",
                 "{% include 'tuning.conf' %}", "{{ prefix }}_buffers = 1", "shared_{{ suffix }} = 1",
                 "include '{{ tuning_file }}'", "include_dir = '${CONF_DIR}'"):
        assert without_template_lines(line)[1] == [TemplateLine(1, None, line)], line


def test_a_file_without_a_template_is_unchanged() -> None:
    text = (FIXTURES / "small-vm" / "postgresql.conf").read_text()
    assert without_template_lines(text) == (text, [])


def _repository(tmp_path: Path, conf: str) -> Path:
    host = tmp_path / "repo"
    host.mkdir()
    (host / "postgresql.conf").write_text(conf)
    (host / "host.yaml").write_text("pg_version: 16\nram: 16GB\ncpus: 4\n")
    return host


def test_a_repository_s_template_sets_unknown_parameters_not_syntax_errors(tmp_path: Path) -> None:
    host = load_host(_repository(tmp_path, TEMPLATE))
    problems = [item["problem.kind"] for item in host.items.get("problem", ())]
    assert problems == []
    settings = {item["setting.name"] for item in host.items["setting"]}
    assert "shared_buffers" not in settings and "random_page_cost" in settings
    for name in ("shared_buffers", "work_mem", "max_connections", "effective_cache_size", "maintenance_work_mem",
                 "checkpoint_timeout", "wal_level"):
        assert f"pg.{name}" not in host.facts, name
        assert "cannot know" in host.unread[f"pg.{name}"], name
    assert host.facts["pg.random_page_cost"].value == 1.1
    assert any("postgresql.conf:1: shared_buffers = __SHARED_BUFFERS__, and 6 more lines" in note
               for note in host.notes), host.notes


def test_a_literal_line_after_a_template_s_sets_the_parameter(tmp_path: Path) -> None:
    host = load_host(_repository(tmp_path, "{{ extra_parameters }}\nshared_buffers = 4GB\n"
                                           "work_mem = {{ work_mem }}\nwork_mem = 8MB\n"))
    assert host.facts["pg.shared_buffers"].value == 4 * 1024**3
    assert host.facts["pg.work_mem"].value == 8 * 1024**2
    assert "pg.max_connections" not in host.facts  # the expression line may set it


def test_a_template_lint_judges_what_it_knows_and_says_what_it_does_not(tmp_path: Path) -> None:
    host = _repository(tmp_path, TEMPLATE)
    result = CliRunner().invoke(app, ["lint", str(host), "--format", "json"])
    report = json.loads(result.stdout)
    rules = {finding["rule_id"] for finding in report["findings"]}
    assert not rules & {"PGV403", "PGV407"}, rules  # no invalid value, no syntax error
    result = CliRunner().invoke(app, ["lint", str(host), "-v"])
    assert "is a template's source" in result.output


def test_a_captured_host_s_file_is_judged_as_postgresql_reads_it(tmp_path: Path) -> None:
    # a machine capture beside it: the file is the one the server reads, and PostgreSQL refuses the line
    host = _repository(tmp_path, "shared_buffers = __SHARED_BUFFERS__\nmax_connections = ${MAX_CONNECTIONS}\n")
    (host / "sysctl.txt").write_text((FIXTURES / "small-vm" / "sysctl.txt").read_text())
    facts = load_host(host)
    assert {item["problem.kind"] for item in facts.items["problem"]} == {"syntax"}
    assert any(item["setting.value"] == "__SHARED_BUFFERS__" for item in facts.items["setting"])
    assert not any("template" in note for note in facts.notes)
