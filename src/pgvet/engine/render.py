"""Message and fix templates: ``{expression|format}`` holes, compiled once, rendered per finding.

Formats: ``size`` (bytes in IEC units: ``18.0 GiB``, ``512 MiB``; sizes of one text that differ are told apart:
format_sizes), ``pct`` (a ratio: 0.563 → ``56.3 %``),
``duration`` (seconds: ``5min``, ``200ms``, ``1h``), ``number`` (at most two decimals), ``int``
(rounded). A NULL renders as ``unknown``. ``{{`` and ``}}`` are literal braces.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pgvet.engine.ir import Value
from pgvet.engine.runtime import Env, EvalError
from pgvet.numbers import out_of_range

if TYPE_CHECKING:
    from pgvet.engine.pack import Template

FORMATS: tuple[str, ...] = ("size", "pct", "duration", "number", "int")
_IEC = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_DURATIONS = (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6))


def render(template: Template, env: Env) -> str:
    """The text with every hole evaluated and formatted, NULL as ``unknown`` (EvalError propagates)."""
    rendered = _render(template, env, True)
    assert rendered is not None  # NULL holes were formatted
    return rendered


def render_setting(template: Template, env: Env) -> str | None:
    """A fix's value for a setting: None when a hole is NULL, since no setting can be written as unknown."""
    return _render(template, env, False)


def _render(template: Template, env: Env, null_allowed: bool) -> str | None:
    out: list[str] = []
    append = out.append
    has_null = False
    sizes: list[tuple[int, int | float]] = []  # the |size holes: where each is in out, its value
    for part in template:
        if isinstance(part, str):
            append(part)
            continue
        # Every hole is evaluated, even after a NULL one: a hole's EvalError (the rule not evaluated)
        # must not depend on whether a NULL hole comes before it.
        compiled, format_name = part
        value = compiled.evaluate(env)
        kind = type(value)
        # texts, NULLs and plain integers, most holes' values, without format_value's frame
        if kind is str:
            append(value)  # type: ignore[arg-type]
        elif value is None:
            has_null = True
            append("unknown")
        elif kind is int and format_name is None:
            try:
                append(str(value))
            except ValueError:  # more than 4300 digits, which Python does not write
                raise EvalError(f"{compiled.text.strip()}: {out_of_range(value)}") from None
        else:
            try:
                append(format_value(value, format_name))
            except (ArithmeticError, ValueError, TypeError) as error:  # a number too large for |size, …
                raise EvalError(f"{compiled.text.strip()}: {error}") from None
            if format_name == "size" and kind is not bool:
                sizes.append((len(out) - 1, value))  # type: ignore[arg-type]
    # sizes compared in one sentence must not read alike when they differ (most messages' sizes already do not)
    if len(sizes) > 1 and len({out[position] for position, _ in sizes}) < len(sizes):
        for (position, _), text in zip(sizes, format_sizes([value for _, value in sizes]), strict=True):
            out[position] = text
    return None if has_null and not null_allowed else "".join(out)


def format_value(value: Value, format_name: str | None) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if format_name == "size":
        return format_size(value)
    if format_name == "pct":
        return f"{value * 100:.1f} %"
    if format_name == "duration":
        return format_duration(value)
    if format_name == "int":
        return str(int(math.copysign(math.floor(abs(value) + 0.5), value))) if math.isfinite(value) else str(value)
    return format_number(value)


def format_number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def format_size(value: int | float, decimals: int | None = None) -> str:
    """IEC units, three significant digits: ``512 B``, ``1.5 KiB``, ``18.0 GiB``, ``512 MiB``; or ``decimals``
    decimals in the same unit (format_sizes)."""
    if not math.isfinite(value):
        return str(value)
    magnitude = abs(value)
    index = 0
    while magnitude >= 1024 and index < len(_IEC) - 1:
        magnitude /= 1024
        index += 1
    sign = "-" if value < 0 else ""
    if index == 0:
        return f"{sign}{round(magnitude)} B"
    if decimals is None:
        decimals = 0 if magnitude >= 100 else 1
    return f"{sign}{magnitude:.{decimals}f} {_IEC[index]}"


def format_sizes(values: Sequence[int | float]) -> list[str]:
    """format_size of sizes shown in one sentence: sizes that differ but would read the same ("3.1 GiB below
    3.1 GiB") get the decimals that tell them apart, up to three, else are shown in bytes."""
    texts = [format_size(value) for value in values]
    alike: dict[str, list[int]] = {}
    for index, text in enumerate(texts):
        alike.setdefault(text, []).append(index)
    for members in alike.values():
        distinct = len({values[index] for index in members})
        if distinct == 1:
            continue
        for decimals in (1, 2, 3):
            told = {index: format_size(values[index], decimals) for index in members}
            if len(set(told.values())) == distinct:
                break
        else:
            told = {index: f"{values[index]:.0f} B" for index in members}
        for index, text in told.items():
            texts[index] = text
    return texts


def format_duration(value: int | float) -> str:
    """The largest PostgreSQL unit that expresses the value exactly (``300`` → ``5min``, ``0.2`` → ``200ms``)."""
    if value == 0 or not math.isfinite(value):
        return f"{format_number(value)}s"
    for unit, seconds in _DURATIONS:
        count = value / seconds
        if abs(count) >= 1 and abs(count - round(count)) < 1e-9 * max(1.0, abs(count)):
            return f"{round(count)}{unit}"
    return f"{format_number(value)}s"
