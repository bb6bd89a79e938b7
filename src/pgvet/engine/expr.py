"""SQL expressions: compiled once (pglast parses, we type-check) into small node objects, evaluated by us.

Never Python ``eval`` of a rule's text, never a database: a checked node tree becomes nested closures. NULL is a
missing fact and propagates as SQL says (three-valued AND/OR/NOT, strict functions, IN and BETWEEN with
NULL semantics); division by zero gives NULL instead of an error so that a zero in the inputs means
"not evaluated", not a crash.
Nodes are plain picklable objects: the compiled pack is cached, and the warm path imports no pglast.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import eq, ge, gt, le, lt, ne
from typing import TYPE_CHECKING, Any

from pgvet.engine.factnames import Kind, did_you_mean, item_scope, kind_of, static_type
from pgvet.numbers import out_of_range, shown_number

if TYPE_CHECKING:
    from pgvet.engine.pack import DerivedFormula
    from pgvet.facts import Fact, Item
    from pgvet.findings import Evidence

Value = int | float | str | bool | None


class ExpressionError(Exception):
    """A compile-time error in one expression; ``offset`` is the character position when known."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


class EvalError(Exception):
    """A runtime error while evaluating (a text where a number was expected…): the rule is not evaluated."""


# ---------------------------------------------------------------------------------------------------
# Units in string literals, as PostgreSQL spells them (memory units are powers of 1024).

# The longest number literal read: a double's 309 digits and its decimals, written out (no double needs more).
_MAX_LITERAL_CHARS = 1000

SIZE_UNITS: dict[str, int] = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
TIME_UNITS: dict[str, float] = {"us": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "d": 86400}
_QUANTITY = re.compile(r"\s*(-?(?:\d+(?:\.\d*)?|\.\d+))\s*(B|kB|MB|GB|TB|us|ms|s|min|h|d)\s*")


def parse_quantity(text: str) -> int | float | None:
    """``'8GB'`` → bytes (int), ``'5min'`` → seconds; None when the text is not a size or a duration."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    number, unit = float(match.group(1)), match.group(2)
    if unit in SIZE_UNITS:
        return round(number * SIZE_UNITS[unit])
    seconds = number * TIME_UNITS[unit]
    # 200ms is 0.2 s, but 5min is the integer 300: keep integers integral.
    return round(seconds) if abs(seconds - round(seconds)) < 1e-9 else seconds


def with_units(value: Value) -> Value:
    """A value given as '4GB' or '5min' (params, examples) is that many bytes or seconds, as in expressions."""
    if isinstance(value, str):
        quantity = parse_quantity(value)
        if quantity is not None:
            return quantity
    return value


# ---------------------------------------------------------------------------------------------------
# Evaluation environment


class Env:
    """What an expression reads: host facts, the item's facts, the rule's params, derived values (memoised)."""

    __slots__ = ("derived", "host", "host_cache", "host_evidence", "item", "item_cache", "params")

    def __init__(self, host: Mapping[str, Fact], item: Item | None,
                 params: Mapping[str, Value], derived: Mapping[str, DerivedFormula],
                 host_cache: dict[str, Value], item_cache: dict[str, Value] | None = None,
                 host_evidence: dict[str, Evidence] | None = None) -> None:
        self.host = host
        self.item = item
        self.params = params
        self.derived = derived
        self.host_cache = host_cache
        self.item_cache = host_cache if item_cache is None else item_cache
        # the evidence entries of host-wide facts and derived values, made once a host (engine/derived.py)
        self.host_evidence = {} if host_evidence is None else host_evidence

    def derived_value(self, name: str) -> Value:
        formula = self.derived[name]
        cache = self.item_cache if formula.item_scope else self.host_cache
        try:
            return cache[name]
        except KeyError:
            value = formula.compiled.run(self)
            refused = out_of_range(value)
            if refused is not None:  # PostgreSQL's "value out of range": never a NaN or an infinity in a report
                raise EvalError(f"derived.{name} is out of range: {refused}") from None
            cache[name] = value
            return value


# ---------------------------------------------------------------------------------------------------
# Nodes: the picklable form of an expression. ``function()`` turns a tree into nested closures, made once
# per expression when first evaluated: each node calls its children's functions directly, constants and
# names bound, instead of a method call and attribute reads per node — rules run on every host of a fleet.

Function = Callable[[Env], Value]


class Expr:
    __slots__ = ()

    def function(self) -> Function:
        raise NotImplementedError


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value

    def function(self) -> Function:
        value = self.value
        return lambda env: value


class HostFact(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def function(self) -> Function:
        name = self.name

        def host_fact(env: Env) -> Value:
            fact = env.host.get(name)
            return None if fact is None else fact.value
        return host_fact


class ItemFact(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def function(self) -> Function:
        name = self.name

        def item_fact(env: Env) -> Value:
            item = env.item
            return None if item is None else item.get(name)
        return item_fact


class ParamRef(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def function(self) -> Function:
        name = self.name
        return lambda env: env.params.get(name)


class DerivedParam(Expr):
    """``params.NAME`` in a derived formula: the formula's own parameter, the same for every rule that reads
    the derived value (a rule's parameters are in ``env.params``, which a derived formula never reads)."""

    __slots__ = ("derived", "name")

    def __init__(self, derived: str, name: str) -> None:
        self.derived = derived
        self.name = name

    def function(self) -> Function:
        derived, name = self.derived, self.name
        return lambda env: env.derived[derived].param_values.get(name)


class DerivedRef(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def function(self) -> Function:
        name = self.name
        return lambda env: env.derived_value(name)


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


# What a guard lets through, by the kind the expression wants (True is no number here), and its name.
_GUARDED: dict[str, tuple[tuple[type, ...], str]] = {
    "number": ((int, float), "a number"), "text": ((str,), "a text"), "bool": ((bool,), "a boolean")}


class Guard(Expr):
    """Around an untyped fact (sysctl.*) used as a number, a text or a boolean: a value of another type is a
    runtime error (a text is not concatenated, a number not taken for true)."""

    __slots__ = ("arg", "kind", "label")

    def __init__(self, arg: Expr, label: str, kind: str) -> None:
        self.arg = arg
        self.label = label
        self.kind = kind

    def function(self) -> Function:
        arg, label = self.arg.function(), self.label
        accepted, noun = _GUARDED[self.kind]

        def guard(env: Env) -> Value:
            value = arg(env)
            if value is None or type(value) in accepted:
                return value
            raise EvalError(f"{label} is {value!r}, not {noun}")
        return guard


def _no_text(left: object, right: object) -> None:
    """Python would concatenate or repeat texts (and ``'0.5' * 2**34`` exhausts memory): refuse them."""
    if type(left) is str or type(right) is str:
        raise EvalError(f"arithmetic on a text: {left!r}, {right!r}")


def _add(left: Any, right: Any) -> Value:
    _no_text(left, right)
    return left + right  # type: ignore[no-any-return]


def _sub(left: Any, right: Any) -> Value:
    return left - right  # type: ignore[no-any-return]


def _mul(left: Any, right: Any) -> Value:
    _no_text(left, right)
    return left * right  # type: ignore[no-any-return]


def _div(left: Any, right: Any) -> Value:
    return None if right == 0 else left / right


def _mod(left: Any, right: Any) -> Value:
    """SQL's % takes the sign of the dividend (Python's takes the divisor's)."""
    if right == 0:
        return None
    if type(left) is int and type(right) is int:
        remainder = abs(left) % abs(right)
        return -remainder if left < 0 else remainder
    return math.fmod(left, right)


ARITHMETIC: dict[str, Callable[[Any, Any], Value]] = {"+": _add, "-": _sub, "*": _mul, "/": _div, "%": _mod}


def _as_text(value: object) -> str:
    """A value as PostgreSQL's ``||`` writes it: true/false, integers without a decimal point."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is float and value.is_integer():
        return str(int(value))
    return str(value)


def _concat(left: Any, right: Any) -> Value:
    """SQL's ``||``: the two values as text, one after the other (NULL when either is, as in SQL)."""
    return _as_text(left) + _as_text(right)


class Arith(Expr):
    __slots__ = ("left", "op", "right")

    def __init__(self, op: Callable[[Any, Any], Value], left: Expr, right: Expr) -> None:
        self.op = op
        self.left = left
        self.right = right

    def function(self) -> Function:
        op, left, right = self.op, self.left.function(), self.right.function()

        def arith(env: Env) -> Value:
            left_value = left(env)
            if left_value is None:
                return None
            right_value = right(env)
            if right_value is None:
                return None
            return op(left_value, right_value)
        return arith


class Neg(Expr):
    __slots__ = ("arg",)

    def __init__(self, arg: Expr) -> None:
        self.arg = arg

    def function(self) -> Function:
        arg = self.arg.function()

        def neg(env: Env) -> Value:
            value = arg(env)
            return None if value is None else -value  # type: ignore[operator]
        return neg


# operator's functions, written in C: with numbers, texts and booleans they return a bool, as SQL's do
COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": eq, "<>": ne, "<": lt, "<=": le, ">": gt, ">=": ge,
}


def _same_family(left: object, right: object) -> bool:
    """Values SQL would compare: two numbers, two texts or two booleans (True is not 1 here)."""
    if _is_number(left):
        return _is_number(right)
    return type(left) is type(right)


class Compare(Expr):
    __slots__ = ("checked", "left", "op", "right")

    def __init__(self, op: Callable[[Any, Any], bool], left: Expr, right: Expr, checked: bool) -> None:
        self.op = op
        self.left = left
        self.right = right
        self.checked = checked  # an untyped side: check the runtime types

    def function(self) -> Function:
        op, left, checked = self.op, self.left.function(), self.checked
        if isinstance(self.right, Const) and self.right.value is not None:
            constant = self.right.value  # the common shape, a fact against a literal

            def compare_constant(env: Env) -> Value:
                value = left(env)
                if value is None:
                    return None
                if checked and not _same_family(value, constant):
                    raise EvalError(f"cannot compare {value!r} with {constant!r}")
                return op(value, constant)
            return compare_constant
        right = self.right.function()

        def compare(env: Env) -> Value:
            left_value = left(env)
            if left_value is None:
                return None
            right_value = right(env)
            if right_value is None:
                return None
            if checked and not _same_family(left_value, right_value):
                raise EvalError(f"cannot compare {left_value!r} with {right_value!r}")
            return op(left_value, right_value)
        return compare


class Distinct(Expr):
    """IS [NOT] DISTINCT FROM: NULL-safe equality."""

    __slots__ = ("left", "negate", "right")

    def __init__(self, left: Expr, right: Expr, negate: bool) -> None:
        self.left = left
        self.right = right
        self.negate = negate

    def function(self) -> Function:
        left, right, negate = self.left.function(), self.right.function(), self.negate

        def distinct(env: Env) -> Value:
            left_value = left(env)
            right_value = right(env)
            if left_value is None or right_value is None:
                differ = (left_value is None) != (right_value is None)
            else:
                differ = not (_same_family(left_value, right_value) and left_value == right_value)
            return differ != negate
        return distinct


class And(Expr):
    __slots__ = ("args",)

    def __init__(self, args: Sequence[Expr]) -> None:
        self.args = tuple(args)

    def function(self) -> Function:
        args = tuple(arg.function() for arg in self.args)

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


class Or(Expr):
    __slots__ = ("args",)

    def __init__(self, args: Sequence[Expr]) -> None:
        self.args = tuple(args)

    def function(self) -> Function:
        args = tuple(arg.function() for arg in self.args)

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


class Not(Expr):
    __slots__ = ("arg",)

    def __init__(self, arg: Expr) -> None:
        self.arg = arg

    def function(self) -> Function:
        arg = self.arg.function()

        def not_(env: Env) -> Value:
            value = arg(env)
            return None if value is None else not value
        return not_


class In(Expr):
    __slots__ = ("checked", "items", "negate", "operand")

    def __init__(self, operand: Expr, items: Sequence[Expr], negate: bool, checked: bool) -> None:
        self.operand = operand
        self.items = tuple(items)
        self.negate = negate
        self.checked = checked

    def function(self) -> Function:
        operand, negate, checked = self.operand.function(), self.negate, self.checked
        items = tuple(item.function() for item in self.items)

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
                if checked and not _same_family(value, candidate):
                    raise EvalError(f"cannot compare {value!r} with {candidate!r}")
                if value == candidate:
                    return not negate
            return None if saw_null else negate
        return in_


class Between(Expr):
    __slots__ = ("checked", "high", "low", "negate", "operand")

    def __init__(self, operand: Expr, low: Expr, high: Expr, negate: bool, checked: bool) -> None:
        self.operand = operand
        self.low = low
        self.high = high
        self.negate = negate
        self.checked = checked

    def function(self) -> Function:
        operand, low, high = self.operand.function(), self.low.function(), self.high.function()
        negate, checked = self.negate, self.checked

        def between(env: Env) -> Value:
            value, low_value, high_value = operand(env), low(env), high(env)
            for bound in (low_value, high_value):
                if checked and value is not None and bound is not None and not _same_family(value, bound):
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


class IsNull(Expr):
    __slots__ = ("arg", "negate")

    def __init__(self, arg: Expr, negate: bool) -> None:
        self.arg = arg
        self.negate = negate

    def function(self) -> Function:
        arg, negate = self.arg.function(), self.negate
        return lambda env: (arg(env) is None) != negate


class IsBool(Expr):
    """IS [NOT] TRUE / FALSE / UNKNOWN: never NULL."""

    __slots__ = ("arg", "negate", "target")

    def __init__(self, arg: Expr, target: bool | None, negate: bool) -> None:
        self.arg = arg
        self.target = target
        self.negate = negate

    def function(self) -> Function:
        arg, target, negate = self.arg.function(), self.target, self.negate
        return lambda env: (arg(env) is target) != negate


class LikePattern:
    """A LIKE pattern (``%`` any text, ``_`` any character, a backslash escaping the next one) matched in
    O(len(text) · len(pattern)) at worst: the stretches between its ``%`` are found in order, each at the first
    place it fits after the one before, the first at the start of the text and the last at its end. As one
    regular expression (each ``%`` a ``.*``) it backtracked exponentially in the number of ``%``
    (``'%a%a%a%a%b'`` against a 260-character host name: 8 s). Each stretch is a pattern without quantifiers,
    so of a fixed length."""

    __slots__ = ("first", "last", "last_length", "middle", "whole")

    def __init__(self, pattern: str, case_insensitive: bool) -> None:
        stretches: list[list[str]] = [[]]
        escaped = False
        for char in pattern:
            if escaped:
                stretches[-1].append(re.escape(char))
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == "%":
                stretches.append([])
            elif char == "_":
                stretches[-1].append(".")
            else:
                stretches[-1].append(re.escape(char))
        flags = re.DOTALL | (re.IGNORECASE if case_insensitive else 0)
        compiled = [re.compile("".join(parts), flags) for parts in stretches]
        self.whole = compiled[0] if len(compiled) == 1 else None
        self.first, self.middle, self.last = compiled[0], tuple(compiled[1:-1]), compiled[-1]
        self.last_length = len(stretches[-1])

    def matches(self, text: str) -> bool:
        if self.whole is not None:
            return self.whole.fullmatch(text) is not None
        found = self.first.match(text)
        if found is None:
            return False
        position = found.end()
        for stretch in self.middle:
            found = stretch.search(text, position)
            if found is None:
                return False
            position = found.end()
        start = len(text) - self.last_length
        return start >= position and self.last.fullmatch(text, start) is not None


@lru_cache(maxsize=256)
def like_pattern(pattern: str, case_insensitive: bool) -> LikePattern:
    return LikePattern(pattern, case_insensitive)


class Like(Expr):
    __slots__ = ("arg", "case_insensitive", "negate", "pattern")

    def __init__(self, arg: Expr, pattern: Expr, case_insensitive: bool, negate: bool) -> None:
        self.arg = arg
        self.pattern = pattern
        self.case_insensitive = case_insensitive
        self.negate = negate

    def function(self) -> Function:
        arg, pattern = self.arg.function(), self.pattern.function()
        case_insensitive, negate = self.case_insensitive, self.negate

        def like(env: Env) -> Value:
            value = arg(env)
            if value is None:
                return None
            wanted = pattern(env)
            if wanted is None:
                return None
            return like_pattern(str(wanted), case_insensitive).matches(str(value)) != negate
        return like


class Case(Expr):
    """Searched CASE (``operand`` None) or simple CASE (each WHEN compared with ``operand`` by =)."""

    __slots__ = ("default", "operand", "whens")

    def __init__(self, operand: Expr | None, whens: Sequence[tuple[Expr, Expr]], default: Expr) -> None:
        self.operand = operand
        self.whens = tuple(whens)
        self.default = default

    def function(self) -> Function:
        whens = tuple((condition.function(), result.function()) for condition, result in self.whens)
        default = self.default.function()
        if self.operand is None:
            def searched_case(env: Env) -> Value:
                for condition, result in whens:
                    if condition(env) is True:
                        return result(env)
                return default(env)
            return searched_case
        operand = self.operand.function()

        def simple_case(env: Env) -> Value:
            value = operand(env)
            if value is not None:
                for candidate, result in whens:
                    other = candidate(env)
                    if other is not None and _same_family(value, other) and value == other:
                        return result(env)
            return default(env)
        return simple_case


class Coalesce(Expr):
    __slots__ = ("args",)

    def __init__(self, args: Sequence[Expr]) -> None:
        self.args = tuple(args)

    def function(self) -> Function:
        args = tuple(arg.function() for arg in self.args)

        def coalesce(env: Env) -> Value:
            for arg in args:
                value = arg(env)
                if value is not None:
                    return value
            return None
        return coalesce


class NullIf(Expr):
    __slots__ = ("left", "right")

    def __init__(self, left: Expr, right: Expr) -> None:
        self.left = left
        self.right = right

    def function(self) -> Function:
        left, right = self.left.function(), self.right.function()

        def null_if(env: Env) -> Value:
            value = left(env)
            if value is None:
                return None
            other = right(env)
            if other is not None and _same_family(value, other) and value == other:
                return None
            return value
        return null_if


class MinMax(Expr):
    """LEAST / GREATEST: NULL arguments are ignored; NULL only when all are."""

    __slots__ = ("args", "greatest")

    def __init__(self, args: Sequence[Expr], greatest: bool) -> None:
        self.args = tuple(args)
        self.greatest = greatest

    def function(self) -> Function:
        args, greatest = tuple(arg.function() for arg in self.args), self.greatest

        def min_max(env: Env) -> Value:
            best: Any = None
            for arg in args:
                value = arg(env)
                if value is None:
                    continue
                if best is None:
                    best = value
                elif not _same_family(best, value):
                    raise EvalError(f"cannot compare {best!r} with {value!r}")
                elif (value > best) if greatest else (value < best):
                    best = value
            return best  # type: ignore[no-any-return]
        return min_max


class Call(Expr):
    """A strict function: any NULL argument makes the result NULL."""

    __slots__ = ("args", "function_")

    def __init__(self, function: Callable[..., Value], args: Sequence[Expr]) -> None:
        self.function_ = function
        self.args = tuple(args)

    def function(self) -> Function:
        implementation, args = self.function_, tuple(arg.function() for arg in self.args)
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


# ---------------------------------------------------------------------------------------------------
# Functions


def _round(value: float, digits: int = 0) -> int | float:
    """numeric round: halves away from zero; an integer when no decimals are kept."""
    digits = int(digits)
    scale = 10.0**digits
    rounded = math.copysign(math.floor(abs(value) * scale + 0.5), value) / scale
    return int(rounded) if digits <= 0 else rounded


def _ceil(value: float) -> int:
    return math.ceil(value)


def _floor(value: float) -> int:
    return math.floor(value)


def _next_power_of_2(value: float) -> int:
    """The smallest power of two ≥ value (1 for anything ≤ 1): how PostgreSQL sizes hash tables."""
    return 1 << max(0, math.ceil(value) - 1).bit_length()


# dynahash's fixed sizes on 64-bit builds: the table header MAXALIGN(sizeof(HASHHDR)), an element's header
# MAXALIGN(sizeof(HASHELEMENT)), buckets per segment (DEF_SEGSIZE) and the directory's first size (DEF_DIRSIZE).
_HASH_HEADER = 848
_HASH_ELEMENT_HEADER = 16
_HASH_SEGMENT_BUCKETS = 256
_HASH_DIRECTORY = 256
_POINTER = 8


def _pg_hash_size(entries: float, entry_bytes: float) -> int:
    """The bytes PostgreSQL reserves for a shared hash table of ``entries`` entries of ``entry_bytes`` each:
    dynahash's hash_estimate_size (header, directory, segments of buckets, and the entries allocated in
    groups of at least 32 whose size is a power of two or just less)."""
    count = max(1, math.ceil(entries))
    buckets = _next_power_of_2(count)
    segments = _next_power_of_2((buckets - 1) // _HASH_SEGMENT_BUCKETS + 1)
    directory = max(_HASH_DIRECTORY, segments)
    element = _HASH_ELEMENT_HEADER + (math.ceil(entry_bytes) + 7) // 8 * 8
    group_bytes = 256
    while group_bytes // element < 32:
        group_bytes <<= 1
    per_group = group_bytes // element
    groups = (count - 1) // per_group + 1
    return (_HASH_HEADER + directory * _POINTER + segments * _HASH_SEGMENT_BUCKETS * _POINTER
            + groups * per_group * element)


def _abs(value: float) -> int | float:
    return abs(value)


_PG_SIZE = re.compile(r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*")
_PG_SIZE_UNITS = {"": 1, "bytes": 1, "b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4,
                  "pb": 1024**5}


def _pg_size_bytes(text: str) -> int:
    """As PostgreSQL's pg_size_bytes: a number, optional blanks, a case-insensitive unit (bytes, B, kB … PB)."""
    match = _PG_SIZE.fullmatch(text)
    multiplier = _PG_SIZE_UNITS.get(match.group(2).lower()) if match else None
    if match is None or multiplier is None:
        raise EvalError(f"invalid size: {text!r}")
    return round(float(match.group(1)) * multiplier)


def _options(options: str) -> list[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    for option in options.split(","):
        key, equals, value = option.strip().partition("=")
        if key:
            pairs.append((key, value if equals else None))
    return pairs


def _has_option(options: str, name: str) -> bool:
    """``noatime`` in ``rw,noatime``; an option with a value matches by its key (``data`` in ``data=ordered``)."""
    return any(key == name for key, _ in _options(options))


def _option_value(options: str, name: str) -> str | None:
    """The value of the last ``name=value`` option (mount: the last one wins); NULL when absent."""
    found: str | None = None
    for key, value in _options(options):
        if key == name:
            found = value
    return found


def _in_list(items: str, item: str) -> bool:
    """Comma-separated lists such as shared_preload_libraries: blanks and quotes stripped, any case."""
    wanted = item.strip().strip("'\"").lower()
    return any(part.strip().strip("'\"").strip().lower() == wanted for part in items.split(","))


def _lower(text: str) -> str:
    return text.lower()


def _upper(text: str) -> str:
    return text.upper()


def _length(text: str) -> int:
    return len(text)


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    implementation: Callable[..., Value]
    arguments: tuple[Kind, ...]
    optional: int  # how many trailing arguments may be left out
    returns: Kind


FUNCTIONS: dict[str, FunctionSpec] = {
    "round": FunctionSpec(_round, ("number", "number"), 1, "number"),
    "ceil": FunctionSpec(_ceil, ("number",), 0, "number"),
    "ceiling": FunctionSpec(_ceil, ("number",), 0, "number"),
    "floor": FunctionSpec(_floor, ("number",), 0, "number"),
    "abs": FunctionSpec(_abs, ("number",), 0, "number"),
    "next_power_of_2": FunctionSpec(_next_power_of_2, ("number",), 0, "number"),
    "pg_hash_size": FunctionSpec(_pg_hash_size, ("number", "number"), 0, "number"),
    "pg_size_bytes": FunctionSpec(_pg_size_bytes, ("text",), 0, "number"),
    "has_option": FunctionSpec(_has_option, ("text", "text"), 0, "bool"),
    "option_value": FunctionSpec(_option_value, ("text", "text"), 0, "text"),
    "lower": FunctionSpec(_lower, ("text",), 0, "text"),
    "upper": FunctionSpec(_upper, ("text",), 0, "text"),
    "length": FunctionSpec(_length, ("text",), 0, "number"),
    "in_list": FunctionSpec(_in_list, ("text", "text"), 0, "bool"),
}


# ---------------------------------------------------------------------------------------------------
# Compilation


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
        for name, value in zip(("text", "expr", "kind", "facts"), state, strict=True):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "function", None)

    def closure(self) -> Function:
        """The expression as a function of an Env (runtime errors as raised), made at the first call."""
        function = self.function
        if function is None:
            function = self.expr.function()
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


@dataclass(slots=True)
class CompileContext:
    """What names an expression may read.

    ``derived`` maps each derived fact to its type; ``derived_scopes`` to the item scope it reads (None
    for host-only formulas, absent while derived formulas themselves are being compiled). ``scope`` is
    the rule's scope (``host``, ``mount`` …) or None for a derived formula (any one item scope).
    ``params`` are the rule's parameters with their types, or the derived formula's (``derived_name``).
    """

    derived: Mapping[str, str]
    params: Mapping[str, str] | None = None
    scope: str | None = "host"
    derived_scopes: Mapping[str, str | None] = field(default_factory=dict)
    derived_name: str | None = None


# (node, kind); the kind "unit" marks a string literal that is also a size or a duration.
_Typed = tuple[Expr, str]

_SQL_PREFIX = "SELECT "


def compile_expression(text: str, context: CompileContext, *, want: Kind | None = None) -> Compiled:
    """Parse ``text`` as one SQL expression and compile it; ExpressionError says what is wrong and where."""
    import pglast

    source = str(text)
    try:
        statements = pglast.parse_sql(_SQL_PREFIX + source)
    except pglast.parser.ParseError as error:
        location = error.args[1] if len(error.args) > 1 else None
        offset = max(0, location - len(_SQL_PREFIX)) if isinstance(location, int) else None
        raise ExpressionError(f"invalid expression: {error.args[0]}", offset) from None
    stmt: Any = statements[0].stmt if len(statements) == 1 else None
    targets = getattr(stmt, "targetList", None)
    if (stmt is None or type(stmt).__name__ != "SelectStmt" or targets is None or len(targets) != 1
            or stmt.fromClause or stmt.whereClause or stmt.groupClause or stmt.sortClause
            or stmt.limitCount or stmt.distinctClause or stmt.havingClause):
        raise ExpressionError("expected exactly one expression (no commas, FROM, WHERE…)")
    compiler = _Compiler(context)
    node, kind = compiler.resolve(compiler.compile(targets[0].val), None)
    if want == "bool" and kind not in ("bool", "any", "null"):
        raise ExpressionError(f"expected a condition (boolean), not a {kind}")
    if want == "bool" and kind == "any":
        node = Guard(node, source.strip(), "bool")
    return Compiled(source, node, kind, tuple(compiler.facts))


def _offset(node: Any) -> int | None:
    location = getattr(node, "location", None)
    return location - len(_SQL_PREFIX) if isinstance(location, int) and location >= len(_SQL_PREFIX) else None


def _describe(kind: str) -> str:
    return {"unit": "size or duration", "null": "NULL"}.get(kind, kind)


class _Compiler:
    def __init__(self, context: CompileContext) -> None:
        self.context = context
        self.facts: dict[str, None] = {}  # ordered set

    # -- types ----------------------------------------------------------------------------------------

    def resolve(self, typed: _Typed, want: str | None) -> tuple[Expr, Kind]:
        """Settle a size/duration literal as a number, or as a text when text is wanted."""
        node, kind = typed
        if kind != "unit":
            return node, kind  # type: ignore[return-value]
        assert isinstance(node, Const)
        if want == "text":
            return node, "text"
        return Const(parse_quantity(str(node.value))), "number"

    def expect(self, typed: _Typed, want: Kind, what: str, ast_node: Any) -> Expr:
        node, kind = self.resolve(typed, want)
        if kind == want or kind == "null":
            return node
        if kind == "any":
            label = self._label(node)
            return Guard(node, label, want)
        raise ExpressionError(f"{what} needs a {want}, not a {_describe(kind)}", _offset(ast_node))

    @staticmethod
    def _label(node: Expr) -> str:
        return getattr(node, "name", "value")

    def comparable(self, left: _Typed, right: _Typed, ast_node: Any, what: str) -> tuple[Expr, Expr, bool]:
        """Both sides of a comparison, with whether runtime type checks are needed (an untyped side)."""
        left_kind, right_kind = left[1], right[1]
        if left_kind == "unit" and right_kind == "unit":
            left_node, lk = self.resolve(left, "number")
            right_node, rk = self.resolve(right, "number")
        else:
            left_node, lk = self.resolve(left, right_kind if right_kind == "text" else "number")
            right_node, rk = self.resolve(right, lk if lk == "text" else "number")
        if "null" not in (lk, rk) and "any" not in (lk, rk) and lk != rk:
            raise ExpressionError(f"cannot compare a {_describe(lk)} with a {_describe(rk)} ({what})",
                                  _offset(ast_node))
        return left_node, right_node, "any" in (lk, rk)

    def unify(self, kinds: Sequence[str], ast_node: Any, what: str) -> Kind:
        concrete = {kind for kind in kinds if kind not in ("null", "any")}
        if len(concrete) > 1:
            raise ExpressionError(f"{what} mixes {' and '.join(sorted(concrete))}", _offset(ast_node))
        if concrete:
            return concrete.pop()  # type: ignore[return-value]
        return "any" if "any" in kinds else "null"

    # -- nodes ----------------------------------------------------------------------------------------

    def compile(self, node: Any) -> _Typed:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise ExpressionError(f"unsupported SQL construct: {type(node).__name__}", _offset(node))
        return method(node)  # type: ignore[no-any-return]

    def _A_Const(self, node: Any) -> _Typed:
        if node.isnull:
            return Const(None), "null"
        value = node.val
        name = type(value).__name__
        if name == "Integer":
            return Const(int(value.ival)), "number"
        if name == "Float":  # pglast's name for a number beyond 32 bits too
            text = str(value.fval)
            if len(text) > _MAX_LITERAL_CHARS:  # int() of more than 4300 digits raises; no double is that long
                raise ExpressionError(f"{shown_number(text)}: beyond what a double holds (about 1.8e308)",
                                      _offset(node))
            number = int(text) if text.lstrip("-").isdigit() else float(text)
            refused = out_of_range(number)
            if refused is not None:
                raise ExpressionError(f"{shown_number(text)}: {refused}", _offset(node))
            return Const(number), "number"
        if name == "Boolean":
            return Const(bool(value.boolval)), "bool"
        if name == "String":
            text = str(value.sval)
            return Const(text), ("unit" if parse_quantity(text) is not None else "text")
        raise ExpressionError(f"unsupported constant: {name}", _offset(node))

    def _ColumnRef(self, node: Any) -> _Typed:
        parts: list[str] = []
        for part in node.fields:
            if type(part).__name__ != "String":
                raise ExpressionError("'*' is not a fact name", _offset(node))
            parts.append(str(part.sval))
        return self.fact(".".join(parts), node)

    def fact(self, name: str, ast_node: Any) -> _Typed:
        context = self.context
        namespace, _, key = name.partition(".")
        reference: Expr
        if namespace == "params":
            if context.derived_name is not None and key not in (context.params or {}):
                raise ExpressionError(f"{name}: derived.{context.derived_name} has no parameter {key} (a derived "
                                      "formula reads the parameters it declares under params:)", _offset(ast_node))
            if context.params is None or key not in context.params:
                raise self.unknown(name, ast_node)
            fact_type: str = context.params[key]
            if context.derived_name is not None:  # not a fact: a derived value's evidence is the facts it read
                return DerivedParam(context.derived_name, key), kind_of(fact_type)
            reference = ParamRef(key)
        elif namespace == "derived":
            if key not in context.derived:
                raise self.unknown(name, ast_node)
            fact_type = context.derived[key]
            scope = context.derived_scopes.get(key)
            if scope is not None and context.scope is not None and scope != context.scope:
                raise ExpressionError(f"{name} reads {scope}.* facts: only rules with scope: {scope} can use it",
                                      _offset(ast_node))
            reference = DerivedRef(key)
        else:
            known = static_type(name)
            if known is None:
                raise self.unknown(name, ast_node)
            fact_type = known
            scope = item_scope(name)
            if scope is not None and context.scope is not None and scope != context.scope:
                raise ExpressionError(f"{name} is an item fact: only rules with scope: {scope} read it",
                                      _offset(ast_node))
            reference = ItemFact(name) if scope is not None else HostFact(name)
        self.facts.setdefault(name, None)
        return reference, kind_of(fact_type)

    def unknown(self, name: str, ast_node: Any) -> ExpressionError:
        close = did_you_mean(name, self.context.derived, self.context.params or {})
        hint = f" (did you mean {close}?)" if close else ""
        return ExpressionError(f"unknown fact {name}{hint}", _offset(ast_node))

    def _A_Expr(self, node: Any) -> _Typed:
        kind = node.kind.name
        operator = str(node.name[0].sval) if node.name else ""
        if kind == "AEXPR_OP":
            return self.operator(operator, node)
        if kind == "AEXPR_IN":
            return self.membership(node, negate=operator == "<>")
        if kind in ("AEXPR_LIKE", "AEXPR_ILIKE"):
            left = self.expect(self.compile(node.lexpr), "text", "LIKE", node)
            pattern = self.expect(self.compile(node.rexpr), "text", "LIKE", node)
            return Like(left, pattern, kind == "AEXPR_ILIKE", operator.startswith("!")), "bool"
        if kind in ("AEXPR_BETWEEN", "AEXPR_NOT_BETWEEN"):
            operand = self.compile(node.lexpr)
            low_ast, high_ast = node.rexpr
            value, low, low_checked = self.comparable(operand, self.compile(low_ast), node, "BETWEEN")
            value, high, high_checked = self.comparable(operand, self.compile(high_ast), node, "BETWEEN")
            return Between(value, low, high, kind == "AEXPR_NOT_BETWEEN", low_checked or high_checked), "bool"
        if kind == "AEXPR_NULLIF":
            first = self.compile(node.lexpr)
            left_node, right_node, _ = self.comparable(first, self.compile(node.rexpr), node, "NULLIF")
            return NullIf(left_node, right_node), self.resolve(first, None)[1]
        if kind in ("AEXPR_DISTINCT", "AEXPR_NOT_DISTINCT"):
            left_node, right_node, _ = self.comparable(self.compile(node.lexpr), self.compile(node.rexpr), node,
                                                       "IS DISTINCT FROM")
            return Distinct(left_node, right_node, kind == "AEXPR_NOT_DISTINCT"), "bool"
        raise ExpressionError(f"unsupported operator form: {kind}", _offset(node))

    def operator(self, operator: str, node: Any) -> _Typed:
        if node.lexpr is None:
            if operator == "-":
                return Neg(self.expect(self.compile(node.rexpr), "number", "unary -", node)), "number"
            if operator == "+":
                return self.expect(self.compile(node.rexpr), "number", "unary +", node), "number"
            raise ExpressionError(f"unsupported prefix operator {operator}", _offset(node))
        if operator in ARITHMETIC:
            left = self.expect(self.compile(node.lexpr), "number", f"'{operator}'", node)
            right = self.expect(self.compile(node.rexpr), "number", f"'{operator}'", node)
            return Arith(ARITHMETIC[operator], left, right), "number"
        if operator == "||":
            left_node, _ = self.resolve(self.compile(node.lexpr), "text")
            right_node, _ = self.resolve(self.compile(node.rexpr), "text")
            return Arith(_concat, left_node, right_node), "text"
        if operator in COMPARISONS:
            left, right, checked = self.comparable(self.compile(node.lexpr), self.compile(node.rexpr), node,
                                                   f"'{operator}'")
            return Compare(COMPARISONS[operator], left, right, checked), "bool"
        raise ExpressionError(f"unsupported operator {operator}", _offset(node))

    def membership(self, node: Any, negate: bool) -> _Typed:
        operand = self.compile(node.lexpr)
        items: list[Expr] = []
        checked = False
        value = operand[0]
        for item_ast in node.rexpr:
            value, item, item_checked = self.comparable(operand, self.compile(item_ast), node, "IN")
            items.append(item)
            checked = checked or item_checked
        return In(value, items, negate, checked), "bool"

    def _BoolExpr(self, node: Any) -> _Typed:
        operator = node.boolop.name
        args = [self.expect(self.compile(arg), "bool", operator.removesuffix("_EXPR"), node) for arg in node.args]
        if operator == "AND_EXPR":
            return And(args), "bool"
        if operator == "OR_EXPR":
            return Or(args), "bool"
        return Not(args[0]), "bool"

    def _NullTest(self, node: Any) -> _Typed:
        arg, _ = self.resolve(self.compile(node.arg), None)
        return IsNull(arg, node.nulltesttype.name == "IS_NOT_NULL"), "bool"

    def _BooleanTest(self, node: Any) -> _Typed:
        test = node.booltesttype.name  # IS_TRUE, IS_NOT_TRUE, IS_FALSE, IS_NOT_FALSE, IS_UNKNOWN, IS_NOT_UNKNOWN
        arg = self.expect(self.compile(node.arg), "bool", test.replace("_", " "), node)
        target = {"TRUE": True, "FALSE": False, "UNKNOWN": None}[test.rsplit("_", 1)[1]]
        return IsBool(arg, target, "_NOT_" in test), "bool"

    def _CaseExpr(self, node: Any) -> _Typed:
        operand = self.compile(node.arg) if node.arg is not None else None
        whens: list[tuple[Expr, Expr]] = []
        results: list[_Typed] = [self.compile(when.result) for when in node.args]
        default: _Typed = self.compile(node.defresult) if node.defresult is not None else (Const(None), "null")
        kind = self.unify([self.resolve(each, None)[1] for each in [*results, default]], node, "CASE")
        resolved = [self.resolve(each, kind)[0] for each in results]
        operand_node: Expr | None = None
        for when, result in zip(node.args, resolved, strict=True):
            if operand is None:
                condition = self.expect(self.compile(when.expr), "bool", "CASE WHEN", when)
            else:
                operand_node, condition, _ = self.comparable(operand, self.compile(when.expr), when, "CASE")
            whens.append((condition, result))
        return Case(operand_node, whens, self.resolve(default, kind)[0]), kind

    def _CoalesceExpr(self, node: Any) -> _Typed:
        args = [self.compile(arg) for arg in node.args]
        kind = self.unify([self.resolve(arg, None)[1] for arg in args], node, "COALESCE")
        return Coalesce([self.resolve(arg, kind)[0] for arg in args]), kind

    def _MinMaxExpr(self, node: Any) -> _Typed:
        greatest = node.op.name == "IS_GREATEST"
        what = "GREATEST" if greatest else "LEAST"
        args = [self.compile(arg) for arg in node.args]
        kind = self.unify([self.resolve(arg, None)[1] for arg in args], node, what)
        if kind == "bool":
            raise ExpressionError(f"{what} of booleans", _offset(node))
        return MinMax([self.resolve(arg, kind)[0] for arg in args], greatest), kind

    def _FuncCall(self, node: Any) -> _Typed:
        name = ".".join(str(part.sval) for part in node.funcname).lower()
        name = name.removeprefix("pg_catalog.")
        spec = FUNCTIONS.get(name)
        if spec is None:
            from difflib import get_close_matches

            close = get_close_matches(name, FUNCTIONS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ExpressionError(f"unknown function {name}(){hint}", _offset(node))
        if node.agg_star or node.agg_distinct or node.over is not None:
            raise ExpressionError(f"{name}(): aggregates and window functions are not supported", _offset(node))
        args = list(node.args or ())
        most = len(spec.arguments)
        if not most - spec.optional <= len(args) <= most:
            expected = str(most) if not spec.optional else f"{most - spec.optional} to {most}"
            raise ExpressionError(f"{name}() takes {expected} arguments, not {len(args)}", _offset(node))
        compiled = [self.expect(self.compile(arg), want, f"{name}()", node)
                    for arg, want in zip(args, spec.arguments, strict=False)]
        return Call(spec.implementation, compiled), spec.returns
