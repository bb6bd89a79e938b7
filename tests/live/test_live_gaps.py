"""What pgvet check cannot read, it says: run by an OS user who may not read the data directory, the checks of
the configuration files are listed as not evaluated, in their section, with the user who could read them; a
snapshot lints under the host's recorded name, so check and collect + lint give the same fingerprints."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pgservers
from conftest import require_postgres
from livepg import running_cluster
from pgvet.live.commands import collect_command

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

MAJOR = min(pgservers.SUPPORTED_MAJORS)
NOBODY = 65534  # an OS user that is neither root nor the server's


def pgvet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgvet", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})


def _cli(args: list[str]) -> int:
    from pgvet.cli import app

    try:
        app(args, standalone_mode=False)
    except SystemExit as done:  # typer.Exit is a click exit: its code
        return int(done.code or 0)
    except Exception as error:  # click's Exit carries exit_code
        return int(getattr(error, "exit_code", 3))
    return 0


def _run_as_nobody(args: list[str], out: Path) -> tuple[int, str]:
    """``pgvet ARGS`` in a child process that runs as an unprivileged user; its standard output. The child runs
    the command once as root first, which imports what the command imports (Python's own modules may lie where
    that user may not read), then again as that user. That user does not use root's rule-pack cache and compiles the
    pack: the run as root starts from an empty cache, so that compiling's imports (pglast, ruamel) are made too."""
    pid = os.fork()
    if pid == 0:  # the child: never returns to pytest
        code = 3
        with out.open("w") as handle:
            try:
                os.environ["PGVET_CACHE_DIR"] = str(out.with_suffix(".cache"))  # a new one each call
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    _cli(args)
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                with contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
                    code = _cli(args)
            except BaseException as error:  # said in the output the test reads
                handle.write(f"the child failed: {error!r}")
            finally:
                handle.flush()
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a command as another user")
def test_configuration_checks_not_read_say_so(tmp_path: Path) -> None:
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        cluster.socket_dir.chmod(0o755)  # the other user may reach the socket, not the data directory
        environment = {"NO_COLOR": "1", "COLUMNS": "200"}
        saved = dict(os.environ)
        os.environ.update(environment)
        try:
            code, text = _run_as_nobody(["check", "--dsn", cluster.dsn(), "--no-input"], tmp_path / "text.out")
            _, verbose = _run_as_nobody(["check", "--dsn", cluster.dsn(), "--no-input", "-v"], tmp_path / "v.out")
        finally:
            os.environ.clear()
            os.environ.update(saved)
    assert code in (0, 1), text
    section = text.split("== Configuration files ==")[1].split("\n== ")[0]
    # In the section, the checks that need the files, and who could read them.
    assert "not evaluated: the server's configuration files were not copied: the working directory of the postmaster" \
           in " ".join(section.split())
    assert "run pgvet as root or as the server's OS user (postgres)" in " ".join(section.split())
    assert "warning: collect.json:" in text  # the header names what was not read
    listed = " ".join(verbose.split("== Configuration files ==")[1].split("\n== ")[0].split())
    for rule_id in ("PGV401", "PGV403", "PGV405", "PGV406", "PGV420"):
        assert f"{rule_id} " in listed and "not evaluated (the server's configuration files were not copied" in listed


def _fingerprints(document: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    return {(finding["rule_id"], finding["subject"]): finding["fingerprint"] for finding in document["findings"]}


def test_snapshot_lints_under_the_recorded_host_name(tmp_path: Path) -> None:
    """check names the host by its hostname; a snapshot it keeps, or that collect writes under any directory
    name, lints under the same name, so every finding keeps its fingerprint (tickets, baselines). host.yaml's
    name still wins."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR, {"checkpoint_completion_target": "0.5"}) as cluster:
        checked = json.loads(pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json").stdout)
        kept = tmp_path / "kept-by-check"
        pgvet("check", "--dsn", cluster.dsn(), "--no-input", "--format", "json", "--snapshot", str(kept))
        collected = tmp_path / "pgvet-snapshot-whatever"
        assert pgvet("collect", "--dsn", cluster.dsn(), "--output", str(collected)).returncode == 0
    hostname = socket.gethostname()
    linted = json.loads(pgvet("lint", str(collected), "--format", "json").stdout)
    linted_kept = json.loads(pgvet("lint", str(kept), "--format", "json").stdout)
    assert [host["name"] for host in checked["hosts"]] == [hostname]
    assert [host["name"] for host in linted["hosts"]] == [hostname] == [host["name"] for host in linted_kept["hosts"]]
    stable = {key: value for key, value in _fingerprints(checked).items() if key[0] not in ("PGV950", "PGV951")}
    assert stable and stable.items() <= _fingerprints(linted).items()
    assert stable.items() <= _fingerprints(linted_kept).items()
    (collected / "host.yaml").write_text("name: db-prod-03\n")
    renamed = json.loads(pgvet("lint", str(collected), "--format", "json").stdout)
    assert [host["name"] for host in renamed["hosts"]] == ["db-prod-03"]


def test_no_server_checks_the_host_and_says_how_to_give_one(tmp_path: Path) -> None:
    """No server where libpq's defaults look: the host is checked all the same; the report says the server was
    not read, why, and how to give one. A server given with --dsn that cannot be read is an error (exit 2),
    after the host's report."""
    environment = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PGHOST": str(tmp_path), "PGPORT": "1"}
    done = subprocess.run([sys.executable, "-m", "pgvet", "check", "--no-input"], capture_output=True, text=True,
                          timeout=120, env=environment)
    assert done.returncode in (0, 1), done.stderr
    text = " ".join(done.stdout.split())
    assert "warning: collect.json:" in text and "the server was not read: cannot connect to PostgreSQL" in text
    assert "give one with --dsn" in text
    assert "== OS ==" in text and "not evaluated: the server was not read" in text
    document = json.loads(subprocess.run([sys.executable, "-m", "pgvet", "check", "--no-input", "--format", "json"],
                                         capture_output=True, text=True, timeout=120, env=environment).stdout)
    skipped = {record["rule_id"]: record["reason"] for record in document["not_evaluated"]}
    assert skipped["PGV501"].startswith("the server was not read: cannot connect to PostgreSQL")
    assert any(record["host"] == socket.gethostname() for record in document["not_evaluated"])
    given = pgvet("check", "--dsn", f"host={tmp_path} port=1 user=nobody", "--no-input")
    assert given.returncode == 2
    assert given.stderr.startswith("pgvet: error: cannot connect to PostgreSQL (host=") and "Traceback" not in \
        given.stderr
    assert "== OS ==" in given.stdout


def test_connections_hidden_from_the_role_are_a_gap_not_a_lower_count(tmp_path: Path) -> None:
    """pg_stat_activity hides the backend_type of other roles' sessions from a role without pg_read_all_stats:
    counting the client backends it can see would miss them (PGV950 judging a count too low), so the count is
    unknown and says what would let pgvet read it; a pg_monitor role counts them all."""
    require_postgres(MAJOR)
    with running_cluster(MAJOR) as cluster:
        cluster.sql("CREATE ROLE plain LOGIN PASSWORD 'Plain-Count-7q'")
        cluster.sql("CREATE ROLE watcher LOGIN PASSWORD 'Plain-Count-7q' IN ROLE pg_monitor")
        with psycopg.connect(cluster.dsn()):  # another role's session
            plain = collect_command(tmp_path / "plain", cluster.dsn("plain", "Plain-Count-7q"))
            watcher = collect_command(tmp_path / "watcher", cluster.dsn("watcher", "Plain-Count-7q"))
    read = json.loads((plain / "pg_settings.json").read_text())
    assert read["statistics"]["connections"] is None
    [gap] = [gap for gap in read["unavailable"] if gap["what"] == "pg_stat_activity"]
    assert "other roles' sessions" in gap["error"]
    assert gap["fix"] == "GRANT pg_read_all_stats TO plain, or GRANT pg_monitor"
    assert json.loads((watcher / "pg_settings.json").read_text())["statistics"]["connections"] == 2
