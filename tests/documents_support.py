"""What the tests of configuration documents share: their real-file corpus, the lines of a text, a lint's findings."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from conftest import PROJECT
from pgvet.cli import app
from pgvet.inputs.documents import DeclaredHost, document_kinds

DOCUMENTS = PROJECT / "tests" / "data" / "documents"


def corpus(kind: str) -> list[Path]:
    """The real files of a kind (tests/data/documents/<kind>/, its SOURCES.md says where each comes from)."""
    return sorted(path for path in (DOCUMENTS / kind).iterdir() if path.suffix in (".yaml", ".yml"))


def kinds_recognising(path: Path, text: str) -> list[str]:
    """Every kind that claims the file (a file must be exactly one kind's)."""
    return [kind.name for kind in document_kinds()
            if path.name.lower().endswith(kind.suffixes) and kind.recognises(path.name, text)]


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the only line holding ``needle`` (comment lines aside)."""
    lines = [number for number, line in enumerate(text.splitlines(), 1)
             if needle in line and not line.lstrip().startswith("#")]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


def lint_findings(directory: Path) -> set[tuple[str, str, str, int | None]]:
    """``pgvet lint DIRECTORY``'s findings as (host, rule id, file name, line), the run's exit code checked."""
    result = CliRunner().invoke(app, ["lint", str(directory), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return {(str(finding["host"]), str(finding["rule_id"]), Path(str(finding["path"] or "")).name, finding["line"])
            for finding in json.loads(result.output)["findings"]}


def settings(host: DeclaredHost) -> list[tuple[str, str, int | None]]:
    """A declared host's PostgreSQL parameters as (name, value, line), in the order they apply."""
    return [(setting.name, setting.value, setting.source.line) for setting in host.settings]
