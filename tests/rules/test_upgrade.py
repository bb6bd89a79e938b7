"""pgvet lint --upgrade-to N: a host's files judged as PostgreSQL N would read them (issue #28, part 4).

The verdicts against real servers (every corpus file that starts on 12, 13 or 14 and that pgvet says starts
on N starts on a real N) are in tests/differential/test_validity_differential.py; here, what the check reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pgvet.engine.derived import derived_values
from pgvet.engine.loader import load_pack
from pgvet.pgparams import removed_parameter
from pgvet.pgparams.upgrade import default_changes
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host


def _host(tmp_path: Path, version: int, conf: str) -> Path:
    host = tmp_path / f"host-{version}"
    host.mkdir()
    (host / "postgresql.conf").write_text(conf)
    (host / "PG_VERSION").write_text(f"{version}\n")
    return host


def _findings(host: Path, upgrade_to: int | None) -> dict[str, list[dict[str, object]]]:
    result = lint([host], LintOptions(upgrade_to=upgrade_to))
    assert not result.errors
    found: dict[str, list[dict[str, object]]] = {}
    for finding in result.hosts[0].findings:
        found.setdefault(finding.rule_id, []).append({"subject": finding.subject, **finding.values})
    return found


@pytest.mark.parametrize(("name", "value", "replacement", "converted"), [
    ("wal_keep_segments", "100", "wal_keep_size", "1600MB"),
    ("checkpoint_segments", "10", "max_wal_size", "480MB"),
    ("force_parallel_mode", "regress", "debug_parallel_query", "regress"),
    ("min_parallel_relation_size", "8MB", "min_parallel_table_scan_size", "8MB"),
    ("wal_keep_segments", "'a lot'", "wal_keep_size", None),
    ("stats_temp_directory", "'/run/pg'", None, None),
])
def test_removed_parameters_carry_their_replacement_value(name: str, value: str, replacement: str | None,
                                                          converted: str | None) -> None:
    removal = removed_parameter(name, 18)
    assert removal is not None and removal.replacement == replacement
    assert removal.replacement_value(value.strip("'")) == converted


def test_a_13_host_upgraded_to_16(tmp_path: Path) -> None:
    """Removed parameters with the value to write instead, values 16 refuses, and the defaults that change
    under a file that leaves them unset — none of which a lint of the 13 host itself reports."""
    host = _host(tmp_path, 13, "wal_keep_size = '1GB'\nvacuum_defer_cleanup_age = 1000\n"
                               "promote_trigger_file = '/tmp/promote'\nforce_parallel_mode = on\n"
                               "vacuum_cost_page_miss = 10\n")
    assert not {"PGV402", "PGV403", "PGV423"} & set(_findings(host, None))
    found = _findings(host, 16)
    assert sorted((each["subject"], each["replacement"], each["replacement_value"]) for each in found["PGV402"]) == [
        ("force_parallel_mode", "debug_parallel_query", "on"), ("promote_trigger_file", None, None),
        ("vacuum_defer_cleanup_age", None, None)]
    changes = {each["subject"]: (each["before"], each["after"]) for each in found["PGV423"]}
    assert changes["password_encryption"] == ("md5", "scram-sha-256")
    assert changes["checkpoint_completion_target"] == ("0.5", "0.9")
    assert changes["hash_mem_multiplier"] == ("1", "2")
    assert "vacuum_cost_page_miss" not in changes  # the file sets it: it relies on no default
    assert "wal_keep_size" not in changes


def test_a_12_host_upgraded_past_13_gets_wal_keep_size_computed(tmp_path: Path) -> None:
    host = _host(tmp_path, 12, "wal_keep_segments = 64\npassword_encryption = on\n")
    assert "PGV402" not in _findings(host, None) and "PGV403" not in _findings(host, None)  # 12 accepts both
    found = _findings(host, 14)
    assert [(each["replacement"], each["replacement_value"]) for each in found["PGV402"]] == [
        ("wal_keep_size", "1024MB")]
    assert [each["subject"] for each in found["PGV403"]] == ["password_encryption"]  # on: 14 refuses it
    added = {each["subject"]: each["before"] for each in found["PGV423"]}
    assert added["autovacuum_vacuum_insert_threshold"] == "-1"  # 13 added it: 12 behaves as if disabled


def test_shared_memory_and_huge_pages_are_the_new_versions(tmp_path: Path) -> None:
    """shared_buffers = 8GB: PostgreSQL 17 needs 4 218 pages of 2 MB (its own count), which the estimate for
    the 14 host (older structures) does not give."""
    host = _host(tmp_path, 14, "shared_buffers = 8GB\n")
    pack = load_pack()
    on_14 = derived_values(pack, load_host(host))["derived.hugepages_needed"].value
    on_17 = derived_values(pack, load_host(host, upgrade_to=17))["derived.hugepages_needed"].value
    assert on_17 == 4218 and on_14 != on_17


def test_default_changes_come_from_the_param_tables() -> None:
    by_name = {change.name: change for change in default_changes(14, 18)}
    assert (by_name["io_method"].before, by_name["io_method"].after, by_name["io_method"].added) == (
        "sync", "worker", True)
    assert (by_name["effective_io_concurrency"].before, by_name["effective_io_concurrency"].after) == ("1", "16")
    assert "password_encryption" not in by_name  # scram-sha-256 since 14
    # build-chosen boot values and type changes are no changes of the version
    assert not {"unix_socket_directories", "krb_server_keyfile", "ssl_ciphers", "log_connections"} & set(by_name)
    assert default_changes(16, 16) == ()


def test_live_values_are_left_out_and_an_unknown_version_says_so(tmp_path: Path) -> None:
    host = tmp_path / "h"
    host.mkdir()
    (host / "postgresql.conf").write_text("work_mem = '4MB'\n")
    facts = load_host(host, upgrade_to=15)
    assert facts.facts["pg.version"].value == 15 and "pg.upgraded_from" not in facts.facts
    assert any("PostgreSQL version unknown" in note and "15" in note for note in facts.notes)


def test_command_line(tmp_path: Path) -> None:
    host = _host(tmp_path, 13, "wal_keep_segments = 10\n")
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(host), "--upgrade-to", "15", "--format", "json",
                           "--select", "PGV402"], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    (finding,) = json.loads(done.stdout)["findings"]
    assert "unknown to PostgreSQL 15" in finding["message"] and "wal_keep_size = '160MB'" in finding["message"]
    refused = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(host), "--upgrade-to", "11"],
                             capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip() == ("pgvet: error: --upgrade-to must be a major version pgvet has a parameter "
                                      "catalog for (12, 13, 14, 15, 16, 17, 18), not 11")
