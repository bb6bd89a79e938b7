"""The pure pg_settings.json parser and the live facts, on hand-written documents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES
from pgvet.errors import ParseError
from pgvet.inputs.pg_settings import LiveSetting, canonical_value, live_facts, parse_pg_settings_json
from pgvet.live.server import ServerReading
from pgvet.live.writer import render_pg_settings_json
from pgvet.provenance import Located, Source
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

PATH = "hosts/db1/pg_settings.json"


def _row(name: str, setting: str | None, unit: str | None = None, vartype: str = "integer",
         **extra: Any) -> dict[str, Any]:
    return {"name": name, "setting": setting, "unit": unit, "vartype": vartype, "context": "user",
            "source": "default", "sourcefile": None, "sourceline": None, "boot_val": setting,
            "reset_val": setting, "pending_restart": False, **extra}


SETTINGS = [
    _row("DateStyle", "ISO, MDY", vartype="string"),
    _row("shared_buffers", "16384", "8kB", source="configuration file",
         sourcefile="/etc/postgresql/16/main/postgresql.conf", sourceline=127),
    _row("work_mem", "4096", "kB", pending_restart=False),
    _row("max_connections", "200", pending_restart=True),
    _row("checkpoint_timeout", "300", "s"),
    _row("vacuum_cost_delay", "2", "ms", vartype="real"),
    _row("log_min_duration_statement", "-1", "ms"),
    _row("autovacuum_naptime", "1", "min"),
    _row("fsync", "on", vartype="bool"),
    _row("wal_level", "replica", vartype="enum"),
    _row("huge_pages_status", "off", vartype="enum"),
    _row("log_file_mode", "0600"),
    _row("primary_conninfo", None, vartype="string"),
]


def _reading(**changes: Any) -> ServerReading:
    fields: dict[str, Any] = {
        "dsn": "host=db1 user=postgres",
        "connection": {"host": "db1", "port": 5432, "dbname": "postgres", "user": "postgres", "unix_socket": False},
        "server": {"version": "PostgreSQL 16.2", "server_version_num": 160002},
        "settings": SETTINGS,
        "file_settings": [{"sourcefile": "/etc/postgresql/16/main/postgresql.conf", "sourceline": 64, "seqno": 1,
                           "name": "max_connections", "setting": "300", "applied": False,
                           "error": "setting could not be applied"},
                          {"sourcefile": "/etc/postgresql/16/main/postgresql.conf", "sourceline": 127, "seqno": 2,
                           "name": "shared_buffers", "setting": "128MB", "applied": True, "error": None}],
        "databases": [{"name": "app", "size_bytes": 123, "temp_files": 2, "temp_bytes": 4096, "blks_hit": 90,
                       "blks_read": 10}],
        "statistics": {"connections": 17, "temp_files": 2, "temp_bytes": 4096, "blks_hit": 900, "blks_read": 100,
                       "checkpoints_timed": 40, "checkpoints_requested": 3, "checkpoints_view": "pg_stat_bgwriter",
                       "checkpoints_stats_reset": None},
        "unavailable": [{"what": "pg_stat_activity", "error": "canceling statement due to statement timeout"}],
    }
    fields.update(changes)
    return ServerReading(**fields)


def _document(**changes: Any) -> str:
    return render_pg_settings_json(_reading(**changes), collected_at="2026-01-22T10:15:00Z", pgvet_version="0.1.0")


def _line_of(text: str, fragment: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_the_written_document_is_json_with_one_setting_per_line() -> None:
    text = _document()
    assert json.loads(text)["settings"] == SETTINGS
    for row in SETTINGS:
        assert sum(f'"name": "{row["name"]}"' in line for line in text.splitlines()) == (
            2 if row["name"] in ("max_connections", "shared_buffers") else 1)  # also in file_settings


def test_parse_keeps_rows_and_their_lines() -> None:
    text = _document()
    server = parse_pg_settings_json(text, PATH)
    assert server.major == 16
    assert server.server_version_num == Located(160002, Source(PATH, _line_of(text, '"server_version_num"')))
    assert server.dsn == "host=db1 user=postgres"
    assert server.collected_at == "2026-01-22T10:15:00Z"
    assert list(server.settings)[:2] == ["datestyle", "shared_buffers"]
    work_mem = server.settings["work_mem"]
    assert work_mem == LiveSetting("work_mem", "4096", "kB", "integer", "user", "default", None, None, "4096", "4096",
                                   False, Source(PATH, _line_of(text, '"name": "work_mem"')))
    assert work_mem.origin == work_mem.row
    assert server.settings["shared_buffers"].origin == Source("/etc/postgresql/16/main/postgresql.conf", 127)
    assert server.file_settings is not None and [row.name for row in server.file_settings] == [
        "max_connections", "shared_buffers"]
    assert [(gap.what, gap.row.line) for gap in server.unavailable] == [
        ("pg_stat_activity", _line_of(text, '"what": "pg_stat_activity"'))]
    assert server.databases[0].size_bytes == 123
    assert server.statistics["connections"] == Located(17, Source(PATH, _line_of(text, '"connections"')))


def test_the_postmasters_command_line_settings_are_kept_with_their_lines() -> None:
    text = _document(command_line={"work_mem": "512MB", "max_connections": "300"})
    server = parse_pg_settings_json(text, PATH)
    assert server.command_line == {
        "work_mem": Located("512MB", Source(PATH, _line_of(text, '"work_mem": "512MB"'))),
        "max_connections": Located("300", Source(PATH, _line_of(text, '"max_connections": "300"')))}
    assert parse_pg_settings_json(_document(), PATH).command_line is None  # not read


def test_lines_follow_the_document_even_when_reformatted() -> None:
    reformatted = json.dumps(json.loads(_document()), indent=4)
    server = parse_pg_settings_json(reformatted, PATH)
    # A row's line is where its object opens: the line before its first member here.
    assert server.settings["fsync"].row.line == _line_of(reformatted, '"name": "fsync"') - 1
    compact = json.dumps(json.loads(_document()))
    assert parse_pg_settings_json(compact, PATH).settings["fsync"].row == Source(PATH, 1)


def test_live_facts_in_canonical_units() -> None:
    text = _document()
    facts = live_facts(parse_pg_settings_json(text, PATH))
    values = {name: located.value for name, located in facts.items()}
    assert values == {
        "pg.datestyle": "ISO, MDY",
        "pg.shared_buffers": 16384 * 8192,
        "pg.work_mem": 4096 * 1024,
        "pg.max_connections": 200,
        "pg.checkpoint_timeout": 300,
        "pg.vacuum_cost_delay": 0.002,
        "pg.log_min_duration_statement": -1,
        "pg.autovacuum_naptime": 60,
        "pg.fsync": True,
        "pg.wal_level": "replica",
        "pg.huge_pages_status": "off",
        "pg.log_file_mode": 0o600,
        "pg.version": 16,
        "pg.server_version_num": 160002,
        "pg.prerelease": "",  # from version(), "PostgreSQL 16.2"
        "live.connections": 17,
        "live.max_connections": 200,
        "live.temp_files": 2,
        "live.temp_bytes": 4096,
        "live.cache_hit_ratio": 0.9,
        "live.database_size_total": 123,
        "live.checkpoints_timed": 40,
        "live.checkpoints_requested": 3,
        "live.pending_restart": "max_connections",
        "live.pending_restart_count": 1,
        "live.file_settings_errors": 1,
    }
    assert facts["pg.shared_buffers"].source == Source("/etc/postgresql/16/main/postgresql.conf", 127)
    assert facts["pg.work_mem"].source == Source(PATH, _line_of(text, '"name": "work_mem"'))
    assert facts["live.pending_restart"].source == Source(PATH, _line_of(text, '"name": "max_connections"'))
    assert facts["live.file_settings_errors"].source.line == _line_of(text, '"error": "setting could not be applied"')
    assert facts["live.temp_bytes"].source == Source(PATH, _line_of(text, '"temp_bytes": 4096,'))


def test_missing_statistics_and_unreadable_file_settings_give_no_facts() -> None:
    statistics = {"connections": None, "temp_files": None, "temp_bytes": None, "blks_hit": 0, "blks_read": 0,
                  "checkpoints_timed": None, "checkpoints_requested": None}
    databases = [{"name": "app", "size_bytes": None, "temp_files": None, "temp_bytes": None, "blks_hit": None,
                  "blks_read": None}]
    facts = live_facts(parse_pg_settings_json(_document(statistics=statistics, file_settings=None,
                                                        databases=databases), PATH))
    # A database the role could not size leaves the total unknown rather than understated.
    assert not {name for name in facts if name.startswith("live.")} - {
        "live.max_connections", "live.pending_restart", "live.pending_restart_count"}


@pytest.mark.parametrize(("vartype", "unit", "text", "expected"), [
    ("integer", "ms", "1500", 1.5),
    ("integer", "ms", "60000", 60),
    ("integer", "us", "250", 0.00025),
    ("integer", "B", "512", 512),
    ("integer", "MB", "2", 2 * 1024 * 1024),
    ("integer", "8kB", "-1", -1),
    ("real", None, "0.9", 0.9),
    ("integer", None, "0", 0),
    ("bool", None, "off", False),
    ("enum", None, "Try", "try"),
    ("string", None, "Etc/UTC", "Etc/UTC"),
])
def test_canonical_value(vartype: str, unit: str | None, text: str, expected: object) -> None:
    setting = LiveSetting("p", text, unit, vartype, "user", "default", None, None, None, None, False, Source(PATH, 1))
    value = canonical_value(setting)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(("text", "message", "line"), [
    ("", "invalid JSON: Expecting value", 1),
    ('{\n  "format": 1,\n  "server": {"server_version_num": 160002},\n  "settings": [\n    {"name": "x",}\n]}',
     "invalid JSON", 5),
    ('{"format": 2}', "pg_settings.json format 2 is not supported", 1),
    ('{"format": 1}', "lacks the 'server' object", 1),
    ('{"format": 1, "server": {"version": "x"}}', "server lacks 'server_version_num'", 1),
    ('{"format": 1, "server": {"server_version_num": 160002},\n"settings": {}}', "settings should be a JSON array", 2),
    ('{"format": 1, "server": {"server_version_num": 160002}, "settings": [],\n"databases": [],\n'
     '"unavailable": [], "statistics": {}, "file_settings": [\n{"applied": "yes"}]}',
     "a file_settings row: 'applied' should be bool", 4),
    ('{"format": 1, "server": {"server_version_num": 160002}, "settings": [\n\n{"name": "x", "setting": 1}]}',
     "a settings row: 'setting' should be str", 3),
    ('{"format": 1, "server": {"server_version_num": 160002}, "settings": [], "databases": [], "unavailable": [],\n'
     '"statistics": {\n"connections": true}}', "statistics: 'connections' should be a number", 3),
    ('{"format": 1} {}', "extra data after the document", 1),
    ('{"format": 1, "server": {"server_version_num": 160002}, "settings": [], "databases": [], "unavailable": [],\n'
     '"command_line": {\n"work_mem": 512}}', "command_line: 'work_mem' should be a text", 3),
])
def test_bad_documents_are_parse_errors_at_their_line(text: str, message: str, line: int) -> None:
    with pytest.raises(ParseError) as raised:
        parse_pg_settings_json(text, PATH)
    assert message in raised.value.message
    assert raised.value.source == Source(PATH, line)


@pytest.mark.parametrize(("server_version", "version_function", "expected"), [
    ("16.2 (Debian 16.2-1.pgdg120+2)", "PostgreSQL 16.2 (Debian 16.2-1.pgdg120+2) on x86_64-pc-linux-gnu", ""),
    ("18beta1", "PostgreSQL 18beta1 on x86_64-pc-linux-gnu", "beta1"),
    ("17rc1 (Debian 17~rc1-1.pgdg120+1)", "PostgreSQL 17rc1 on x86_64-pc-linux-gnu", "rc1"),
    ("19devel", "PostgreSQL 19devel on x86_64-pc-linux-gnu", "devel"),
    (None, "PostgreSQL 18beta2 on aarch64-unknown-linux-gnu", "beta2"),  # the row unseen: version() tells
    (None, "", None),  # neither: unknown, not a release
])
def test_prerelease_from_server_version(server_version: str | None, version_function: str,
                                        expected: str | None) -> None:
    # server_version_num cannot tell 18beta1 from 18.0 (both 180000)
    settings = SETTINGS + ([_row("server_version", server_version, vartype="string")] if server_version else [])
    server = {"version": version_function, "server_version_num": 180000}
    facts = live_facts(parse_pg_settings_json(_document(settings=settings, server=server), PATH))
    prerelease = facts.get("pg.prerelease")
    assert (prerelease.value if prerelease else None) == expected


def test_a_beta_server_gets_pgv842_with_its_name(tmp_path: Path) -> None:
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    host = tmp_path / "db1"
    shutil.copytree(FIXTURES / "rules" / "PGV903-files-differ-from-running", host)
    settings = host / "pg_settings.json"
    settings.write_text(settings.read_text().replace('"15.18 (Debian 15.18-0+deb12u1)"', '"15beta2"'))
    finding = next(finding for finding in lint([host], LintOptions()).hosts[0].findings if finding.rule_id == "PGV842")
    assert finding.message.startswith("The server runs PostgreSQL 15beta2, a pre-release (alpha or beta): ")
    assert finding.values == {"version": 15, "prerelease": "beta2"}
    assert (finding.path, finding.line) == ("pg_settings.json", 304)  # the server_version row
    released = lint([FIXTURES / "rules" / "PGV903-files-differ-from-running"], LintOptions()).hosts[0]
    assert "PGV842" not in {finding.rule_id for finding in released.findings}



def test_a_value_pgvets_connection_set_is_not_the_servers(tmp_path: Path) -> None:
    # pg_settings shows pgvet's own statement_timeout (source client): with neither pg_file_settings nor the files
    # read, the server's value is unknown, and the rules reading it say why — never pgvet's 10 s as the server's
    settings = [*SETTINGS, _row("statement_timeout", "10000", "ms", source="client")]
    (tmp_path / "pg_settings.json").write_text(_document(settings=settings, file_settings=None))
    (tmp_path / "PG_VERSION").write_text("16\n")
    facts = load_host(tmp_path)
    assert "pg.statement_timeout" not in facts.facts
    assert facts.unread["pg.statement_timeout"].startswith(
        "pg_settings shows statement_timeout as pgvet's connection set it for its own session")
    [host] = lint([tmp_path], LintOptions()).hosts
    assert host.host_facts.unread["pg.statement_timeout"].startswith(
        "pg_settings shows statement_timeout as pgvet's connection set it for its own session")
    assert "PGV816" in {skipped.rule_id for skipped in host.not_evaluated}
