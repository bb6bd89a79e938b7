"""Mutation fuzzing of every parser and of the rule loader: whatever the bytes, the answer is a typed result
or pgvet's own error (a message with file and line, exit code 2) — never another exception, never a hang.

Seeds are the fixtures' files (and the shared corpus when present); each is mutated with a seeded random
generator (bit flips, cuts, insertions, duplicated and huge lines, NUL bytes, invalid UTF-8, deep nesting).
The budget is PGVET_FUZZ_SECONDS per parser (default 1.5, what CI runs); set it higher to fuzz longer.
An input that breaks the contract is written to tests/robustness/fuzz_regressions/ when PGVET_FUZZ_SAVE=1, and every
file there is replayed by test_regressions (docs/robustness.md).
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import pytest

from conftest import FIXTURES
from pgvet.errors import PgvetError

REGRESSIONS = Path(__file__).parent / "fuzz_regressions"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
SECONDS = float(os.environ.get("PGVET_FUZZ_SECONDS", "1.5"))
CALL_TIMEOUT = 5.0  # seconds one parse may take, whatever the input (inputs stay under a few MB here)


def _parse_conf(text: str, path: str) -> object:
    from pgvet.inputs.postgresql_conf import parse_conf_text

    return parse_conf_text(text, path)


def _parse_conf_values(text: str, path: str) -> object:
    """postgresql.conf with every value read as its parameter's type and unit, as a host's lint reads them."""
    from pgvet.inputs.postgresql_conf import ConfSetting, parse_conf_text
    from pgvet.pgparams import load_param_table
    from pgvet.pgparams.units import InvalidValue, parse_value

    param_table = load_param_table(16)
    values: list[object] = []
    for entry in parse_conf_text(text, path)[0]:
        param = param_table.get(entry.name) if isinstance(entry, ConfSetting) else None
        if param is not None:
            try:
                values.append(parse_value(param, entry.value))
            except InvalidValue as invalid:
                values.append(invalid.message)
    return values


def _parse_rules(text: str, path: str) -> object:
    from pgvet.engine.build import build_pack
    from pgvet.engine.pack import PackSource

    return build_pack([PackSource(path, text)])


def _suppressions(text: str, path: str) -> object:
    """The suppression comments of a file, line by line, as suppress.py reads them."""
    from pgvet.run.suppress import suppression_comment

    return [suppression_comment(line) for line in text.split("\n")]


def _parser(module: str, name: str) -> Callable[[str, str], object]:
    def parse(text: str, path: str) -> object:
        import importlib

        return getattr(importlib.import_module(f"pgvet.inputs.{module}"), name)(text, path)

    return parse


# parser name → (function of text and path, seed file names looked for in the fixtures and the corpus)
PARSERS: dict[str, tuple[Callable[[str, str], object], tuple[str, ...]]] = {
    "sysctl": (_parser("sysctl", "parse_sysctl_output"), ("sysctl.txt",)),
    "sysctl_conf": (_parser("sysctl", "parse_sysctl_conf"), ("*.conf",)),
    "meminfo": (_parser("meminfo", "parse_meminfo"), ("meminfo.txt",)),
    "lscpu": (_parser("lscpu", "parse_lscpu"), ("lscpu.txt", "lscpu.json")),
    "mounts": (_parser("mounts", "parse_mounts"), ("mounts.txt",)),
    "sysfs": (_parser("sysfs", "parse_sysfs"), ("sysfs.txt",)),
    "host_yaml": (_parser("host_yaml", "parse_host_yaml"), ("host.yaml",)),
    "pgconf": (_parse_conf, ("postgresql.conf", "postgresql.auto.conf")),
    "pg_values": (_parse_conf_values, ("postgresql.conf", "postgresql.auto.conf")),
    "alter_sql": (_parser("alter_sql", "parse_alter_sql"), ("*.sql",)),
    "pg_settings": (_parser("pg_settings", "parse_pg_settings_json"), ("pg_settings.json",)),
    "rules": (_parse_rules, ()),
    "suppressions": (_suppressions, ("postgresql.conf", "*.conf")),
}
RULE_SEED = """rules:
  - id: PGV999
    name: fuzz-seed
    title: A seed rule
    severity: warning
    tags: [os]
    when: sysctl.vm.swappiness > params.limit AND pg.shared_buffers < 8 * 1024 * 1024 * 1024
    params:
      limit: {default: 10, description: the limit}
    values: {swappiness: sysctl.vm.swappiness}
    message: "vm.swappiness = {sysctl.vm.swappiness|int} ({pg.shared_buffers|size})"
    fix:
      sysctl: {vm.swappiness: "10"}
    why: Because.
    references: ["sysctl(8)"]
    examples:
      - facts: {sysctl.vm.swappiness: 60, pg.shared_buffers: 1GB}
        expect: fire
derived:
  - name: fuzz_ratio
    unit: ratio
    description: a ratio
    formula: CASE WHEN meminfo.mem_total > 0 THEN pg.shared_buffers / meminfo.mem_total END
"""


def seeds(parser: str) -> list[str]:
    """The seed texts of a parser: fixture files, a few corpus files, and a minimal text."""
    if parser == "rules":
        return [RULE_SEED, (Path(__file__).parents[2] / "rules" / "pgv9xx-live.yaml").read_text()]
    patterns = PARSERS[parser][1]
    found: list[Path] = []
    for root in (FIXTURES, CORPUS):
        if root.is_dir():
            for pattern in patterns:
                found += sorted(root.rglob(pattern))[:4]
    texts = [path.read_text(encoding="utf-8", errors="surrogateescape") for path in found if path.is_file()
             and path.stat().st_size < 2_000_000]
    return texts or ["x = 1\n"]


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits of ``text``, as bytes decoded the way pgvet decodes files."""
    data = bytearray(text.encode("utf-8", "surrogateescape"))
    for _ in range(rng.randint(1, 3)):
        position = rng.randrange(len(data) + 1)
        choice = rng.randrange(10)
        if choice == 0 and data:  # bit flip
            index = rng.randrange(len(data))
            data[index] ^= 1 << rng.randrange(8)
        elif choice == 1:  # cut a range
            del data[position:position + rng.randint(1, 200)]
        elif choice == 2:  # truncate
            del data[position:]
        elif choice == 3:  # random bytes
            data[position:position] = rng.randbytes(rng.randint(1, 64))
        elif choice == 4:  # a huge line
            data[position:position] = bytes([rng.choice(b"a=1'\"#{[ \\")]) * rng.randint(10_000, 1_000_000)
        elif choice == 5:  # NUL and invalid UTF-8
            data[position:position] = rng.choice([b"\x00", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80"])
        elif choice == 6:  # duplicate a stretch
            data[position:position] = data[position:position + rng.randint(1, 500)] * rng.randint(2, 20)
        elif choice == 7:  # deep nesting (JSON, YAML, SQL parentheses)
            depth = rng.randint(100, 5000)
            opening, closing = rng.choice([(b"[", b"]"), (b"{", b"}"), (b"(", b")"), (b"- ", b"")])
            data[position:position] = opening * depth + closing * rng.choice([0, depth])
        elif choice == 8:  # line endings
            data = bytearray(data.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\n"])))
        else:  # swap two lines
            lines = bytes(data).split(b"\n")
            if len(lines) > 2:
                first, second = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[first], lines[second] = lines[second], lines[first]
                data = bytearray(b"\n".join(lines))
    return bytes(data).decode("utf-8", "surrogateescape")


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(_signal: int, _frame: FrameType | None) -> None:
        raise TimeoutError(f"parse took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_contract(parser: str, text: str) -> None:
    """The parser returns, or raises pgvet's own error with a message; anything else is saved and fails."""
    function = PARSERS[parser][0]
    try:
        with time_limit(CALL_TIMEOUT):
            function(text, f"fuzz/{parser}")
    except PgvetError as error:
        assert str(error).strip(), f"{parser}: an error without a message"
    except Exception as error:  # the contract is broken: keep the input
        digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        name = f"{parser}-{digest}.txt"
        if os.environ.get("PGVET_FUZZ_SAVE"):
            REGRESSIONS.mkdir(exist_ok=True)
            (REGRESSIONS / name).write_bytes(text.encode("utf-8", "surrogateescape"))
        pytest.fail(f"{parser} raised {type(error).__name__}: {error} on {text[:200]!r}… "
                    f"(PGVET_FUZZ_SAVE=1 keeps it as tests/robustness/fuzz_regressions/{name})")


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_mutated_inputs(parser: str) -> None:
    import time

    rng = random.Random(f"pgvet-{parser}")
    texts = seeds(parser)
    deadline = time.monotonic() + SECONDS
    runs = 0
    while time.monotonic() < deadline or runs < 20:
        check_contract(parser, mutate(rng.choice(texts), rng))
        runs += 1


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_hostile_texts(parser: str) -> None:
    """Inputs no mutation reaches quickly: empty, only NULs, one 8 MB line, 100 000 empty lines, deep
    nesting, random bytes."""
    rng = random.Random(parser)
    for text in ("", "\x00" * 1000, "a" * 8_000_000, "\n" * 100_000, "[" * 100_000, "{" * 50_000 + "}" * 50_000,
                 "- " * 20_000 + "x", "(" * 10_000 + "1" + ")" * 10_000,
                 rng.randbytes(50_000).decode("utf-8", "surrogateescape"), *ISSUE_25_TEXTS):
        check_contract(parser, text)


# issue #25's probes, each quadratic, exponential or explosive somewhere once (tests/robustness/test_bounds.py):
# an alias bomb, a line of suppression starts, lines of " on " and " type " and of parentheses, long quoted
# values, '%'s
ISSUE_25_TEXTS = (
    "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]\n" for level in range(1, 12)),
    "#pgvet:ignore[" * 100_000,
    "a" + " on a" * 100_000, "a on b" + " type x (" * 50_000 + ")", "a on " + "b (" * 100_000 + ")",
    "x = '" + "\\n" * 500_000 + "'\n", "x = '" + "''" * 500_000 + "\n",
    "%a" * 10_000 + "\n" + "a" * 100_000,
)


def _regression_files() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.txt")) if REGRESSIONS.is_dir() else []


@pytest.mark.parametrize("path", _regression_files(), ids=lambda path: path.name)
def test_regressions(path: Path) -> None:
    parser = path.name.split("-", 1)[0]
    assert parser in PARSERS, f"{path.name}: name it <parser>-<description>.txt, parser one of {sorted(PARSERS)}"
    check_contract(parser, path.read_bytes().decode("utf-8", "surrogateescape"))


def test_the_fuzzer_mutates() -> None:
    rng = random.Random(1)
    assert len({mutate("shared_buffers = 128MB\nwork_mem = 4MB\n", rng) for _ in range(50)}) > 40


# where each parser's input lies in a host: the regressions are also linted whole, in a host that has every other
# input, so that what a parser lets through must be judged by the rules and reported without a bug of pgvet's
HOST_FILES = {"sysctl": "sysctl.txt", "sysctl_conf": "sysctl.d/99-fuzz.conf", "meminfo": "meminfo.txt",
              "lscpu": "lscpu.txt", "mounts": "mounts.txt", "sysfs": "sysfs.txt", "host_yaml": "host.yaml",
              "pgconf": "postgresql.conf", "pg_values": "postgresql.conf", "alter_sql": "postgresql.auto.conf",
              "pg_settings": "pg_settings.json", "suppressions": "postgresql.conf"}


@pytest.mark.parametrize("path", _regression_files(), ids=lambda path: path.name)
def test_regressions_linted_whole(path: Path, tmp_path: Path) -> None:
    import shutil

    from pgvet.run.lint import lint
    from pgvet.run.options import LintOptions

    parser = path.name.split("-", 1)[0]
    host = tmp_path / "host"
    shutil.copytree(FIXTURES / "big-server", host)
    options = LintOptions()
    if parser == "rules":
        (tmp_path / "pack").mkdir()
        shutil.copy(path, tmp_path / "pack" / "fuzz.yaml")
        options = LintOptions(rules=[tmp_path / "pack"])
    else:
        (host / HOST_FILES[parser]).parent.mkdir(exist_ok=True)
        shutil.copy(path, host / HOST_FILES[parser])
    try:
        result = lint([host], options)
    except PgvetError as error:  # the rule pack refused, as the run's error
        assert "internal error" not in str(error)
        return
    assert all("internal error" not in error.message for error in result.errors), result.errors
    assert len(result.hosts) + len(result.errors) == 1
