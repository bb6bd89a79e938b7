"""Generated expression functions against the closure trees they replace: same values, same errors.

Every expression of the rule pack on every fixture host and item, then random expressions over random
facts (NULLs, wrong types, NaN, huge numbers).
"""

from __future__ import annotations

import marshal
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgvet.engine import codegen
from pgvet.engine.codegen import generate
from pgvet.engine.evaluate import evaluate_host, make_finding, rule_params
from pgvet.engine.examples import example_host
from pgvet.engine.expr import CompileContext, Compiled, Env, EvalError, Expr, Function, IsNull, compile_expression
from pgvet.engine.loader import load_pack
from pgvet.engine.pack import FixTemplates, Rule, RulePack
from pgvet.facts import Fact, Item
from pgvet.findings import Fix
from pgvet.provenance import Source
from pgvet.snapshot import load_host

PROJECT = Path(__file__).resolve().parents[2]
SOURCE = Source("test.conf", 1)


def outcome(function: Function, env: Env) -> tuple[object, ...]:
    """What a call gives, comparable: the value with its type (NaN as text), or the error's type and text."""
    try:
        value = function(env)
    except Exception as error:  # the point: the same exception, whatever it is
        return "error", type(error), str(error)
    if isinstance(value, float) and math.isnan(value):
        return "value", float, "nan"
    return "value", type(value), value


def assert_same(expr: Expr, env: Env, text: str) -> None:
    generated, closures = generate(expr), expr.function()
    assert outcome(generated, env) == outcome(closures, env), text


FIXTURE_HOSTS = [PROJECT / "fixtures" / name for name in ("big-server", "config-repo", "small-vm", "well-tuned")]


@pytest.mark.parametrize("directory", FIXTURE_HOSTS, ids=lambda path: path.name)
def test_every_pack_expression_agrees_on_the_fixture_hosts(directory: Path) -> None:
    pack = load_pack([])
    host = load_host(directory)
    host_cache: dict[str, object] = {}
    checked = 0
    for rule in pack.rules:
        items = [None] if rule.scope == "host" else host.items.get(rule.scope, [])
        for item in items:
            env = Env(host.facts, item, rule.param_defaults, pack.derived_by_name, host_cache, {})  # type: ignore[arg-type]
            for compiled in rule.expressions():
                assert_same(compiled.expr, env, f"{rule.id}: {compiled.text}")
                checked += 1
    for formula in pack.derived:
        for item in [None] if formula.item_scope is None else host.items.get(formula.item_scope, []):
            env = Env(host.facts, item, {}, pack.derived_by_name, host_cache, {})  # type: ignore[arg-type]
            assert_same(formula.compiled.expr, env, f"derived.{formula.name}: {formula.compiled.text}")
            checked += 1
    assert checked > 300  # the pack's ~100 rules, their templates and the derived formulas


# Random expressions: texts built from typed pieces, so that most compile; facts of each static type, and
# an untyped one (sysctl.*) that may hold anything.
NUMBER_FACTS = ("host.ram", "host.cpus")
ANY_FACTS = ("sysctl.vm.swappiness",)
TEXT_FACTS = ("pg.huge_pages", "mount.fstype")
BOOL_FACTS = ("pg.fsync", "mount.holds_pgdata")
CONTEXT = CompileContext(derived={}, params={"limit": "number", "label": "text"}, scope="mount")

number_leaves = st.sampled_from(["1", "0", "-3", "2.5", "1e308", "NULL", "'8GB'", "params.limit", *NUMBER_FACTS,
                                 *ANY_FACTS])
text_leaves = st.sampled_from(["'a'", "'off'", "''", "NULL", "params.label", *TEXT_FACTS, *ANY_FACTS])
bool_leaves = st.sampled_from(["TRUE", "FALSE", "NULL", *BOOL_FACTS, *ANY_FACTS])


def _binary(operators: list[str], operand: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda left, operator, right: f"({left} {operator} {right})", operand,
                     st.sampled_from(operators), operand)


numbers: st.SearchStrategy[str] = st.deferred(lambda: st.one_of(
    number_leaves,
    _binary(["+", "-", "*", "/", "%"], numbers),
    numbers.map(lambda value: f"(- {value})"),  # "--" would start a comment
    st.builds(lambda condition, then, other: f"(CASE WHEN {condition} THEN {then} ELSE {other} END)",
              booleans, numbers, numbers),
    st.lists(numbers, min_size=1, max_size=3).map(lambda args: f"COALESCE({', '.join(args)})"),
    numbers.map(lambda value: f"round({value})"),
    st.builds(lambda value, digits: f"round({value}, {digits})", numbers, numbers),
    texts.map(lambda value: f"length({value})"),
    st.builds(lambda function, args: f"{function}({', '.join(args)})", st.sampled_from(["GREATEST", "LEAST"]),
              st.lists(numbers, min_size=1, max_size=4)),
    st.builds(lambda left, right: f"NULLIF({left}, {right})", numbers, numbers),
))
texts: st.SearchStrategy[str] = st.deferred(lambda: st.one_of(
    text_leaves,
    texts.map(lambda value: f"lower({value})"),
    st.lists(texts, min_size=1, max_size=3).map(lambda args: f"COALESCE({', '.join(args)})"),
    st.builds(lambda condition, then, other: f"(CASE WHEN {condition} THEN {then} ELSE {other} END)",
              booleans, texts, texts),
    st.builds(lambda function, args: f"{function}({', '.join(args)})", st.sampled_from(["GREATEST", "LEAST"]),
              st.lists(texts, min_size=1, max_size=3)),
    st.builds(lambda left, right: f"NULLIF({left}, {right})", texts, texts),
))
booleans: st.SearchStrategy[str] = st.deferred(lambda: st.one_of(
    bool_leaves,
    _binary(["=", "<>", "<", "<=", ">", ">="], numbers),
    _binary(["=", "<>", "<"], texts),
    st.lists(booleans, min_size=2, max_size=4).map(lambda args: "(" + " AND ".join(args) + ")"),
    st.lists(booleans, min_size=2, max_size=4).map(lambda args: "(" + " OR ".join(args) + ")"),
    booleans.map(lambda value: f"(NOT {value})"),
    st.builds(lambda left, negate, right: f"({left} IS {negate}DISTINCT FROM {right})", numbers,
              st.sampled_from(["", "NOT "]), numbers),
    st.builds(lambda left, negate, right: f"({left} IS {negate}DISTINCT FROM {right})", texts,
              st.sampled_from(["", "NOT "]), texts),
    st.builds(lambda value, test: f"({value} {test})", st.one_of(numbers, texts, booleans),
              st.sampled_from(["IS NULL", "IS NOT NULL"])),
    st.builds(lambda value, test: f"({value} {test})", booleans,
              st.sampled_from(["IS TRUE", "IS NOT TRUE", "IS FALSE", "IS NOT FALSE", "IS UNKNOWN"])),
    st.builds(lambda value, operator, pattern: f"({value} {operator} {pattern})", texts,
              st.sampled_from(["LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"]),
              st.sampled_from(["'o%'", "'O_f'", "'%'", "''", "'a\\%'", "params.label", "NULL"])),
    st.builds(lambda value, negate, items: f"({value} {negate}IN ({', '.join(items)}))", texts,
              st.sampled_from(["", "NOT "]), st.lists(st.sampled_from(["'a'", "'off'", "''"]), min_size=1,
                                                      max_size=3)),
    st.builds(lambda value, negate, items: f"({value} {negate}IN ({', '.join(items)}))", numbers,
              st.sampled_from(["", "NOT "]), st.lists(numbers, min_size=1, max_size=3)),
))

any_value = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                      st.sampled_from(["", "off", "a", "12"]))
fact_values = st.fixed_dictionaries({
    **{name: st.one_of(st.none(), st.integers(-(2**40), 2**40), st.floats()) for name in NUMBER_FACTS},
    **{name: any_value for name in ANY_FACTS},
    **{name: st.one_of(st.none(), st.sampled_from(["", "off", "a", "Off"])) for name in TEXT_FACTS},
    **{name: st.one_of(st.none(), st.booleans()) for name in BOOL_FACTS},
    "params.limit": st.one_of(st.none(), st.integers(-5, 5), st.floats()),
    "params.label": st.one_of(st.none(), st.sampled_from(["a", "off"])),
})


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.one_of(booleans, numbers, texts), fact_values)
def test_random_expressions_agree(text: str, values: dict[str, object]) -> None:
    compiled = compile_expression(text, CONTEXT)
    facts = {name: Fact(name, value, SOURCE) for name, value in values.items()  # type: ignore[arg-type]
             if value is not None and not name.startswith("params.")}
    host = {name: fact for name, fact in facts.items() if not name.startswith("mount.")}
    item = Item(((name, value) for name, value in values.items() if value is not None and name.startswith("mount.")),
                SOURCE)
    params = {name[7:]: value for name, value in values.items() if name.startswith("params.")}
    assert_same(compiled.expr, Env(host, item, params, {}, {}), text)  # type: ignore[arg-type]


def test_an_expression_too_deep_for_cpython_runs_as_closures() -> None:
    """A tree nested deeper than CPython's parser takes (~200 levels) is refused by generate(), and
    Compiled.closure() falls back on the closures, with the same value."""
    deep: Expr = compile_expression("1", CONTEXT).expr
    for _ in range(300):
        deep = IsNull(deep, negate=True)
    with pytest.raises(ValueError, match="not compiled"):
        generate(deep)
    compiled = Compiled("deep", deep, "bool", ())
    assert compiled.closure()(Env({}, None, {}, {}, {})) is deep.function()(Env({}, None, {}, {}, {}))


def test_names_and_texts_are_literals_not_code() -> None:
    """A fact name or a text with quotes and code in it stays a string in the generated function."""
    compiled = compile_expression("""'x'') or __import__(''os'') or (''' = pg.huge_pages""", CONTEXT)
    env = Env({"pg.huge_pages": Fact("pg.huge_pages", "x') or __import__('os') or ('", SOURCE)}, None, {}, {}, {})
    assert generate(compiled.expr)(env) is True


def _refuse_compiling(text: str) -> None:
    raise AssertionError(f"compiled again: {text[:60]}")


def test_precompiled_code_is_used_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Code compiled with the pack runs without CPython's compiler; code written for another text (an
    edited rule, another Python) or unreadable is compiled again."""
    compiled = compile_expression("host.ram > 8 * 1024 AND NOT pg.fsync", CONTEXT)
    other = compile_expression("host.cpus > 2", CONTEXT)
    env = Env({"host.ram": Fact("host.ram", 16384, SOURCE), "pg.fsync": Fact("pg.fsync", False, SOURCE)},
              None, {}, {}, {})
    code = codegen.compile_code(compiled.expr)
    assert code is not None
    with monkeypatch.context() as patched:
        patched.setattr(codegen, "_compile", _refuse_compiling)
        assert codegen.generate(compiled.expr, code)(env) is True
    for wrong in (codegen.compile_code(other.expr), b"not marshal data", marshal.dumps(("x", 1))):
        assert codegen.generate(compiled.expr, wrong)(env) is True
    # a text of the same length, another expression: its code must not run in place of this one's
    greater_than_two, greater_than_three = (compile_expression(f"host.cpus > {n}", CONTEXT) for n in (2, 3))
    three_cpus = Env({"host.cpus": Fact("host.cpus", 3, SOURCE)}, None, {}, {}, {})
    assert codegen.generate(greater_than_two.expr, codegen.compile_code(greater_than_three.expr))(three_cpus) is True


def test_a_cached_pack_runs_without_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path))
    built = load_pack([])
    assert all(compiled.code is not None for compiled in built.expressions())
    monkeypatch.setattr(codegen, "_compile", _refuse_compiling)
    cached = load_pack([])  # from the cache written above
    assert cached is not built
    result = evaluate_host(cached, load_host(PROJECT / "fixtures" / "big-server"))
    assert result.findings


@pytest.mark.parametrize(("text", "values", "expected"), [
    ("GREATEST(host.cpus, host.ram)", {"host.cpus": 1, "host.ram": 1.0}, ("value", int, 1)),  # a tie keeps the first
    ("LEAST(host.ram, host.cpus)", {"host.cpus": 1, "host.ram": 1.0}, ("value", float, 1.0)),
    ("GREATEST(sysctl.vm.swappiness, 1, 2)", {"sysctl.vm.swappiness": "a"},
     ("error", EvalError, "cannot compare 'a' with 1")),  # compared in the order written
    ("LEAST(NULL, host.cpus, NULL)", {"host.cpus": 3}, ("value", int, 3)),
    ("NULLIF(sysctl.vm.swappiness, 1)", {"sysctl.vm.swappiness": True}, ("value", bool, True)),  # True is not 1
    ("sysctl.vm.swappiness IS NOT DISTINCT FROM 1", {"sysctl.vm.swappiness": 1.0}, ("value", bool, True)),
])
def test_least_greatest_nullif_distinct_keep_order_and_types(text: str, values: dict[str, object],
                                                             expected: tuple[object, ...]) -> None:
    compiled = compile_expression(text, CONTEXT)
    env = Env({name: Fact(name, value, SOURCE) for name, value in values.items()}, None, {}, {}, {})  # type: ignore[arg-type]
    assert outcome(generate(compiled.expr), env) == expected
    assert outcome(compiled.expr.function(), env) == expected


# A rule's finding function (FindingCode) against make_finding's reference path, hole by hole.

def finding_outcome(rule: Rule, env: Env, generated: bool) -> tuple[object, ...]:
    """make_finding's fix, message, values and evidence through the generated function or the reference path
    (the generated one made unavailable), or the error it raises; in an environment of its own (fresh caches
    of derived values and evidence entries), so that neither reads what the other made."""
    env = Env(env.host, env.item, env.params, env.derived, {}, {})
    code = rule.finding_code
    saved = code.function, code.unavailable
    if not generated:
        code.function, code.unavailable = None, True
    try:
        finding = make_finding(rule, env, "h", None)
    except Exception as error:  # the point: the same exception, whatever it is
        return "error", type(error), str(error)
    finally:
        code.function, code.unavailable = saved
    return "finding", finding.message, finding.values, finding.fix, finding.evidence


def generated_parts_succeed(rule: Rule, env: Env) -> bool:
    function = rule.finding_code.function or rule.finding_code.make(rule)
    assert function is not None, rule.id
    try:
        function(env)
    except (EvalError, TypeError, ValueError, ArithmeticError):
        return False
    return True


def envs_of_examples(pack: RulePack, rule: Rule) -> list[Env]:
    envs = []
    for example in rule.examples:
        host = example_host(rule, example)
        params = rule_params(rule, {rule.id: example.params} if example.params else None)
        for item in host.items.get(rule.scope, []) if rule.scope != "host" else [None]:
            envs.append(Env(host.facts, item, params, pack.derived_by_name, {}, {}))
    return envs


def test_every_rule_finding_function_agrees_with_the_reference_path() -> None:
    """On every example of every rule and on the fixture hosts, fired or not, the generated finding function
    gives make_finding the same message, values and fix as the hole-by-hole path, or leaves it to that path,
    which raises (an expression's error, a number too large for |size)."""
    pack = load_pack([])
    hosts = [load_host(directory) for directory in FIXTURE_HOSTS]
    compared = generated_ran = 0
    for rule in pack.rules:
        envs = envs_of_examples(pack, rule)
        for host in hosts:
            items = [None] if rule.scope == "host" else host.items.get(rule.scope, [])
            envs += [Env(host.facts, item, rule.param_defaults, pack.derived_by_name, {}, {})  # type: ignore[arg-type]
                     for item in items]
        for env in envs:
            assert finding_outcome(rule, env, True) == finding_outcome(rule, env, False), rule.id
            compared += 1
            generated_ran += generated_parts_succeed(rule, env)
    assert compared > 1000
    assert generated_ran > compared / 2  # most findings are made by the generated function, not the fallback


def test_finding_function_formats_as_render_and_falls_back_on_errors() -> None:
    """The generated formatting of each hole kind (text, NULL, integer, bool, float, |size, |pct) is
    render's; a setting with a NULL hole is left out and named; a hole's error is raised as the
    reference path raises it, naming the expression."""
    pack = load_pack([])
    rule = next(rule for rule in pack.rules if rule.fix_templates is not None and rule.fix_templates.sysctl)
    context = CompileContext(derived={}, params={}, scope="host")
    holes = [(compile_expression(text, context), format_name) for text, format_name in [
        ("'text'", None), ("NULL", None), ("3", None), ("TRUE", None), ("2.5", None), ("host.ram", "size"),
        ("1.0 / 8", "pct"), ("host.ram", None)]]
    message = tuple(part for hole in holes for part in (" | ", hole))
    fix = FixTemplates(sysctl=(("vm.a", ("x", holes[5])), ("vm.b", ("y", holes[1]))), postgresql=(("w", (holes[2],)),),
                       text=(" text ", holes[0], " "))
    variant = replace(rule, message_template=message, fix_templates=fix,
                      value_exprs=(("ram", holes[5][0]), ("none", holes[1][0])))
    env = Env({"host.ram": Fact("host.ram", 3 * 2**30, SOURCE)}, None, variant.param_defaults, pack.derived_by_name,
              {}, {})
    made = finding_outcome(variant, env, True)
    assert made == finding_outcome(variant, env, False)
    assert made[1] == "| text | unknown | 3 | true | 2.5 | 3.0 GiB | 12.5 % | 3221225472"
    assert made[2] == {"ram": 3 * 2**30, "none": None}
    assert made[3] == Fix({"vm.a": "x3.0 GiB"}, {"w": "3"}, "text text No value can be computed here for vm.b.")
    assert generated_parts_succeed(variant, env)
    wrong = Env({"host.ram": Fact("host.ram", 10**400, SOURCE)}, None, variant.param_defaults,  # too large for |size
                pack.derived_by_name, {}, {})
    assert not generated_parts_succeed(variant, wrong)
    assert finding_outcome(variant, wrong, True) == finding_outcome(variant, wrong, False)
    assert finding_outcome(variant, wrong, True)[:2] == ("error", EvalError)
    assert str(finding_outcome(variant, wrong, True)[2]).startswith("host.ram: ")  # the hole, as written
    # a setting's holes are all formatted, one after a NULL too: the setting is then not just left out
    after_null = replace(rule, message_template=("m",), value_exprs=(),
                         fix_templates=FixTemplates(sysctl=(("vm.c", (holes[1], holes[5])),)))
    assert not generated_parts_succeed(after_null, wrong)
    assert finding_outcome(after_null, wrong, True) == finding_outcome(after_null, wrong, False)
    assert finding_outcome(after_null, wrong, True)[:2] == ("error", EvalError)
    assert finding_outcome(after_null, env, True)[3] == Fix({}, {}, "No value can be computed here for vm.c.")


def test_finding_code_is_pickled_with_the_pack_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The finding functions' code is compiled with the pack and used from the cache without CPython's
    compiler; code written for another rule is compiled again."""
    monkeypatch.setenv("PGVET_CACHE_DIR", str(tmp_path))
    built = load_pack([])
    assert all(rule.finding_code.code is not None for rule in built.rules)
    monkeypatch.setattr(codegen, "_compile", _refuse_compiling)
    cached = load_pack([])
    assert all(rule.finding_code.function is None for rule in cached.rules)  # functions are not pickled
    assert evaluate_host(cached, load_host(PROJECT / "fixtures" / "big-server")).findings
    first, second = cached.rules[0], cached.rules[1]
    monkeypatch.undo()
    function = codegen.finding_function(first, second.finding_code.code)  # another rule's code: compiled again
    assert function.__code__ is not None
    env = Env({}, None, first.param_defaults, cached.derived_by_name, {}, {})
    assert outcome_of_parts(function, env) == outcome_of_parts(codegen.finding_function(first), env)


def outcome_of_parts(function: Callable[[Env], object], env: Env) -> tuple[object, ...]:
    try:
        return "value", function(env)
    except Exception as error:  # the point: the same exception, whatever it is
        return "error", type(error), str(error)
