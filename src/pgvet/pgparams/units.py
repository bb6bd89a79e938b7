"""Parameter values read exactly as PostgreSQL reads them (guc.c, PostgreSQL 12 and later).

Integers: ``strtol`` with base 0 (``0x1F`` hexadecimal, ``017`` octal), falling back to ``strtod``
when the number goes on with ``.``, ``e`` or overflows; then an optional unit, case-sensitive, after
optional blanks; fractional values are rounded to the next smaller unit, then ``rint`` to an integer
of the parameter's own unit; then the range check. Reals: ``strtod`` (hexadecimal floats, ``inf``,
``nan`` rejected) and the same units, without the final rounding. Booleans: unique prefixes of
on/off/true/false/yes/no and 1/0, case-insensitive. Enums: the exact name, case-insensitive,
including the hidden spellings. Check hooks (C functions some parameters add) are not reproduced, except
those that rewrite a valid value (:data:`_REWRITING_HOOKS`), so that the value is the one SHOW gives, and the
Boolean ones that refuse a value (:data:`_REFUSED_BOOLEANS`).
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from pgvet.pgparams import Param

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DBL_MIN = 2.2250738585072014e-308  # the smallest normal double: glibc's strtod reports less as ERANGE
MAX_UNIT_LEN = 3
C_SPACE = " \t\n\v\f\r"  # isspace() in the C locale

MEMORY_UNITS_HINT = 'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".'
TIME_UNITS_HINT = 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'
INTEGER_RANGE_HINT = "Value exceeds integer range."

# Size of each parameter unit, in bytes or in milliseconds (how pg_settings names the GUC_UNIT_* flags).
UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024 * 1024}
UNIT_MS = {"ms": 1, "s": 1000, "min": 60 * 1000}

# guc.c's conversion tables, greatest unit first, multipliers computed as guc.c computes them (the
# double results matter when values are fractional).
_MEMORY_TABLE: dict[str, tuple[tuple[str, float], ...]] = {
    "B": (("TB", 1024.0 * 1024.0 * 1024.0 * 1024.0), ("GB", 1024.0 * 1024.0 * 1024.0), ("MB", 1024.0 * 1024.0),
          ("kB", 1024.0), ("B", 1.0)),
    "kB": (("TB", 1024.0 * 1024.0 * 1024.0), ("GB", 1024.0 * 1024.0), ("MB", 1024.0), ("kB", 1.0),
           ("B", 1.0 / 1024.0)),
    "MB": (("TB", 1024.0 * 1024.0), ("GB", 1024.0), ("MB", 1.0), ("kB", 1.0 / 1024.0), ("B", 1.0 / (1024.0 * 1024.0))),
    "8kB": (("TB", (1024.0 * 1024.0 * 1024.0) / 8), ("GB", (1024.0 * 1024.0) / 8), ("MB", 1024.0 / 8),
            ("kB", 1.0 / 8), ("B", 1.0 / 8192)),
}
_TIME_TABLE: dict[str, tuple[tuple[str, float], ...]] = {
    "ms": (("d", 1000 * 60 * 60 * 24), ("h", 1000 * 60 * 60), ("min", 1000 * 60), ("s", 1000), ("ms", 1),
           ("us", 1.0 / 1000)),
    "s": (("d", 60 * 60 * 24), ("h", 60 * 60), ("min", 60), ("s", 1), ("ms", 1.0 / 1000), ("us", 1.0 / (1000 * 1000))),
    "min": (("d", 60 * 24), ("h", 60), ("min", 1), ("s", 1.0 / 60), ("ms", 1.0 / (1000 * 60)),
            ("us", 1.0 / (1000 * 1000 * 60))),
}
_CONVERSIONS = {**_MEMORY_TABLE, **_TIME_TABLE}

# The longest prefix glibc's strtod accepts (C locale), after blanks and a sign.
_STRTOD = re.compile(
    r"""(?P<special>inf(?:inity)?|nan(?:\([0-9a-z_]*\))?)
      | (?P<hex>0x(?:[0-9a-f]+(?:\.[0-9a-f]*)?|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?)
      | (?P<decimal>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?)""",
    re.IGNORECASE | re.VERBOSE,
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_LONG_DIGITS = 22  # more significant digits than a long has in any base (octal: 22)
_STRTOL_DIGITS = {16: re.compile(r"[0-9a-fA-F]+"), 8: re.compile(r"[0-7]*"), 10: re.compile(r"[0-9]+")}


class ParsedValue(NamedTuple):
    """A value as PostgreSQL stores it.

    ``native``: in the parameter's own unit, as ``pg_settings.setting`` shows it (bool for booleans,
    the listed spelling for enums). ``canonical``: bytes for memory, seconds for time (negative special
    values such as -1 kept as they are), bool, lower-case enum. ``had_unit``: False for a bare number on
    a parameter that has a unit.
    """

    native: int | float | bool | str
    canonical: int | float | bool | str
    had_unit: bool


class InvalidValue(Exception):
    """PostgreSQL would reject the value; ``message`` and ``hint`` are worded as PostgreSQL words them."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in C_SPACE:
        position += 1
    return position


def _sign(text: str, position: int) -> tuple[int, int]:
    if position < len(text) and text[position] in "+-":
        return (-1 if text[position] == "-" else 1), position + 1
    return 1, position


def _strtol(text: str) -> tuple[int, int, bool]:
    """glibc ``strtol(text, &end, 0)``: the value, where it stopped (0 if nothing was read), overflow."""
    sign, position = _sign(text, _skip_space(text, 0))
    base = 10
    if text[position:position + 2].lower() == "0x" and _STRTOL_DIGITS[16].match(text, position + 2):
        base, position = 16, position + 2
    elif text[position:position + 1] == "0":
        base = 8
    digits = _STRTOL_DIGITS[base].match(text, position)
    if digits is None or not digits.group():
        return 0, 0, False
    significant = digits.group().lstrip("0")
    if len(significant) > _LONG_DIGITS:  # beyond any long (and int() refuses over 4300 digits): overflow
        return (LONG_MIN if sign < 0 else LONG_MAX), digits.end(), True
    value = sign * int(significant or "0", base)
    overflow = not LONG_MIN <= value <= LONG_MAX
    return (max(LONG_MIN, min(LONG_MAX, value)), digits.end(), overflow)


def _strtod(text: str) -> tuple[float, int, bool]:
    """glibc ``strtod(text, &end)``: the value, where it stopped (0 if nothing was read), ERANGE."""
    sign, position = _sign(text, _skip_space(text, 0))
    match = _STRTOD.match(text, position)
    if match is None:
        return 0.0, 0, False
    if match.group("special"):
        value = math.nan if match.group("special").lower().startswith("nan") else math.inf
        return math.copysign(value, sign), match.end(), False
    number = match.group("hex") or match.group("decimal")
    try:
        magnitude = float.fromhex(number) if match.group("hex") else float(number)
    except OverflowError:  # float.fromhex of a number beyond the doubles: strtod's HUGE_VAL and ERANGE
        magnitude = math.inf
    mantissa = re.split(r"[pPeE]", number[2:] if match.group("hex") else number)[0]
    nonzero = any(char not in "0." for char in mantissa)
    erange = math.isinf(magnitude) or (nonzero and magnitude < DBL_MIN)
    return sign * magnitude, match.end(), erange


def _rint(value: float) -> float:
    """C ``rint`` in the default rounding mode: to nearest, ties to even."""
    return value if not math.isfinite(value) else float(round(value))


def _convert_to_base_unit(value: float, rest: str, base_unit: str) -> float | None:
    """guc.c convert_to_base_unit: ``value`` followed by unit text ``rest``, in ``base_unit``; None if invalid."""
    unit_end = 0
    while unit_end < len(rest) and rest[unit_end] not in C_SPACE and unit_end < MAX_UNIT_LEN:
        unit_end += 1
    if _skip_space(rest, unit_end) != len(rest):
        return None  # unit too long, or something after it
    unit = rest[:unit_end]
    table = _CONVERSIONS[base_unit]
    for index, (name, multiplier) in enumerate(table):
        if name == unit:
            converted = value * multiplier
            if index + 1 < len(table):  # "30.1GB": round to a whole number of the next smaller unit
                smaller = table[index + 1][1]
                converted = _rint(converted / smaller) * smaller
            return converted
    return None


def _units_hint(param: Param) -> str:
    return MEMORY_UNITS_HINT if param.kind == "memory" else TIME_UNITS_HINT


def _invalid(param: Param, text: str, hint: str | None = None) -> InvalidValue:
    return InvalidValue(f'invalid value for parameter "{param.name}": "{text}"', hint)


def _with_unit(param: Param, value: float, text: str, end: int) -> tuple[float, bool]:
    """The number read up to ``end``, converted by the unit after it (if any): (value, had_unit)."""
    rest_start = _skip_space(text, end)
    if rest_start == len(text):
        return value, False
    if param.unit not in _CONVERSIONS:
        raise _invalid(param, text)  # this parameter takes no unit: no hint
    converted = _convert_to_base_unit(value, text[rest_start:], param.unit)
    if converted is None:
        raise _invalid(param, text, _units_hint(param))
    return converted, True


def _parse_int(param: Param, text: str) -> tuple[int, bool]:
    long_value, end, overflow = _strtol(text)
    value, erange = float(long_value), False
    if (end < len(text) and text[end] in ".eE") or overflow:
        value, end, erange = _strtod(text)
    if end == 0 or erange or math.isnan(value):
        raise _invalid(param, text)
    value, had_unit = _with_unit(param, value, text, end)
    value = _rint(value)
    if not INT_MIN <= value <= INT_MAX:
        raise _invalid(param, text, INTEGER_RANGE_HINT)
    return int(value), had_unit


def _parse_real(param: Param, text: str) -> tuple[float, bool]:
    value, end, erange = _strtod(text)
    if end == 0 or erange or math.isnan(value):
        raise _invalid(param, text)
    return _with_unit(param, value, text, end)


def _unit_suffix(param: Param) -> str:
    return f" {param.unit}" if param.unit else ""


def _range_unit(param: Param) -> str:
    """PostgreSQL 17 added the unit to the bounds of its out-of-range message."""
    return _unit_suffix(param) if param.major >= 17 else ""


def _out_of_range_int(param: Param, value: int) -> InvalidValue:
    unit, bound_unit = _unit_suffix(param), _range_unit(param)
    return InvalidValue(f'{value}{unit} is outside the valid range for parameter "{param.name}" '
                        f"({param.min}{bound_unit} .. {param.max}{bound_unit})")


def _format_g(value: float) -> str:
    """``%g`` as PostgreSQL's own snprintf prints it (infinities spelt out)."""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:g}"


def _out_of_range_real(param: Param, value: float) -> InvalidValue:
    unit, bound_unit = _unit_suffix(param), _range_unit(param)
    low, high = _format_g(float(param.min or 0)), _format_g(float(param.max or 0))
    return InvalidValue(f'{_format_g(value)}{unit} is outside the valid range for parameter "{param.name}" '
                        f"({low}{bound_unit} .. {high}{bound_unit})")


def _ascii_lower(text: str) -> str:
    """Lower case as pg_strcasecmp compares in the C locale: ASCII letters only."""
    return text.translate(_ASCII_LOWER)


def parse_bool(text: str) -> bool | None:
    """guc.c parse_bool: True, False, or None when the text is not a Boolean."""
    lowered = _ascii_lower(text)
    length = len(lowered)
    if not lowered:
        return None
    if lowered[0] in "tfyn":
        for word, meaning in (("true", True), ("false", False), ("yes", True), ("no", False)):
            if word.startswith(lowered):
                return meaning
        return None
    if lowered[0] == "o":  # "o" alone is ambiguous: "on", "of" and "off" are not
        if length >= 2 and "on".startswith(lowered):
            return True
        if length >= 2 and "off".startswith(lowered):
            return False
        return None
    return {"1": True, "0": False}.get(lowered)


def _canonical_number(param: Param, native: int | float) -> int | float:
    """Bytes for memory, seconds for time; negative special values (-1) are kept unscaled."""
    if native < 0 or param.unit is None:
        return native
    if param.unit in UNIT_BYTES:
        return native * UNIT_BYTES[param.unit]
    if param.unit in UNIT_MS:
        milliseconds = native * UNIT_MS[param.unit]
        if isinstance(milliseconds, int) and milliseconds % 1000 == 0:
            return milliseconds // 1000
        return milliseconds / 1000
    return native


def _check_autovacuum_work_mem(param: Param, value: int) -> int:
    """check_autovacuum_work_mem (autovacuum.c): -1 stays (maintenance_work_mem applies); anything else is
    raised to maintenance_work_mem's minimum, 1MB before 17, 64kB from 17 (measured: ``0`` and ``500kB`` show
    1MB on 15 and 16; ``0`` shows 64kB and ``500kB`` stays on 17 and 18)."""
    if value == -1:
        return value
    return max(value, 64 if param.major >= 17 else 1024)


# Check hooks that change a value PostgreSQL accepts instead of refusing it, by parameter name (lower case).
_REWRITING_HOOKS = {"autovacuum_work_mem": _check_autovacuum_work_mem}

_DATE_STYLES = {"iso": "ISO", "sql": "SQL", "postgres": "Postgres", "german": "German"}
_BLANKS = " \t\n\r\f\v"  # scanner_isspace's


def _check_datestyle(param: Param, text: str) -> str:
    """DateStyle as check_datestyle (commands/variable.c) stores it, ``ISO, MDY``: a style and an order from a
    comma list, the half not given from the default (German's order DMY), Euro… for DMY, US and NonEuro… for
    MDY; an unknown word, or two styles or orders that differ, refused (with PostgreSQL's message; its detail,
    which InvalidValue does not hold, in the comments below)."""
    style, order = "ISO", "MDY"
    have_style = have_order = False
    conflicting = False  # said after the list, as an unknown word later in it is said first
    words = text.split(",") if text.strip(_BLANKS) else []  # an empty list keeps the default
    for token in words:
        word = token.strip(_BLANKS).lower()
        if len(word) >= 2 and word[0] == word[-1] == '"':
            word = word[1:-1]
        if not word or any(character in _BLANKS for character in word):
            raise _invalid(param, text)  # PostgreSQL's detail: List syntax is invalid.
        if word == "default":
            continue  # the default's style and order, where the list gives none: what is already in place
        if word in _DATE_STYLES:
            conflicting |= have_style and style != _DATE_STYLES[word]
            style, have_style = _DATE_STYLES[word], True
            if word == "german" and not have_order:
                order = "DMY"
            continue
        wanted = ("YMD" if word == "ymd" else "DMY" if word == "dmy" or word.startswith("euro")
                  else "MDY" if word in ("mdy", "us") or word.startswith("noneuro") else None)
        if wanted is None:
            raise _invalid(param, text)  # PostgreSQL's detail: Unrecognized key word: "<word>".
        conflicting |= have_order and order != wanted
        order, have_order = wanted, True
    if conflicting:
        raise _invalid(param, text)  # PostgreSQL's detail: Conflicting "datestyle" specifications.
    return f"{style}, {order}"


# Check hooks that refuse one value of a Boolean, with PostgreSQL's message (GUC_check_errmsg's): 12 removed
# tables WITH OIDS and kept default_with_oids (check_default_with_oids) to refuse on.
_REFUSED_BOOLEANS = {"default_with_oids": (True, "tables declared WITH OIDS are not supported")}


# Check hooks that store a text otherwise than written, by parameter name (as PostgreSQL spells it).
_STRING_HOOKS = {"DateStyle": _check_datestyle}


def parse_value(param: Param, text: str) -> ParsedValue:
    """``text`` as PostgreSQL would store it for ``param``; InvalidValue with PostgreSQL's message if not."""
    if param.vartype == "bool":
        flag = parse_bool(text)
        if flag is None:
            raise InvalidValue(f'parameter "{param.name}" requires a Boolean value')
        refused = _REFUSED_BOOLEANS.get(param.name)
        if refused is not None and refused[0] == flag:
            raise InvalidValue(refused[1])
        return ParsedValue(flag, flag, False)
    if param.vartype == "integer":
        integer, had_unit = _parse_int(param, text)
        if param.min is not None and param.max is not None and not param.min <= integer <= param.max:
            raise _out_of_range_int(param, integer)
        hook = _REWRITING_HOOKS.get(param.name)
        if hook is not None:
            integer = hook(param, integer)
        return ParsedValue(integer, _canonical_number(param, integer), had_unit)
    if param.vartype == "real":
        real, had_unit = _parse_real(param, text)
        if param.min is not None and param.max is not None and not param.min <= real <= param.max:
            raise _out_of_range_real(param, real)
        return ParsedValue(real, _canonical_number(param, real), had_unit)
    if param.vartype == "enum":
        wanted = _ascii_lower(text)
        for listed in param.enumvals:
            if _ascii_lower(listed) == wanted:
                return ParsedValue(listed, listed.lower(), False)
        for spelling, listed in param.hidden_enumvals:
            if spelling == wanted:
                return ParsedValue(listed, listed.lower(), False)
        raise _invalid(param, text, "Available values: " + ", ".join(param.enumvals) + ".")
    check = _STRING_HOOKS.get(param.name)
    stored = text if check is None else check(param, text)
    return ParsedValue(stored, stored, False)


def format_native(param: Param, native: int | float) -> str:
    """A value in the parameter's unit written as SHOW writes it: 16384 in 8kB → ``128MB``, 300 s → ``5min``.

    As in PostgreSQL, only positive values get a unit (``-1`` and ``0`` stay bare), the greatest unit
    that divides the value exactly is chosen, and parameters without a unit print the number alone.
    """
    if param.unit not in _CONVERSIONS or native <= 0:
        return f"{native:g}" if isinstance(native, float) else str(native)
    table = _CONVERSIONS[param.unit]
    if isinstance(native, int):
        for name, multiplier in table:
            if multiplier <= 1.0 or native % int(multiplier) == 0:
                return f"{int(_rint(native / multiplier))}{name}"
    chosen = (0.0, "")
    for name, multiplier in table:
        chosen = (native / multiplier, name)
        if abs(_rint(chosen[0]) / chosen[0] - 1.0) <= 1e-8:
            break
    return f"{chosen[0]:g}{chosen[1]}"


def shown_canonical(param: Param, value: int | float | str | bool) -> str:
    """A canonical value (bytes, seconds, a bool, a lower-case enum: a live server's, as pgvet holds it) as SHOW
    writes it: 4294967296 for effective_cache_size → ``4GB``, False → ``off``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    native: int | float = value
    if value > 0 and param.unit in UNIT_BYTES:
        native = value / UNIT_BYTES[param.unit]
    elif value > 0 and param.unit in UNIT_MS:
        native = value * 1000 / UNIT_MS[param.unit]
    if param.vartype == "integer" and isinstance(native, float) and native.is_integer():
        native = int(native)
    return format_native(param, native)


def shown_value(param: Param, text: str) -> str:
    """A value as SHOW writes it (``128MB`` for 16384 pages of 8 kB, ``on`` for true); the text itself when
    PostgreSQL would refuse it."""
    try:
        native = parse_value(param, text).native
    except InvalidValue:
        return text
    if isinstance(native, bool):
        return "on" if native else "off"
    if isinstance(native, int | float):
        return format_native(param, native)
    return native
