"""Output formats. Each is a module with ``render(result, options) -> str``, imported only when used."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from pgvet.findings import Finding, HostResult, LintResult


@dataclass(frozen=True, slots=True)
class ReportOptions:
    color: bool | None = None  # None: decide from the terminal, NO_COLOR and PRE_COMMIT
    verbose: bool = False
    width: int | None = None
    repo_root: Path | None = None  # paths in SARIF and annotations are relative to it


Renderer = Callable[[LintResult, ReportOptions], str]

# format name → module under pgvet.report
_MODULES = {
    "text": "text",
    "concise": "concise",
    "json": "json_report",
    "jsonl": "jsonl",
    "sarif": "sarif",
    "github": "github",
    "junit": "junit",
    "gitlab": "gitlab",
}


class _Formats(Mapping[str, Renderer]):
    """The registry: importing a format's module only when it is asked for keeps start-up fast."""

    def __getitem__(self, name: str) -> Renderer:
        module = importlib.import_module(f"pgvet.report.{_MODULES[name]}")
        renderer: Renderer = module.render
        return renderer

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


FORMATS: Mapping[str, Renderer] = _Formats()


def default_format() -> str:
    """GitHub annotations under GitHub Actions, else the text report."""
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def use_color(options: ReportOptions, is_terminal: bool) -> bool:
    if options.color is not None:
        return options.color
    if os.environ.get("NO_COLOR") or os.environ.get("PRE_COMMIT"):
        return False
    return is_terminal


def relative_path(path: str, root: str, repo_root: Path | None = None) -> str:
    """A finding's path as the user knows it: the host directory joined with the file, relative to
    ``repo_root`` (or the current directory) when it lies under it."""
    full = Path(root) / path if not Path(path).is_absolute() else Path(path)
    base = (repo_root or Path.cwd()).resolve()
    try:
        return str(full.resolve().relative_to(base))
    except (ValueError, OSError):
        return str(full)


def anchor(finding: Finding, host: HostResult) -> tuple[Path, int | None]:
    """The file and line a finding is shown at by formats that need a file (SARIF, GitLab, annotations):
    its own place; else the first evidence read from a file of the host (the sysctl line behind a
    derived value); else a file that stands for the host (host.yaml, postgresql.conf, else the first
    file by name); only an empty host directory is returned itself (line None). Code scanning shows a
    result only on a file of the repository."""
    root = Path(host.host.root)
    candidates = [(finding.path, finding.line)] if finding.path else []
    candidates += [(item.source.path, item.source.line) for item in finding.evidence if item.source is not None]
    for path, line in candidates:
        if path and not path.startswith("<"):
            target = Path(path) if Path(path).is_absolute() else root / path
            if target.is_file():
                return target, line
    for name in ("host.yaml", "host.yml", "postgresql.conf"):
        if (root / name).is_file():
            return root / name, None
    try:
        files = sorted(entry for entry in root.iterdir() if entry.is_file())
    except OSError:
        files = []
    return (files[0], None) if files else (root, None)
