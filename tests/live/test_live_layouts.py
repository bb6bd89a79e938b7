"""Real servers laid out as packagers and DBAs lay them out: the configuration file in a directory of its own
(Debian's /etc/postgresql/N/main, `-c config_file=`), including files by absolute paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import pgservers
from conftest import require_postgres
from livepg import running_cluster
from pgvet.live.commands import collect_command
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.load import load_host

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

MAJOR = 15
MB = 1024 * 1024


def test_absolute_includes_inside_the_configuration_directory_are_read_from_the_snapshot(tmp_path: Path) -> None:
    """`include '/etc/postgresql/15/main/extra.conf'`: collect copies it (it lies in the configuration
    directory), and lint read the copy as "an include outside the snapshot" (PGV408), leaving out what it sets. An
    `include_if_exists` of a file that is not there is skipped by PostgreSQL with a LOG line: not a file pgvet
    failed to copy, and lint says it as PostgreSQL does (PGV409), whether the path is absolute or relative."""
    require_postgres(MAJOR)
    config = pgservers.make_tempdir("pgvet-etc-")
    try:
        (config / "conf.d").mkdir()
        (config / "conf.d" / "10-memory.conf").write_text("work_mem = '6MB'\n")
        (config / "extra.conf").write_text("maintenance_work_mem = '96MB'\n")
        (config / "postgresql.conf").write_text(
            "include_dir 'conf.d'\n"
            f"include '{config}/extra.conf'\n"
            f"include_if_exists '{config}/absent-absolute.conf'\n"
            "include_if_exists 'absent-relative.conf'\n")
        pgservers.chown_tree(config)
        with running_cluster(MAJOR, {"config_file": f"{config}/postgresql.conf"}) as cluster:
            assert cluster.sql("SHOW maintenance_work_mem") == [("96MB",)]
            snapshot = collect_command(tmp_path / "snapshot", cluster.dsn())
    finally:
        shutil.rmtree(config, ignore_errors=True)
    manifest = json.loads((snapshot / "collect.json").read_text())
    assert manifest.get("failed", []) == []
    assert (snapshot / "extra.conf").read_text() == "maintenance_work_mem = '96MB'\n"
    facts = load_host(snapshot)
    assert not [warning for warning in facts.warnings if "absent" in warning]
    problems = {(str(item["problem.kind"]), str(item["problem.message"])) for item in facts.items["problem"]}
    assert problems == {("missing-include-if-exists", 'skipping missing configuration file "absent-absolute.conf"'),
                        ("missing-include-if-exists", 'skipping missing configuration file "absent-relative.conf"')}
    assert facts.facts["pg_conf.maintenance_work_mem"].value == 96 * MB
    assert facts.facts["pg_conf.maintenance_work_mem"].source.path.endswith("extra.conf")
    [host] = lint([snapshot], LintOptions()).hosts
    assert not [warning for warning in host.host_facts.warnings if "absent" in warning]
    assert "PGV408" not in {finding.rule_id for finding in host.findings}
