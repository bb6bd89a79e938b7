"""Passwords never leave pgvet: DSNs, error messages and copied configuration files are redacted."""

from __future__ import annotations

import pytest

from pgvet.live.redact import redact_conf_text, redact_dsn, scrub


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
])
def test_redact_dsn(dsn: str, redacted: str) -> None:
    assert redact_dsn(dsn) == redacted


def test_scrub_removes_the_password_from_a_message() -> None:
    dsn = "host=db1 password='pa ss' user=x"
    assert scrub('invalid option near "pa ss" and pa ss', dsn) == 'invalid option near "***" and ***'
    uri = "postgresql://x:p%40ss@db1/db"
    assert scrub("saw p@ss and p%40ss", uri) == "saw *** and ***"
    assert scrub("nothing secret", "host=db1") == "nothing secret"


def test_redact_conf_text_keeps_every_other_byte() -> None:
    text = (
        "# primary_conninfo = 'password=commented'\n"
        "work_mem = '12MB'\n"
        "primary_conninfo = 'host=primary user=rep password=''x y'' port=5432'   # replica\n"
        "Primary_Conninfo='password=plain'\n"
        "application_name = 'password=notasecret'\n"
    )
    assert redact_conf_text(text) == (
        "# primary_conninfo = 'password=***'\n"
        "work_mem = '12MB'\n"
        "primary_conninfo = 'host=primary user=rep password=*** port=5432'   # replica\n"
        "Primary_Conninfo='password=***'\n"
        "application_name = 'password=notasecret'\n"
    )
