"""ALTER SYSTEM / DATABASE / ROLE … SET in migration files: exact values and lines, and what a real
server writes to postgresql.auto.conf for the same ALTER SYSTEM statements."""

from __future__ import annotations

import pytest

from pgconf_support.oracle import shared_oracle
from pgvet.errors import ParseError
from pgvet.inputs.alter_sql import AlterSet, parse_alter_sql, parse_alter_statements
from pgvet.inputs.postgresql_conf import ConfSetting
from pgvet.provenance import Source

MIGRATION = """-- tuning, café
ALTER SYSTEM SET work_mem = '64MB';
ALTER DATABASE app SET search_path TO app, public;
alter role reporting in database app set statement_timeout = 1.5;
ALTER USER ALL SET x.z = on;
SELECT 1;
ALTER SYSTEM SET Random_Page_Cost =
    1.1;
ALTER SYSTEM RESET work_mem; ALTER SYSTEM SET jit TO DEFAULT;
ALTER SYSTEM SET log_line_prefix = E'%m\\t';
ALTER DATABASE app SET work_mem FROM CURRENT;
"""


def test_statements_with_scope_value_and_line() -> None:
    assert parse_alter_statements(MIGRATION, "m.sql") == [
        AlterSet("system", None, None, "work_mem", "64MB", "'64MB'", True, Source("m.sql", 2)),
        AlterSet("database", "app", None, "search_path", "app, public", "app, public", False, Source("m.sql", 3)),
        AlterSet("role", "app", "reporting", "statement_timeout", "1.5", "1.5", False, Source("m.sql", 4)),
        AlterSet("role", None, None, "x.z", "on", "on", False, Source("m.sql", 5)),
        AlterSet("system", None, None, "random_page_cost", "1.1", "1.1", False, Source("m.sql", 8)),
        AlterSet("system", None, None, "work_mem", None, "", False, Source("m.sql", 9)),
        AlterSet("system", None, None, "jit", None, "", False, Source("m.sql", 9)),
        AlterSet("system", None, None, "log_line_prefix", "%m\t", "E'%m\\t'", True, Source("m.sql", 10)),
    ]


def test_alter_system_effect_drops_reset_settings() -> None:
    assert parse_alter_sql(MIGRATION, "m.sql") == [
        ConfSetting("random_page_cost", "1.1", "1.1", False, Source("m.sql", 8), "random_page_cost"),
        ConfSetting("log_line_prefix", "%m\t", "E'%m\\t'", True, Source("m.sql", 10), "log_line_prefix"),
    ]
    assert parse_alter_sql(MIGRATION + "ALTER SYSTEM RESET ALL;\n", "m.sql") == []


def test_bad_sql_is_a_parse_error_at_its_line() -> None:
    with pytest.raises(ParseError) as caught:
        parse_alter_statements("SELECT 1;\n\nALTER SYSTEM SET x = ;\n", "m.sql")
    assert caught.value.source == Source("m.sql", 3)
    assert caught.value.message == 'SQL syntax: syntax error at or near ";"'


STATEMENTS = [
    "ALTER SYSTEM SET work_mem = '64MB'",
    "ALTER SYSTEM SET enable_seqscan = off",
    "ALTER SYSTEM SET random_page_cost = 1.1",
    "ALTER SYSTEM SET max_connections = 50",
    "ALTER SYSTEM SET log_line_prefix = E'%m [%p]\\t'",
    "ALTER SYSTEM SET application_name = 'it''s'",
    "ALTER SYSTEM SET jit = true",
    "ALTER SYSTEM SET work_mem = '8MB'",
    "ALTER SYSTEM RESET enable_seqscan",
    "ALTER SYSTEM SET statement_timeout TO DEFAULT",
]


@pytest.mark.postgres
def test_alter_system_values_match_postgresql_auto_conf(pg_major: int) -> None:
    oracle = shared_oracle(pg_major)
    oracle.install({"postgresql.conf": b""})
    for statement in STATEMENTS:
        oracle.connection.execute(statement)
    rows = oracle.connection.execute(
        "SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf'"
        " ORDER BY seqno").fetchall()
    mine = {s.name: s.value for s in parse_alter_sql(";\n".join(STATEMENTS) + ";", "m.sql")}
    # ALTER SYSTEM keeps one line per name, where the name was first set: compare the values.
    assert dict(rows) == mine
    assert mine == {"work_mem": "8MB", "random_page_cost": "1.1", "max_connections": "50",
                    "log_line_prefix": "%m [%p]\t", "application_name": "it's", "jit": "true"}
