"""systemd units and drop-ins of PostgreSQL's service (pgvet.inputs.documents.systemd) on the PGDG and Debian
units, and on copies of them with cgroup limits added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgvet.cli import app
from pgvet.inputs.documents import document_kinds, recognise
from pgvet.inputs.documents.systemd import parse_systemd

CORPUS = Path(__file__).parent.parent / "data" / "documents" / "systemd"
PGDG = CORPUS / "pgdg" / "postgresql-12.service"
DEBIAN = CORPUS / "debian" / "postgresql@.service"


@pytest.mark.parametrize("path", [PGDG, DEBIAN], ids=lambda path: path.name)
def test_the_packaged_units_declare_no_limit(path: Path) -> None:
    # OOMScoreAdjust and PG_OOM_ADJUST_*: nothing pgvet judges, and a directory holding only the unit is no host
    # (no kind claims it: test_documents_kinds.py)
    [host] = parse_systemd(path.read_text(), str(path))
    assert not host.host and not host.notes and not host.problems


def test_the_unit_is_postgresqls_by_the_program_it_runs_not_by_its_name() -> None:
    exporter = (CORPUS / "exporter" / "postgres_exporter.service").read_text().replace(
        "Restart=always\n", "Restart=always\nMemoryMax=256M\n")  # its limit is no limit of PostgreSQL's
    assert recognise("postgres_exporter.service", exporter) is None
    patroni = (CORPUS / "patroni" / "patroni.service").read_text().replace("Restart=no\n", "Restart=no\nMemoryMax=8G\n")
    assert recognise("patroni.service", patroni) is not None  # postgres runs in Patroni's cgroup
    [host] = parse_systemd(patroni, "patroni.service")
    assert host.host["memory_limit"].value == 8 * 1024**3


def test_a_copy_with_a_limit_is_systemd_only(tmp_path: Path) -> None:
    text = PGDG.read_text().replace("TimeoutStopSec=1h\n", "TimeoutStopSec=1h\nMemoryHigh=3G\n")
    assert [other.name for other in document_kinds() if other.recognises(PGDG.name, text)] == ["systemd"]


def test_a_directory_holding_only_a_packaged_unit_is_not_searched_as_a_host(tmp_path: Path) -> None:
    (tmp_path / "units").mkdir()
    (tmp_path / "units" / PGDG.name).write_text(PGDG.read_text())
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "postgresql.conf").write_text("shared_buffers = 1GB\n")
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    assert [host["name"] for host in json.loads(result.output)["hosts"]] == ["db"]


def test_a_memory_limit_added_to_a_copy_is_the_ram_and_the_memory_limit_at_its_line(tmp_path: Path) -> None:
    text = PGDG.read_text().replace("TimeoutStopSec=1h\n", "TimeoutStopSec=1h\nMemoryMax=2G\nCPUQuota=250%\n")
    path = tmp_path / "postgresql-12.service"
    path.write_text(text)
    [host] = parse_systemd(text, str(path))
    line = text.split("\n").index("MemoryMax=2G") + 1
    assert host.name == "postgresql-12" and not host.hosting
    assert (host.host["ram"].value, host.host["ram"].source.line) == (2 * 1024**3, line)
    assert host.host["memory_limit"] == host.host["ram"]
    assert (host.host["cpu_limit"].value, host.host["cpu_limit"].source.line) == (2.5, line + 1)


def test_a_drop_in_the_last_assignment_winning_an_empty_one_resetting_and_memory_max_over_memory_limit() -> None:
    text = """[Unit]
Description=limits
[Service]
MemoryLimit=8G
MemoryMax=1.5G
MemoryMax=512M
CPUQuota=200%
CPUQuota=
MemoryHigh=400M
LimitMEMLOCK=infinity
"""
    path = "etc/systemd/system/postgresql@16-main.service.d/override.conf"
    assert recognise(path, text) is not None
    [host] = parse_systemd(text, path)
    assert host.name == "postgresql@16-main"
    assert (host.host["ram"].value, host.host["ram"].source.line) == (512 * 1024**2, 6)
    assert "cpu_limit" not in host.host
    assert host.notes == [f"{path}:9: MemoryHigh=400M throttles the service above it and kills nothing: not read as "
                          "a memory limit"]


@pytest.mark.parametrize(("line", "problem", "note"), [
    ("MemoryMax=4GB", "MemoryMax=4GB: not a size, systemd ignores it", None),
    ("CPUQuota=2", "CPUQuota=2: not a percentage, systemd ignores it", None),
    ("MemoryMax=50%", None, "postgresql.service.d/x.conf:2: MemoryMax=50% is a share of the machine's memory, which "
                            "the unit does not say: not read"),
    ("MemoryMax=infinity", None, None),
])
def test_values_systemd_ignores_are_problems_and_shares_of_ram_notes(line: str, problem: str | None,
                                                                     note: str | None) -> None:
    text = f"[Service]\n{line}\n"
    assert recognise("postgresql-limits.conf", text) is not None
    hosts = parse_systemd(text, "postgresql.service.d/x.conf")
    assert [item.message for host in hosts for item in host.problems] == ([problem] if problem else [])
    assert all(not item.fatal and item.source.line == 2 for host in hosts for item in host.problems)
    assert [item for host in hosts for item in host.notes] == ([note] if note else [])
    assert all("ram" not in host.host for host in hosts)


def test_a_continued_line_and_other_sections() -> None:
    text = "[Install]\nMemoryMax=1G\n[Service]\nExecStart=/usr/bin/postgres \\\n  -D /data\nMemoryMax=\\\n3G\n"
    assert recognise("db.service", text) is not None  # the postgres hint is the ExecStart
    [host] = parse_systemd(text, "db.service")
    assert (host.host["ram"].value, host.host["ram"].source.line) == (3 * 1024**3, 6)


@pytest.mark.parametrize(("name", "text"), [
    ("nginx.service", "[Service]\nExecStart=/usr/sbin/nginx\nMemoryMax=1G\n"),  # no postgres hint
    ("postgresql.service.d/x.conf", "[Service]\nTimeoutSec=0\n"),  # no key pgvet reads
    ("postgresql.conf", "shared_buffers = 1GB\n"),
])
def test_other_files_are_not_recognised(name: str, text: str) -> None:
    kind = recognise(name, text)
    assert kind is None or kind.name != "systemd"


def test_pgvet_lint_judges_shared_buffers_against_the_units_memory_limit(tmp_path: Path) -> None:
    directory = tmp_path / "db1"
    directory.mkdir()
    (directory / "host.yaml").write_text("ram: 64GB\ncpus: 8\npg_version: 16\n")
    (directory / "postgresql.conf").write_text("shared_buffers = 4GB\n")
    (directory / "postgresql-12.service").write_text(PGDG.read_text().replace("TimeoutStopSec=1h\n",
                                                                              "TimeoutStopSec=1h\nMemoryMax=2G\n"))
    result = CliRunner().invoke(app, ["lint", str(directory), "--format", "json"])
    assert result.exit_code == 1, result.output
    [finding] = [finding for finding in json.loads(result.output)["findings"] if finding["rule_id"] == "PGV501"]
    assert (Path(finding["path"]).name, finding["line"]) == ("postgresql.conf", 1)
    assert "2.0 GiB" in finding["message"]  # the unit's limit, not host.yaml's 64 GB


# A unit from a server guide (find_string "/postgres -D ${PGDATA} -c", a markdown page's postgresql-enhanced.service),
# its ExecStart given two more parameters as units do: postgres' options outrank postgresql.conf and ALTER SYSTEM.
GUIDE_UNIT = """[Unit]
Description=PostgreSQL database server
After=network.target

[Service]
Type=notify
User=postgres
MemoryLimit=2G
CPUQuota=300%
ExecStartPre=/usr/lib/postgresql/15/bin/postgresql-check-db-dir ${PGDATA}
ExecStart=/usr/lib/postgresql/15/bin/postgres -D ${PGDATA} -c config_file=/etc/postgresql/15/main/postgresql.conf \\
  -c shared_buffers=3GB -N 500
ExecReload=/bin/kill -HUP $MAINPID
Environment=PGDATA=/var/lib/postgresql/15/main
"""


def test_the_parameters_execstart_gives_postgres_are_settings_at_its_line() -> None:
    [host] = parse_systemd(GUIDE_UNIT, "postgresql-enhanced.service")
    line = GUIDE_UNIT.split("\n").index("ExecStart=/usr/lib/postgresql/15/bin/postgres -D ${PGDATA} -c "
                                        "config_file=/etc/postgresql/15/main/postgresql.conf \\") + 1
    assert [(setting.name, setting.value, setting.source.line) for setting in host.settings] == [
        ("config_file", "/etc/postgresql/15/main/postgresql.conf", line), ("shared_buffers", "3GB", line),
        ("max_connections", "500", line)]
    assert not host.notes and not host.problems and not host.hosting  # -D ${PGDATA} names no parameter


@pytest.mark.parametrize(("exec_start", "settings", "unknown"), [
    # pg_ctl passes its -o options on to postgres; systemd's quotes keep them one word
    ('/usr/pgsql-16/bin/pg_ctl start -D ${PGDATA} -s -w -t 300 -o "-c work_mem=64MB -p 5433"',
     [("work_mem", "64MB"), ("port", "5433")], []),
    ("/usr/pgsql-16/bin/pg_ctl start -D /data --options='-B 1000'", [("shared_buffers", "8000kB")], []),
    # a specifier or a variable systemd fills in: set, to what pgvet cannot know
    ("/usr/lib/postgresql/16/bin/postgres -D /var/lib/postgresql/16/%i -c cluster_name=%i -c work_mem=8MB",
     [("work_mem", "8MB")], ["pg.cluster_name"]),
    # %% is a percent sign, $$ a dollar
    ("-/usr/bin/postgres -c max_connections=${CONNECTIONS} -c 'log_line_prefix=%%m [%%p] $$ '",
     [("log_line_prefix", "%m [%p] $ ")], ["pg.max_connections"]),
])
def test_execstart_options_systemd_gives_postgres(exec_start: str, settings: list[tuple[str, str]],
                                                  unknown: list[str]) -> None:
    text = f"[Service]\nExecStart={exec_start}\n"
    assert recognise("postgresql.service", text) is not None  # without a limit, for the parameters it gives
    [host] = parse_systemd(text, "postgresql.service")
    assert [(setting.name, setting.value) for setting in host.settings] == settings
    assert list(host.unknown) == unknown


def test_pgvet_lint_and_fix_take_the_units_parameters_over_postgresql_conf(tmp_path: Path) -> None:
    (tmp_path / "host.yaml").write_text("pg_version: 15\n")
    (tmp_path / "postgresql.conf").write_text("shared_buffers = 512MB\nmax_connections = 100\n")
    (tmp_path / "postgresql-enhanced.service").write_text(GUIDE_UNIT)
    line = GUIDE_UNIT.split("\n").index("  -c shared_buffers=3GB -N 500")  # the ExecStart's first line
    result = CliRunner().invoke(app, ["lint", str(tmp_path), "--format", "json"])
    assert result.exit_code == 1, result.output
    [finding] = [finding for finding in json.loads(result.output)["findings"] if finding["rule_id"] == "PGV540"]
    assert (Path(finding["path"]).name, finding["line"]) == ("postgresql-enhanced.service", line)
    assert "shared_buffers 3.0 GiB" in finding["message"] and "max_connections 500" in finding["message"]
    fixed = CliRunner().invoke(app, ["fix", str(tmp_path)])
    # postgresql.conf and ALTER SYSTEM would change nothing: the unit is where the value is changed
    assert "shared_buffers = " not in fixed.output.split("# --- postgresql.conf ---")[-1]
    assert (f"shared_buffers stays as it is: the server takes it from its command line or environment "
            f"(postgresql-enhanced.service:{line})") in fixed.output
