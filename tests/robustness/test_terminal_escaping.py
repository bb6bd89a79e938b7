"""What a snapshot or a rule pack holds reaches the terminal with its control characters escaped, in every
command, as `pgvet lint` shows it (issue #25, item 9: one helper, pgvet.report.visible): an escape sequence in
a value, a file name, a host name or a rule's title must not move the cursor, retitle the window or clear the
screen of whoever reads the report."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from pgvet.report import one_line, visible

# ESC (CSI and OSC sequences), BEL, CSI as one C1 byte, DEL
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
EVIL = "\x1b[2J\x1b]0;owned\x07\x9b31m\x7f"
SHOWN = r"\x1b[2J\x1b]0;owned\x07\x9b31m\x7f"  # what visible() writes for it


def run(*arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgvet", *arguments], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "NO_COLOR": "1"})


def assert_escaped(done: subprocess.CompletedProcess[str]) -> str:
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-2000:]
    assert not _CONTROLS.search(output), [line for line in output.splitlines() if _CONTROLS.search(line)][:3]
    return output


@pytest.fixture
def host(tmp_path: Path) -> Path:
    directory = tmp_path / "db1"
    directory.mkdir()
    (directory / "sysctl.txt").write_text(f"kernel.hostname = evil{EVIL}\nvm.swappiness = 60\n")
    (directory / "postgresql.conf").write_text(
        f"shared_buffers = '1GB'\ncluster_name = 'c{EVIL}'\nwork_mem = '4{EVIL}MB'\ninclude 'x{EVIL}.conf'\n")
    (directory / "host.yaml").write_text('name: "db\\e[5m"\ndata_directory: /srv/pg\n')
    (directory / "meminfo.txt").write_text("MemTotal: 8000000 kB\n")
    return directory


def write_pack(directory: Path, *, title: str, message: str, why: str, example: str) -> Path:
    """A rule pack of one rule, EVIL1, whose texts are given as YAML double-quoted scalars' contents."""
    directory.mkdir()
    (directory / "evil.yaml").write_text(f'''rules:
  - id: EVIL1
    name: evil
    title: "{title}"
    severity: warning
    when: "host.name IS NOT NULL"
    message: "{message}"
    values: {{name: host.name}}
    why: "{why}"
    examples:
      - facts: {{host.name: "{example}"}}
        expect: pass
''')
    return directory


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "pack", title="Evil \\e[2J title", message="on {host.name}: \\e]0;x\\a",
                      why="\\e[31m", example="a\\e[1m")


@pytest.mark.parametrize("command", [
    ["facts"], ["fix"], ["explain", "PGV403"], ["explain", "EVIL1"], ["explain", "derived.commit_limit"], ["lint"],
    ["lint", "--format", "concise"], ["lint", "--format", "github"],
], ids=lambda command: " ".join(command))
def test_commands_on_a_host_escape_what_it_holds(command: list[str], host: Path, pack: Path) -> None:
    where = [*command[:2], str(host)] if command[0] == "explain" else [*command, str(host)]
    output = assert_escaped(run(*where, *(["--rules", str(pack)] if command[0] != "fix" else [])))
    assert "\\x1b" in output  # shown, escaped, not dropped


BIDI = "\u202e\u2066\u200f"  # right-to-left override, left-to-right isolate, right-to-left mark
SEPARATORS = "\u2028\u2029"  # line and paragraph separators: a line break to editors, browsers, some log viewers


@pytest.mark.parametrize("report", ["text", "concise", "github"])
def test_bidirectional_controls_are_escaped(tmp_path: Path, report: str) -> None:
    """A right-to-left override in a value or a host name reorders what a terminal with bidi support (VTE) or
    GitHub's page shows after it (CVE-2021-42574's trick): a finding's line would read as something else. The
    github format's file property too: a directory's name reached the log as it was."""
    host = tmp_path / f"db{BIDI}1"
    host.mkdir()
    (host / "postgresql.conf").write_text(f"work_mem = '4{BIDI}MB'\n")
    output = run("lint", "--format", report, str(host)).stdout
    assert not any(char in output for char in BIDI), output
    assert "\\u202e\\u2066\\u200f" in output


@pytest.mark.parametrize("report", ["text", "concise", "github"])
def test_line_and_paragraph_separators_are_escaped(tmp_path: Path, report: str) -> None:
    """U+2028 in a value was printed as it is: where a viewer breaks the line there, the rest reads as a line of
    its own (d1)."""
    host = tmp_path / "db1"
    host.mkdir()
    (host / "postgresql.conf").write_text(f"work_mem = '4{SEPARATORS}MB'\n")
    output = run("lint", "--format", report, str(host)).stdout
    assert not any(char in output for char in SEPARATORS), output
    assert "\\u2028\\u2029" in output


def test_json_formats_escape_what_json_escapes(host: Path) -> None:
    # JSON's own escapes for C0 controls (ESC is \u001b); DEL and C1 are left to JSON readers, as in lint's JSON
    for arguments in (["facts", "--format", "json"], ["lint", "--format", "json"]):
        done = run(*arguments, str(host))
        assert "Traceback" not in done.stderr and "\x1b" not in done.stdout and "\\u001b[2J" in done.stdout


@pytest.mark.parametrize("command", [["rules"], ["rules", "--format", "markdown"], ["explain", "EVIL1"],
                                     ["rules", "test"]], ids=lambda command: " ".join(command))
def test_commands_on_a_rule_pack_escape_what_it_holds(command: list[str], pack: Path) -> None:
    arguments = [*command, str(pack)] if command[-1] == "test" else [*command, "--rules", str(pack)]
    output = assert_escaped(run(*arguments))
    assert "\\x1b[2J" in output or command[-1] == "test"


def test_errors_escape_what_they_name(tmp_path: Path) -> None:
    missing = tmp_path / f"no{EVIL}host"
    for arguments in (["facts", str(missing)], ["fix", str(missing)], ["explain", f"PGV{EVIL}"],
                      ["lint", str(missing)]):
        done = run(*arguments)
        assert done.returncode == 2
        assert "\\x1b" in assert_escaped(done)


def test_a_baseline_a_repository_names_is_shown_escaped(tmp_path: Path, host: Path) -> None:
    """`baseline = "b\u001b]0;owned\u0007.json"` in a repository's .pgvet.toml: `baseline create` and `update`
    name the file they wrote."""
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    host.rename(repository / "db1")
    (repository / ".pgvet.toml").write_text('baseline = "b' + EVIL.encode("unicode_escape").decode().replace(
        "\\x", "\\u00") + '.json"\n')
    for command in ("create", "update"):
        done = run("baseline", command, "db1", cwd=repository)
        assert done.returncode == 0, done.stderr
        assert SHOWN in assert_escaped(done)


def test_fix_escapes_what_it_prints_and_writes_the_file_as_it_is(tmp_path: Path) -> None:
    directory = tmp_path / "db2"
    directory.mkdir()
    (directory / "postgresql.conf").write_text(f"cluster_name = 'c{EVIL}'\nshared_buffers = '1GB'\n"
                                               "huge_pages = off\n")
    (directory / "meminfo.txt").write_text("MemTotal: 64000000 kB\n")
    (directory / "host.yaml").write_text("pg_version: 16\n")
    output = assert_escaped(run("fix", str(directory), "--write"))
    assert "wrote" in output
    assert EVIL in (directory / "postgresql.conf").read_text()  # the file keeps its own bytes


def test_the_check_report_escapes_what_the_host_holds(host: Path, pack: Path) -> None:
    from pgvet.live.check import CheckOutcome
    from pgvet.report import ReportOptions
    from pgvet.report.check import render_check
    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    result = lint([host], LintOptions(rules=[pack], record_passes=True))
    result.hosts[0].host_facts.warnings.append(f"a warning {EVIL}")
    report = render_check(CheckOutcome(result, host / f"kept{EVIL}", kept=True), ReportOptions(color=False))
    assert not _CONTROLS.search(report), [line for line in report.splitlines() if _CONTROLS.search(line)][:3]
    assert "Evil \\x1b[2J title" in report and "db\\x1b[5m" in report and "kept\\x1b[2J" in report


def test_a_name_holding_a_line_break_starts_no_line(tmp_path: Path) -> None:
    """A repository names its hosts (a Patroni member's name, a compose service) and its files, and sets values: a
    line feed in one must not start a line of the text or concise report (``::error::…`` is a command to GitHub
    Actions)."""
    patroni = tmp_path / "repo" / "patroni"
    patroni.mkdir(parents=True)
    (patroni / "patroni.yml").write_text('scope: s\nname: "m1\\n::error::NAME"\npostgresql:\n  parameters:\n'
                                         "    track_io_timing: 'off'\n"
                                         '    shared_preload_libraries: "auto_explain\\n::error::VALUE"\n')
    compose = tmp_path / "repo" / "compose"
    compose.mkdir()
    (compose / "x\n::error::FILE\ny.yml").write_text(
        'services:\n  "db\\n::error::SERVICE":\n    image: postgres:16\n'
        '    command: ["postgres", "-c", "track_io_timing=off", "-c", "work_mem=${W}\\n::error::NOTE"]\n')
    refused = tmp_path / "refused"
    refused.mkdir()
    (refused / "x\n::error::ERROR\ny.yml").write_text('scope: s\nname: n\npostgresql:\n  parameters: {a: "\\q"}\n')
    for command in ("facts", "fix", "lint"):  # an error naming the file
        said = assert_escaped(run(command, "refused", cwd=tmp_path))
        assert not [line for line in said.splitlines() if line.startswith("::")] and "\\n::error::ERROR" in said
    fixed = assert_escaped(run("fix", "--write", "repo/compose", cwd=tmp_path))  # what it leaves, by file
    assert not [line for line in fixed.splitlines() if line.startswith("::")] and "\\n::error::FILE" in fixed, fixed
    facts = assert_escaped(run("facts", "repo/patroni", cwd=tmp_path))
    assert not [line for line in facts.splitlines() if line.lstrip("│ ").startswith("::")], facts
    assert "\\n::error::NAME" in facts and "\\n::error::VALUE" in facts
    for report in ("text", "concise"):
        output = assert_escaped(run("lint", "--verbose", "--format", report, "repo", cwd=tmp_path))
        assert not [line for line in output.splitlines() if line.lstrip().startswith("::")], output
        # the concise report shows paths only
        for injected in ("NAME", "FILE", "SERVICE", "VALUE", "NOTE") if report == "text" else ("FILE",):
            assert f"\\n::error::{injected}" in output, (injected, output)


_SHOWN_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|r|n)")


def _read_back(shown: str) -> str:
    """What a reader takes a text shown by one_line for: \\\\ one backslash, an escape its character, any other
    backslash itself."""
    return _SHOWN_ESCAPE.sub(lambda match: "\\" if match.group(1) == "\\" else
                             match.group().encode().decode("unicode_escape"), shown)


def test_what_is_shown_reads_back_as_what_was_there() -> None:
    # a backslash was never escaped: a value spelt r\u202eole printed as one holding the override does. Every text
    # of up to four of these characters (backslashes, the letters of escapes, controls) reads back as itself
    alphabet = ["\\", "x", "1", "b", "u", "n", "r", "a", "\x1b", "\n", "\r", "\u202e"]
    for length in range(5):
        for characters in itertools.product(alphabet, repeat=length):
            text = "".join(characters)
            assert _read_back(one_line(text)) == text, (text, one_line(text))
    assert visible("r\\u202eole") == "r\\\\u202eole" and visible("r\u202eole") == "r\\u202eole"
    for ordinary in ("C:\\data\\pg", "LIKE 'enable\\_%'", "/srv/pg data", "a\\"):  # no backslash read as an escape
        assert visible(ordinary) == ordinary


def test_a_value_wrapped_onto_a_line_of_its_own_starts_no_workflow_command(tmp_path: Path) -> None:
    """The text reports wrap at the terminal's width (100 columns off a terminal, as in CI): a word of the
    repository's wrapped to a line's start began a line with ``::error::…``, which GitHub Actions reads as a command
    once it trims the line's leading blanks (a fake annotation, ``::add-mask::``, ``::stop-commands::``)."""
    from pgvet.report import printed

    assert printed("  ::error::x  \n::add-mask::y\nok ::z\n: :w\n") == (
        "  :\u2060:error::x\n:\u2060:add-mask::y\nok ::z\n: :w\n")
    overlay = tmp_path / "repo" / "overlay"
    overlay.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (overlay / "cluster.yaml").write_text("apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: x\n"
                                          "spec:\n  instances: 1\n  postgresql:\n    parameters:\n"
                                          "      work_mem: 4MB\n")
    for pad in range(56, 96, 8):  # the word falls at a line's start at some of these widths
        (overlay / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cluster.yaml\n"
            f"components:\n  - ../../../{'a' * pad} ::error::INJECTED\n")
        for command in (("lint", "--format", "text"), ("lint", "--format", "concise"), ("facts",)):
            output = assert_escaped(run(*command, "overlay", cwd=tmp_path / "repo"))
            assert "::error::INJECTED" in output.replace("\u2060", ""), (pad, command)
            assert not [line for line in output.splitlines() if line.lstrip().startswith("::")], (pad, command)


def test_a_path_a_line_starts_with_starts_no_workflow_command(tmp_path: Path) -> None:
    """The concise format (the pre-commit hook's) starts each line with the place, a repository's path: a host
    directory named ``::error title=INJECTED::x`` began every line with a command GitHub Actions obeyed (a fake
    annotation for each; ``::add-mask::`` or ``::stop-commands::`` as well)."""
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    for name in ("::error title=INJECTED::x", "::add-mask::y"):
        shutil.copytree(FIXTURES / "small-vm", repository / name)
    (repository / "::error title=INJECTED::x" / "lscpu.txt").write_text("junk\n")  # a host error's line too
    for command in (("lint", "--format", "concise", "::error title=INJECTED::x", "::add-mask::y"),
                    ("lint", "--format", "text", "::error title=INJECTED::x", "::add-mask::y"),
                    ("facts", "::add-mask::y"), ("fix", "::add-mask::y")):
        output = assert_escaped(run(*command, cwd=repository))
        assert command[0] != "lint" or "add-mask" in output, (command, output[-2000:])
        assert not [line for line in output.splitlines() if line.lstrip().startswith("::")], (command, output)


def test_a_rule_pack_line_starts_no_workflow_command(tmp_path: Path) -> None:
    """A rule pack's texts may hold lines (why, a fix); `pgvet rules`, `explain` and `rules test` print them as they
    are off a terminal: one that starts with ``::`` was a command to GitHub Actions."""
    pack = write_pack(tmp_path / "pack", title="Evil title", message="on {host.name}",
                      why="first line\\n  ::error::WHY\\n::add-mask::MASK", example="a")
    for arguments in (["rules", "--rules", str(pack)], ["rules", "--format", "markdown", "--rules", str(pack)],
                      ["explain", "EVIL1", "--rules", str(pack)], ["rules", "test", str(pack)]):
        output = assert_escaped(run(*arguments))
        assert not [line for line in output.splitlines() if line.lstrip().startswith("::")], (arguments, output)
        if arguments[0] == "explain":
            assert "::error::WHY" in output.replace("\u2060", ""), output
