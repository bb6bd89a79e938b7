"""The options several commands share, declared once: which rules run (--select, --ignore, --rules), with which
configuration (--config), what fails the run (--fail-on), and where a format is written (--output)."""

from pathlib import Path
from typing import Annotated, Optional

import typer

SelectOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    help="Only these rules: id, id prefix, name or tag (repeat, or a comma list).")]
IgnoreOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    help="Not these rules: id, id prefix, name or tag (repeat, or a comma list).")]
RulePacksOpt = Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
    "--rules", help="An extra rule pack directory.")]
ConfigOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    help="Configuration file: rule selection, the rules' and derived values' parameters (default: .pgvet.toml or "
         "pyproject.toml).")]
FailOnOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    help="Lowest severity that fails: error, warning or info.")]
OutputsOpt = Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
    "--output", "-o", help="Write the matching --format to this file (repeat).")]
