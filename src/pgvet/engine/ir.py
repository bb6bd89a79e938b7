"""An expression as a tree of nodes: what the compiler (compiler.py) makes of a rule's SQL text, checked and
typed, and what the interpreter (interpreter.py) runs. Nodes are plain picklable data, names and operators
as text: the compiled pack is cached with them, and the warm path imports no pglast."""

from __future__ import annotations

from collections.abc import Sequence

Value = int | float | str | bool | None


class Expr:
    __slots__ = ()


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value


class HostFact(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class ItemFact(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class ParamRef(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class DerivedParam(Expr):
    """``params.NAME`` in a derived formula: the formula's own parameter, the same for every rule that reads
    the derived value (a rule's parameters are in ``env.params``, which a derived formula never reads)."""

    __slots__ = ("derived", "name")

    def __init__(self, derived: str, name: str) -> None:
        self.derived = derived
        self.name = name


class DerivedRef(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class Guard(Expr):
    """Around an untyped fact (sysctl.*) used as a number, a text or a boolean: a value of another type is a
    runtime error (a text is not concatenated, a number not taken for true)."""

    __slots__ = ("arg", "kind", "label")

    def __init__(self, arg: Expr, label: str, kind: str) -> None:
        self.arg = arg
        self.label = label
        self.kind = kind


class Arith(Expr):
    __slots__ = ("left", "op", "right")

    def __init__(self, op: str, left: Expr, right: Expr) -> None:
        self.op = op  # + - * / % or ||
        self.left = left
        self.right = right


class Neg(Expr):
    __slots__ = ("arg",)

    def __init__(self, arg: Expr) -> None:
        self.arg = arg


class Compare(Expr):
    __slots__ = ("checked", "left", "op", "right")

    def __init__(self, op: str, left: Expr, right: Expr, checked: bool) -> None:
        self.op = op  # = <> < <= > >=
        self.left = left
        self.right = right
        self.checked = checked  # an untyped side: check the runtime types


class Distinct(Expr):
    """IS [NOT] DISTINCT FROM: NULL-safe equality."""

    __slots__ = ("left", "negate", "right")

    def __init__(self, left: Expr, right: Expr, negate: bool) -> None:
        self.left = left
        self.right = right
        self.negate = negate


class And(Expr):
    __slots__ = ("args",)

    def __init__(self, args: Sequence[Expr]) -> None:
        self.args = tuple(args)


class Or(Expr):
    __slots__ = ("args",)

    def __init__(self, args: Sequence[Expr]) -> None:
        self.args = tuple(args)


class Not(Expr):
    __slots__ = ("arg",)

    def __init__(self, arg: Expr) -> None:
        self.arg = arg


class In(Expr):
    __slots__ = ("checked", "items", "negate", "operand")

    def __init__(self, operand: Expr, items: Sequence[Expr], negate: bool, checked: bool) -> None:
        self.operand = operand
        self.items = tuple(items)
        self.negate = negate
        self.checked = checked


class Between(Expr):
    __slots__ = ("checked", "high", "low", "negate", "operand")

    def __init__(self, operand: Expr, low: Expr, high: Expr, negate: bool, checked: bool) -> None:
        self.operand = operand
        self.low = low
        self.high = high
        self.negate = negate
        self.checked = checked


class IsNull(Expr):
    __slots__ = ("arg", "negate")

    def __init__(self, arg: Expr, negate: bool) -> None:
        self.arg = arg
        self.negate = negate


class IsBool(Expr):
    """IS [NOT] TRUE / FALSE / UNKNOWN: never NULL."""

    __slots__ = ("arg", "negate", "target")

    def __init__(self, arg: Expr, target: bool | None, negate: bool) -> None:
        self.arg = arg
        self.target = target
        self.negate = negate


class Like(Expr):
    __slots__ = ("arg", "case_insensitive", "negate", "pattern")

    def __init__(self, arg: Expr, pattern: Expr, case_insensitive: bool, negate: bool) -> None:
        self.arg = arg
        self.pattern = pattern
        self.case_insensitive = case_insensitive
        self.negate = negate


class Case(Expr):
    """Searched CASE (``operand`` None) or simple CASE (each WHEN compared with ``operand`` by =)."""

    __slots__ = ("default", "operand", "whens")

    def __init__(self, operand: Expr | None, whens: Sequence[tuple[Expr, Expr]], default: Expr) -> None:
        self.operand = operand
        self.whens = tuple(whens)
        self.default = default


class Coalesce(Expr):
    __slots__ = ("args",)

    def __init__(self, args: Sequence[Expr]) -> None:
        self.args = tuple(args)


class NullIf(Expr):
    __slots__ = ("left", "right")

    def __init__(self, left: Expr, right: Expr) -> None:
        self.left = left
        self.right = right


class MinMax(Expr):
    """LEAST / GREATEST: NULL arguments are ignored; NULL only when all are."""

    __slots__ = ("args", "greatest")

    def __init__(self, args: Sequence[Expr], greatest: bool) -> None:
        self.args = tuple(args)
        self.greatest = greatest


class Call(Expr):
    """A strict function: any NULL argument makes the result NULL."""

    __slots__ = ("args", "name")

    def __init__(self, name: str, args: Sequence[Expr]) -> None:
        self.name = name  # its name in functions.FUNCTIONS
        self.args = tuple(args)
