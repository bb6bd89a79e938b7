"""The inputs registry: every kind's file names, option, facts, parser and documentation line in one table,
and what is generated from it (discovery, host markers, fact types, collection, the CLI's input options)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app
from pgvet.engine.factnames import OPEN_PREFIXES, STATIC_FACTS, static_type
from pgvet.inputs.reading import read_text
from pgvet.inputs.registry import INPUT_KINDS, KINDS, InputKind, host_markers, input_options
from pgvet.run.lint import host_directories
from pgvet.run.paths import HOST_MARKERS
from pgvet.snapshot import discovery
from pgvet.snapshot.discovery import SnapshotInputs, discover, given_inputs
from pgvet.snapshot.load import load_host

# Hosts that hold, together, a file of every kind but collect.json (which `pgvet collect` writes: tests/test_live_*)
SAMPLE_HOSTS = ["big-server", "config-repo", "small-vm", "rules/PGV903-files-differ-from-running"]


def test_every_kind_is_read_by_its_parser_from_the_sample_hosts() -> None:
    read: set[str] = set()
    for host in SAMPLE_HOSTS:
        found = discover(FIXTURES / host)
        for kind in INPUT_KINDS:
            for path in found.every(kind.name):
                assert isinstance(path, Path), path  # the snapshot holds Paths only, discovered or given
                name = path.name
                assert kind.parser()(read_text(path, name), name) is not None, (kind.name, path)
                read.add(kind.name)
    assert read == set(KINDS) - {"collect_manifest"}


def test_names_are_unique_and_options_name_their_parameter() -> None:
    names = [name for kind in INPUT_KINDS for name in (*kind.file_names, *([kind.directory] if kind.directory else []))]
    assert len(names) == len(set(names))
    assert len(KINDS) == len(INPUT_KINDS)
    for kind in input_options():
        assert kind.option is not None and kind.option.startswith("--") and kind.option_help, kind.name
        assert kind.parameter.isidentifier()


def test_a_kind_added_to_the_registry_is_discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery has no list of its own: a new kind (issue #31's Patroni file, say) is found by its name."""
    patroni = InputKind("patroni_yaml", ("patroni.yml",), "a Patroni member's configuration", "host_yaml",
                        "parse_host_yaml")
    monkeypatch.setattr(discovery, "INPUT_KINDS", (*INPUT_KINDS, patroni))
    monkeypatch.setattr(discovery, "KINDS", {**KINDS, "patroni_yaml": patroni})
    (tmp_path / "patroni.yml").write_text("name: db1\n")
    (tmp_path / "meminfo.txt").write_text("MemTotal: 1024 kB\n")
    found = discover(tmp_path)
    assert found.first("patroni_yaml") == tmp_path / "patroni.yml"
    assert found.first("meminfo") == tmp_path / "meminfo.txt"


def test_an_unknown_kind_is_an_error_not_an_absent_input() -> None:
    with pytest.raises(KeyError):
        SnapshotInputs().first("meminfo_txt")
    with pytest.raises(KeyError):
        SnapshotInputs.of(memifo=Path("meminfo.txt"))


def test_explicit_inputs_replace_the_discovered_ones(tmp_path: Path) -> None:
    (tmp_path / "meminfo.txt").write_text("MemTotal: 1024 kB\n")
    elsewhere = tmp_path / "other-meminfo"
    elsewhere.write_text("MemTotal: 2048 kB\n")
    host = load_host(tmp_path, SnapshotInputs.of(meminfo=elsewhere, sysctl_conf=[]))
    assert host.facts["meminfo.mem_total"].value == 2048 * 1024


def test_options_given_by_their_parameter_names_are_the_kinds_inputs() -> None:
    given = given_inputs({"auto_conf": Path("a.conf"), "sysctl_conf": [Path("1.conf"), Path("2.conf")], "lscpu": None})
    assert given is not None
    assert given.first("postgresql_auto_conf") == Path("a.conf") and given.first("lscpu") is None
    assert given.every("sysctl_conf") == [Path("1.conf"), Path("2.conf")]
    assert given_inputs({"meminfo": None, "sysctl_conf": []}) is None
    assert {kind.parameter for kind in input_options()} >= {"auto_conf", "pg_settings", "postgresql_conf"}


def test_every_os_file_marks_a_host(tmp_path: Path) -> None:
    """lscpu, mounts and sysfs make a host as the other inputs do: a file given alone below such a directory is
    linted with it."""
    assert {"lscpu.txt", "mounts.txt", "sysfs.txt", "sysctl.d", "host.yaml"} <= set(HOST_MARKERS)
    assert host_markers() == HOST_MARKERS and "collect.json" not in HOST_MARKERS
    for marker in ("lscpu.txt", "mounts.txt", "sysfs.txt"):
        host = tmp_path / marker.split(".")[0]
        (host / "notes").mkdir(parents=True)
        (host / marker).write_text("x\n")
        (host / "notes" / "todo.txt").write_text("x\n")
        assert host_directories([host / "notes" / "todo.txt"], stop=tmp_path).hosts == [host]


def test_fact_types_come_from_the_registry() -> None:
    for kind in INPUT_KINDS:
        for name, fact_type in kind.facts.items():
            if name.endswith("."):
                key = "shared_buffers" if name in ("pg.", "pg_conf.") else "some_key"  # typed by the parameter tables
                assert name in OPEN_PREFIXES or key == "shared_buffers", name
                assert static_type(f"{name}{key}") is not None, name
            else:
                assert STATIC_FACTS[name] == fact_type, name


@pytest.mark.parametrize("command", ["lint", "facts"])
def test_the_commands_take_every_input_option_of_the_registry(command: str) -> None:
    """Until the CLI declares them from the registry, it declares each one the registry lists."""
    help_text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"}).output
    for kind in input_options():
        assert kind.option is not None and kind.option in help_text, (command, kind.option)


def test_the_kinds_are_frozen_records() -> None:
    with pytest.raises(AttributeError):
        KINDS["meminfo"].option = "--mem"  # type: ignore[misc]
