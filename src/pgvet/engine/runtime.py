"""What an expression reads when it runs (Env) and how it fails (EvalError)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pgvet.engine.ir import Value
from pgvet.numbers import out_of_range

if TYPE_CHECKING:
    from pgvet.engine.pack import DerivedFormula
    from pgvet.findings import Evidence
    from pgvet.snapshot.facts import Fact, Item


class EvalError(Exception):
    """A runtime error while evaluating (a text where a number was expected…): the rule is not evaluated."""


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


# An expression made runnable: a function of the environment (interpreter.make_closure).
Function = Callable[[Env], Value]
