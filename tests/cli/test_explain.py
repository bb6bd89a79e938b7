"""`pgvet explain RULE [HOST]`: the rule's page, and on a host what it gives there with every number it read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app

runner = CliRunner()


def explain(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["explain", *args])
    return result.exit_code, result.output


def on_host(output: str) -> str:
    assert "\n## On " in output
    return output.split("\n## On ", 1)[1]


def test_a_firing_rule_shows_its_message_and_each_number_with_its_source() -> None:
    code, output = explain("PGV530", str(FIXTURES / "big-server"))
    assert code == 0
    assert output.startswith("## PGV530 `memory-budget-exceeds-limit`")  # the rule's page first
    there = on_host(output)
    assert there.startswith("db-prod-03\n")
    assert "**Fires** (warning) — postgresql.conf:853:" in there
    assert "while the kernel allows 82.2 GiB (CommitLimit: queries fail with out of memory)" in there
    # facts with the file and line they come from, derived values with their units, settings' defaults
    assert "- `pg.max_connections` = 1000 — postgresql.conf:65" in there
    assert "- `sysctl.vm.overcommit_ratio` = 90 — sysctl.txt:1268" in there
    assert "- `derived.memory_limit` = 88227287040 (82.2 GiB) — derived" in there
    assert "- `derived.memory_left_for_work_mem` = -71764389888 (-66.8 GiB) — derived" in there
    assert "- `pg.autovacuum_max_workers` = 3 — <default>" in there
    assert "- `pg.wal_buffers` = -1 — <default>" in there  # -1 is "automatic", not a size


def test_a_passing_rule_shows_the_numbers_that_made_it_pass() -> None:
    code, output = explain("shared-buffers-too-large", str(FIXTURES / "small-vm"))
    assert code == 0
    there = on_host(output)
    assert "**Passes**." in there
    assert "- `derived.shared_buffers_ratio` = 0.0325622392104293 — derived" in there
    assert "- `host.ram` = 4121882624 (3.8 GiB) — meminfo.txt:1" in there


def test_a_rule_that_does_not_apply_says_when_it_would() -> None:
    code, output = explain("PGV110", str(FIXTURES / "small-vm"))
    assert code == 0
    assert on_host(output).endswith(
        "Does not apply to this host (applies when: `pg.huge_pages = 'on' AND derived.huge_pages_supported`).\n")


def test_a_rule_without_its_facts_names_them(tmp_path: Path) -> None:
    (tmp_path / "meminfo.txt").write_text("MemTotal:       4025276 kB\n")
    code, output = explain("PGV501", str(tmp_path))
    assert code == 0
    assert "**Not evaluated**: these facts are missing: pg.shared_buffers." in on_host(output)


def test_an_item_rule_shows_each_item_it_fires_on_and_names_those_that_pass() -> None:
    code, output = explain("PGV205", str(FIXTURES / "big-server"))
    assert code == 0
    there = on_host(output)
    assert "**Fires** (info) for /srv/pgdata — mounts.txt:5:" in there
    assert "- `mount.options` = rw,relatime,data=writeback — mounts.txt:5" in there
    assert there.rstrip().endswith("**Passes** for 1 mount item(s): /srv/pgwal.")


def test_the_configured_parameters_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # big-server's shared_buffers is 73 % of its RAM: over the default 0.4, under a configured 0.8
    code, output = explain("PGV501", str(FIXTURES / "big-server"))
    assert "**Fires** (warning)" in on_host(output)
    (tmp_path / ".pgvet.toml").write_text("[params.shared-buffers-too-large]\nmax_ratio = 0.8\n")
    monkeypatch.chdir(tmp_path)
    code, output = explain("PGV501", str(FIXTURES / "big-server"))
    assert code == 0
    assert "**Passes**." in on_host(output)


def test_a_rule_of_a_configured_pack_is_explained_with_or_without_a_host(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # `explain OPS001` read .pgvet.toml's packs only with a host: without one the rule was unknown
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "site.yaml").write_text(
        "rules:\n  - id: OPS001\n    name: ops-swappiness-not-one\n    title: vm.swappiness is not 1\n"
        "    severity: warning\n    when: sysctl.vm.swappiness <> 1\n    message: swappiness\n    why: policy\n")
    (tmp_path / ".pgvet.toml").write_text('rules = ["ops"]\n')
    monkeypatch.chdir(tmp_path)
    code, output = explain("ops-swappiness-not-one")
    assert code == 0 and output.startswith("## OPS001 `ops-swappiness-not-one`"), output
    code, output = explain("OPS001", str(FIXTURES / "small-vm"))
    assert code == 0 and "**Fires** (warning)" in on_host(output)


def test_a_derived_fact_on_a_host_shows_its_value_then_what_it_is_computed_from() -> None:
    code, output = explain("derived.memory_limit", str(FIXTURES / "small-vm"))
    assert code == 0
    there = on_host(output)
    value, inputs = there.split("\nFrom:\n", 1)
    assert "- `derived.memory_limit` = 4121882624 (3.8 GiB) — derived" in value
    assert "- `sysctl.vm.overcommit_memory` = 0 — sysctl.txt:" in inputs


def test_an_item_derived_fact_points_to_the_rules_of_its_scope(tmp_path: Path) -> None:
    # none of the built-in pack's derived facts reads an item; a user's pack may
    (tmp_path / "mine.yaml").write_text(
        "derived:\n  - name: mount_is_ext4\n    unit: bool\n    description: The mount is ext4.\n"
        "    formula: mount.fstype = 'ext4'\n")
    code, output = explain("derived.mount_is_ext4", str(FIXTURES / "big-server"), "--rules", str(tmp_path))
    assert code == 0, output
    assert "Computed for each mount item" in on_host(output)


def test_a_file_of_the_host_stands_for_its_host() -> None:
    code, output = explain("PGV501", str(FIXTURES / "big-server" / "postgresql.conf"))
    assert code == 0
    assert on_host(output).startswith("db-prod-03\n")


@pytest.mark.parametrize("command", [["explain", "PGV501"], ["facts"], ["fix"]])
def test_one_host_commands_name_a_bad_input_as_it_can_be_opened(command: list[str], tmp_path: Path) -> None:
    """A fleet report names the host and the file in it; a command of one host names the file's path, not
    the path inside the host that the user cannot open from where they are."""
    host = tmp_path / "db1"
    shutil.copytree(FIXTURES / "small-vm", host)
    (host / "sysctl.d").mkdir(exist_ok=True)
    (host / "sysctl.d" / "10-broken.conf").write_text("vm.swappiness = 1\nnot a setting\n")
    result = runner.invoke(app, [*command, str(host)])
    assert result.exit_code == 2
    assert f"pgvet: error: {host / 'sysctl.d' / '10-broken.conf'}:2: missing '='" in result.output
    assert "Traceback" not in result.output


def test_a_host_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    code, output = explain("PGV501", str(tmp_path / "absent"))
    assert code == 2
    assert f"{tmp_path / 'absent'}: no such file or directory (a host is a directory of inputs)" in output


def on_a_terminal(argv: list[str], columns: int, **environment: str) -> str:
    """What `pgvet ARGV` writes to a terminal of ``columns`` columns (a pseudo-terminal), as text."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environ = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES", "NO_COLOR")}
    process = subprocess.Popen([sys.executable, "-m", "pgvet", *argv], stdout=follower, stderr=follower,
                               env={**environ, "TERM": "xterm-256color", **environment})
    os.close(follower)
    written = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: the process is done writing
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 0
    return written.decode("utf-8").replace("\r\n", "\n")


def test_issue_30_explain_is_rendered_for_a_terminal_and_plain_in_a_pipe() -> None:
    # raw Markdown broke mid-word in a 100-column terminal
    import re

    code, markdown = explain("PGV110")  # not a terminal: the Markdown as it is, for files and scripts
    assert code == 0 and markdown.startswith("## PGV110 `huge-pages-on-pool-too-small`\n")
    shown = on_a_terminal(["explain", "PGV110"], 100)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert "\x1b[" in shown and "## PGV110" not in plain and "PGV110 huge-pages-on-pool-too-small" in plain
    assert max(len(line) for line in plain.splitlines()) <= 100
    words = set(re.findall(r"\w+", markdown))
    assert set(re.findall(r"\w+", plain)) <= words  # every word whole: none cut at the terminal's edge
    assert "anonymous" in plain and "derived.hugepages_available" in plain
    without_colour = on_a_terminal(["explain", "PGV110"], 60, NO_COLOR="1")  # bold and italic stay: no colour
    styles = {parameter for sequence in re.findall(r"\x1b\[([0-9;]*)m", without_colour)
              for parameter in sequence.split(";")}
    assert not {parameter for parameter in styles if parameter[:1] in ("3", "4", "9") and len(parameter) == 2}
    assert max(len(line) for line in re.sub(r"\x1b\[[0-9;]*m", "", without_colour).splitlines()) <= 60
