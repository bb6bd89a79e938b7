"""The expression compiler and evaluator: every construct, SQL's NULL rules, load-time type checks."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgvet.engine.compiler import CompileContext, ExpressionError, compile_expression
from pgvet.engine.quantities import parse_quantity
from pgvet.engine.runtime import Env, EvalError
from pgvet.provenance import Source
from pgvet.snapshot.facts import Fact, Item

SRC = Source("test.conf", 1)
CONTEXT = CompileContext(derived={}, params={"limit": "number", "label": "text"}, scope="mount")


def run(expression: str, facts: dict[str, object] | None = None, params: dict[str, object] | None = None) -> object:
    compiled = compile_expression(expression, CONTEXT)
    host = {name: Fact(name, value, SRC) for name, value in (facts or {}).items()  # type: ignore[arg-type]
            if not name.startswith("mount.")}
    item = Item(((name, value) for name, value in (facts or {}).items()  # type: ignore[misc]
                 if name.startswith("mount.")), SRC)
    return compiled.evaluate(Env(host, item, params or {}, {}, {}))


@pytest.mark.parametrize(("expression", "expected"), [
    ("1 + 2 * 3", 7),
    ("7 / 2", 3.5),
    ("7 % 3", 1),
    ("-7 % 3", -1),
    ("7.5 % 2", 1.5),
    ("-(2 - 5)", 3),
    ("1 / 0", None),
    ("1 % 0", None),
    ("2 > 1", True),
    ("2 <> 2", False),
    ("2 != 3", True),
    ("'abc' < 'abd'", True),
    ("'8GB'", 8 * 1024**3),
    ("'1.5MB' = 1572864", True),
    ("'5min' = 300", True),
    ("'200ms'", 0.2),
    ("'1d' > '23h'", True),
    ("'B' = 'B'", True),
    ("TRUE AND NOT FALSE", True),
    ("CASE WHEN 1 > 2 THEN 'a' WHEN 2 > 1 THEN 'b' ELSE 'c' END", "b"),
    ("CASE 2 WHEN 1 THEN 'one' WHEN 2 THEN 'two' END", "two"),
    ("CASE 3 WHEN 1 THEN 'one' END", None),
    ("CASE NULL WHEN NULL THEN 1 ELSE 2 END", 2),
    ("COALESCE(NULL, NULL, 3, 4)", 3),
    ("NULLIF(1, 1)", None),
    ("NULLIF(1, 2)", 1),
    ("LEAST(3, NULL, 1)", 1),
    ("GREATEST(3, NULL, 5)", 5),
    ("GREATEST(NULL, NULL)", None),
    ("2 IN (1, 2)", True),
    ("3 IN (1, 2)", False),
    ("3 IN (1, NULL)", None),
    ("1 IN (1, NULL)", True),
    ("3 NOT IN (1, 2)", True),
    ("3 NOT IN (1, NULL)", None),
    ("2 BETWEEN 1 AND 2", True),
    ("3 BETWEEN 1 AND 2", False),
    ("0 NOT BETWEEN 1 AND 2", True),
    ("3 BETWEEN NULL AND 2", False),
    ("1 BETWEEN NULL AND 2", None),
    ("NULL IS NULL", True),
    ("1 IS NOT NULL", True),
    ("NULL IS TRUE", False),
    ("NULL IS NOT TRUE", True),
    ("FALSE IS FALSE", True),
    ("NULL IS NOT FALSE", True),
    ("NULL IS UNKNOWN", True),
    ("'noatime' LIKE 'no%'", True),
    ("'noatime' LIKE 'no_time'", True),
    ("'NoAtime' LIKE 'no%'", False),
    ("'NoAtime' ILIKE 'no%'", True),
    ("'relatime' NOT LIKE 'no%'", True),
    ("'50%' LIKE '50\\%'", True),
    ("NULL IS DISTINCT FROM 1", True),
    ("NULL IS NOT DISTINCT FROM NULL", True),
    ("round(2.5)", 3),
    ("round(-2.5)", -3),
    ("round(2.345, 2)", 2.35),
    ("ceil(1.2)", 2),
    ("ceiling(-1.2)", -1),
    ("floor(-1.2)", -2),
    ("next_power_of_2(1000)", 1024),
    ("next_power_of_2(1024)", 1024),
    ("next_power_of_2(1024.5)", 2048),
    ("next_power_of_2(0)", 1),
    ("next_power_of_2(-5)", 1),
    ("abs(-4)", 4),
    ("pg_size_bytes('8GB')", 8 * 1024**3),
    ("pg_size_bytes('1.5 kB')", 1536),
    ("pg_size_bytes('100 bytes')", 100),
    ("has_option('rw,noatime,data=ordered', 'noatime')", True),
    ("has_option('rw,relatime', 'noatime')", False),
    ("has_option('rw,data=ordered', 'data')", True),
    ("option_value('rw,data=writeback', 'data')", "writeback"),
    ("option_value('rw,data=ordered,data=writeback', 'data')", "writeback"),
    ("option_value('rw', 'data')", None),
    ("lower('ABC')", "abc"),
    ("upper('abc')", "ABC"),
    ("length('abcd')", 4),
    ("in_list('pg_stat_statements, \"Auto_Explain\"', 'auto_explain')", True),
    ("in_list('''pg_stat_statements''', 'pg_stat_statements')", True),
    ("in_list('auto_explain', 'pg_stat_statements')", False),
    ("length(NULL)", None),
])
def test_constructs(expression: str, expected: object) -> None:
    result = run(expression)
    assert result == expected
    assert type(result) is type(expected)


def test_facts_params_and_quoted_parts() -> None:
    facts = {"sysctl.vm.overcommit_ratio": 60, "sysctl.net.ipv4.conf.eth-0.rp_filter": 1,
             "mount.options": "rw,noatime", "pg.shared_buffers": 134217728}
    assert run("sysctl.vm.overcommit_ratio * 2", facts) == 120
    assert run('sysctl.net.ipv4.conf."eth-0".rp_filter', facts) == 1
    assert run("has_option(mount.options, 'noatime')", facts) is True
    assert run("pg.shared_buffers = '128MB'", facts) is True
    assert run("params.limit * 2", facts, {"limit": 4}) == 8
    assert run("sysctl.vm.swappiness > 10", facts) is None


def test_facts_read_in_first_read_order() -> None:
    compiled = compile_expression("COALESCE(meminfo.swap_total, host.ram) + meminfo.swap_total", CONTEXT)
    assert compiled.facts == ("meminfo.swap_total", "host.ram")
    assert compiled.kind == "number"


def test_unit_literal_stays_text_beside_text() -> None:
    assert run("mount.options = '1s'", {"mount.options": "1s"}) is True
    assert run("lower('5MIN')") == "5min"


@pytest.mark.parametrize(("expression", "message"), [
    ("meminfo.swap_totl > 0", "unknown fact meminfo.swap_totl (did you mean meminfo.swap_total?)"),
    ("host.rma > 0", "unknown fact host.rma (did you mean host.ram?)"),
    ("pg.shared_bufers > 0", "unknown fact pg.shared_bufers (did you mean pg.shared_buffers?)"),
    ("derived.nothing > 0", "unknown fact derived.nothing"),
    ("params.nope > 0", "unknown fact params.nope"),
    ("sqrt(4)", "unknown function sqrt()"),
    ("rund(4)", "unknown function rund() (did you mean round?)"),
    ("round()", "round() takes 1 to 2 arguments, not 0"),
    ("'a' + 1", "'+' needs a number, not a text"),
    ("host.name + 1", "'+' needs a number, not a text"),
    ("host.dedicated > 1", "cannot compare a bool with a number"),
    ("host.ram = 'ssd'", "cannot compare a number with a text"),
    ("1 AND TRUE", "AND needs a bool, not a number"),
    ("NOT host.ram", "NOT needs a bool, not a number"),
    ("CASE WHEN TRUE THEN 1 ELSE 'a' END", "CASE mixes number and text"),
    ("lower(1)", "lower() needs a text, not a number"),
    ("1 +", "invalid expression: syntax error at end of input"),
    ("1, 2", "expected exactly one expression"),
    ("1 FROM t", "expected exactly one expression"),
    ("(SELECT 1)", "unsupported SQL construct: SubLink"),
    ("disk.name = 'sda'", "disk.name is an item fact: only rules with scope: disk read it"),
    # a YAML block keeps the line breaks of its more-indented lines: PGV703's fix printed "never down: a\\n higher"
    ("CASE WHEN TRUE THEN 'goes up, never down: a\n         higher value is kept.' END",
     "a line break inside a text literal"),
])
def test_compile_errors(expression: str, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(expression, CONTEXT)
    assert caught.value.message.startswith(message)


def test_compile_error_offset_points_at_the_fact() -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression("1 + meminfo.swap_totl", CONTEXT)
    assert caught.value.offset == 4


def test_when_must_be_boolean() -> None:
    with pytest.raises(ExpressionError, match="expected a condition"):
        compile_expression("host.ram * 2", CONTEXT, want="bool")


def test_untyped_facts_are_checked_at_run_time() -> None:
    text_value = {"sysctl.net.ipv4.tcp_rmem": "4096 131072 6291456"}
    with pytest.raises(EvalError, match="not a number"):
        run("sysctl.net.ipv4.tcp_rmem + 1", text_value)
    with pytest.raises(EvalError, match="cannot compare"):
        run("sysctl.net.ipv4.tcp_rmem > 1", text_value)
    with pytest.raises(EvalError, match="not a boolean"):
        compile_expression("sysctl.kernel.numa_balancing", CONTEXT, want="bool").evaluate(
            Env({"sysctl.kernel.numa_balancing": Fact("x", 1, SRC)}, None, {}, {}, {}))
    assert run("sysctl.net.ipv4.tcp_rmem = '4096 131072 6291456'", text_value) is True


def test_pg_size_bytes_takes_a_number_as_it_is() -> None:
    # an extension's parameter: text in postgresql.conf, an integer in a live server's pg_settings (the shared
    # memory estimate reads pg_stat_statements.max either way; a live server's failed, and every rule reading it
    # went unevaluated on the target's world)
    assert run("pg_size_bytes(pg.pg_stat_statements.max)", {"pg.pg_stat_statements.max": 5000}) == 5000
    assert run("pg_size_bytes(pg.pg_stat_statements.max)", {"pg.pg_stat_statements.max": "5000"}) == 5000


def test_pg_size_bytes_rejects_garbage() -> None:
    with pytest.raises(EvalError, match="invalid size"):
        run("pg_size_bytes('lots')")


def test_formatted_writes_a_number_as_a_template_format_does() -> None:
    """A text that holds a formatted number only in one case (PGV105: a share of CommitLimit, unless it is 0)."""
    assert run("'is ' || formatted(0.96, 'pct') || ' of'") == "is 96.0 % of"
    assert run("formatted(3 * 1024 * 1024 * 1024, 'size')") == "3.0 GiB"
    assert run("formatted(NULL, 'pct')") is None
    with pytest.raises(EvalError, match="unknown format 'percent'"):
        run("formatted(0.5, 'percent')")


def test_parse_quantity() -> None:
    assert parse_quantity("16GB") == 16 * 1024**3
    assert parse_quantity("1.6GB") == 1717986918
    assert parse_quantity("3735244kB") == 3735244 * 1024
    assert parse_quantity("90s") == 90
    assert parse_quantity("500us") == pytest.approx(0.0005)
    assert parse_quantity("16 gb") is None
    assert parse_quantity("16") is None


# -- NULL laws and robustness -------------------------------------------------------------------------

values = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                   st.floats(allow_nan=False, allow_infinity=False, width=32), st.text(max_size=5))
booleans = st.one_of(st.none(), st.booleans())


@given(st.integers(-1000, 1000))
def test_arithmetic_with_null_is_null(number: int) -> None:
    for operator in "+-*/%":
        assert run(f"{number} {operator} NULL") is None
        assert run(f"NULL {operator} {number}") is None
    assert run(f"{number} > NULL") is None


@given(booleans, booleans)
def test_three_valued_logic(left: bool | None, right: bool | None) -> None:
    facts = {"mount.holds_pgdata": left, "mount.holds_wal": right}
    present = {name: value for name, value in facts.items() if value is not None}
    conjunction = run("mount.holds_pgdata AND mount.holds_wal", present)
    disjunction = run("mount.holds_pgdata OR mount.holds_wal", present)
    if left is False or right is False:
        assert conjunction is False
    elif left is None or right is None:
        assert conjunction is None
    else:
        assert conjunction is True
    if left is True or right is True:
        assert disjunction is True
    elif left is None or right is None:
        assert disjunction is None
    else:
        assert disjunction is False
    assert run("NOT mount.holds_pgdata", present) == (None if left is None else not left)


EXPRESSIONS = [
    "sysctl.a.b + sysctl.c.d * 2 > 3",
    "sysctl.a.b = sysctl.c.d",
    "COALESCE(sysctl.a.b, sysctl.c.d) IN (1, 'x', NULL)",
    "GREATEST(sysctl.a.b, sysctl.c.d) BETWEEN 1 AND 10",
    "sysctl.a.b LIKE 'x%' OR sysctl.c.d IS NULL",
    "round(sysctl.a.b / sysctl.c.d, 2) < 1",
    "CASE sysctl.a.b WHEN 1 THEN sysctl.c.d ELSE 0 END > 0",
    "NULLIF(sysctl.a.b, sysctl.c.d) IS NOT NULL",
    "in_list(sysctl.a.b, sysctl.c.d)",
    "-sysctl.a.b % sysctl.c.d = 0",
    "ceil(sysctl.a.b) + floor(sysctl.c.d) + abs(sysctl.a.b) > 0",
]


@settings(max_examples=300)
@given(st.sampled_from(EXPRESSIONS), values, values)
def test_evaluator_never_raises_anything_but_eval_error(expression: str, left: object, right: object) -> None:
    facts = {name: value for name, value in (("sysctl.a.b", left), ("sysctl.c.d", right)) if value is not None}
    compiled = compile_expression(expression, CONTEXT, want="bool")
    env = Env({name: Fact(name, value, SRC) for name, value in facts.items()}, None, {}, {}, {})  # type: ignore[arg-type]
    try:
        result = compiled.evaluate(env)
    except EvalError:
        return
    assert result is None or isinstance(result, bool)


def test_division_is_true_division_and_large_values_stay_exact() -> None:
    assert run("floor(3735244 * 1024 / 4096) * 60 / 100") == pytest.approx(560286.6)
    assert run("floor(floor(3735244 * 1024 / 4096) * 60 / 100)") == 560286
    assert math.isclose(run("1 / 3"), 1 / 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "values", "expected"), [
    ("GREATEST(host.cpus, host.ram)", {"host.cpus": 1, "host.ram": 1.0}, (int, 1)),  # a tie keeps the first
    ("LEAST(host.ram, host.cpus)", {"host.cpus": 1, "host.ram": 1.0}, (float, 1.0)),
    ("LEAST(NULL, host.cpus, NULL)", {"host.cpus": 3}, (int, 3)),
    ("NULLIF(sysctl.vm.swappiness, 1)", {"sysctl.vm.swappiness": True}, (bool, True)),  # True is not 1
    ("sysctl.vm.swappiness IS NOT DISTINCT FROM 1", {"sysctl.vm.swappiness": 1.0}, (bool, True)),
])
def test_least_greatest_nullif_distinct_keep_order_and_types(text: str, values: dict[str, object],
                                                             expected: tuple[type, object]) -> None:
    value = run(text, values)
    assert (type(value), value) == expected


def test_least_greatest_compare_in_the_order_written() -> None:
    with pytest.raises(EvalError, match="cannot compare 'a' with 1"):
        run("GREATEST(sysctl.vm.swappiness, 1, 2)", {"sysctl.vm.swappiness": "a"})
