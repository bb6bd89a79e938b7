"""Compile rule pack files (YAML) into a RulePack: parse, validate, type-check, link derived facts.

Cold path only (ruamel.yaml, pydantic, pglast); the result is cached by the loader. Every error is a
RulePackError naming the file and the line of the offending key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from pgvet.engine.compiler import CompileContext, ExpressionError, compile_expression, compile_template, template_facts
from pgvet.engine.derived import expand, find_cycle
from pgvet.engine.factnames import item_scope, kind_of, static_type
from pgvet.engine.interpreter import Compiled
from pgvet.engine.ir import Value
from pgvet.engine.pack import (
    MAX_RULE_FILE_CHARS,
    DerivedFormula,
    Example,
    FixSpec,
    FixTemplates,
    PackSource,
    ParamSpec,
    Rule,
    RulePack,
    Template,
)
from pgvet.engine.quantities import with_units
from pgvet.engine.schema import PackFileModel
from pgvet.errors import RulePackError
from pgvet.provenance import Source
from pgvet.safeyaml import YamlError, load_yaml

DERIVED_UNIT_TYPES: dict[str, str] = {
    "bytes": "bytes", "seconds": "seconds", "ratio": "float", "count": "int", "number": "number",
    "text": "text", "bool": "bool",
}


def content_version(sources: Sequence[PackSource]) -> str:
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.text.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


# ---------------------------------------------------------------------------------------------------
# YAML with line numbers


def _parse_yaml(source: PackSource) -> Any:
    if len(source.text) > MAX_RULE_FILE_CHARS:
        raise RulePackError(f"rule file of {len(source.text)} characters, more than pgvet reads "
                            f"({MAX_RULE_FILE_CHARS})", Source(source.path))
    try:
        data = load_yaml(source.text)
    except YamlError as error:
        raise RulePackError(f"invalid YAML: {error.message}", Source(source.path, error.line)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RulePackError("a rule file holds a mapping with 'rules:' and/or 'derived:'", Source(source.path, 1))
    unknown = [key for key in data if key not in ("rules", "derived")]
    if unknown:
        # named by its line, not quoted: a file that is no rule file (/etc/shadow named as a pack) must not have
        # its text shown in an error, a CI log
        raise RulePackError("a rule file holds a mapping with 'rules:' and/or 'derived:', nothing else",
                            Source(source.path, _line_of(data, unknown[:1])))
    return data


def _line_of(data: Any, location: Sequence[Any]) -> int | None:
    """1-based line of the key (or list item) at ``location`` in ruamel's round-trip data, as deep as it exists."""
    line: int | None = None
    node = data
    for key in location:
        lc = getattr(node, "lc", None)
        try:
            if isinstance(node, dict) and key in node:
                if lc is not None:
                    line = lc.key(key)[0] + 1
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
                if lc is not None:
                    line = lc.item(key)[0] + 1
                node = node[key]
            else:
                break
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    return line


def _plain(data: Any) -> Any:
    """ruamel's commented containers → plain dicts/lists (pydantic's and pickle's friends)."""
    if isinstance(data, dict):
        return {str(key): _plain(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_plain(value) for value in data]
    if isinstance(data, str):
        return str(data)
    return data


# ---------------------------------------------------------------------------------------------------
# Building


class _FileBuilder:
    def __init__(self, source: PackSource) -> None:
        self.source = source
        self.data = _parse_yaml(source)
        try:
            self.model = PackFileModel.model_validate(_plain(self.data))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            count = error.error_count()
            more = f" (and {count - 1} more)" if count > 1 else ""
            raise RulePackError(f"{where}: {first['msg']}{more}", self.at(first["loc"])) from None

    def at(self, location: Sequence[Any]) -> Source:
        return Source(self.source.path, _line_of(self.data, location))

    def compile(self, text: str, context: CompileContext, location: Sequence[Any], what: str,
                want: str | None = None) -> Compiled:
        try:
            return compile_expression(text, context, want="bool" if want == "bool" else None)
        except ExpressionError as error:
            raise self.error(error, text, location, what) from None

    def template(self, text: str, context: CompileContext, location: Sequence[Any], what: str) -> Template:
        try:
            return compile_template(text, context)
        except ExpressionError as error:
            raise self.error(error, text, location, what) from None

    def error(self, error: ExpressionError, text: str, location: Sequence[Any], what: str) -> RulePackError:
        near = ""
        if error.offset is not None and 0 <= error.offset <= len(text):
            near = f" (at character {error.offset + 1} of {text.strip()!r})"
        return RulePackError(f"{what}: {error.message}{near}", self.at(location))


def _param_type(value: Value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "text"


def build_pack(sources: Sequence[PackSource]) -> RulePack:
    builders = [_FileBuilder(source) for source in sources]
    derived = _build_derived(builders)
    rules = _build_rules(builders, derived)
    return RulePack(rules=rules, derived=list(derived.values()), version=content_version(sources),
                    files=tuple(source.path for source in sources))


def _build_derived(builders: Sequence[_FileBuilder]) -> dict[str, DerivedFormula]:
    declared: dict[str, tuple[_FileBuilder, int]] = {}
    for builder in builders:
        for index, model in enumerate(builder.model.derived):
            if model.name in declared:
                first, first_index = declared[model.name]
                raise RulePackError(f"derived fact {model.name} is also defined at "
                                    f"{first.at(('derived', first_index))}", builder.at(("derived", index, "name")))
            declared[model.name] = (builder, index)
    types = {name: DERIVED_UNIT_TYPES[builder.model.derived[index].unit] for name, (builder, index) in declared.items()}
    formulas: dict[str, DerivedFormula] = {}
    for name, (builder, index) in declared.items():
        model = builder.model.derived[index]
        params = {key: ParamSpec(spec.default, spec.description) for key, spec in model.params.items()}
        param_values = {key: with_units(spec.default) for key, spec in params.items()}
        context = CompileContext(derived=types, params={key: _param_type(value) for key, value in param_values.items()},
                                 scope=None, derived_name=name)
        location = ("derived", index, "formula")
        compiled = builder.compile(model.formula, context, location, f"derived.{name}")
        declared_kind = kind_of(types[name])
        if compiled.kind not in (declared_kind, "any", "null"):
            raise RulePackError(f"derived.{name}: the formula gives a {compiled.kind} but the unit is {model.unit}",
                                builder.at(location))
        if model.predicts is not None:
            _validate_prediction(builder, index, model.predicts, types[name], formulas)
            if model.as_captured:
                raise RulePackError(f"derived.{name} predicts {model.predicts}: it cannot be kept as captured too",
                                    builder.at(("derived", index, "as_captured")))
        formulas[name] = DerivedFormula(name=name, formula=model.formula, description=model.description,
                                        unit=model.unit, file=builder.source.path,
                                        line=_line_of(builder.data, ("derived", index)), compiled=compiled,
                                        params=params, param_values=param_values, predicts=model.predicts,
                                        as_captured=model.as_captured)
    cycle = find_cycle(formulas)
    if cycle is not None:
        builder, index = declared[cycle[0]]
        raise RulePackError("derived facts form a cycle: " + " → ".join(f"derived.{name}" for name in cycle),
                            builder.at(("derived", index, "formula")))
    for name, formula in formulas.items():
        formula.inputs = tuple(expand(formula.compiled.facts, formulas))
        scopes = {scope for fact in formula.inputs if (scope := item_scope(fact)) is not None}
        if len(scopes) > 1:
            builder, index = declared[name]
            raise RulePackError(f"derived.{name} reads facts of several item scopes ({', '.join(sorted(scopes))})",
                                builder.at(("derived", index, "formula")))
        formula.item_scope = scopes.pop() if scopes else None
        if formula.as_captured and formula.item_scope is not None:
            builder, index = declared[name]
            raise RulePackError(f"derived.{name} is kept as captured, host-wide: it cannot read {formula.item_scope}",
                                builder.at(("derived", index, "as_captured")))
    return formulas


def _validate_prediction(builder: _FileBuilder, index: int, predicted: str, derived_type: str,
                      formulas: Mapping[str, DerivedFormula]) -> None:
    """A formula predicts a host-wide fact a snapshot measures, of its kind, and no other formula predicts it."""
    where = builder.at(("derived", index, "predicts"))
    fact_type = static_type(predicted)
    if fact_type is None or item_scope(predicted) is not None:
        raise RulePackError(f"predicts {predicted}: not a host-wide fact pgvet reads", where)
    if kind_of(fact_type) != kind_of(derived_type):
        raise RulePackError(f"predicts {predicted}, a {kind_of(fact_type)}, with a {kind_of(derived_type)}", where)
    for other in formulas.values():
        if other.predicts == predicted:
            raise RulePackError(f"derived.{other.name} predicts {predicted} already", where)


def _build_rules(builders: Sequence[_FileBuilder], derived: Mapping[str, DerivedFormula]) -> list[Rule]:
    seen: dict[str, Source] = {}
    rules: list[Rule] = []
    derived_types = {name: DERIVED_UNIT_TYPES[formula.unit] for name, formula in derived.items()}
    derived_scopes = {name: formula.item_scope for name, formula in derived.items()}
    for builder in builders:
        for index, model in enumerate(builder.model.rules):
            here = builder.at(("rules", index, "id"))
            if builder.source.builtin and not model.id.startswith("PGV"):
                raise RulePackError(f"pgvet's own rule ids start with PGV, not {model.id}", here)
            if not builder.source.builtin and model.id.startswith("PGV"):
                raise RulePackError(f"rule id {model.id}: ids starting with PGV are reserved for pgvet's own rules",
                                    here)
            if model.name == "derived":  # [tool.pgvet.params.derived.NAME] sets derived values' parameters
                raise RulePackError("rule name 'derived' is reserved", builder.at(("rules", index, "name")))
            for key, kind in ((model.id, "id"), (model.name, "name")):
                if key in seen:
                    raise RulePackError(f"duplicate rule {kind} {key} (first defined at {seen[key]})",
                                        builder.at(("rules", index, kind)))
                seen[key] = builder.at(("rules", index, kind))
            rules.append(_build_rule(builder, index, derived, derived_types, derived_scopes))
    return rules


def _build_rule(builder: _FileBuilder, index: int, derived: Mapping[str, DerivedFormula],
                derived_types: Mapping[str, str], derived_scopes: Mapping[str, str | None]) -> Rule:
    model = builder.model.rules[index]
    base = ("rules", index)
    label = model.id
    params = {name: ParamSpec(spec.default, spec.description) for name, spec in model.params.items()}
    param_defaults = {name: with_units(spec.default) for name, spec in params.items()}
    context = CompileContext(derived=derived_types, params={name: _param_type(value) for name, value in
                                                            param_defaults.items()},
                             scope=model.scope, derived_scopes=derived_scopes)
    if model.scope != "host" and model.subject is None:
        raise RulePackError(f"{label}: rules with scope: {model.scope} need a subject (which item a finding is about)",
                            builder.at(base))

    def expression(key: str, text: str, *location: Any, want: str | None = None) -> Compiled:
        return builder.compile(text, context, (*base, key, *location), f"{label}.{key}", want)

    def template(key: str, text: str, *location: Any) -> Template:
        return builder.template(text, context, (*base, key, *location), f"{label}.{key}")

    applies = expression("applies", model.applies, want="bool") if model.applies is not None else None
    when = expression("when", model.when, want="bool")
    values = tuple((name, expression("values", text, name)) for name, text in model.values.items())
    message = template("message", model.message)
    subject = template("subject", model.subject) if model.subject is not None else None
    fix: FixSpec | None = None
    fix_templates: FixTemplates | None = None
    if model.fix is not None:
        fix = FixSpec(dict(model.fix.sysctl), dict(model.fix.postgresql), model.fix.text)
        fix_templates = FixTemplates(
            sysctl=tuple((key, builder.template(text, context, (*base, "fix", "sysctl", key), f"{label}.fix"))
                         for key, text in model.fix.sysctl.items()),
            postgresql=tuple((key, builder.template(text, context, (*base, "fix", "postgresql", key), f"{label}.fix"))
                             for key, text in model.fix.postgresql.items()),
            text=(builder.template(model.fix.text, context, (*base, "fix", "text"), f"{label}.fix")
                  if model.fix.text is not None else None),
        )
    if model.location is not None and static_type(model.location) is None:
        raise RulePackError(f"{label}.location: unknown fact {model.location}", builder.at((*base, "location")))

    read: list[str] = [*when.facts, *(applies.facts if applies else ())]
    for _, compiled in values:
        read.extend(compiled.facts)
    read.extend(template_facts(message))
    if subject is not None:
        read.extend(template_facts(subject))
    if fix_templates is not None:
        for _, part in (*fix_templates.sysctl, *fix_templates.postgresql):
            read.extend(template_facts(part))
        if fix_templates.text is not None:
            read.extend(template_facts(fix_templates.text))
    evidence_names = tuple(name for name in expand(read, derived) if not name.startswith("params."))
    location_names = ((model.location,) if model.location is not None else
                      tuple(name for name in expand(when.facts, derived, keep_derived=False)
                            if not name.startswith("params.")))
    examples = tuple(_build_example(builder, model, index, number, params) for number in range(len(model.examples)))
    return Rule(
        id=model.id, name=model.name, title=model.title, severity=model.severity, tags=tuple(model.tags),
        scope=model.scope, applies=model.applies, when=model.when, message=model.message,
        values=dict(model.values), params=params, param_defaults=param_defaults, fix=fix, subject=model.subject,
        location=model.location, why=model.why, references=tuple(model.references), examples=examples,
        file=builder.source.path, line=_line_of(builder.data, base), applies_expr=applies, when_expr=when,
        value_exprs=values, message_template=message, fix_templates=fix_templates, subject_template=subject,
        evidence_names=evidence_names, location_names=location_names,
    )


def _build_example(builder: _FileBuilder, model: Any, index: int, number: int,
                   params: Mapping[str, ParamSpec]) -> Example:
    example = model.examples[number]
    base = ("rules", index, "examples", number)
    label = f"{model.id} example {number + 1}"
    for name in example.facts:
        if static_type(name) is None or item_scope(name) is not None:
            what = "an item fact: give it under item:" if item_scope(name) is not None else "not a known fact"
            raise RulePackError(f"{label}: {name} is {what}", builder.at((*base, "facts", name)))
    for name in example.item or {}:
        if item_scope(name) != model.scope:
            raise RulePackError(f"{label}: item facts of a scope: {model.scope} rule are {model.scope}.*, not {name}",
                                builder.at((*base, "item", name)))
    for name in example.params or {}:
        if name not in params:
            raise RulePackError(f"{label}: {model.id} has no parameter {name}", builder.at((*base, "params", name)))
    for name in example.values or {}:
        if name not in model.values:
            raise RulePackError(f"{label}: {model.id} has no value {name}", builder.at((*base, "values", name)))
    fixed = {*(model.fix.sysctl if model.fix is not None else ()), *(model.fix.postgresql if model.fix is not None
                                                                       else ())}
    for name in example.fix or {}:
        if name not in fixed:
            raise RulePackError(f"{label}: {model.id}'s fix sets no {name}", builder.at((*base, "fix", name)))
    if model.scope != "host" and example.item is None and example.expect != "skip":
        raise RulePackError(f"{label}: a scope: {model.scope} rule's example needs item: facts", builder.at(base))
    return Example(
        facts={name: with_units(value) for name, value in example.facts.items()},
        expect=example.expect,
        values=({name: with_units(value) for name, value in example.values.items()}
                if example.values is not None else None),
        params=dict(example.params) if example.params is not None else None,
        item={name: with_units(value) for name, value in example.item.items()} if example.item is not None
        else None,
        line=_line_of(builder.data, base),
        fix=dict(example.fix) if example.fix is not None else None,
    )
