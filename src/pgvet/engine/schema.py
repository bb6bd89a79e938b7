"""The rule file format, validated with pydantic (only when a pack is compiled, never on the hot path).

docs/rule-schema.json is exported from these models (``json_schema()``); a test keeps it current.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

RULE_ID_PATTERN = r"^[A-Z]+[0-9]+$"
BUILTIN_ID_PATTERN = r"^PGV[0-9]+$"
NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
DERIVED_NAME_PATTERN = r"^[a-z][a-z0-9_]*$"

Scalar = bool | int | float | str


def _text(value: Any) -> Any:
    """YAML may read an expression or a fix value as a number or a boolean: keep the text."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return str(value)
    return value


Text = Annotated[str, BeforeValidator(_text)]


def _on_off(value: Any) -> Any:
    if isinstance(value, bool):
        return "on" if value else "off"
    return _text(value)


SettingText = Annotated[str, BeforeValidator(_on_off)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamModel(_Model):
    default: Scalar = Field(description="Used unless the configuration overrides it; '4GB', '5min': bytes, seconds.")
    description: str = ""


class FixModel(_Model):
    sysctl: dict[str, Text] = Field(default_factory=dict, description="Kernel key → value template.")
    postgresql: dict[str, SettingText] = Field(default_factory=dict, description="Parameter → value template.")
    text: Text | None = Field(default=None, description="Free text template, when no line applies.")


class ExampleModel(_Model):
    facts: dict[str, Scalar | None] = Field(description="Host facts; '16GB' and '5min' become bytes and seconds.")
    expect: Literal["fire", "pass", "skip"]
    values: dict[str, Scalar | None] | None = Field(default=None, description="Values the finding must carry.")
    params: dict[str, Scalar] | None = Field(default=None, description="Parameter overrides for this example.")
    item: dict[str, Scalar | None] | None = Field(default=None, description="The item's facts, for scoped rules.")
    fix: dict[str, str | None] | None = Field(
        default=None, description="Settings the finding's fix must write, by sysctl key or parameter name, as "
                                  "written (null: the fix cannot compute it on this host).")


class RuleModel(_Model):
    id: str = Field(pattern=RULE_ID_PATTERN, description="Stable code: PGV + digits for pgvet's own rules.")
    name: str = Field(pattern=NAME_PATTERN, description="kebab-case, unique across packs.")
    title: str
    severity: Literal["error", "warning", "info"]
    tags: list[str] = Field(default_factory=list)
    scope: Literal["host", "mount", "disk", "setting", "problem", "declared", "drift", "file_error", "role_setting",
                   "database", "slot", "prepared", "session", "index", "default_change"] = "host"
    applies: Text | None = Field(default=None, description="SQL precondition; false or NULL: skipped.")
    when: Text = Field(description="SQL condition stating the violation.")
    message: Text = Field(description="Template: {expression|size|pct|duration|number|int}.")
    values: dict[str, Text] = Field(default_factory=dict, description="Named SQL expressions the finding carries.")
    params: dict[str, ParamModel] = Field(default_factory=dict)
    fix: FixModel | None = None
    subject: Text | None = Field(default=None, description="Template naming the item (required for scoped rules).")
    location: str | None = Field(default=None, description="Fact whose source is the finding's file:line.")
    why: str = ""
    references: list[str] = Field(default_factory=list)
    examples: list[ExampleModel] = Field(default_factory=list)


class DerivedModel(_Model):
    name: str = Field(pattern=DERIVED_NAME_PATTERN, description="Read by rules as derived.<name>.")
    formula: Text = Field(description="SQL expression.")
    description: str = ""
    unit: Literal["bytes", "seconds", "ratio", "count", "number", "text", "bool"]
    params: dict[str, ParamModel] = Field(
        default_factory=dict,
        description="Read by the formula as params.<param>; set in [tool.pgvet.params.derived.<name>].")
    predicts: str | None = Field(
        default=None,
        description="A measured fact (meminfo.*, pg.*) the formula predicts once a fix changes the settings it "
                    "reads: the planner (docs/planner.md) puts the formula's value in its place.")
    as_captured: bool = Field(
        default=False,
        description="Computed on the host as the snapshot captured it, and kept so in every host a fix makes "
                    "(docs/planner.md): what others hold beside PostgreSQL, which a prediction adds the new values "
                    "to.")


class PackFileModel(_Model):
    """One YAML file of a rule pack."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="pgvet rule pack file")

    rules: list[RuleModel] = Field(default_factory=list)
    derived: list[DerivedModel] = Field(default_factory=list)


def json_schema() -> dict[str, Any]:
    schema = PackFileModel.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
