"""Timescale's timescaledb-single chart values (pgvet.inputs.documents.timescaledb) on the chart's own values."""

from __future__ import annotations

from pathlib import Path

from documents_support import DOCUMENTS, kinds_recognising, line_of, lint_findings
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


def test_what_timescaledb_tune_sets_is_unknown_and_the_wal_sizes_are_the_volumes() -> None:
    # the tstune init container: timescaledb-tune's recommendations (shared_buffers…) from the pod's resources,
    # then max_wal_size = 60 % of the WAL volume in 16MB segments (1Gi: 38 segments, 608MB), min_wal_size half
    text = VALUES.read_text()
    [host] = parse_timescaledb(text, "values.yaml")
    assert {"pg.shared_buffers", "pg.work_mem", "pg.effective_cache_size"} <= host.unknown.keys()
    assert "pg.max_worker_processes" not in host.unknown  # Patroni passes its own on the command line
    wal = [(setting.name, setting.value, setting.source.line) for setting in host.settings
           if setting.name in ("max_wal_size", "min_wal_size")]
    size = line_of(text, "size: 1Gi")
    assert wal == [("min_wal_size", "304MB", size), ("max_wal_size", "608MB", size)]
    # without a WAL volume, 20 % of the data volume; a parameter Patroni sets wins over the tuned one
    no_wal = text.replace("  wal:\n    enabled: true", "  wal:\n    enabled: false", 1).replace(
        "          temp_file_limit: 1GB\n", "          temp_file_limit: 1GB\n          shared_buffers: 1GB\n", 1)
    [host] = parse_timescaledb(no_wal, "values.yaml")
    values = [(setting.name, setting.value) for setting in host.settings
              if setting.name in ("max_wal_size", "min_wal_size", "shared_buffers")]
    assert values == [("min_wal_size", "200MB"), ("max_wal_size", "400MB"), ("shared_buffers", "1GB")]
    assert "pg.shared_buffers" not in host.unknown
    # timescaledbTune disabled: nothing of it
    [host] = parse_timescaledb(text.replace("timescaledbTune:\n  enabled: true", "timescaledbTune:\n  enabled: false"),
                               "values.yaml")
    assert not host.unknown and not [setting for setting in host.settings if setting.name == "max_wal_size"]


def test_pgvet_lint_reads_the_charts_values(tmp_path: Path) -> None:
    # said "the values of a Helm chart pgvet does not read" before
    (tmp_path / "values.yaml").write_text(VALUES.read_text())
    host, = load_hosts(tmp_path)
    tune = line_of(VALUES.read_text(), "timescaledbTune:") + 1
    assert host.unread["pg.shared_buffers"] == (f"shared_buffers is set at values.yaml:{tune} to a value pgvet "
                                                "cannot know (see the host's note at that line)")  # was "a template"
    assert any(note.startswith(f"values.yaml:{tune}: timescaledbTune.enabled: timescaledb-tune sets shared_buffers")
               for note in host.notes)
    findings = lint_findings(tmp_path)
    assert ("PGV841", "values.yaml", line_of(VALUES.read_text(), "tag: pg14")) in {finding[1:] for finding in findings}
