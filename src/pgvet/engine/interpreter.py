"""The interpreter: a checked node tree (ir.py) turned into nested closures, made once per expression when
first evaluated. Each node's closure calls its children's directly, constants and names bound, instead of a
method call and attribute reads per node: rules run on every host of a fleet. NULL is a missing fact and
propagates as SQL says (three-valued AND/OR/NOT, strict functions, IN and BETWEEN with NULL semantics)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch
from typing import Any

from pgvet.engine.factnames import Kind
from pgvet.engine.functions import BINARY, COMPARISONS, FUNCTIONS, like_pattern, same_family
from pgvet.engine.ir import (
    And,
    Arith,
    Between,
    Call,
    Case,
    Coalesce,
    Compare,
    Const,
    DerivedParam,
    DerivedRef,
    Distinct,
    Expr,
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
    Value,
)
from pgvet.engine.runtime import Env, EvalError, Function


@dataclass(frozen=True, slots=True)
class Compiled:
    """One compiled expression: its text, node tree, static kind and the facts it reads (first-read order)."""

    text: str
    expr: Expr
    kind: Kind
    facts: tuple[str, ...]
    # the function of expr, made at the first evaluation: not pickled with the pack (functions are not)
    function: Function | None = field(default=None, init=False, compare=False, repr=False)

    def __getstate__(self) -> tuple[str, Expr, Kind, tuple[str, ...]]:
        return self.text, self.expr, self.kind, self.facts

    def __setstate__(self, state: tuple[str, Expr, Kind, tuple[str, ...]]) -> None:
        text, expr, kind, facts = state
        set_field = object.__setattr__
        set_field(self, "text", text)
        set_field(self, "expr", expr)
        set_field(self, "kind", kind)
        set_field(self, "facts", facts)
        set_field(self, "function", None)

    def closure(self) -> Function:
        """The expression as a function of an Env (runtime errors as raised), made at the first call."""
        function = self.function
        if function is None:
            function = make_closure(self.expr)
            object.__setattr__(self, "function", function)  # frozen: a cache of what the fields hold
        return function

    def run(self, env: Env) -> Value:
        """The value, runtime errors as raised (a derived value inside another expression)."""
        function = self.function
        return function(env) if function is not None else self.closure()(env)

    def evaluate(self, env: Env) -> Value:
        """The value; EvalError for any runtime error (a text where a number was expected, an overflow…)."""
        try:
            function = self.function
            return function(env) if function is not None else self.run(env)
        except EvalError:
            raise
        except (TypeError, ValueError, ArithmeticError) as error:
            raise EvalError(f"{self.text.strip()}: {error}") from None


@singledispatch
def make_closure(node: Expr) -> Function:
    """The node as a function of an Env."""
    raise TypeError(f"no closure for {type(node).__name__}")


# What a guard lets through, by the kind the expression wants (True is no number here), and its name.
_GUARDED: dict[str, tuple[tuple[type, ...], str]] = {
    "number": ((int, float), "a number"), "text": ((str,), "a text"), "bool": ((bool,), "a boolean")}


@make_closure.register(Const)
def _const(node: Const) -> Function:
    value = node.value
    return lambda env: value


@make_closure.register(HostFact)
def _host_fact(node: HostFact) -> Function:
    name = node.name

    def host_fact(env: Env) -> Value:
        fact = env.host.get(name)
        return None if fact is None else fact.value
    return host_fact


@make_closure.register(ItemFact)
def _item_fact(node: ItemFact) -> Function:
    name = node.name

    def item_fact(env: Env) -> Value:
        item = env.item
        return None if item is None else item.get(name)
    return item_fact


@make_closure.register(ParamRef)
def _param_ref(node: ParamRef) -> Function:
    name = node.name
    return lambda env: env.params.get(name)


@make_closure.register(DerivedParam)
def _derived_param(node: DerivedParam) -> Function:
    derived, name = node.derived, node.name
    return lambda env: env.derived[derived].param_values.get(name)


@make_closure.register(DerivedRef)
def _derived_ref(node: DerivedRef) -> Function:
    name = node.name
    return lambda env: env.derived_value(name)


@make_closure.register(Guard)
def _guard(node: Guard) -> Function:
    arg, label = make_closure(node.arg), node.label
    accepted, noun = _GUARDED[node.kind]

    def guard(env: Env) -> Value:
        value = arg(env)
        if value is None or type(value) in accepted:
            return value
        raise EvalError(f"{label} is {value!r}, not {noun}")
    return guard


@make_closure.register(Arith)
def _arith(node: Arith) -> Function:
    op, left, right = BINARY[node.op], make_closure(node.left), make_closure(node.right)

    def arith(env: Env) -> Value:
        left_value = left(env)
        if left_value is None:
            return None
        right_value = right(env)
        if right_value is None:
            return None
        return op(left_value, right_value)
    return arith


@make_closure.register(Neg)
def _neg(node: Neg) -> Function:
    arg = make_closure(node.arg)

    def neg(env: Env) -> Value:
        value = arg(env)
        return None if value is None else -value  # type: ignore[operator]
    return neg


@make_closure.register(Compare)
def _compare(node: Compare) -> Function:
    op, left, checked = COMPARISONS[node.op], make_closure(node.left), node.checked
    if isinstance(node.right, Const) and node.right.value is not None:
        constant = node.right.value  # the common shape, a fact against a literal

        def compare_constant(env: Env) -> Value:
            value = left(env)
            if value is None:
                return None
            if checked and not same_family(value, constant):
                raise EvalError(f"cannot compare {value!r} with {constant!r}")
            return op(value, constant)
        return compare_constant
    right = make_closure(node.right)

    def compare(env: Env) -> Value:
        left_value = left(env)
        if left_value is None:
            return None
        right_value = right(env)
        if right_value is None:
            return None
        if checked and not same_family(left_value, right_value):
            raise EvalError(f"cannot compare {left_value!r} with {right_value!r}")
        return op(left_value, right_value)
    return compare


@make_closure.register(Distinct)
def _distinct(node: Distinct) -> Function:
    left, right, negate = make_closure(node.left), make_closure(node.right), node.negate

    def distinct(env: Env) -> Value:
        left_value = left(env)
        right_value = right(env)
        if left_value is None or right_value is None:
            differ = (left_value is None) != (right_value is None)
        else:
            differ = not (same_family(left_value, right_value) and left_value == right_value)
        return differ != negate
    return distinct


@make_closure.register(And)
def _and(node: And) -> Function:
    args = tuple(make_closure(arg) for arg in node.args)

    def and_(env: Env) -> Value:
        result: bool | None = True
        for arg in args:
            value = arg(env)
            if value is False:
                return False
            if value is None:
                result = None
        return result
    return and_


@make_closure.register(Or)
def _or(node: Or) -> Function:
    args = tuple(make_closure(arg) for arg in node.args)

    def or_(env: Env) -> Value:
        result: bool | None = False
        for arg in args:
            value = arg(env)
            if value is True:
                return True
            if value is None:
                result = None
        return result
    return or_


@make_closure.register(Not)
def _not(node: Not) -> Function:
    arg = make_closure(node.arg)

    def not_(env: Env) -> Value:
        value = arg(env)
        return None if value is None else not value
    return not_


@make_closure.register(In)
def _in(node: In) -> Function:
    operand, negate, checked = make_closure(node.operand), node.negate, node.checked
    items = tuple(make_closure(item) for item in node.items)

    def in_(env: Env) -> Value:
        value = operand(env)
        if value is None:
            return None
        saw_null = False
        for item in items:
            candidate = item(env)
            if candidate is None:
                saw_null = True
                continue
            if checked and not same_family(value, candidate):
                raise EvalError(f"cannot compare {value!r} with {candidate!r}")
            if value == candidate:
                return not negate
        return None if saw_null else negate
    return in_


@make_closure.register(Between)
def _between(node: Between) -> Function:
    operand, low, high = make_closure(node.operand), make_closure(node.low), make_closure(node.high)
    negate, checked = node.negate, node.checked

    def between(env: Env) -> Value:
        value, low_value, high_value = operand(env), low(env), high(env)
        for bound in (low_value, high_value):
            if checked and value is not None and bound is not None and not same_family(value, bound):
                raise EvalError(f"cannot compare {value!r} with {bound!r}")
        above = None if value is None or low_value is None else value >= low_value  # type: ignore[operator]
        below = None if value is None or high_value is None else value <= high_value  # type: ignore[operator]
        if above is False or below is False:
            inside: bool | None = False
        elif above is None or below is None:
            inside = None
        else:
            inside = True
        return None if inside is None else inside != negate
    return between


@make_closure.register(IsNull)
def _is_null(node: IsNull) -> Function:
    arg, negate = make_closure(node.arg), node.negate
    return lambda env: (arg(env) is None) != negate


@make_closure.register(IsBool)
def _is_bool(node: IsBool) -> Function:
    arg, target, negate = make_closure(node.arg), node.target, node.negate
    return lambda env: (arg(env) is target) != negate


@make_closure.register(Like)
def _like(node: Like) -> Function:
    arg, pattern = make_closure(node.arg), make_closure(node.pattern)
    case_insensitive, negate = node.case_insensitive, node.negate

    def like(env: Env) -> Value:
        value = arg(env)
        if value is None:
            return None
        wanted = pattern(env)
        if wanted is None:
            return None
        return like_pattern(str(wanted), case_insensitive).matches(str(value)) != negate
    return like


@make_closure.register(Case)
def _case(node: Case) -> Function:
    whens = tuple((make_closure(condition), make_closure(result)) for condition, result in node.whens)
    default = make_closure(node.default)
    if node.operand is None:
        def searched_case(env: Env) -> Value:
            for condition, result in whens:
                if condition(env) is True:
                    return result(env)
            return default(env)
        return searched_case
    operand = make_closure(node.operand)

    def simple_case(env: Env) -> Value:
        value = operand(env)
        if value is not None:
            for candidate, result in whens:
                other = candidate(env)
                if other is not None and same_family(value, other) and value == other:
                    return result(env)
        return default(env)
    return simple_case


@make_closure.register(Coalesce)
def _coalesce(node: Coalesce) -> Function:
    args = tuple(make_closure(arg) for arg in node.args)

    def coalesce(env: Env) -> Value:
        for arg in args:
            value = arg(env)
            if value is not None:
                return value
        return None
    return coalesce


@make_closure.register(NullIf)
def _null_if(node: NullIf) -> Function:
    left, right = make_closure(node.left), make_closure(node.right)

    def null_if(env: Env) -> Value:
        value = left(env)
        if value is None:
            return None
        other = right(env)
        if other is not None and same_family(value, other) and value == other:
            return None
        return value
    return null_if


@make_closure.register(MinMax)
def _min_max(node: MinMax) -> Function:
    args, greatest = tuple(make_closure(arg) for arg in node.args), node.greatest

    def min_max(env: Env) -> Value:
        best: Any = None
        for arg in args:
            value = arg(env)
            if value is None:
                continue
            if best is None:
                best = value
            elif not same_family(best, value):
                raise EvalError(f"cannot compare {best!r} with {value!r}")
            elif (value > best) if greatest else (value < best):
                best = value
        return best  # type: ignore[no-any-return]
    return min_max


@make_closure.register(Call)
def _call(node: Call) -> Function:
    implementation, args = FUNCTIONS[node.name].implementation, tuple(make_closure(arg) for arg in node.args)
    if len(args) == 1:
        (only,) = args

        def call_one(env: Env) -> Value:
            value = only(env)
            return None if value is None else implementation(value)
        return call_one

    def call(env: Env) -> Value:
        values = []
        for arg in args:
            value = arg(env)
            if value is None:
                return None
            values.append(value)
        return implementation(*values)
    return call
