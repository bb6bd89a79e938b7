"""Sizes and durations in string literals, as PostgreSQL spells them (memory units are powers of 1024)."""

from __future__ import annotations

import re

from pgvet.engine.ir import Value

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
