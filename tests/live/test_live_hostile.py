"""A lying server gets nothing (issue #25): each attack on `pgvet collect` replayed against a fake PostgreSQL
server (tests/fakepg.py), which may lie in any answer, or a real one set up as its hostile superuser would."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import pgservers
from conftest import require_postgres
from fakepg import (
    BOOL,
    FILE_SETTINGS_COLUMNS,
    FLOAT8,
    INT4,
    INT8,
    NUMERIC,
    SETTINGS_COLUMNS,
    TEXT,
    Drop,
    FakeServer,
    Hang,
    Rows,
    answers_with,
    one,
    serve_in_process,
    setting_row,
    standard_answers,
    standard_settings,
)
from livepg import running_cluster
from pgvet.errors import InputError
from pgvet.inputs.pg_settings import live_facts, parse_pg_settings_json
from pgvet.live import server as server_module
from pgvet.live.commands import collect_command

psycopg = pytest.importorskip("psycopg", exc_type=ImportError, reason="psycopg, with its libpq, reads the server")

OS_FILES = {"meminfo.txt", "sysctl.txt", "lscpu.txt", "mounts.txt", "sysfs.txt"}
MAJOR = 15  # Debian's, what CI always installs (12 would not reload primary_conninfo)


def _files(snapshot: Path) -> set[str]:
    return {path.relative_to(snapshot).as_posix() for path in snapshot.rglob("*") if path.is_file()}


def _manifest(snapshot: Path) -> dict[str, object]:
    return dict(json.loads((snapshot / "collect.json").read_text()))


def _every_byte(snapshot: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(snapshot.rglob("*")) if path.is_file())


def pgvet(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgvet", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})})


# --- item 1: where files are read and written ------------------------------------------------------------


def test_a_tcp_server_claiming_its_files_gets_none_read_and_nothing_written_outside(tmp_path: Path) -> None:
    """The review's attack: over TCP, a sourcefile with '..' and config_file /etc/shadow, from a server that
    says it is local. pgvet used the server's word for both; now neither is a path to anything."""
    attacker = tmp_path / "x" / "y"
    attacker.mkdir(parents=True)
    (attacker / "postgresql.conf").write_text("include '../../victimhome/pwned.txt'\n")
    (tmp_path / "victimhome").mkdir()
    answers = standard_answers(str(attacker))
    answers["FROM pg_settings"] = Rows(SETTINGS_COLUMNS, (
        *standard_settings(str(attacker)),
        setting_row("work_mem", "4096", vartype="integer", unit="kB", source="configuration file",
                    sourcefile=f"{attacker}/../../victimhome/pwned.txt", sourceline="1")))
    answers["current_setting('config_file')"] = one("current_setting", TEXT, "/etc/shadow")
    with FakeServer(answers_with(answers)) as server:
        snapshot = collect_command(tmp_path / "out", server.dsn())
    assert _files(snapshot) == OS_FILES | {"collect.json", "pg_settings.json"}
    assert _manifest(snapshot)["failed"] == [{"what": "configuration files", "error": (
        "not copied: the connection is not a Unix-domain socket, and only on one does the kernel say which process "
        "serves it (connect with host=<socket directory>)")}]
    assert os.listdir(tmp_path / "victimhome") == []
    assert sorted(os.listdir(tmp_path)) == ["out", "victimhome", "x"]


def test_a_socket_served_by_what_is_not_a_postmaster_gets_no_file_read(tmp_path: Path) -> None:
    """A Unix socket whose listener (this test process) runs as root, or works in a directory without a
    postmaster.pid naming it: its files are not the server's."""
    (tmp_path / "sock").mkdir()
    with FakeServer(answers_with(standard_answers(str(tmp_path))), unix_dir=tmp_path / "sock") as server:
        snapshot = collect_command(tmp_path / "out", server.dsn())
    [failure] = _manifest(snapshot)["failed"]  # type: ignore[misc]
    reason = ("runs as root, which PostgreSQL never does" if os.geteuid() == 0
              else "holds no postmaster.pid")
    assert failure["what"] == "configuration files" and reason in failure["error"], failure
    assert _files(snapshot) == OS_FILES | {"collect.json", "pg_settings.json"}


@pytest.fixture
def postgres_user() -> Iterator[str]:
    """Another account to run a fake postmaster as (we must be root to start one)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to run a fake postmaster as another user")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no postgres user")
    yield "postgres"


SECRET = "R00t-Only-S3cret-plugh"


def test_a_postmaster_gets_copied_only_what_its_own_user_could_read(tmp_path: Path, postgres_user: str) -> None:
    """A fake postmaster (its command line names a configuration directory apart from its data directory)
    whose superuser planted, in its configuration: an include climbing out of it, a symbolic link and a hard
    link to files only root may read, and a directory its user may not enter; and whose answers lie about
    config_file and every sourcefile. pgvet, as root, copies its configuration file, what it includes inside
    its directory and postgresql.auto.conf, and says why each of the others was not copied."""
    secret = tmp_path / "shadow"
    secret.write_text(f"root:{SECRET}:19000::::::\n")
    secret.chmod(0o600)
    base = pgservers.make_tempdir("pgvet-fakepg-")
    try:
        data, config, sockets = base / "data", base / "etc" / "main", base / "sock"
        for directory in (data, config / "conf.d", config / "private", sockets):
            directory.mkdir(parents=True)
        (config / "postgresql.conf").write_text(
            "include_dir 'conf.d'\ninclude '../../victim.conf'\ninclude 'linked.conf'\ninclude 'hard.conf'\n"
            "include_if_exists 'private/x.conf'\narchive_command = 'curl -u pgvet:Arch1ve-S3cret https://x/%f'\n")
        (config / "conf.d" / "10-memory.conf").write_text("work_mem = '8MB'\n")
        (config / "conf.d" / "README").write_text("not a .conf file: not read by PostgreSQL\n")
        (config / "linked.conf").symlink_to(secret)
        os.link(secret, config / "hard.conf")
        (config / "private" / "x.conf").write_text("work_mem = '9MB'\n")
        (data / "postgresql.auto.conf").write_text("work_mem = '12MB'\n")
        pgservers.chown_tree(base)
        os.chown(config / "hard.conf", 0, 0)
        os.chown(config / "private", 0, 0)
        (config / "private").chmod(0o700)
        answers = standard_answers(str(data))
        answers["current_setting('config_file')"] = one("current_setting", TEXT, "/etc/shadow")
        answers["FROM pg_settings"] = Rows(SETTINGS_COLUMNS, (*standard_settings(str(data)), setting_row(
            "work_mem", "8192", vartype="integer", unit="kB", source="configuration file",
            sourcefile=f"{config}/../../../../etc/shadow", sourceline="1")))
        with serve_in_process(answers, data=data, socket_dir=sockets, user=postgres_user,
                              argv=["-D", str(data), "-c", f"config_file={config}/postgresql.conf"]) as process:
            snapshot = collect_command(tmp_path / "out", f"host={sockets} port=5432 user=postgres")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert _files(snapshot) == OS_FILES | {"collect.json", "pg_settings.json", "postgresql.conf",
                                           "postgresql.auto.conf", "conf.d/10-memory.conf"}
    assert SECRET.encode() not in _every_byte(snapshot) and b"Arch1ve-S3cret" not in _every_byte(snapshot)
    assert (snapshot / "postgresql.conf").read_text().endswith("archive_command = '***'\n")
    manifest = _manifest(snapshot)
    listening = f"the postmaster pid {process.pid} listening on {sockets}/.s.PGSQL.5432"
    assert [(each["name"], each["server_file"], each["how"]) for each in manifest["files"]  # type: ignore[attr-defined]
            if "server_file" in each] == [
        ("postgresql.conf", f"{config}/postgresql.conf", f"copy {config}/postgresql.conf ({listening})"),
        ("conf.d/10-memory.conf", f"{config}/conf.d/10-memory.conf",
         f"copy {config}/conf.d/10-memory.conf ({listening})"),
        ("postgresql.auto.conf", f"{data}/postgresql.auto.conf", f"copy {data}/postgresql.auto.conf ({listening})")]
    uid = pwd.getpwnam(postgres_user).pw_uid
    assert manifest["failed"] == [
        {"what": f"{base}/victim.conf", "error": f"not copied: outside the server's configuration directory {config}"},
        {"what": f"{config}/linked.conf",
         "error": f"not copied: {config}/linked.conf is a symbolic link, which pgvet does not follow"},
        {"what": f"{config}/hard.conf",
         "error": f"not copied: {config}/hard.conf: the server's OS user (uid {uid}) may not read it"},
        {"what": f"{config}/private/x.conf",
         "error": f"not copied: {config}/private: the server's OS user (uid {uid}) may not enter it"},
    ]


@pytest.mark.parametrize("started", ["through a link", "relative"])
def test_a_configuration_directory_the_os_cannot_show_plainly(tmp_path: Path, postgres_user: str,
                                                              started: str) -> None:
    """A configuration directory reached through a symbolic link is not entered (its files are not copied, and
    postgresql.auto.conf still is); one given relative to where the postmaster started (pg_ctl -D data) is its
    data directory when the server says its configuration file is there."""
    base = pgservers.make_tempdir("pgvet-fakepg-")
    try:
        data, config, sockets = base / "data", base / "etc" / "main", base / "sock"
        for directory in (data, config, sockets):
            directory.mkdir(parents=True)
        (base / "etclink").symlink_to(base / "etc")
        for directory in (data, config):
            (directory / "postgresql.conf").write_text("work_mem = '8MB'\n")
        (data / "postgresql.auto.conf").write_text("work_mem = '12MB'\n")
        pgservers.chown_tree(base)
        answers = standard_answers(str(data))
        argv = (["-D", str(data), "-c", f"config_file={base}/etclink/main/postgresql.conf"]
                if started == "through a link" else ["-D", "data"])
        with serve_in_process(answers, data=data, socket_dir=sockets, user=postgres_user, argv=argv):
            snapshot = collect_command(tmp_path / "out", f"host={sockets} port=5432 user=postgres")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    manifest = _manifest(snapshot)
    copied = {each["name"]: each["server_file"] for each in manifest["files"]  # type: ignore[attr-defined]
              if "server_file" in each}
    if started == "through a link":
        assert copied == {"postgresql.auto.conf": f"{data}/postgresql.auto.conf"}
        assert manifest["failed"] == [{"what": f"{base}/etclink/main/postgresql.conf", "error": (
            f"not copied: {base}/etclink is a symbolic link, which pgvet does not follow")}]
    else:
        assert copied == {"postgresql.conf": f"{data}/postgresql.conf",
                          "postgresql.auto.conf": f"{data}/postgresql.auto.conf"}
        assert manifest["failed"] == []


# --- item 8: bounds in time, answers that make no sense ----------------------------------------------------


def test_the_session_is_read_only_and_bounded_before_its_first_query(tmp_path: Path) -> None:
    with FakeServer(answers_with(standard_answers())) as server:
        collect_command(tmp_path / "out", server.dsn("options='-c search_path=app'"), timeout=0.5)
    [startup] = server.startups
    assert startup["options"] == ("-c search_path=app -c default_transaction_read_only=on "
                                  "-c statement_timeout=500 -c lock_timeout=250 -c search_path=pg_catalog,pg_temp")
    assert startup["application_name"] == "pgvet"
    assert not any(query.upper().startswith(("SET", "BEGIN")) for query in server.queries)


def test_a_server_that_never_answers_is_given_up_on_and_nothing_is_left(tmp_path: Path) -> None:
    answers = standard_answers()
    answers["FROM pg_show_all_file_settings()"] = Hang()
    started = time.monotonic()
    with FakeServer(answers_with(answers)) as server, pytest.raises(InputError) as raised:
        collect_command(tmp_path / "out", server.dsn(), timeout=0.25)
    assert time.monotonic() - started < 10  # 1.5 s: six times the timeout
    assert str(raised.value) == ("the server did not finish answering within 1.5 s (6 × --timeout) while pgvet "
                                 "read pg_file_settings")
    assert os.listdir(tmp_path) == []


def test_a_dropped_connection_says_the_connection_was_lost(tmp_path: Path) -> None:
    answers = standard_answers()
    answers["FROM pg_stat_bgwriter"] = Drop()
    with FakeServer(answers_with(answers)) as server, pytest.raises(InputError) as raised:
        collect_command(tmp_path / "out", server.dsn())
    assert str(raised.value).startswith("the connection to the server was lost while pgvet read pg_stat_bgwriter: ")
    assert "\n" not in str(raised.value)
    assert os.listdir(tmp_path) == []


def test_a_server_asking_for_the_password_in_clear_text_gets_none(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever listens at the server's address or socket (the threat above) could ask libpq for the password in
    clear text (AuthenticationCleartextPassword), and libpq sent it: PGPASSWORD's, the DSN's or .pgpass's."""
    if psycopg.pq.version() < 160000:
        pytest.skip("libpq before 16 has no require_auth")
    monkeypatch.setenv("PGPASSWORD", "hunter2-env")
    monkeypatch.delenv("PGREQUIREAUTH", raising=False)
    with FakeServer(answers_with(standard_answers()), ask_password=True) as server:
        for dsn in (server.dsn(), server.dsn("password=hunter2-dsn"),
                    f"postgresql://postgres:hunter2-uri@127.0.0.1:{server.port}/postgres?sslmode=disable"):
            with pytest.raises(InputError) as raised:
                collect_command(tmp_path / "out", dsn)
            assert "server requested a cleartext password" in str(raised.value)
            assert "add require_auth=password to --dsn" in str(raised.value)
            assert "hunter2" not in str(raised.value)
        done = pgvet("check", "--no-input", "--dsn", server.dsn())
        assert done.returncode == 2 and "require_auth=password" in done.stderr, done.stderr
        assert server.passwords == []
        assert os.listdir(tmp_path) == []
        # the user's choice, for a server that authenticates with LDAP or PAM
        collect_command(tmp_path / "out", server.dsn("require_auth=password"))
        monkeypatch.setenv("PGREQUIREAUTH", "password")
        collect_command(tmp_path / "out2", server.dsn())
        monkeypatch.delenv("PGREQUIREAUTH")
        # or the connection service's (pg_service.conf): pgvet's own require_auth overrode it
        services = tmp_path / "services.conf"
        services.write_text(f"[ldap]\nhost=127.0.0.1\nport={server.port}\nsslmode=disable\nrequire_auth=password\n"
                            f"[plain]\nhost=127.0.0.1\nport={server.port}\nsslmode=disable\n")
        monkeypatch.setenv("PGSERVICEFILE", str(services))
        collect_command(tmp_path / "out3", "service=ldap dbname=postgres user=postgres")
        with pytest.raises(InputError, match="server requested a cleartext password"):
            collect_command(tmp_path / "out4", "service=plain dbname=postgres user=postgres")
    assert server.passwords == ["hunter2-env", "hunter2-env", "hunter2-env"]


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m"


def test_a_server_refusal_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    """The server's error text is its own to choose: `pgvet check` printed it raw (a terminal's title set,
    its screen cleared), where `collect` and every other error go through the one-line escape."""
    with FakeServer(answers_with(standard_answers()), refusal=f"no {ESCAPES}\nsecond line") as server:
        for command in (["check", "--no-input"], ["collect", "-o", str(tmp_path / "out")]):
            done = pgvet(*command, "--dsn", server.dsn())
            assert done.returncode == 2, done.stderr
            error = done.stderr.strip().splitlines()[-1]
            assert "pgvet: error: " in error and "no \\x1b]0;pwned\\x07\\x1b[2J\\x9b31m; second line" in error, error
            assert not any(char in done.stdout + done.stderr for char in "\x1b\x07\x9b"), done.stderr


def test_answers_that_make_no_sense_are_recorded_gaps(tmp_path: Path) -> None:
    answers = standard_answers()
    answers["FROM pg_settings"] = Rows(SETTINGS_COLUMNS, (
        *standard_settings("/var/lib/postgresql/16/main")[1:-1],
        setting_row("max_wal_senders", "lots", vartype="integer", context="postmaster"),
        setting_row("work_mem", "x" * (2 << 20)),
        (None, "1", None, "integer", "user", "default", None, None, "1", "1", "f"),
        setting_row("random_page_cost", "NaN", vartype="real", context="user"),
        setting_row("shared_buffers", "16384", source="configuration file", sourcefile="/etc/x.conf", sourceline="-5")))
    answers["SELECT version()"] = Rows((("version", TEXT), ("current_user", TEXT), ("rolsuper", BOOL),
                                        ("a", BOOL), ("b", BOOL), ("start", FLOAT8)),
                                       (("PostgreSQL 16.2", "postgres", "t", "t", "t", "NaN"),))
    answers["FROM pg_show_all_file_settings()"] = Rows(FILE_SETTINGS_COLUMNS[:2], (("/etc/x.conf", "1"),))
    answers["FROM pg_database d"] = Rows((("datname", TEXT), ("size", NUMERIC), ("temp_files", INT8),
                                          ("temp_bytes", INT8), ("blks_hit", INT8), ("blks_read", INT8),
                                          ("age", INT8), ("mxid_age", INT8)),
                                         (("app", "NaN", "0", "0", "1", "1", "1", "1"),
                                          ("postgres", "7", None, None, None, None, None, None)))
    answers["sum(temp_files)"] = Rows((("sum", NUMERIC),) * 4, (("NaN", "1" + "0" * 30, "950", "120"),))
    answers["FROM pg_stat_bgwriter"] = Rows((("checkpoints_timed", INT8), ("checkpoints_req", INT8),
                                             ("stats_reset", TEXT), ("wal_bytes", INT8)), (("lots", "3", None, None),))
    answers["FROM pg_stat_activity"] = one("count", TEXT, "lots")
    with FakeServer(answers_with(answers)) as server:
        snapshot = collect_command(tmp_path / "out", server.dsn())
    text = (snapshot / "pg_settings.json").read_text()
    live = parse_pg_settings_json(text, "pg_settings.json")
    assert {gap.what: gap.error for gap in live.unavailable} == {
        "pg_settings": ("5 row(s) that are not what the view holds were left out (the first: 'lots' is not a "
                        "whole number)"),
        "server identity": "the server answered nan where a finite number was expected",
        "pg_file_settings": "the server answered 2 columns where 7 were expected",
        "database sizes": ("1 row(s) that are not what the view holds were left out (the first: Decimal('NaN') "
                           "where a whole number was expected)"),
        "pg_stat_database": "the server answered Decimal('NaN') where a whole number was expected",
        "pg_stat_bgwriter": "the server's answer cannot be read: invalid literal for int() with base 10: 'lots'",
        "pg_stat_activity": "the server answered 'lots' where a whole number was expected",
    }
    assert "max_wal_senders" not in live.settings and "work_mem" not in live.settings
    assert live.file_settings == () or live.file_settings is None
    assert [database.name for database in live.databases] == ["postgres"]
    facts = live_facts(live)
    assert "live.connections" not in facts and "live.checkpoints_timed" not in facts
    done = pgvet("lint", str(snapshot), "--format", "json")
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr


# --- item 9: Ctrl-C ------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["new", "empty"])
def test_ctrl_c_during_collect_is_one_line_and_leaves_nothing(tmp_path: Path, given: str) -> None:
    answers = standard_answers()
    answers["FROM pg_show_all_file_settings()"] = Hang()
    output = tmp_path / "out"
    if given == "empty":
        output.mkdir()
    with FakeServer(answers_with(answers)) as server:
        process = subprocess.Popen([sys.executable, "-m", "pgvet", "collect", "--dsn", server.dsn(), "-o",
                                    str(output)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not any("pg_show_all_file_settings" in query for query in server.queries):
            assert time.monotonic() < deadline and process.poll() is None, process.communicate()
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert (process.returncode, out, err) == (130, "", "pgvet: interrupted; nothing written\n")
    assert os.listdir(tmp_path) == ([] if given == "new" else ["out"])
    assert given == "new" or os.listdir(output) == []


# --- item 2: a real server's superuser plants a link -------------------------------------------------------


def test_a_superuser_linking_postgresql_auto_conf_to_a_root_file_gets_nothing(tmp_path: Path) -> None:
    """The review's attack on a real cluster: COPY … TO PROGRAM 'ln -sf …' makes postgresql.auto.conf a link to
    a file only root may read; root's pgvet collect copied it into the snapshot."""
    require_postgres(MAJOR)
    secret = tmp_path / "shadow"
    secret.write_text(f"root:{SECRET}:19000::::::\n")
    secret.chmod(0o600)
    with running_cluster(MAJOR) as cluster:
        cluster.sql(f"COPY (SELECT 1) TO PROGRAM 'ln -sf {secret} postgresql.auto.conf'")
        assert (cluster.data / "postgresql.auto.conf").is_symlink()
        snapshot = collect_command(tmp_path / "out", cluster.dsn())
    assert SECRET.encode() not in _every_byte(snapshot)
    assert "postgresql.auto.conf" not in _files(snapshot) and "postgresql.conf" in _files(snapshot)
    auto_conf = cluster.data / "postgresql.auto.conf"
    assert {"what": str(auto_conf), "error": f"not copied: {auto_conf} is a symbolic link, which pgvet does not "
            "follow"} in _manifest(snapshot)["failed"]  # type: ignore[operator]


def test_a_database_owner_cannot_run_code_in_a_superusers_collect(tmp_path: Path) -> None:
    """The review's attack: the (non-superuser) owner of a database puts its schema before pg_catalog for every
    session there, with a version() that runs COPY … TO PROGRAM when a superuser calls it; a DBA's collect of that
    database ran it. pgvet's session names its search_path at connection, which overrides the database's."""
    require_postgres(MAJOR)
    import psycopg

    marker = tmp_path / "ran"
    with running_cluster(MAJOR) as cluster:
        cluster.sql("CREATE ROLE app LOGIN PASSWORD 'app'")
        cluster.sql("CREATE DATABASE appdb OWNER app")
        in_appdb = cluster.dsn().replace("dbname=postgres", "dbname=appdb")
        with psycopg.connect(cluster.dsn("app", "app").replace("dbname=postgres", "dbname=appdb"),
                             autocommit=True) as owner:
            owner.execute("ALTER DATABASE appdb SET search_path = public, pg_catalog")
            owner.execute(
                "CREATE FUNCTION public.version() RETURNS text LANGUAGE plpgsql AS $$ BEGIN "
                "IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN "
                f"EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch {marker}'''; END IF; "
                "RETURN 'PostgreSQL 99.0 (hijacked)'; END $$")
        snapshot = collect_command(tmp_path / "out", in_appdb)
    assert not marker.exists()
    live = parse_pg_settings_json((snapshot / "pg_settings.json").read_text(), "pg_settings.json")
    assert "hijacked" not in live.version and live.version.startswith(f"PostgreSQL {MAJOR}.")


def test_a_lock_on_pg_settings_is_a_gap_not_a_hang(tmp_path: Path) -> None:
    """A session holding pg_settings locked hung collect forever: its first query ran before lock_timeout."""
    require_postgres(MAJOR)
    import psycopg

    with running_cluster(MAJOR) as cluster, psycopg.connect(cluster.dsn()) as locker:
        locker.execute("LOCK TABLE pg_settings IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        snapshot = collect_command(tmp_path / "out", cluster.dsn(), timeout=1)
        assert time.monotonic() - started < 5
    live = parse_pg_settings_json((snapshot / "pg_settings.json").read_text(), "pg_settings.json")
    assert [(gap.what, gap.error) for gap in live.unavailable] == [
        ("pg_settings", "canceling statement due to lock timeout")]
    assert live.settings == {}


# --- item 4: secrets ---------------------------------------------------------------------------------------


def test_secrets_planted_everywhere_are_nowhere_in_what_pgvet_writes_or_prints(tmp_path: Path) -> None:
    """Secrets in the server's settings and files (commands, a custom setting, a connection string, in
    comments too), in the DSN (a password, a misspelt key, a URI in dbname=), in PGPASSWORD, and the kernel's
    TCP Fast Open key: every file written and every byte printed is searched for each."""
    require_postgres(MAJOR)
    secrets = {name: f"{name}-S3cret-{index}" for index, name in enumerate(
        ("Archive", "Old", "Restore", "Cleanup", "End", "Passphrase", "Ext", "Conn", "Auto", "Login", "Typo",
         "Nested", "Wrong"))}
    with running_cluster(MAJOR) as cluster:
        with (cluster.data / "postgresql.conf").open("a") as conf:
            conf.write(f"archive_command = 'curl -u u:{secrets['Archive']} https://x/%f'\n"
                       f"#archive_command = 'old {secrets['Old']}'\n"
                       f"restore_command = 'fetch --token {secrets['Restore']} %f %p'\n"
                       f"archive_cleanup_command = 'clean {secrets['Cleanup']}'\n"
                       f"recovery_end_command = bin/{secrets['End']}\n"
                       f"ssl_passphrase_command = 'echo {secrets['Passphrase']}'\n"
                       f"myext.api_key = '{secrets['Ext']}'\n"
                       f"primary_conninfo = 'host=primary user=rep password={secrets['Conn']}'\n")
        with (cluster.data / "postgresql.auto.conf").open("a") as auto_conf:
            auto_conf.write(f"myext.token = '{secrets['Auto']}'\n")
        cluster.sql(f"CREATE ROLE watcher LOGIN PASSWORD '{secrets['Login']}' IN ROLE pg_monitor")
        cluster.sql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 20  # the reload only signals: wait until a new session sees it
        while cluster.sql("SELECT setting <> '' FROM pg_settings WHERE name = 'primary_conninfo'") != [(True,)]:
            assert time.monotonic() < deadline, "the reload was never seen"
            time.sleep(0.05)
        socket_dsn = f"host={cluster.socket_dir} port=5432 dbname=postgres"
        runs = [
            pgvet("collect", "--dsn", f"{socket_dsn} user=postgres", "-o", str(tmp_path / "superuser")),
            pgvet("collect", "--dsn", f"{socket_dsn} user=watcher", "-o", str(tmp_path / "monitor"),
                  env={"PGPASSWORD": secrets["Login"]}),
            pgvet("check", "--dsn", f"{socket_dsn} user=watcher password={secrets['Login']}", "--no-input",
                  "--snapshot", str(tmp_path / "check")),
            pgvet("check", "--dsn", f"{socket_dsn} user=postgres", "--no-input", "--format", "json"),
            pgvet("collect", "--dsn", f"{socket_dsn} user=watcher passwrd={secrets['Typo']}",
                  "-o", str(tmp_path / "typo")),
            pgvet("collect", "--dsn", f"host={cluster.socket_dir} port=5432 dbname='postgresql://watcher:"
                  f"{secrets['Nested']}@/postgres?host={cluster.socket_dir}' user=postgres", "-o", str(tmp_path / "n")),
            pgvet("collect", "--dsn", f"{socket_dsn} user=watcher", "-o", str(tmp_path / "wrong"),
                  env={"PGPASSWORD": secrets["Wrong"]}),
        ]
    assert [run.returncode for run in runs] == [0, 0, 1, 1, 2, 2, 2], [run.stderr for run in runs]
    assert all(run.stderr.splitlines()[-1].startswith("pgvet: error: cannot connect to PostgreSQL") for run in runs[4:])
    # a secret on the command line is in the process list for every user (ps): said, where it belongs said too
    assert [run.stderr.startswith("pgvet: notice: --dsn holds a password") for run in runs] == [
        False, False, True, False, True, True, False]
    assert 'database "postgresql://watcher:***@/postgres' in runs[5].stderr  # the server echoed it: scrubbed
    printed = "".join(run.stdout + run.stderr for run in runs).encode()
    written = b"".join(_every_byte(tmp_path / name) for name in ("superuser", "monitor", "check"))
    for name, secret in secrets.items():
        assert secret.encode() not in printed, name
        assert secret.encode() not in written, name
    # The names stay, with their values redacted, where pgvet wrote them.
    live = parse_pg_settings_json((tmp_path / "superuser" / "pg_settings.json").read_text(), "pg_settings.json")
    assert {name: live.settings[name].setting for name in ("archive_command", "primary_conninfo")} == {
        "archive_command": "***", "primary_conninfo": "host=primary user=rep password=***"}
    assert live.file_settings is not None  # custom settings are not in pg_settings, but in pg_file_settings
    assert {row.name: row.setting for row in live.file_settings if row.name and row.name.startswith("myext.")} == {
        "myext.api_key": "***", "myext.token": "***"}
    conf = (tmp_path / "superuser" / "postgresql.conf").read_text()
    assert "archive_command = '***'\n#archive_command = '***'\n" in conf and "recovery_end_command = '***'\n" in conf
    fastopen = Path("/proc/sys/net/ipv4/tcp_fastopen_key")
    if os.access(fastopen, os.R_OK):
        sysctl = (tmp_path / "superuser" / "sysctl.txt").read_text()
        assert "net.ipv4.tcp_fastopen_key = ***\n" in sysctl
        assert fastopen.read_text().strip() not in sysctl


def test_ctrl_c_during_check_says_what_was_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pgvet check: Ctrl-C while it collects leaves nothing (its temporary snapshot removed), one line, 130;
    once the snapshot it keeps is written, the line says where it is."""
    answers = standard_answers()
    answers["FROM pg_show_all_file_settings()"] = Hang()
    (tmp_path / "tmp").mkdir()
    with FakeServer(answers_with(answers)) as server:
        process = subprocess.Popen([sys.executable, "-m", "pgvet", "check", "--dsn", server.dsn(), "--no-input"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
        deadline = time.monotonic() + 60
        while not any("pg_show_all_file_settings" in query for query in server.queries):
            assert time.monotonic() < deadline and process.poll() is None, process.communicate()
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert (process.returncode, out, err) == (130, "", "pgvet: interrupted; nothing written\n")
    assert os.listdir(tmp_path / "tmp") == []

    from pgvet.interrupt import Interrupted
    from pgvet.live import check as check_module
    from pgvet.live.check import run_check
    from pgvet.run.options import LintOptions

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(check_module, "lint", interrupted)
    with FakeServer(answers_with(standard_answers())) as server, pytest.raises(Interrupted) as raised:
        run_check(server.dsn(), LintOptions(), snapshot=tmp_path / "kept", answers_file=None, prompt=None)
    assert raised.value.left == f"the snapshot is kept in {tmp_path / 'kept'}"
    assert (tmp_path / "kept" / "collect.json").is_file()


def _collected_with_includes(tmp_path: Path, postgres_user: str, names: tuple[str, ...],
                             text: str = "work_mem = '9MB'\n", copied: frozenset[str] = frozenset(),
                             file_settings: tuple[tuple[str | None, ...], ...] = ()) -> tuple[Path, Path]:
    """A server whose postgresql.conf includes each of ``names`` (each holding ``text``: a setting of work_mem),
    collected (``copied``: those of them the snapshot holds): the snapshot, and the server's configuration
    directory. ``file_settings``: rows its pg_file_settings adds."""
    base = pgservers.make_tempdir("pgvet-fakepg-")
    try:
        data, config, sockets = base / "data", base / "etc" / "main", base / "sock"
        for directory in (data, sockets, *{(config / name).parent for name in names}):
            directory.mkdir(parents=True, exist_ok=True)
        (config / "postgresql.conf").write_text(
            "".join(f"include_dir '{name.split('/')[0]}'\n" if name.startswith("sysctl.d/") else f"include '{name}'\n"
                    for name in names) + "work_mem = '8MB'\n")
        for name in names:
            (config / name).write_text(text)
        (data / "postgresql.auto.conf").write_text("")
        pgservers.chown_tree(base)
        answers = standard_answers(str(data))
        listed = answers["FROM pg_show_all_file_settings()"]
        assert isinstance(listed, Rows)
        answers["FROM pg_show_all_file_settings()"] = Rows(FILE_SETTINGS_COLUMNS, (*listed.rows, *file_settings))
        with serve_in_process(answers, data=data, socket_dir=sockets, user=postgres_user,
                              argv=["-D", str(data), "-c", f"config_file={config}/postgresql.conf"]):
            snapshot = collect_command(tmp_path / "out", f"host={sockets} port=5432 user=postgres")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert _files(snapshot) == OS_FILES | {"collect.json", "pg_settings.json", "postgresql.conf",
                                           "postgresql.auto.conf"} | copied
    return snapshot, config


@pytest.mark.parametrize("names", [
    # named as the snapshot's own inputs: copied, the snapshot would read them as the kernel's settings, the host's
    # memory or suppressions
    ("sysctl.conf", "meminfo", ".pgvet-ignore.yaml", "sysctl.d/10-x.conf"),
    # a server's superuser who writes `include '.pgvet.toml'` (the server never reloads it) had the collection, run
    # as root, write that file into the snapshot, root's and so trusted: `pgvet lint .` run in the snapshot applied
    # it (`ignore = ["PGV"]`); nor is a `.git` made in it, which would make the snapshot a repository, nor a baseline
    # that `pgvet baseline update` run there would read by default
    (".pgvet.toml", "pgvet.toml", "pyproject.toml", "conf.d/.pgvet.toml", ".git/config", "pgvet-baseline.json"),
], ids=["snapshot-inputs", "pgvet-and-git-configuration"])
def test_a_server_file_the_snapshot_must_not_hold_is_not_copied(tmp_path: Path, postgres_user: str,
                                                                 names: tuple[str, ...]) -> None:
    snapshot, config = _collected_with_includes(tmp_path, postgres_user, names)
    reason = "not copied: its name is one the snapshot uses for another file"
    assert _manifest(snapshot)["failed"] == [{"what": f"{config}/{name}", "error": reason} for name in names]


@pytest.mark.parametrize(("names", "text"), [
    (("docker-compose.yml", "conf.d/compose.yaml"),
     "services:\n  db: {image: postgres:16, command: postgres -c fsync=on}\n"),
    (("postgresql.service.d/override.conf",), "[Service]\nMemoryMax=1G\n"),
], ids=["compose", "systemd-drop-in"])
def test_a_server_file_lint_would_read_as_a_configuration_document_is_not_copied(
        tmp_path: Path, postgres_user: str, names: tuple[str, ...], text: str) -> None:
    # The lint of a snapshot reads the configuration documents in it (compose, Patroni, Kubernetes, systemd): a
    # superuser's `include 'docker-compose.yml'` made the snapshot a compose project, its values declared.
    snapshot, config = _collected_with_includes(tmp_path, postgres_user, names, text)
    failed = _manifest(snapshot)["failed"]
    assert [each["what"] for each in failed] == [f"{config}/{name}" for name in names]  # type: ignore[index]
    assert all(each["error"].startswith("not copied: lint would read it as a configuration document")  # type: ignore[index]
               for each in failed)


KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEF/AASCBKcwggSjAgEAAoIBAQC7"  # parses as a setting: `MIIE… = /AAS…`
PGPASS = "db.example:5432:app:app:Pgp4ss-S3cret"  # parses as a placeholder's setting: `db.example = :5432:…`


def test_what_a_superuser_includes_that_is_no_configuration_is_not_copied_as_it_is(tmp_path: Path,
                                                                                 postgres_user: str) -> None:
    # `include 'server.key'` or `include '.pgpass'` by a superuser: PostgreSQL refuses the lines (its log says
    # where), the collection copied them all, as root, into a snapshot that goes to tickets and CI. A private key is
    # not copied at all (some of its lines parse as settings); of another file, each line PostgreSQL refuses is
    # copied as `***`, refused at the same line, and a placeholder's value is redacted as any secret.
    key = f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\n-----END PRIVATE KEY-----\n"
    snapshot, config = _collected_with_includes(tmp_path, postgres_user, ("server.key",), key)
    assert _manifest(snapshot)["failed"] == [{"what": f"{config}/server.key",
                                              "error": "not copied: it holds a private key"}]
    text = f"{PGPASS}\nlocalhost:5432:*:app:Pgp4ss-S3cret\nwork_mem = '9MB'\n"
    snapshot, _ = _collected_with_includes(tmp_path / "pgpass", postgres_user, ("pgpass.conf",), text,
                                           frozenset({"pgpass.conf"}))
    assert (snapshot / "pgpass.conf").read_text() == "db.example'***'\n***\nwork_mem = '9MB'\n"
    assert b"Pgp4ss-S3cret" not in _every_byte(snapshot) and KEY_BODY.encode() not in _every_byte(snapshot)


def test_what_a_superuser_includes_that_parses_as_settings_of_no_parameter_is_not_copied(
        tmp_path: Path, postgres_user: str) -> None:
    # `include 'environment'` (an environment file: KEY=value lines, a service's secrets): every line parses as a
    # setting, of a name PostgreSQL does not know (it refuses the file, pg_file_settings lists each with its error),
    # and the collection copied them all, and wrote pg_file_settings' values, into the snapshot. A name the server
    # does not know, nor any major (an alias, sort_mem: a setting), has its value redacted; its name stays, so the
    # snapshot's lint says the same unknown parameters (PGV401).
    text = ("PGPASSWORD=Env-S3cret-1\nAWS_SECRET_ACCESS_KEY = 'Env-S3cret-2'\nGITHUB_TOKEN=Env-S3cret-3 # ci\n"
            "sort_mem = '9MB'\nwork_mem = '9MB'\n#PGHOST=db.example\n")
    snapshot, _ = _collected_with_includes(tmp_path, postgres_user, ("environment.conf",), text,
                                           frozenset({"environment.conf"}), file_settings=(
        ("/etc/main/environment.conf", "1", "3", "PGPASSWORD", "Env-S3cret-1", "f",
         "unrecognized configuration parameter"),
        ("/etc/main/environment.conf", "4", "4", "sort_mem", "9MB", "t", None)))
    assert (snapshot / "environment.conf").read_text() == (
        "PGPASSWORD='***'\nAWS_SECRET_ACCESS_KEY = '***'\nGITHUB_TOKEN='***' # ci\nsort_mem = '9MB'\n"
        "work_mem = '9MB'\n#PGHOST=db.example\n")
    rows = {row["name"]: row["setting"] for row in json.loads((snapshot / "pg_settings.json").read_text())[
        "file_settings"]}
    assert rows["PGPASSWORD"] == "***" and rows["sort_mem"] == "9MB" and rows["shared_buffers"] == "128MB"
    assert b"Env-S3cret" not in _every_byte(snapshot)


def test_configuration_files_past_what_a_host_may_hold_are_not_copied(tmp_path: Path, postgres_user: str) -> None:
    # Each file was bounded (16 MiB), not their sum: a superuser's include_dir of a thousand 16 MiB files (sparse:
    # no disk) had root's collection hold 16 GiB, on the database host. The lint refuses a host whose files hold
    # more than 16 MiB together: what is past it is not copied, nor read.
    names = tuple(f"conf.d/{number}.conf" for number in range(6))
    text = "#" + " " * (5 << 20) + "\nwork_mem = '9MB'\n"
    snapshot, config = _collected_with_includes(tmp_path, postgres_user, names, text, frozenset(names[:3]))
    reason = ("not copied: the server's configuration files copied already hold 15 MiB; with this one they would "
              "hold more than the 16 MiB pgvet lints of a host")
    assert _manifest(snapshot)["failed"] == [{"what": f"{config}/{name}", "error": reason} for name in names[3:]]


def test_configuration_files_of_more_lines_than_a_host_may_hold_are_not_copied(tmp_path: Path,
                                                                               postgres_user: str) -> None:
    # Every line of a copy is parsed (its refused lines masked), each refused one held as a problem: a superuser's
    # 16 MiB include of one-letter lines took root's collection a minute and gigabytes on the database host, for a
    # snapshot whose lint refuses a host of more than 100 000 lines. Past those lines nothing more is copied.
    names = tuple(f"conf.d/{number}.conf" for number in range(3))
    snapshot, config = _collected_with_includes(tmp_path, postgres_user, names, "x\n" * 40_000, frozenset(names[:2]))
    [failed] = _manifest(snapshot)["failed"]
    assert failed["what"] == f"{config}/{names[2]}"
    assert re.fullmatch(r"not copied: the server's configuration files copied already hold \d+ lines; with this one "
                        r"they would hold more than the 100000 pgvet lints of a host", failed["error"])
    assert (snapshot / names[0]).read_text() == "***\n" * 40_000


def test_a_server_answering_more_than_any_server_holds_is_not_read_further(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each value and the rows of a query were bounded, not their sum: 100 000 rows of a megabyte each were all
    fetched into memory (execute() holds a result whole) before any bound was checked. Streamed, counted as they
    come, the answers stop the reading at MAX_ANSWERED (here 1 MiB) with one line, exit 2, nothing written."""
    monkeypatch.setattr(server_module, "MAX_ANSWERED", 1 << 20)
    answers = standard_answers()
    name = "x" * 100_000
    answers["FROM pg_database d"] = Rows(
        (("datname", TEXT), ("size", INT8), ("temp_files", INT8), ("temp_bytes", INT8), ("blks_hit", INT8),
         ("blks_read", INT8), ("age", INT4), ("mxid_age", INT4)),
        tuple((f"{name}{number}", "1", "0", "0", "1", "1", "1", "1") for number in range(40)))
    with FakeServer(answers_with(answers)) as server, pytest.raises(InputError) as raised:
        collect_command(tmp_path / "out", server.dsn())
    assert str(raised.value).startswith("the server answered more than 1 MiB of text while pgvet read ")
    assert os.listdir(tmp_path) == []
