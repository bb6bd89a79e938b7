"""Shared test support: paths to the project, the shared corpus, and the real PostgreSQL servers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SHARED = PROJECT.parent / "shared"
CORPUS = SHARED / "corpus"
FIXTURES = PROJECT / "fixtures"

sys.path.insert(0, str(PROJECT / "scripts"))

import pgservers  # noqa: E402


def corpus_dir(kind: str) -> Path:
    """A folder of ../shared/corpus, or skip the test when the corpus is absent."""
    path = CORPUS / kind
    if not path.is_dir():
        pytest.skip(f"corpus folder {path} is absent")
    return path


def require_postgres(major: int = 15) -> None:
    if pgservers.bindir(major) is None:
        pytest.skip(f"PostgreSQL {major} binaries are not installed")


@pytest.fixture(params=pgservers.SUPPORTED_MAJORS, ids=lambda major: f"pg{major}")
def pg_major(request: pytest.FixtureRequest) -> int:
    """Each supported major version whose binaries are installed (others skip)."""
    major: int = request.param
    require_postgres(major)
    return major
