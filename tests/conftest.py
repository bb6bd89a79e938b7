"""Shared test support: paths to the project, the shared corpus, and the real PostgreSQL servers."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SHARED = PROJECT.parent / "shared"
CORPUS = SHARED / "corpus"
FIXTURES = PROJECT / "fixtures"

# The tests are in one folder per layer (tests/engine, tests/live…); the helpers they share (fakepg, livepg,
# hostgen, kernelsim, pgtune, …) stay here, importable by name from every folder, as are the scripts.
sys.path.insert(0, str(PROJECT / "tests"))
sys.path.insert(0, str(PROJECT / "scripts"))

import pgservers  # noqa: E402

_SESSION_CACHE: list[str] = []  # the cache directory this session made, removed at its end


def pytest_configure(config: pytest.Config) -> None:
    """The environment of the tests' pgvet. Its cache, unless PGVET_CACHE_DIR names one: a directory of the
    session's own, which the tests and the pgvet processes they start share (the pack compiled once), removed when
    the session ends — neither ~/.cache/pgvet nor a directory left in /tmp."""
    if not os.environ.get("PGVET_CACHE_DIR"):
        _SESSION_CACHE.append(tempfile.mkdtemp(prefix="pgvet-test-cache-"))
        os.environ["PGVET_CACHE_DIR"] = _SESSION_CACHE[0]
    # --jobs is tested on fleets of a few hosts: two a process start the pool (a real run needs hundreds for the
    # processes to pay, run.workers.JOBS_MIN_HOSTS; tests/cli/test_lint_cli.py holds that default)
    os.environ.setdefault("PGVET_JOBS_MIN_HOSTS", "2")


def pytest_unconfigure(config: pytest.Config) -> None:
    for directory in _SESSION_CACHE:
        shutil.rmtree(directory, ignore_errors=True)
        if os.environ.get("PGVET_CACHE_DIR") == directory:
            del os.environ["PGVET_CACHE_DIR"]


def output_schema(*, strict: bool = False) -> dict[str, Any]:
    """The published JSON schema of ``--format json``. ``strict``: every object that lists its properties
    also refuses others — what pgvet prints today must all be documented, while consumers (the published
    schema) accept fields a later version 1 adds."""
    schema: dict[str, Any] = json.loads((PROJECT / "docs" / "schema" / "pgvet-output.schema.json").read_text())
    if strict:
        _refuse_unlisted(schema)
    return schema


def _refuse_unlisted(node: object) -> None:
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for child in node.values():
            _refuse_unlisted(child)
    elif isinstance(node, list):
        for child in node:
            _refuse_unlisted(child)


def derived_of(facts: dict[str, Any]) -> dict[str, Any]:
    """The built-in pack's host-level derived values (``derived.NAME``: value) on a host of just ``facts``."""
    from pgvet.engine.derived import derived_values
    from pgvet.engine.loader import load_pack
    from pgvet.provenance import Source
    from pgvet.snapshot.facts import Fact, HostFacts

    host = HostFacts(name="h", root=".")
    for name, value in facts.items():
        host.add(Fact(name, value, Source("test")))
    return {name: fact.value for name, fact in derived_values(load_pack(), host).items()}


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
