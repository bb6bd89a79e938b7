"""Every JSON document pgvet prints validates against the published schema (docs/schema/)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES, output_schema
from pgvet.report import ReportOptions
from pgvet.report.json_report import render
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions

SCHEMA = output_schema(strict=True)  # all that pgvet prints is documented


def test_schema_is_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("hosts", [["small-vm"], ["big-server"], ["config-repo"],
                                   ["small-vm", "big-server", "config-repo"]])
def test_fixture_outputs_validate(hosts: list[str]) -> None:
    result = lint([FIXTURES / name for name in hosts], LintOptions())
    document = json.loads(render(result, ReportOptions()))
    jsonschema.validate(document, SCHEMA, format_checker=jsonschema.FormatChecker())
    assert document["summary"]["hosts"] == len(hosts)


def test_output_with_a_host_error_validates(tmp_path: Path) -> None:
    (tmp_path / "meminfo.txt").write_text("garbage\n")
    result = lint([tmp_path, FIXTURES / "small-vm"], LintOptions())
    document = json.loads(render(result, ReportOptions()))
    jsonschema.validate(document, SCHEMA)
    assert document["errors"] == [{"host": tmp_path.name, "message": "not a /proc/meminfo line: 'garbage'",
                                   "path": str(tmp_path / "meminfo.txt"), "line": 1}]


def test_a_wrong_document_is_rejected() -> None:
    result = lint([FIXTURES / "small-vm"], LintOptions())
    document = json.loads(render(result, ReportOptions()))
    document["findings"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)


@pytest.mark.parametrize("place", [(), ("findings", 0), ("findings", 0, "fix"), ("summary",), ("hosts", 0)])
def test_consumers_accept_a_field_a_later_version_1_adds(place: tuple[str | int, ...]) -> None:
    """docs/output.md: a new field may appear within version 1. A consumer validating with the published
    schema must not refuse the output of a later pgvet 1.x — while these tests refuse any field that
    pgvet prints without documenting it."""
    document = json.loads(render(lint([FIXTURES / "small-vm"], LintOptions()), ReportOptions()))
    target = document
    for step in place:
        target = target[step]
    target["added_later"] = 1
    jsonschema.validate(document, output_schema())
    with pytest.raises(jsonschema.ValidationError, match="added_later"):
        jsonschema.validate(document, SCHEMA)
