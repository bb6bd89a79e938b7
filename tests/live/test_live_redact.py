"""Secrets never leave pgvet: DSNs, error messages, settings, copied configuration files and kernel parameters
are redacted by their shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgvet.live.host import walk_proc_sys
from pgvet.live.redact import (
    redact_conf_text,
    redact_dsn,
    redact_setting,
    redact_sysctl_text,
    scrub,
)


@pytest.mark.parametrize(("dsn", "redacted"), [
    ("host=db1 user=app password=s3cret dbname=prod", "host=db1 user=app password=*** dbname=prod"),
    ("password = 'two words' host=db1", "password = *** host=db1"),
    (r"password='it\'s' host=db1", "password=*** host=db1"),
    (r"host=db1 password=back\ slash", "host=db1 password=***"),
    ("host=db1 password=", "host=db1 password=***"),
    ("host=db1 sslpassword=keyphrase sslmode=verify-full", "host=db1 sslpassword=*** sslmode=verify-full"),
    ("host=db1 user=app", "host=db1 user=app"),
    ("", ""),
    ("host=db1 password='never closed", "host=db1 password=***"),
    ("postgresql://app:s3cret@db1:5432/prod", "postgresql://app:***@db1:5432/prod"),
    ("postgres://app:p%40ss@db1,db2:5433/prod?sslmode=require&password=other",
     "postgres://app:***@db1,db2:5433/prod?sslmode=require&password=***"),
    ("postgresql://app@db1/prod?%70assword=encoded", "postgresql://app@db1/prod?%70assword=***"),
    ("postgresql://app@db1/prod?sslpassword=k", "postgresql://app@db1/prod?sslpassword=***"),
    ("postgresql://app:s3cret@/prod?host=/run/postgresql", "postgresql://app:***@/prod?host=/run/postgresql"),
    ("postgresql:///prod?host=/tmp&port=5433", "postgresql:///prod?host=/tmp&port=5433"),
    ("postgresql://a%3Ab@db1", "postgresql://a%3Ab@db1"),
    # any keyword libpq does not show is a secret: a misspelt one, a newer libpq's
    ("host=db1 passwrd=typo user=x", "host=db1 passwrd=*** user=x"),
    ("host=db1 oauth_client_secret=s sslmode=require", "host=db1 oauth_client_secret=*** sslmode=require"),
    ("postgresql://db1/app?passwd=typo&port=5", "postgresql://db1/app?passwd=***&port=5"),
    # a dbname that is itself a connection string or a URI is redacted in turn
    ("host=db1 dbname='postgresql://u:nested@h/db'", "host=db1 dbname='postgresql://u:***@h/db'"),
    ("dbname='host=h password=inner' user=x", "dbname='host=h password=***' user=x"),
    ("postgresql://db1/app?dbname=postgresql%3A%2F%2Fu%3Ap%40h", "postgresql://db1/app?dbname=***"),
    # a token without '=' may be anything: the rest goes
    ("host=db1 hunter2 user=x", "host=db1 ***"),
    # a password holding '/', '?' or '#' not percent-encoded (a base64 one): libpq ends the authority there, and the
    # whole DSN, password and all, was printed and written as it was
    ("postgresql://app:Ab3/x9+Q@db1/app", "postgresql://app:***@db1/app"),
    ("postgresql://app:Ab3?x9=@db1:5432/app?password=also", "postgresql://app:***@db1:5432/app?password=***"),
    ("postgresql://app@db1/app?application_name=a", "postgresql://app@db1/app?application_name=a"),
    # options: each setting keeps its name, its value redacted as a configuration file's (a custom setting, a
    # command), and any other word but a flag or a number goes — it was printed and written as it was
    ("host=db1 options='-c statement_timeout=5s -B 1024'", "host=db1 options='-c statement_timeout=5s -B 1024'"),
    ("host=db1 options='-c myapp.api_key=S3cr3t --work_mem=64MB'",
     "host=db1 options='-c myapp.api_key=*** --work_mem=64MB'"),
    ("options='-carchive_command=curl hunter2' host=db1", "options='-carchive_command=*** ***' host=db1"),
    ("postgresql://app@db1/app?options=-c%20myapp.token%3Dtopsecret",
     "postgresql://app@db1/app?options=-c%20myapp.token%3D%2A%2A%2A"),
    ("postgresql://app@db1/app?options=-c%20geqo%3Doff", "postgresql://app@db1/app?options=-c%20geqo%3Doff"),
])
def test_redact_dsn(dsn: str, redacted: str) -> None:
    assert redact_dsn(dsn) == redacted


def test_scrub_removes_the_password_from_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    dsn = "host=db1 password='pa ss' user=x"
    assert scrub('invalid option near "pa ss" and pa ss', dsn) == 'invalid option near "***" and ***'
    uri = "postgresql://x:p%40ss@db1/db"
    assert scrub("saw p@ss and p%40ss", uri) == "saw *** and ***"
    assert scrub("nothing secret", "host=db1") == "nothing secret"
    nested = "dbname='postgresql://u:n3sted@/db' user=postgres"
    assert scrub('database "postgresql://u:n3sted@/db" does not exist', nested) == (
        'database "postgresql://u:***@/db" does not exist')
    unencoded = "postgresql://app:Ab3/x9+Q@db1/app"  # what libpq took for the database holds a piece of it
    assert scrub('database "x9+Q@db1/app" does not exist', unencoded) == 'database "***@db1/app" does not exist'
    options = "host=db1 options='-c myapp.api_key=S3cr3t'"
    assert scrub('unrecognized configuration parameter "myapp.api_key=S3cr3t"', options) == (
        'unrecognized configuration parameter "myapp.api_key=***"')
    monkeypatch.setenv("PGPASSWORD", "fr0m-env")
    assert scrub("echoed fr0m-env", "host=db1") == "echoed ***"


@pytest.mark.parametrize(("name", "value", "redacted"), [
    ("archive_command", "cp %p /x/%f", "***"),
    ("ssl_passphrase_command", "echo s", "***"),
    ("Restore_Command", "x", "***"),
    ("archive_command", "", ""),  # not set: nothing to hide, and worth seeing
    ("myext.api_key", "k", "***"),
    # a custom setting's value may be anything, but those of pg_stat_statements the rules read (its shared memory)
    # are kept in the only form the extension accepts
    ("pg_stat_statements.max", "5000", "5000"),
    ("pg_stat_statements.max", "hunter2", "***"),  # a placeholder (the library not loaded) takes any text
    ("PG_STAT_STATEMENTS.TRACK", "top", "top"),
    ("pg_stat_statements.save", "off", "off"),
    ("pg_stat_statements.save", "off and s3cret", "***"),
    ("pg_stat_statements.other", "5000", "***"),
    ("primary_conninfo", "host=p password=s", "host=p password=***"),
    ("work_mem", "4MB", "4MB"),
    ("archive_mode", "on", "on"),
    ("application_name", "password=notasecret", "password=notasecret"),
])
def test_settings_are_redacted_by_the_shape_of_their_name(name: str, value: str, redacted: str) -> None:
    assert redact_setting(name, value) == redacted
    assert redact_setting(name, None) is None


def test_redact_conf_text_keeps_every_other_byte() -> None:
    text = (
        "# primary_conninfo = 'password=commented'\n"
        "work_mem = '12MB'\n"
        "primary_conninfo = 'host=primary user=rep password=''x y'' port=5432'   # replica\n"
        "Primary_Conninfo='password=plain'\n"
        "application_name = 'password=notasecret'\n"
        "archive_command = 'cp %p /mnt/%f' # to the archive\n"
        "#restore_command = 'old one'\n"
        "#archive_command = ''\t\t# command to use to archive a WAL file\n"
        "recovery_end_command=bin/end\n"
        "myext.api_key 'k3y'\n"
        "archive_cleanup_command = 'never closed\n"
        "ssl_passphrase_command = bad\\ line s3cret # refused by PostgreSQL\n"
        "# signal.  If you edit the file on a running system, you have to SIGHUP the\n"
        "\t\t\t\t# e.g. 'test ! -f /mnt/server/archivedir/%f && cp %p /mnt/server/archivedir/%f'\n"
    )
    assert redact_conf_text(text) == (
        "# primary_conninfo = 'password=***'\n"
        "work_mem = '12MB'\n"
        "primary_conninfo = 'host=primary user=rep password=*** port=5432'   # replica\n"
        "Primary_Conninfo='password=***'\n"
        "application_name = 'password=notasecret'\n"
        "archive_command = '***' # to the archive\n"
        "#restore_command = '***'\n"
        "#archive_command = ''\t\t# command to use to archive a WAL file\n"
        "recovery_end_command='***'\n"
        "myext.api_key '***'\n"
        "archive_cleanup_command = '***'\n"
        "ssl_passphrase_command = '***'\n"
        "# signal.  If you edit the file on a running system, you have to SIGHUP the\n"
        "\t\t\t\t# e.g. 'test ! -f /mnt/server/archivedir/%f && cp %p /mnt/server/archivedir/%f'\n"
    )


def test_redact_conf_text_ends_lines_where_postgresql_does() -> None:
    """PostgreSQL's lexer ends a line at '\\n' only: a form feed or U+2028 in a quoted value is part of it (split
    there, the rest of the secret was kept, and the copy no longer parsed); a name may start with any non-ASCII
    letter, and a dotted one is a custom setting's."""
    text = ("archive_command = 'curl -u backup:\fFormFeedPw123 https://x/%f'\n"
            "restore_command = 'x\u2028 --password=LineSepPw77'\n"
            "\u00f1app.key = 'NonAsciiSecret42'\r\n"
            "work_mem = 4MB\x0b# a vertical tab, then a comment\n")
    assert redact_conf_text(text) == ("archive_command = '***'\n"
                                      "restore_command = '***'\n"
                                      "\u00f1app.key = '***'\r\n"
                                      "work_mem = 4MB\x0b# a vertical tab, then a comment\n")


def test_private_and_secret_kernel_parameters_are_redacted(tmp_path: Path) -> None:
    proc_sys = tmp_path / "sys"
    for name, mode in (("net/ipv4/tcp_fastopen_key", 0o600), ("net/ipv4/tcp_rmem", 0o644),
                       ("kernel/cad_pid", 0o600), ("net/ipv6/conf/eth0.100/stable_secret", 0o644)):
        (proc_sys / name).parent.mkdir(parents=True, exist_ok=True)
        (proc_sys / name).write_text("x\n")
        (proc_sys / name).chmod(mode)
    _, _, private = walk_proc_sys(proc_sys)
    assert private == {"net.ipv4.tcp_fastopen_key", "kernel.cad_pid"}
    text = ("kernel.cad_pid = 1\nnet.ipv4.tcp_fastopen_key = 0a1b-2c3d\nnet.ipv4.tcp_rmem = 4096\t131072\n"
            "net.ipv6.conf.eth0/100.stable_secret = fe80::1\n")
    assert redact_sysctl_text(text, private) == (
        "kernel.cad_pid = ***\nnet.ipv4.tcp_fastopen_key = ***\nnet.ipv4.tcp_rmem = 4096\t131072\n"
        "net.ipv6.conf.eth0/100.stable_secret = ***\n")
    # by name too, where the mode cannot be seen (a sysctl -a from elsewhere)
    assert redact_sysctl_text("net.ipv4.tcp_fastopen_key = 0a1b\n", frozenset()) == "net.ipv4.tcp_fastopen_key = ***\n"


def test_what_follows_a_value_on_a_line_postgresql_refuses_goes_with_the_secret_it_may_hold() -> None:
    """After a connection string with no secret of its own, a line PostgreSQL refuses (the server runs on with the
    old value) went on with the password, copied as it was: only a value that was redacted lost its tail."""
    text = ("primary_conninfo = 'host=x' 'password=TailSecret1'\n"
            "# primary_conninfo = 'host=y' password=TailSecret2 \r\n"
            "myext.mode = '' s3cret=TailSecret3\n"
            "pg_stat_statements.max = 5000 TailSecret4\n"
            "primary_conninfo = 'host=z'   # a comment stays\n"
            "work_mem = 4MB junk stays\n")
    assert redact_conf_text(text) == ("primary_conninfo = 'host=x'\n"
                                      "# primary_conninfo = 'host=y'\r\n"
                                      "myext.mode = ''\n"
                                      "pg_stat_statements.max = 5000\n"
                                      "primary_conninfo = 'host=z'   # a comment stays\n"
                                      "work_mem = 4MB junk stays\n")
