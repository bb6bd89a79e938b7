"""Hostile snapshots through the real command line: a message naming the file, a documented exit code,
bounded time and memory, never a traceback, nothing read outside the host without saying so."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

GIB = 1024**3


def lint(host: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(host), "--format", "concise"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    return done, time.monotonic() - started


def host(tmp_path: Path, **files: str) -> Path:
    directory = tmp_path / "host"
    directory.mkdir()
    (directory / "host.yaml").write_text("pg_version: 16\n")
    for name, text in files.items():
        (directory / name.replace("__", ".")).write_text(text)
    return directory


def sound(output: str) -> bool:
    """No traceback, and no "internal error": pgvet's word for a bug of its own met on a host, reported as that
    host's error (the run goes on, so the exit code alone does not show it)."""
    return "Traceback" not in output and "internal error" not in output


def assert_clean(done: subprocess.CompletedProcess[str], *, code: int, mentions: str) -> None:
    output = done.stdout + done.stderr
    assert sound(output), output[-2000:]
    assert done.returncode == code, output[-2000:]
    assert mentions in output, output[-2000:]


@pytest.mark.parametrize("name", ["postgresql.conf", "sysctl.txt", "meminfo.txt"])
def test_one_gigabyte_file(tmp_path: Path, name: str) -> None:
    directory = host(tmp_path)
    with (directory / name).open("wb") as handle:
        handle.truncate(GIB)  # sparse: no disk used
    # The child reports its own peak: VmHWM of its memory map (ru_maxrss would carry the forking pytest's
    # peak across exec, and RUSAGE_CHILDREN the largest of every earlier child).
    measured = ("import re, runpy, sys\n"
                f"sys.argv = ['pgvet', 'lint', {str(directory)!r}, '--format', 'concise']\n"
                "try:\n    runpy.run_module('pgvet', run_name='__main__')\n"
                "finally:\n    status = open('/proc/self/status').read()\n"
                "    print('MAXRSS', re.search(r'VmHWM:\\s+(\\d+)', status).group(1), file=sys.stderr)\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", measured], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    seconds = time.monotonic() - started
    peak_kib = int(done.stderr.rsplit("MAXRSS", 1)[1].split()[0])
    assert_clean(done, code=2, mentions=name)
    output = done.stdout + done.stderr
    assert "more than pgvet reads" in output or "pgvet does not read it" in output
    assert seconds < 30 and peak_kib < 200 * 1024  # never read into memory


def test_symlink_loop_and_link_outside(tmp_path: Path) -> None:
    directory = host(tmp_path, postgresql__conf="include 'loop.conf'\nshared_buffers = '1GB'\n")
    (directory / "loop.conf").symlink_to(directory / "loop2.conf")
    (directory / "loop2.conf").symlink_to(directory / "loop.conf")
    (directory / "sysctl.txt").symlink_to("/etc/passwd")
    done, _ = lint(directory)
    output = done.stdout + done.stderr
    assert sound(output) and done.returncode in (1, 2), output
    assert "loop.conf" in output and "symbolic links" in output
    assert "root:x:0:0" not in output  # /etc/passwd was not read into a report


def test_include_outside_is_reported_once_and_plainly(tmp_path: Path) -> None:
    directory = host(tmp_path, postgresql__conf="include '/etc/passwd'\n")
    done, _ = lint(directory)
    finding = next(line for line in done.stdout.splitlines() if "PGV408" in line)
    assert finding.endswith("include outside the snapshot: /etc/passwd; not read: pgvet does not follow paths "
                            "outside the directory it lints.")
    assert (done.stdout + done.stderr).count("/etc/passwd") == 1  # not a WARNING input line besides


def test_include_outside_has_one_fingerprint_in_every_checkout(tmp_path: Path) -> None:
    # the message holds the absolute path of the include; the fingerprint (baselines, tickets, code scanning)
    # must be the same wherever the repository is checked out
    from pgvet.run.lint import lint as lint_hosts
    from pgvet.run.options import LintOptions

    fingerprints = []
    for checkout in ("laptop", "ci/runner/work"):
        repository = tmp_path / checkout
        (repository / "common").mkdir(parents=True)
        (repository / "common" / "x.conf").write_text("work_mem = 8MB\n")
        (repository / "db").mkdir()
        (repository / "db" / "postgresql.conf").write_text("include '../common/x.conf'\n")
        result = lint_hosts([repository / "db"], LintOptions())
        [finding] = [finding for finding in result.hosts[0].findings if finding.rule_id == "PGV408"]
        assert str(repository) in finding.message and finding.subject == "../common/x.conf"
        fingerprints.append(finding.fingerprint)
    assert fingerprints[0] == fingerprints[1]


def test_include_chain_too_deep_and_cycle(tmp_path: Path) -> None:
    directory = host(tmp_path, postgresql__conf="include 'c1.conf'\n")
    for depth in range(1, 50):
        (directory / f"c{depth}.conf").write_text(f"include 'c{depth + 1}.conf'\n")
    (directory / "c50.conf").write_text("work_mem = '4MB'\n")
    done, _ = lint(directory)
    assert sound(done.stdout + done.stderr)
    assert done.returncode in (1, 2) and "PGV407" in done.stdout + done.stderr
    assert "c10.conf" in done.stdout + done.stderr or "nest" in (done.stdout + done.stderr).lower()

    (tmp_path / "cycle").mkdir()
    cyclic = host(tmp_path / "cycle", postgresql__conf="include 'a.conf'\n")
    (cyclic / "a.conf").write_text("include 'postgresql.conf'\n")
    done, _ = lint(cyclic)
    assert sound(done.stdout + done.stderr) and "PGV407" in done.stdout


def test_directory_where_a_file_is_expected(tmp_path: Path) -> None:
    directory = host(tmp_path)
    (directory / "meminfo.txt").mkdir()
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(directory), "--format", "text"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert sound(done.stdout + done.stderr)
    assert "meminfo.txt: refused, it is not a regular file" in done.stdout + done.stderr


def test_binary_junk_in_every_input(tmp_path: Path) -> None:
    rng = random.Random(8)
    directory = tmp_path / "junk"
    directory.mkdir()
    for name in ("postgresql.conf", "postgresql.auto.conf", "sysctl.txt", "meminfo.txt", "lscpu.txt", "mounts.txt",
                 "sysfs.txt", "host.yaml", "pg_settings.json"):
        (directory / name).write_bytes(rng.randbytes(20_000))
    done, seconds = lint(directory)
    assert sound(done.stdout + done.stderr)
    assert done.returncode == 2 and seconds < 30


@pytest.mark.parametrize(("name", "text"), [
    ("lscpu.txt", '{"lscpu": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("pg_settings.json", "[" * 100_000 + "]" * 100_000),
    ("collect.json", '{"a": ' * 100_000 + "1" + "}" * 100_000)], ids=["lscpu", "pg_settings", "collect"])
def test_json_nested_deep_is_refused_at_its_file(tmp_path: Path, name: str, text: str) -> None:
    """`lscpu -J`'s JSON of a hundred thousand brackets was a RecursionError, reported as pgvet's internal error."""
    directory = host(tmp_path)
    (directory / name).write_text(text)
    done, _ = lint(directory)
    output = done.stdout + done.stderr
    assert sound(output), output[-2000:]
    assert done.returncode == 2 and f"{name}:1: ERROR input: invalid" in output and "nested too deep" in output, (
        output[-2000:])


def test_yaml_bombs(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + level)}: &{chr(98 + level)} [*{chr(97 + level)}, *{chr(97 + level)}, *{chr(97 + level)}, "
        f"*{chr(97 + level)}, *{chr(97 + level)}, *{chr(97 + level)}, *{chr(97 + level)}, *{chr(97 + level)}]\n"
        for level in range(8))
    directory = host(tmp_path)
    (directory / "host.yaml").write_text(bomb)
    done, seconds = lint(directory)
    assert_clean(done, code=2, mentions="host.yaml")
    assert seconds < 30
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "bomb.yaml").write_text("rules: " + "[" * 10_000 + "\n")
    done = subprocess.run([sys.executable, "-m", "pgvet", "rules", "--rules", str(rules)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "bomb.yaml:1" in done.stderr and sound(done.stderr)


@pytest.mark.parametrize(("expression", "said"), [
    (" + ".join(["1"] * 30_000) + " > 0", "an expression of 120001 characters, more than pgvet reads (10000)"),
    (" + ".join(["1"] * 2_000) + " > 0", "nested more than 100 deep"),
    ("NOT " * 2_000 + "true", "nested more than 100 deep")])
def test_an_expression_nested_deep_is_refused_at_its_line(tmp_path: Path, expression: str, said: str) -> None:
    """A rule's chain of 30 000 `1 + …` crashed pgvet (pglast's segmentation fault, exit 139, no word of why);
    one of a few thousand was a RecursionError's traceback, in the compiler. A repository's own pack is compiled
    by `pgvet lint` in its CI."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "deep.yaml").write_text("rules:\n  - id: OPS001\n    name: ops-deep\n    title: t\n    severity: info\n"
                                     f"    tags: [x]\n    when: \"{expression}\"\n    message: m\n")
    done = subprocess.run([sys.executable, "-m", "pgvet", "rules", "--rules", str(rules)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PGVET_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 2 and sound(done.stderr), done.stderr[-2000:]
    assert f"deep.yaml:7: OPS001.when: {said}" in done.stderr, done.stderr[-2000:]


def test_yaml_library_warnings_stay_off_stderr(tmp_path: Path) -> None:
    # an anchor defined twice is YAML pgvet reads; ruamel.yaml would print a warning with its source lines
    directory = tmp_path / "anchors"
    directory.mkdir()
    (directory / "host.yaml").write_text("cpus: &a 4\nram: &a 8GB\n")
    done, _ = lint(directory)
    assert (done.returncode, done.stderr) == (0, "")


def test_file_name_not_utf8(tmp_path: Path) -> None:
    directory = host(tmp_path)
    os.makedirs(os.fsencode(str(directory / "sysctl.d")), exist_ok=True)
    with open(os.fsencode(str(directory / "sysctl.d")) + b"/\xff\xfe.conf", "wb") as handle:
        handle.write(b"vm.swappiness = 60\n")
    done, _ = lint(directory)
    assert sound(done.stdout + done.stderr) and done.returncode in (0, 1), done.stderr


def test_directory_name_not_utf8_in_report_files(tmp_path: Path) -> None:
    # the host's name and paths carry the bytes as surrogates: report files escape them as standard output does
    directory = os.fsencode(str(tmp_path)) + b"/db-\xff"
    os.makedirs(directory)
    with open(directory + b"/sysctl.txt", "wb") as handle:
        handle.write(b"vm.swappiness = 60\n")
    formats = ["json", "jsonl", "sarif", "junit", "gitlab", "text", "concise"]
    command = [sys.executable, "-m", "pgvet", "lint", os.fsdecode(directory)]
    for fmt in formats:
        command += ["--format", fmt, "--output", str(tmp_path / f"out.{fmt}")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert sound(done.stderr) and done.returncode == 1, done.stderr[-2000:]
    assert all(sound((tmp_path / f"out.{fmt}").read_text(encoding="utf-8")) for fmt in formats)
    document = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert document["hosts"][0]["name"] == "db-\udcff"  # JSON's own escape, as ensure_ascii would write it
    assert "PGV130" in (tmp_path / "out.concise").read_text(encoding="utf-8")
    baseline = subprocess.run([sys.executable, "-m", "pgvet", "baseline", "create", os.fsdecode(directory),
                               "--output", str(tmp_path / "baseline.json")], capture_output=True, text=True,
                              timeout=120)
    assert sound(baseline.stderr) and baseline.returncode == 0, baseline.stderr[-2000:]


def test_named_pipes_never_hang(tmp_path: Path) -> None:
    # an include that is a named pipe no program writes to: opening it would wait forever
    directory = host(tmp_path, postgresql__conf="include 'pipe.conf'\nshared_buffers = '1GB'\n")
    os.mkfifo(directory / "pipe.conf")
    done, seconds = lint(directory)
    assert_clean(done, code=1, mentions='"pipe.conf": not a regular file')
    assert seconds < 30
    # the same pipe given as an input: refused after a wait, not read as an empty sysctl -a
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "--sysctl", str(directory / "pipe.conf"),
                           "--format", "concise"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})
    assert_clean(done, code=2, mentions="a pipe no program wrote to in 5 s")
    # a pipe with a program writing to it (`--sysctl <(…)`) is read to its end
    writer = subprocess.Popen(["sh", "-c", f"sleep 0.5; echo 'vm.swappiness = 60' > {directory / 'pipe.conf'}"])
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "--sysctl", str(directory / "pipe.conf"),
                           "--format", "concise"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})
    writer.wait(timeout=30)
    assert_clean(done, code=1, mentions="PGV130")


@pytest.mark.parametrize("command", [["facts"], ["lint"], ["fix"], ["explain", "PGV101"], ["rules"]])
def test_standard_output_on_a_full_disk(command: list[str]) -> None:
    # `> /dev/full`: each was an OSError traceback
    fixture = Path(__file__).parents[2] / "fixtures" / "big-server"
    arguments = command if command[0] in ("explain", "rules") else [*command, str(fixture)]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "pgvet", *arguments], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert sound(done.stderr) and done.returncode == 2, done.stderr[-2000:]
    assert done.stderr == "pgvet: error: cannot write standard output: No space left on device\n"


@pytest.mark.parametrize("fmt", ["concise", "json", "sarif"])
def test_a_report_file_on_a_full_disk_is_named(fmt: str) -> None:
    # a short report is buffered and only fails when its file is closed: that was said of standard output
    fixture = Path(__file__).parents[2] / "fixtures" / "small-vm"
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", str(fixture), "--format", fmt, "--output",
                           "/dev/full"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr == "pgvet: error: cannot write /dev/full: No space left on device\n"


def test_a_yaml_of_many_chart_keys_is_searched_in_linear_time(tmp_path: Path) -> None:
    # the search for Bitnami's postgresql-ha values tried, from each `postgresql:` line, every later line for a
    # `pgpool:` one: a repository's YAML of 20 000 such lines took 11 s, 200 000 about twenty minutes
    repository = tmp_path / "repository"
    repository.mkdir()
    (repository / "values.yaml").write_text("postgresql:\n" * 200_000)
    done, seconds = lint(repository)
    assert "Traceback" not in done.stderr
    assert seconds < 60, seconds


SOURCEFILE_SNAPSHOT = """{{"format": 1, "server": {{"server_version_num": 160002}}, "databases": [], "unavailable": [],
 "settings": [{{"name": "fsync", "setting": "off", "vartype": "bool", "source": "configuration file",
                "sourcefile": {sourcefile}, "sourceline": 1}}],
 "statistics": {{}}}}
"""


@pytest.mark.parametrize("fmt", ["sarif", "gitlab", "github"])
@pytest.mark.parametrize("named", ["absolute", "relative", "link"])
def test_a_place_a_snapshot_names_outside_its_directory_says_nothing_of_the_runners_files(
        tmp_path: Path, fmt: str, named: str) -> None:
    # A snapshot's sourcefile (the server's word) naming a file of the runner: the formats that need a file
    # anchored the finding there when it existed (/etc/shadow as root), so the report told whether it did.
    outside = tmp_path / "secret"
    directory = host(tmp_path)
    sourcefile = {"absolute": str(outside), "relative": "../secret", "link": "conf"}[named]
    if named == "link":
        (directory / "conf").symlink_to(outside)
    (directory / "pg_settings.json").write_text(SOURCEFILE_SNAPSHOT.format(sourcefile=json.dumps(sourcefile)))
    outputs = []
    for present in (True, False):
        if present:
            outside.write_text("root:$6$x\n")
        else:
            outside.unlink()
        done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "host", "--format", fmt], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
        assert sound(done.stdout + done.stderr) and done.returncode == 1, done.stdout + done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("fmt", ["text", "concise", "junit", "gitlab"])  # those without a time of the run
@pytest.mark.parametrize("named", ["absolute", "link"])
def test_a_place_outside_the_host_is_shown_as_written_whatever_the_runner_has_there(
        tmp_path: Path, fmt: str, named: str) -> None:
    # Every format shows a finding's file relative to where pgvet runs when it lies there: a place outside the host
    # (a snapshot's sourcefile, a host's link out) was resolved on the runner to find out, so a report told whether a
    # path of the runner was a link, and into which of the repository's files (and a lookup under /net mounts).
    runner = tmp_path / "runner"
    runner.mkdir()
    directory = host(tmp_path)
    sourcefile = {"absolute": str(runner / "in" / "host" / "postgresql.conf"), "link": "conf/host/postgresql.conf"}
    if named == "link":
        (directory / "conf").symlink_to(runner / "in")
    (directory / "pg_settings.json").write_text(SOURCEFILE_SNAPSHOT.format(sourcefile=json.dumps(sourcefile[named])))
    outputs = []
    for present in (True, False):
        if present:
            (runner / "in").symlink_to(tmp_path)
        else:
            (runner / "in").unlink()
        done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "host", "--format", fmt], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
        assert sound(done.stdout + done.stderr) and done.returncode == 1, done.stdout + done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    written = {"absolute": "runner/in/host/postgresql.conf", "link": "host/conf/host/postgresql.conf"}[named]
    assert written in outputs[0] or fmt == "gitlab"  # which anchors on the host's own files only


def test_links_inside_the_host_are_still_resolved_to_show_a_place(tmp_path: Path) -> None:
    # What the place of a finding is shown as when its links stay inside the host: their real file, as before.
    from pgvet.report import relative_path

    directory = host(tmp_path)
    (directory / "real").mkdir()
    (directory / "real" / "postgresql.conf").write_text("")
    (directory / "relative").symlink_to("real")
    (directory / "absolute").symlink_to(directory / "real")
    (directory / "up").symlink_to("../host/real")
    for place in ("relative/postgresql.conf", "absolute/postgresql.conf", str(directory / "relative/postgresql.conf")):
        assert relative_path(place, "host", None, str(tmp_path)) == "host/real/postgresql.conf"
    # a link through the host's parent leads out as open_input sees it, though back in: named as written
    assert relative_path("up/postgresql.conf", "host", None, str(tmp_path)) == "host/up/postgresql.conf"


@pytest.mark.parametrize("name", ["sysctl.txt", "sysctl.d", ".pgvet-ignore.yaml"])
def test_an_input_linked_out_of_its_host_says_nothing_of_what_is_there(tmp_path: Path, name: str) -> None:
    # Whether the runner has a file, a directory or nothing where a host's link leads was told apart: "resolves
    # outside the host directory", "is not a regular file", "is not a directory", or "links to …, which does not
    # exist" (sysctl.d), or nothing at all (an input file).
    outside = tmp_path / "outside"
    directory = host(tmp_path, postgresql__conf="shared_buffers = '1GB'\n")
    (directory / name).symlink_to(outside)
    outputs = []
    for there in ("file", "directory", "nothing"):
        if there == "file":
            outside.write_text("vm.swappiness = 1\n")
        elif there == "directory":
            outside.unlink()
            outside.mkdir()
        else:
            outside.rmdir()
        done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "host", "--format", "concise"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
        assert sound(done.stdout + done.stderr), done.stdout + done.stderr
        outputs.append((done.returncode, done.stdout, done.stderr))
    assert outputs[0] == outputs[1] == outputs[2]
    assert "refused, it resolves outside the host directory" in outputs[0][1] + outputs[0][2]


@pytest.mark.parametrize("fmt", ["text", "concise", "sarif", "github", "gitlab", "html", "json", "junit"])
def test_a_place_holding_a_nul_byte_is_a_name_not_a_bug(tmp_path: Path, fmt: str) -> None:
    # No file has such a name, yet looking it up raised ValueError: the host was an internal error.
    directory = host(tmp_path)
    (directory / "pg_settings.json").write_text(SOURCEFILE_SNAPSHOT.format(sourcefile=json.dumps("/etc/a\0b")))
    done = subprocess.run([sys.executable, "-m", "pgvet", "lint", "host", "--format", fmt], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert sound(done.stdout + done.stderr) and done.returncode == 1, done.stdout + done.stderr
    assert "PGV601" in done.stdout


def test_pgvet_check_anchors_a_finding_on_the_servers_own_file(tmp_path: Path) -> None:
    # pgvet check points a temporary snapshot's places back at this machine's files (the server's, /proc's): those
    # a report may anchor on where they are; a snapshot linted elsewhere may not (above).
    from pgvet.report import anchor
    from pgvet.run.lint import lint as lint_hosts
    from pgvet.run.options import LintOptions

    server_file = tmp_path / "postgresql.conf"
    server_file.write_text("fsync = off\n")
    directory = host(tmp_path)
    (directory / "pg_settings.json").write_text(SOURCEFILE_SNAPSHOT.format(sourcefile=json.dumps(str(server_file))))
    [result] = lint_hosts([directory], LintOptions()).hosts
    [finding] = [finding for finding in result.findings if finding.rule_id == "PGV601"]
    assert anchor(finding, result)[0] != server_file
    result.host_facts.places_local = True
    assert anchor(finding, result) == (server_file, 1)


@pytest.mark.parametrize("line", ["0", "-5", "100000000000000000000"])
def test_a_sourceline_no_file_has_is_refused_at_its_row(tmp_path: Path, line: str) -> None:
    # The server gives a line from 1 (an int4): -5 became `line=-5` in a GitHub annotation and 1e20 a SARIF
    # startLine code scanning refuses.
    directory = host(tmp_path)
    (directory / "pg_settings.json").write_text(
        SOURCEFILE_SNAPSHOT.format(sourcefile='"postgresql.conf"').replace('"sourceline": 1', f'"sourceline": {line}'))
    done, _ = lint(directory)
    assert_clean(done, code=2, mentions=f"pg_settings.json:2: ERROR input: a settings row: 'sourceline' should be a "
                                        f"line number (1 to 2147483647), not {line}")
