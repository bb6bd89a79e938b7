"""Timescale's timescaledb-single chart values (pgvet.inputs.documents.timescaledb) on the chart's own values."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from documents_support import DOCUMENTS, kinds_recognising, line_of, lint_findings
from pgvet.cli import app
from pgvet.errors import InputError, ParseError
from pgvet.inputs.documents import DeclaredHost
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


def _with_args(args: str) -> str:
    """The chart's values with ``timescaledbTune.args`` replaced by the YAML given (its lines indented by 4)."""
    indented = "\n".join(f"    {line}" for line in args.splitlines())
    return VALUES.read_text().replace("  args: {}", f"  args:\n{indented}", 1)


def test_timescaledb_tune_args_are_what_the_note_says_its_values_depend_on() -> None:
    # the chart passes them after its own -memory and -cpus (from the pod's requests, else limits): a later flag wins
    text = _with_args("memory: 4GB\nmax-conns: 120")
    [host] = parse_timescaledb(text, "values.yaml")
    [note] = [note for note in host.notes if "timescaledb-tune sets" in note]
    assert f"from --memory 4GB (values.yaml:{line_of(text, 'memory: 4GB')}), its CPU request, else its limit, " \
           f"--max-conns 120 (values.yaml:{line_of(text, 'max-conns: 120')}) and its own version" in note
    assert "pg.shared_buffers" in host.unknown and not host.problems
    [host] = parse_timescaledb(VALUES.read_text(), "values.yaml")
    assert any("from the container's memory request, else its limit, its CPU request, else its limit and its own "
               "version" in note for note in host.notes)


def test_timescaledb_tune_writing_nothing_into_the_included_file_tunes_nothing() -> None:
    # --dry-run (whatever its value: a boolean flag of Go's flag package is set by its name), --version, and a file
    # of its own to write: only the script's max_wal_size and min_wal_size are in the file postgresql.base.conf
    # includes, as the chart's version computes them
    for args in ("dry-run: false", "version: true", "out-path: /tmp/tuned.conf", "conf-path: /tmp/postgresql.conf"):
        [host] = parse_timescaledb(_with_args(args), "values.yaml")
        assert set(host.unknown) == {"pg.max_wal_size", "pg.min_wal_size"}, args
        assert any("timescaledb-tune writes nothing into the file postgresql.base.conf includes" in note
                   for note in host.notes), args
    # the file the script passes it, named again: tuned as without it
    [host] = parse_timescaledb(_with_args("conf-path: /var/run/postgresql/timescaledb.conf"), "values.yaml")
    assert "pg.shared_buffers" in host.unknown


def test_a_boolean_timescaledb_tune_flag_ends_the_flags_with_its_value() -> None:
    # --color "false": color set, "false" an argument that stops Go's flag parsing: --memory (after it by the keys'
    # order, Helm's range over a map) is never read
    text = _with_args("memory: 4GB\ncolor: false")
    [host] = parse_timescaledb(text, "values.yaml")
    assert f"values.yaml:{line_of(text, 'color: false')}: timescaledbTune.args color: a boolean flag of " \
           "timescaledb-tune takes no value: --color is set, and its value ends the flags: those after it (memory) " \
           "are not read" in host.notes
    assert any("from the container's memory request" in note for note in host.notes)


def test_a_flag_timescaledb_tune_does_not_define_is_a_pod_that_never_starts(tmp_path: Path) -> None:
    text = _with_args("max_conns: 120")
    (tmp_path / "values.yaml").write_text(text)
    findings = {finding[1:] for finding in lint_findings(tmp_path)}
    assert ("PGV407", "values.yaml", line_of(text, "max_conns: 120")) in findings
    [host] = parse_timescaledb(text, "values.yaml")
    assert "pg.shared_buffers" in host.unknown  # what it would tune is not judged on PostgreSQL's defaults either


def test_timescaledb_tune_args_not_a_mapping_is_an_error_at_its_line() -> None:
    text = _with_args("- memory")
    with pytest.raises(ParseError) as raised:
        parse_timescaledb(text, "values.yaml")
    assert raised.value.source.line == line_of(text, "args:")


def test_the_charts_archive_command_with_backups_off_is_said_to_archive_nothing() -> None:
    # scripts/pgbackrest_archive.sh exits 0 unless PGBACKREST_BACKUP_ENABLED (the statefulset's backup.enabled,
    # quoted) is "true": archive_mode on, every segment recycled unarchived
    text = VALUES.read_text()
    [host] = parse_timescaledb(text, "values.yaml")
    command = line_of(text, "archive_command:")
    assert any(note.startswith(f"values.yaml:{command}: archive_command runs the chart's pgbackrest_archive.sh, "
                               "which exits 0 without archiving while backup.enabled is not true (the chart's "
                               "default, false)") for note in host.notes)
    off = text + "backup:\n  enabled: false\n"
    [host] = parse_timescaledb(off, "values.yaml")
    assert any(f"(values.yaml:{len(off.splitlines())})" in note for note in host.notes if "archive" in note)
    for enabled in ("true", '"true"'):
        [host] = parse_timescaledb(text + f"backup:\n  enabled: {enabled}\n", "values.yaml")
        assert not [note for note in host.notes if "archive" in note], enabled
    [host] = parse_timescaledb(text.replace("archive_mode: 'on'", "archive_mode: 'off'"), "values.yaml")
    assert not [note for note in host.notes if "archive" in note]


OVERRIDE = ("replicaCount: 5\nresources:\n  limits:\n    memory: 8Gi\n    cpu: 4\ntimescaledbTune:\n  args:\n"
            "    memory: 6GB\n")


def test_an_override_of_the_charts_values_is_laid_over_them(tmp_path: Path) -> None:
    # helm -f values.yaml -f prod.yaml: prod.yaml, without patroni: and of the chart's keys (values.schema.json),
    # was no document pgvet read (or "a Helm chart pgvet does not read" named values-*.yaml); its replicaCount and
    # resources are the host's, what else it sets said not read
    assert kinds_recognising(Path("prod.yaml"), OVERRIDE) == ["timescaledb-single"]
    assert kinds_recognising(Path("prod.yaml"), OVERRIDE + "ingress: {}\n") == []  # a key the chart refuses
    (tmp_path / "values.yaml").write_text(VALUES.read_text())
    (tmp_path / "prod.yaml").write_text(OVERRIDE)
    host, = load_hosts(tmp_path)
    assert (host.facts["host.instances"].value, host.facts["host.instances"].source.line) == (5, 1)
    assert (host.facts["host.ram"].value, str(host.facts["host.ram"].source)) == (8 << 30, "prod.yaml:4")
    assert host.facts["host.cpus"].value == 4
    assert any(note.startswith("prod.yaml:1: timescaledb-single values without patroni:") and
               note.endswith("; timescaledbTune not read: the host is judged on what the chart's values beside it say "
                             "of them; lint what the chart renders (`helm template`'s output)") for note in host.notes)


def test_an_override_without_the_charts_values_beside_it_is_not_read(tmp_path: Path) -> None:
    # alone, it would be a host on PostgreSQL's defaults; beside another chart's values, laid over a host it is not
    warning = ("prod.yaml: not read: timescaledb-single values without its chart's values (an override Helm merges "
               "over them), and no such values beside it")
    (tmp_path / "prod.yaml").write_text(OVERRIDE)
    with pytest.raises(InputError, match=re.escape(warning)):
        load_hosts(tmp_path)
    (tmp_path / "values.yaml").write_text((DOCUMENTS / "bitnami" / "values.yaml").read_text())
    host, = load_hosts(tmp_path)
    assert host.facts["host.instances"].source.path == "values.yaml"
    assert any(message.startswith(warning) for message in host.warnings)


USERS_VALUES = """\
replicaCount: 3
image:
  repository: timescale/timescaledb-ha
  tag: pg16-ts2.14-latest
patroni:
  postgresql:
    parameters:
      shared_buffers: "8GB"
      temp_file_limit: 2GB
      max_connections: 200
"""


def test_users_values_with_patroni_leave_the_charts_dcs_parameters_unknown(tmp_path: Path) -> None:
    # helm -f mine.yaml: Helm merges it into the chart's values, whose bootstrap.dcs.postgresql.parameters (log_*,
    # archive_*, max_connections…) stay; they were judged at PostgreSQL's and Patroni's defaults (PGV806 on
    # log_temp_files aside, "runs its default 100" for max_connections)
    [host] = parse_timescaledb(USERS_VALUES, "mine.yaml")
    assert {"pg.log_checkpoints", "pg.archive_mode", "pg.max_connections", "pg.ssl"} <= host.unknown.keys()
    assert "pg.temp_file_limit" not in host.unknown  # set here, in postgresql.parameters: the member's value wins
    assert [setting.value for setting in host.settings if setting.name == "temp_file_limit"] == ["2GB"]
    assert any(note.startswith("mine.yaml:5: values given over "
                               "the chart's own, which set archive_command, ") for note in host.notes)
    [problem] = [problem for problem in host.problems if "max_connections" in problem.message]
    assert problem.message.endswith("and runs the chart's value (its bootstrap.dcs.postgresql.parameters)")
    # the chart's values themselves: nothing of it
    [host] = parse_timescaledb(VALUES.read_text(), "values.yaml")
    assert "pg.log_checkpoints" not in host.unknown
    (tmp_path / "mine.yaml").write_text(USERS_VALUES)
    host, = load_hosts(tmp_path)
    assert "pg.log_checkpoints" in host.unread and "pg.log_checkpoints" not in host.facts


RELEASE = """\
---
apiVersion: helm.toolkit.fluxcd.io/v2beta1
kind: HelmRelease
metadata:
  name: timescaledb
spec:
  chart:
    spec:
      chart: timescaledb-single
      version: 0.33.1
  interval: 30m0s
  valuesFrom:
    - kind: Secret
      name: timescaledb-values
  values:
    replicaCount: 1
    patroni:
      postgresql:
        parameters:
          shared_buffers: 2GB
"""


def test_a_flux_helmrelease_of_the_chart_is_read_as_its_values(tmp_path: Path) -> None:
    # was no input ("no inputs found" alone, nothing said beside other inputs); as the chart's values given over
    # its own: the chart's DCS parameters unknown, valuesFrom said not read
    assert kinds_recognising(Path("helmrelease.yaml"), RELEASE) == ["timescaledb-single"]
    [host] = parse_timescaledb(RELEASE, "helmrelease.yaml")
    assert host.name == "timescaledb" and host.host["instances"].value == 1
    assert settings_of(host)["shared_buffers"] == ("2GB", line_of(RELEASE, "shared_buffers: 2GB"))
    assert "pg.log_checkpoints" in host.unknown and "pg.work_mem" in host.unknown
    assert f"helmrelease.yaml:{line_of(RELEASE, 'valuesFrom:')}: spec.valuesFrom: values from a ConfigMap or a " \
           "Secret, merged over spec.values, which pgvet does not see: not read" in host.notes
    other = RELEASE.replace("chart: timescaledb-single", "chart: postgresql-ha")
    assert "timescaledb-single" not in kinds_recognising(Path("helmrelease.yaml"), other)
    (tmp_path / "helmrelease.yaml").write_text(RELEASE)
    host_facts, = load_hosts(tmp_path)
    assert host_facts.facts["pg.shared_buffers"].source.line == line_of(RELEASE, "shared_buffers: 2GB")


def settings_of(host: DeclaredHost) -> dict[str, tuple[str, int | None]]:
    return {setting.name: (setting.value, setting.source.line) for setting in host.settings}


def test_the_charts_own_examples_are_its_values_by_their_keys(tmp_path: Path) -> None:
    # neither names the chart's image nor timescaledbTune: "no inputs found"; the chart's keys (persistentVolumes,
    # loadBalancer, pgBouncer…) tell them
    example = (DOCUMENTS / "timescaledb-single" / "m5.large.example-values.yaml").read_text()
    [host] = parse_timescaledb(example, "m5.yaml")
    assert settings_of(host)["shared_buffers"] == ("2GB", line_of(example, "shared_buffers: 2GB"))
    assert host.host["cpus"].value == 2 and "pg.log_checkpoints" in host.unknown  # the chart's DCS parameters
    pgbouncer = (DOCUMENTS / "timescaledb-single" / "pgbouncer_customizations-values.yaml").read_text()
    [override] = parse_timescaledb(pgbouncer, "pgbouncer.yaml")
    assert not override.hosting and override.laid_over == "timescaledb-single"
    # a Patroni file's own keys, or another chart's, are not the chart's
    assert kinds_recognising(Path("values.yaml"), "loadBalancer:\n  enabled: false\ningress: {}\n") == []
    assert kinds_recognising(Path("patroni.yml"), "scope: x\nbootstrap: {}\npostgresql: {}\n") == ["patroni"]


def test_an_umbrella_charts_values_of_the_chart_are_a_host() -> None:
    # timescaledb-single: as a dependency (FIWARE's marinera): was "the values of a Helm chart pgvet does not read";
    # its section is the values Helm merges into the chart's
    text = (DOCUMENTS / "timescaledb-single" / "umbrella-values.yaml").read_text()
    [host] = parse_timescaledb(text, "values.yaml")
    assert host.hosting and host.source.line == 1
    assert (host.host["ram"].value, host.host["ram"].source.line) == (2 << 30, line_of(text, "memory: 2Gi"))
    assert "pg.archive_mode" in host.unknown and "pg.shared_buffers" in host.unknown
    disabled = "timescaledb-single:\n  enabled: false\n  replicaCount: 1\n"
    assert parse_timescaledb(disabled, "values.yaml") == []
