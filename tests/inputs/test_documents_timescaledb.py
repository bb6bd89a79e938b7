"""Timescale's timescaledb-single chart values (pgvet.inputs.documents.timescaledb) on the chart's own values."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from documents_support import DOCUMENTS, kinds_recognising, line_of, lint_findings
from pgvet.cli import app
from pgvet.inputs.documents.timescaledb import parse_timescaledb
from pgvet.snapshot.load import load_hosts

VALUES = DOCUMENTS / "timescaledb-single" / "values.yaml"


def test_the_charts_patroni_configuration_is_read_at_its_lines_of_the_values() -> None:
    text = VALUES.read_text()
    assert kinds_recognising(Path("values.yaml"), text) == ["timescaledb-single"]
    [host] = parse_timescaledb(text, "values.yaml")
    settings = {setting.name: (setting.value, setting.source.line) for setting in host.settings}
    assert settings["temp_file_limit"] == ("1GB", line_of(text, "temp_file_limit: 1GB"))
    assert settings["wal_level"][0] == "replica"  # Patroni's reading of hot_standby
    assert host.host["pg_version"].value == 14 and host.host["instances"].value == 3


def test_what_timescaledb_tune_sets_is_unknown_unless_patroni_sets_it() -> None:
    # the tstune init container: timescaledb-tune's recommendations from the pod's resources, and max_wal_size and
    # min_wal_size from the volumes written before or after it as the chart's version has it
    text = VALUES.read_text()
    [host] = parse_timescaledb(text, "values.yaml")
    assert {"pg.shared_buffers", "pg.work_mem", "pg.max_wal_size", "pg.min_wal_size"} <= host.unknown.keys()
    assert "pg.max_worker_processes" not in host.unknown  # Patroni passes its own on the command line
    # a parameter Patroni sets wins over the tuned one (Patroni's postgresql.conf includes the base file first)
    limit = "          temp_file_limit: 1GB\n"
    own = text.replace(limit, limit + "          shared_buffers: 1GB\n", 1)
    [host] = parse_timescaledb(own, "values.yaml")
    assert [setting.value for setting in host.settings if setting.name == "shared_buffers"] == ["1GB"]
    assert "pg.shared_buffers" not in host.unknown
    # timescaledbTune disabled: nothing of it
    [host] = parse_timescaledb(text.replace("timescaledbTune:\n  enabled: true", "timescaledbTune:\n  enabled: false"),
                               "values.yaml")
    assert not host.unknown


def test_pgvet_lint_reads_the_charts_values(tmp_path: Path) -> None:
    # said "the values of a Helm chart pgvet does not read" before
    (tmp_path / "values.yaml").write_text(VALUES.read_text())
    host, = load_hosts(tmp_path)
    tune = line_of(VALUES.read_text(), "timescaledbTune:") + 1
    assert host.unread["pg.shared_buffers"] == (  # was "(a template it does not render)" alone
        f"shared_buffers is set at values.yaml:{tune} to a value pgvet cannot know (a template's, or one set "
        "elsewhere: the host's note at that line says which)")
    assert any(note.startswith(f"values.yaml:{tune}: timescaledbTune.enabled: timescaledb-tune sets shared_buffers")
               for note in host.notes)
    findings = lint_findings(tmp_path)
    assert ("PGV841", "values.yaml", line_of(VALUES.read_text(), "tag: pg14")) in {finding[1:] for finding in findings}


def test_pgvet_fix_gives_no_patronictl_step_on_the_values_file(tmp_path: Path) -> None:
    # `patronictl -c values.yaml reload` was the step: the values are no Patroni file (the chart renders one)
    (tmp_path / "values.yaml").write_text(VALUES.read_text())
    result = CliRunner().invoke(app, ["fix", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "track_io_timing: 'on'" in result.output and "patronictl" not in result.output
