"""An expression tree as one Python function, generated from the tree (never from the rule's text).

The closures of ``Expr.function()`` cost a Python call per node, and a rule's condition is evaluated on
every host of a fleet, for every item of its scope: ``NOT setting.known`` is two calls as closures, one
as generated code. The generated code keeps the closures' semantics to the letter — the same order of
evaluation, the same short cuts on NULL, the same values and the same exceptions — and node kinds
without a generator here run their closure from the generated code. tests/engine/test_engine_codegen.py holds
the two to the same results on every expression of the rule pack and on generated ones.

Only the tree's structure becomes source text: names of facts and texts appear as ``repr`` literals,
every other value (functions, floats, tuples) is bound in the function's namespace, so nothing a rule
writes is ever executed as Python.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import warnings
from collections.abc import Callable
from operator import eq, ge, gt, le, lt, ne
from types import CodeType
from typing import TYPE_CHECKING, Any

from pgvet.engine.expr import (
    _GUARDED,
    And,
    Arith,
    Call,
    Case,
    Coalesce,
    Compare,
    Const,
    DerivedRef,
    Distinct,
    EvalError,
    Expr,
    Function,
    Guard,
    HostFact,
    In,
    IsBool,
    IsNull,
    ItemFact,
    Like,
    MinMax,
    Neg,
    Not,
    NullIf,
    Or,
    ParamRef,
    _add,
    _div,
    _mul,
    _same_family,
    _sub,
    like_pattern,
)

if TYPE_CHECKING:
    from pgvet.engine.expr import Compiled, Env, Value
    from pgvet.engine.pack import Rule, Template
    from pgvet.findings import Evidence

    # a finding's sysctl and postgresql settings (None: a NULL hole), fix text, message, values and evidence
    FindingFunction = Callable[[Env], tuple[dict[str, str | None], dict[str, str | None], str | None, str,
                                            dict[str, Value], list[Evidence]]]

_OPERATORS: dict[Callable[[Any, Any], bool], str] = {eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">="}


def _cannot_compare(left: object, right: object) -> bool:
    raise EvalError(f"cannot compare {left!r} with {right!r}")


def _arithmetic_on_text(left: object, right: object) -> None:
    raise EvalError(f"arithmetic on a text: {left!r}, {right!r}")


class _Source:
    """The text of one generated function: its namespace, and the local names it reads or binds."""

    def __init__(self) -> None:
        self.namespace: dict[str, object] = {"_same_family": _same_family, "_cannot_compare": _cannot_compare,
                                             "_arithmetic_on_text": _arithmetic_on_text}
        self.temporaries = 0
        self.reads: set[str] = set()  # env's fields read: bound once at the top of the function

    def temporary(self) -> str:
        self.temporaries += 1
        return f"_t{self.temporaries}"

    def bind(self, value: object) -> str:
        name = f"_k{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def constant(self, value: object) -> str:
        # ints, texts, booleans and None are written as literals (repr round-trips them); floats are bound
        # (nan and inf have no literal)
        if value is None or type(value) in (bool, int, str):
            return f"({value!r})"
        return self.bind(value)

    def expression(self, node: Expr) -> str:
        generate = _GENERATORS.get(type(node))
        if generate is None:  # a rarer node: its closure, called from the generated code
            return f"{self.bind(node.function())}(env)"
        return generate(node, self)


def _write(node: Expr) -> tuple[str, dict[str, object]]:
    """The module text defining ``expression(env)``, and the namespace it runs in."""
    source = _Source()
    try:
        body = source.expression(node)
    except RecursionError:
        raise ValueError("expression not compiled: nested too deep") from None
    prelude = "".join(f"    {field} = env.{field}\n" for field in sorted(source.reads))
    return f"def expression(env):\n{prelude}    return {body}\n", source.namespace


def _compile(text: str) -> CodeType:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning (a literal compared with `is`…) would reach the user
            return compile(text, "<pgvet expression>", "exec")
    except (RecursionError, MemoryError, SyntaxError) as error:  # nested beyond what CPython's parser takes
        raise ValueError(f"expression not compiled: {error}") from None


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def compile_code(node: Expr) -> bytes | None:
    """The compiled code of ``node``'s function, marshalled with a digest of its text (checked on use) to be
    kept with the pack; None when CPython will not compile it."""
    text, _ = _write(node)
    try:
        return marshal.dumps((_digest(text), _compile(text)))
    except ValueError:
        return None


def generate(node: Expr, code: bytes | None = None) -> Function:
    """``node`` as one Python function of an Env, from ``code`` (compile_code's) when it was written from the
    same text; ValueError when CPython will not compile it (too deep)."""
    text, namespace = _write(node)
    function: Function = _define(text, namespace, code)  # type: ignore[assignment]
    return function


def _define(text: str, namespace: dict[str, object], code: bytes | None) -> object:
    """The function ``text`` defines, run in ``namespace``: from ``code`` when it was compiled from the same
    text, else compiled now. The text is built from node trees, a rule's names and texts only as repr literals."""
    compiled: CodeType | None = None
    if code is not None:
        with contextlib.suppress(ValueError, EOFError, TypeError):  # written by another Python: compile again
            digest, compiled = marshal.loads(code)
            if digest != _digest(text) or not isinstance(compiled, CodeType):
                compiled = None
    exec(compiled if compiled is not None else _compile(text), namespace)
    return namespace["expression"]


def _const(node: Const, source: _Source) -> str:
    return source.constant(node.value)


def _host_fact(node: HostFact, source: _Source) -> str:
    source.reads.add("host")
    fact = source.temporary()
    return f"(None if ({fact} := host.get({node.name!r})) is None else {fact}.value)"


def _item_fact(node: ItemFact, source: _Source) -> str:
    source.reads.add("item")
    return f"(None if item is None else item.get({node.name!r}))"  # an Item holds values


def _param(node: ParamRef, source: _Source) -> str:
    source.reads.add("params")
    return f"params.get({node.name!r})"


def _derived(node: DerivedRef, source: _Source) -> str:
    return f"env.derived_value({node.name!r})"


def _guard(node: Guard, source: _Source) -> str:
    accepted, noun = _GUARDED[node.kind]
    label = node.label

    def refuse(value: object) -> None:
        raise EvalError(f"{label} is {value!r}, not {noun}")
    value = source.temporary()
    return (f"({value} if ({value} := {source.expression(node.arg)}) is None or type({value}) in "
            f"{source.bind(accepted)} else {source.bind(refuse)}({value}))")


def _arith(node: Arith, source: _Source) -> str:
    left, right = source.temporary(), source.temporary()
    operation: str
    if node.op is _sub:
        operation = f"{left} - {right}"
    elif node.op is _div:
        operation = f"(None if {right} == 0 else {left} / {right})"
    elif node.op is _add or node.op is _mul:
        symbol = "+" if node.op is _add else "*"
        # _no_text's check: Python would concatenate or repeat texts
        operation = (f"({left} {symbol} {right} if type({left}) is not str and type({right}) is not str "
                     f"else _arithmetic_on_text({left}, {right}))")
    else:
        operation = f"{source.bind(node.op)}({left}, {right})"
    return (f"(None if ({left} := {source.expression(node.left)}) is None "
            f"or ({right} := {source.expression(node.right)}) is None else {operation})")


def _neg(node: Neg, source: _Source) -> str:
    value = source.temporary()
    return f"(None if ({value} := {source.expression(node.arg)}) is None else -{value})"


def _compare(node: Compare, source: _Source) -> str:
    symbol = _OPERATORS.get(node.op)
    if symbol is None:
        return f"{source.bind(node.function())}(env)"
    left = source.temporary()
    if isinstance(node.right, Const) and node.right.value is not None:
        right = source.constant(node.right.value)
        head = f"(None if ({left} := {source.expression(node.left)}) is None else "
    else:
        right = source.temporary()
        head = (f"(None if ({left} := {source.expression(node.left)}) is None "
                f"or ({right} := {source.expression(node.right)}) is None else ")
    if node.checked:
        checked = f"_same_family({left}, {right}) else _cannot_compare({left}, {right})"
        return f"{head}({left} {symbol} {right} if {checked}))"
    return f"{head}{left} {symbol} {right})"


def _and_or(node: And | Or, source: _Source) -> str:
    # three-valued: the first decisive value (False for AND, True for OR) ends it; else NULL if any was NULL
    decisive = isinstance(node, Or)
    values = [source.temporary() for _ in node.args]
    checks = " else ".join(f"{decisive} if ({value} := {source.expression(arg)}) is {decisive}"
                           for value, arg in zip(values, node.args, strict=True))
    any_null = " or ".join(f"{value} is None" for value in values)
    return f"({checks} else None if {any_null} else {not decisive})"


def _not(node: Not, source: _Source) -> str:
    value = source.temporary()
    return f"(None if ({value} := {source.expression(node.arg)}) is None else not {value})"


def _is_null(node: IsNull, source: _Source) -> str:
    # through a temporary: `('a') is None` would be a SyntaxWarning (`is` with a literal)
    value = source.temporary()
    return f"(({value} := {source.expression(node.arg)}) is {'not ' if node.negate else ''}None)"


def _is_bool(node: IsBool, source: _Source) -> str:
    value = source.temporary()
    return f"(({value} := {source.expression(node.arg)}) is {'not ' if node.negate else ''}{node.target!r})"


def _in(node: In, source: _Source) -> str:
    constants = [item.value for item in node.items if isinstance(item, Const)]
    if node.checked or len(constants) != len(node.items) or None in constants:
        return f"{source.bind(node.function())}(env)"
    # IN over literals, none NULL: == against each, as the closure does, by tuple membership
    value = source.temporary()
    membership = "not in" if node.negate else "in"
    return f"(None if ({value} := {source.expression(node.operand)}) is None else {value} {membership} " \
           f"{source.bind(tuple(constants))})"


def _like(node: Like, source: _Source) -> str:
    if not isinstance(node.pattern, Const) or node.pattern.value is None:
        return f"{source.bind(node.function())}(env)"
    # a literal pattern (the usual case) is translated once, here
    pattern = source.bind(like_pattern(str(node.pattern.value), node.case_insensitive).matches)
    value = source.temporary()
    return (f"(None if ({value} := {source.expression(node.arg)}) is None "
            f"else ({'not ' if node.negate else ''}{pattern}(str({value}))))")


def _null_if(node: NullIf, source: _Source) -> str:
    value, other = source.temporary(), source.temporary()
    return (f"(None if ({value} := {source.expression(node.left)}) is None else None if "
            f"({other} := {source.expression(node.right)}) is not None and _same_family({value}, {other}) "
            f"and {value} == {other} else {value})")


def _distinct_values(left: object, right: object) -> bool:
    if left is None or right is None:
        return (left is None) != (right is None)
    return not (_same_family(left, right) and left == right)


def _distinct(node: Distinct, source: _Source) -> str:
    # both sides are evaluated, as the closure does, before they are compared
    call = f"{source.bind(_distinct_values)}({source.expression(node.left)}, {source.expression(node.right)})"
    return f"({call} is {not node.negate})"


def _min_max_step(best: Any, value: Any, greatest: bool) -> Any:
    """One argument of GREATEST / LEAST against the best so far: NULLs are skipped, the first wins a tie."""
    if value is None:
        return best
    if best is None:
        return value
    if not _same_family(best, value):
        raise EvalError(f"cannot compare {best!r} with {value!r}")
    return value if (value > best if greatest else value < best) else best


def _min_max(node: MinMax, source: _Source) -> str:
    # LEAST(a, b, c) as least(least(a, b), c): each argument evaluated after the comparisons before it, so a
    # mismatch is raised where the closure raises it
    step = source.bind(_min_max_step)
    first, *rest = node.args
    text = source.expression(first)
    for arg in rest:
        text = f"{step}({text}, {source.expression(arg)}, {node.greatest})"
    return text


def _case(node: Case, source: _Source) -> str:
    if node.operand is not None:  # simple CASE: its closure
        return f"{source.bind(node.function())}(env)"
    branches = "".join(f"{source.expression(result)} if ({source.temporary()} := {source.expression(condition)}) "
                       "is True else " for condition, result in node.whens)
    return f"({branches}{source.expression(node.default)})"


def _coalesce(node: Coalesce, source: _Source) -> str:
    *firsts, last = node.args
    values = [source.temporary() for _ in firsts]
    branches = "".join(f"{value} if ({value} := {source.expression(arg)}) is not None else "
                       for value, arg in zip(values, firsts, strict=True))
    return f"({branches}{source.expression(last)})"


def _call(node: Call, source: _Source) -> str:
    values = [source.temporary() for _ in node.args]
    nulls = " or ".join(f"({value} := {source.expression(arg)}) is None"
                        for value, arg in zip(values, node.args, strict=True))
    call = f"{source.bind(node.function_)}({', '.join(values)})"
    return f"(None if {nulls} else {call})" if values else call


_GENERATORS: dict[type[Expr], Callable[[Any, _Source], str]] = {
    Const: _const, HostFact: _host_fact, ItemFact: _item_fact, ParamRef: _param, DerivedRef: _derived,
    Guard: _guard, Arith: _arith, Neg: _neg, Compare: _compare, And: _and_or, Or: _and_or, Not: _not,
    IsNull: _is_null, IsBool: _is_bool, In: _in, Like: _like, Case: _case, Coalesce: _coalesce, Call: _call,
    NullIf: _null_if, Distinct: _distinct, MinMax: _min_max,
}


# A rule's finding as one generated function (FindingCode): the holes of its fix and message templates and its
# values evaluated and formatted in one frame, instead of two calls a hole and a loop a template (a host's
# twenty findings have about two hundred holes and values). It returns what make_finding's reference path
# (engine/evaluate.py) computes, or raises; make_finding then takes the reference path, which raises the error
# as a rule author reads it. tests/engine/test_engine_codegen.py holds the two to the same findings.

def _formatted(value: str, format_name: str | None) -> str:
    """render._render's formatting of one hole's value, inline."""
    text = f'{value} if type({value}) is str else "unknown" if {value} is None else '
    if format_name is None:
        text += f"str({value}) if type({value}) is int else "
    return f"({text}_format({value}, {format_name!r}))"


def _evidence(names: tuple[str, ...]) -> str:
    """derived.evidence's loop written out for one rule's names, each in the branch its kind takes there:
    the same entries, shared the same way (the host's host-wide ones made once), the same left out."""
    lines = ["    _evidence = []\n", "    _append = _evidence.append\n", "    _shared = env.host_evidence\n"]
    for name in names:
        if name.startswith("derived."):
            key = name[8:]
            lines += [
                f"    _scope = env.derived[{key!r}].item_scope\n",
                f"    _entry = None if _scope else _shared.get({name!r})\n",
                "    if _entry is None:\n",
                "        _cache = env.item_cache if _scope else env.host_cache\n",
                f"        if {key!r} in _cache:\n",
                f"            _value = _cache[{key!r}]\n",
                "        else:\n",
                "            try:\n",
                f"                _value = env.derived_value({key!r})\n",
                "            except (_EvalError, TypeError, ValueError, ArithmeticError):\n",
                "                _value = None\n",
                "        if _value is not None:\n",
                f"            _entry = _new(_Evidence, ({name!r}, _value, _DERIVED_SOURCE))\n",
                "            if not _scope:\n",
                f"                _shared[{name!r}] = _entry\n",
                "    if _entry is not None:\n",
                "        _append(_entry)\n"]
        elif name.startswith("params."):
            lines += [f"    if (_value := env.params.get({name[7:]!r})) is not None:\n",
                      f"        _append(_new(_Evidence, ({name!r}, _value, None)))\n"]
        else:
            lines += [
                f"    if env.item is not None and (_value := env.item.get({name!r})) is not None:\n",
                f"        _append(_new(_Evidence, ({name!r}, _value, env.item.source_of({name!r}))))\n",
                f"    elif (_entry := _shared.get({name!r})) is not None:\n",
                "        _append(_entry)\n",
                f"    elif (_fact := env.host.get({name!r})) is not None and _fact.value is not None:\n",
                f"        _entry = _shared[{name!r}] = _new(_Evidence, ({name!r}, _fact.value, _fact.source))\n",
                "        _append(_entry)\n"]
    return "".join(lines)


def _write_finding(rule: Rule) -> tuple[str, dict[str, object]]:
    """The module text defining ``expression(env)`` → (sysctl settings, postgresql settings, fix text, message,
    values, evidence): settings by key, None for one that has a NULL hole; the fix text and message unstripped."""
    from pgvet.engine.derived import DERIVED_SOURCE
    from pgvet.engine.render import format_value
    from pgvet.findings import Evidence

    source = _Source()
    source.namespace.update({"_format": format_value, "_new": tuple.__new__, "_Evidence": Evidence,
                             "_DERIVED_SOURCE": DERIVED_SOURCE, "_EvalError": EvalError})
    statements: list[str] = []

    def hole(compiled: Compiled) -> str:
        name = f"_h{len(statements)}"
        statements.append(f"    {name} = {source.expression(compiled.expr)}\n")
        return name

    def rendered(template: Template, setting: bool) -> str:
        pieces: list[str] = []
        holes: list[str] = []
        for part in template:
            if isinstance(part, str):
                pieces.append(repr(part))
                continue
            compiled, format_name = part
            holes.append(hole(compiled))
            pieces.append(_formatted(holes[-1], format_name))
        if not pieces:
            return "''"
        if setting and holes:
            # every hole formatted, a NULL one too, before the setting is found to have none: as render_setting,
            # which raises for a hole it cannot format even after a NULL one
            formatted = source.temporary()
            return (f"(None if ({formatted} := ({', '.join(pieces)},)) and "
                    f"({' or '.join(f'{name} is None' for name in holes)}) else ''.join({formatted}))")
        return f'"".join(({", ".join(pieces)},))'

    def settings(templates: tuple[tuple[str, Template], ...]) -> str:
        return "{" + ", ".join(f"{key!r}: {rendered(template, True)}" for key, template in templates) + "}"

    fix = rule.fix_templates
    sysctl = settings(fix.sysctl) if fix is not None else "{}"
    postgresql = settings(fix.postgresql) if fix is not None else "{}"
    text = rendered(fix.text, False) if fix is not None and fix.text is not None else "None"
    message = rendered(rule.message_template, False)
    values = "{" + ", ".join(f"{name!r}: {hole(compiled)}" for name, compiled in rule.value_exprs) + "}"
    prelude = "".join(f"    {field} = env.{field}\n" for field in sorted(source.reads))
    body = "".join(statements) + _evidence(rule.evidence_names)
    return (f"def expression(env):\n{prelude}{body}"
            f"    return {sysctl}, {postgresql}, {text}, {message}, {values}, _evidence\n", source.namespace)


def compile_finding_code(rule: Rule) -> bytes | None:
    """compile_code for a rule's finding function; None when CPython will not compile it."""
    try:
        text, _ = _write_finding(rule)
        return marshal.dumps((_digest(text), _compile(text)))
    except (ValueError, RecursionError):
        return None


def finding_function(rule: Rule, code: bytes | None = None) -> FindingFunction:
    """The rule's finding function, from ``code`` when it was written from the same text; ValueError when
    CPython will not compile it."""
    try:
        text, namespace = _write_finding(rule)
    except RecursionError:
        raise ValueError("finding not compiled: nested too deep") from None
    function: FindingFunction = _define(text, namespace, code)  # type: ignore[assignment]
    return function
