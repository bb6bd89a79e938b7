"""A rule's SQL expression compiled: pglast parses it, we type-check it into a node tree (ir.py) that the
interpreter runs. Never Python ``eval`` of a rule's text, never a database; division by zero gives NULL
instead of an error so that a zero in the inputs means "not evaluated", not a crash."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

import pglast

from pgvet.engine.factnames import Kind, did_you_mean, item_scope, kind_of, static_type
from pgvet.engine.functions import ARITHMETIC, COMPARISONS, FUNCTIONS
from pgvet.engine.interpreter import Compiled
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
)
from pgvet.engine.pack import Template
from pgvet.engine.quantities import parse_quantity
from pgvet.engine.render import FORMATS
from pgvet.numbers import out_of_range, shown_number


class ExpressionError(Exception):
    """A compile-time error in one expression; ``offset`` is the character position when known."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


# The longest number literal read: a double's 309 digits and its decimals, written out (no double needs more).
_MAX_LITERAL_CHARS = 1000
# The longest expression parsed, and how deep its tree may nest: pglast crashed the process (a segmentation
# fault) on a chain of tens of thousands of `1 + 1 + …`, and the compiler, the interpreter and the pack's cache
# walk a tree by recursion, which stopped with a RecursionError at a few thousand. pgvet's own are far smaller.
MAX_EXPRESSION_CHARS = 10_000
MAX_EXPRESSION_DEPTH = 100


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
    source = str(text)
    if len(source) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"an expression of {len(source)} characters, more than pgvet reads "
                              f"({MAX_EXPRESSION_CHARS})")
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


def compile_template(text: str, context: CompileContext) -> Template:
    """Split a template into literal text and compiled holes; ExpressionError (with offset) when wrong."""
    parts: list[str | tuple[Compiled, str | None]] = []
    literal: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char in "{}" and text[position:position + 2] in ("{{", "}}"):
            literal.append(char)
            position += 2
            continue
        if char == "}":
            raise ExpressionError("unmatched '}' in template (write '}}' for a brace)", position)
        if char != "{":
            literal.append(char)
            position += 1
            continue
        end = text.find("}", position)
        if end < 0:
            raise ExpressionError("unclosed '{' in template", position)
        hole = text[position + 1:end]
        expression, bar, format_name = hole.rpartition("|")
        if not bar or format_name.strip() not in FORMATS:
            if bar and format_name.strip().isidentifier():
                raise ExpressionError(f"unknown format '{format_name.strip()}' (use one of {', '.join(FORMATS)})",
                                      position)
            expression, format_name = hole, ""
        if not expression.strip():
            raise ExpressionError("empty '{}' in template", position)
        try:
            compiled = compile_expression(expression, context)
        except ExpressionError as error:
            raise ExpressionError(error.message, position + 1 + (error.offset or 0)) from None
        if literal:
            parts.append("".join(literal))
            literal = []
        parts.append((compiled, format_name.strip() or None))
        position = end + 1
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def template_facts(template: Template) -> list[str]:
    return [name for part in template if not isinstance(part, str) for name in part[0].facts]


def _offset(node: Any) -> int | None:
    location = getattr(node, "location", None)
    return location - len(_SQL_PREFIX) if isinstance(location, int) and location >= len(_SQL_PREFIX) else None


def _describe(kind: str) -> str:
    return {"unit": "size or duration", "null": "NULL"}.get(kind, kind)


class _Compiler:
    def __init__(self, context: CompileContext) -> None:
        self.context = context
        self.facts: dict[str, None] = {}  # ordered set
        self.depth = 0  # of the node being compiled

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
        if self.depth >= MAX_EXPRESSION_DEPTH:
            raise ExpressionError(f"nested more than {MAX_EXPRESSION_DEPTH} deep", _offset(node))
        self.depth += 1
        try:
            return method(node)  # type: ignore[no-any-return]
        finally:
            self.depth -= 1

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
            if "\n" in text:  # reports show it as \n: YAML keeps the breaks of a block's more-indented lines
                raise ExpressionError("a line break inside a text literal (a report shows it as \\n): end the "
                                      "literal before the line's end and join the next with ||", _offset(node))
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
            return Arith(operator, left, right), "number"
        if operator == "||":
            left_node, _ = self.resolve(self.compile(node.lexpr), "text")
            right_node, _ = self.resolve(self.compile(node.rexpr), "text")
            return Arith("||", left_node, right_node), "text"
        if operator in COMPARISONS:
            left, right, checked = self.comparable(self.compile(node.lexpr), self.compile(node.rexpr), node,
                                                   f"'{operator}'")
            return Compare(operator, left, right, checked), "bool"
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
        return Call(name, compiled), spec.returns
