"""What SQL's operators and functions compute here: arithmetic refusing texts, NULL for a division by zero,
comparisons within one family of values, LIKE, and the functions a rule may call (FUNCTIONS)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from operator import eq, ge, gt, le, lt, ne
from typing import Any, NamedTuple

from pgvet.engine.factnames import Kind
from pgvet.engine.ir import Value
from pgvet.engine.render import FORMATS, format_value
from pgvet.engine.runtime import EvalError


def is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


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


# the operators on numbers, then every binary operator that is not a comparison, by their SQL spelling
ARITHMETIC: dict[str, Callable[[Any, Any], Value]] = {"+": _add, "-": _sub, "*": _mul, "/": _div, "%": _mod}
BINARY: dict[str, Callable[[Any, Any], Value]] = {**ARITHMETIC, "||": _concat}


# operator's functions, written in C: with numbers, texts and booleans they return a bool, as SQL's do
COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "=": eq, "<>": ne, "<": lt, "<=": le, ">": gt, ">=": ge,
}


def same_family(left: object, right: object) -> bool:
    """Values SQL would compare: two numbers, two texts or two booleans (True is not 1 here)."""
    if is_number(left):
        return is_number(right)
    return type(left) is type(right)


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


# matched on the stripped text: a \s* at each end beside this one's was quadratic on a number and blanks
_PG_SIZE = re.compile(r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)")
_PG_SIZE_UNITS = {"": 1, "bytes": 1, "b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4,
                  "pb": 1024**5}


def _pg_size_bytes(text: str | int | float) -> int:
    """As PostgreSQL's pg_size_bytes: a number, optional blanks, a case-insensitive unit (bytes, B, kB … PB). A
    number is taken as it is: an extension's parameter is text in the files and a number in a live server's
    pg_settings (pg_stat_statements.max)."""
    if not isinstance(text, str):
        if isinstance(text, bool):
            raise EvalError(f"invalid size: {text!r}")
        return round(text)
    match = _PG_SIZE.fullmatch(text.strip())
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


def _formatted(value: float, format_name: str) -> str:
    """A number as a template's ``{value|format}`` writes it, for a text built in an expression (a CASE)."""
    if format_name not in FORMATS:
        raise EvalError(f"unknown format '{format_name}' (use one of {', '.join(FORMATS)})")
    return format_value(value, format_name)


class FunctionSpec(NamedTuple):
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
    "formatted": FunctionSpec(_formatted, ("number", "text"), 0, "text"),
    "in_list": FunctionSpec(_in_list, ("text", "text"), 0, "bool"),
}
