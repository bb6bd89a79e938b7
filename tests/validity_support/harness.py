"""PostgreSQL as the judge of validity: start a real server on a configuration tree and ask pgvet too.

A :class:`Judge` owns one copy of a fresh cluster (one per worker thread) and, for each case, copies the
case's configuration tree beside it (include trees keep their layout), points the server at the file under
test with ``config_file``, starts it for real (``pg_ctl start -w -t 150``) and stops it. The same tree is
linted by pgvet (the file under test as postgresql.conf, includes read from the copy) and the findings
tagged ``startup`` are kept with their file:line.

What this machine may lack is set on the command line (:data:`OVERRIDES`). A command-line value outranks
the file's, yet PostgreSQL still parses the file and validates every line of it (names and values; see
``test_overrides_keep_the_files_lines_validated``). ``lc_*`` lines are taken out: locales depend on the
machine. A build that lacks SSL, Bonjour or a time zone database judges those lines by the build, not by
the file: on such a build (probed once, :func:`build_lacks`) the lines are taken out too, and so are the
values that need a build option it lacks (the parameter table's ``build_options``: ``wal_compression = lz4`` on a
build without lz4), which pgvet judges as the mainstream builds do (tests/differential/test_validity_build.py).
"""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pgservers
from pgvet.inputs.conf_templates import without_template_lines
from pgvet.pgparams import SUPPORTED_MAJORS, load_param_table
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions
from pgvet.snapshot.discovery import SnapshotInputs

# Settings this machine may not satisfy (memory, huge pages, sockets, paths, libraries, SSL files, log
# files). max_connections and the reserved connections are NOT overridden: the postmaster checks them
# against each other, and a file's values fit this machine once shared_buffers is small.
OVERRIDES: dict[str, str] = {
    "listen_addresses": "",
    "shared_buffers": "16MB",
    "huge_pages": "off",
    "shared_preload_libraries": "",
    "session_preload_libraries": "",
    "local_preload_libraries": "",
    "ssl": "off",
    "logging_collector": "off",
    "unix_socket_group": "",
    "archive_command": "",
    "restore_command": "",
    "max_files_per_process": "1000",
}
_LOCALE_LINE = re.compile(r"^\s*lc_(messages|monetary|numeric|time|collate|ctype)\b", re.IGNORECASE)
# Lines a build without the feature refuses whatever the file means (see build_lacks).
_BUILD_LINES = {
    "ssl": re.compile(r"^\s*ssl\s*(=|\s)", re.IGNORECASE),
    "bonjour": re.compile(r"^\s*bonjour\s*(=|\s)", re.IGNORECASE),
    "timezone": re.compile(r"^\s*(log_)?timezone\s*(=|\s)", re.IGNORECASE),
    # the wheels' own time zone database has no "localtime" zone (a system tzdata may have one)
    "localtime": re.compile(r"^\s*(log_)?timezone\s*=?\s*'?localtime'?\s*(#.*)?$", re.IGNORECASE),
}
_PROBES = {"ssl": ("ssl", "on"), "bonjour": ("bonjour", "on"), "timezone": ("timezone", "Europe/Paris"),
           "localtime": ("timezone", "localtime")}
# "… in file "/x/conf/postgresql.conf" line 12" (unrecognized names, invalid values, syntax errors).
PLACE = re.compile(r'file "([^"]+)" line (\d+)')
# An invalid value names the parameter, not the line; the file is named by "… contains errors".
# ("invalid value for parameter "X"", "parameter "X" requires a Boolean value", "… is outside the valid range
# for parameter "X" …"; an unknown name is named with its line instead).
INVALID = re.compile(r'(?<!unrecognized configuration )parameter "([^"]+)"')
ERRORS_IN = re.compile(r'configuration file "([^"]+)" contains errors')


@dataclass(frozen=True, slots=True)
class Case:
    """A configuration tree (a directory, copied whole) and the file in it used as postgresql.conf."""

    name: str
    root: Path  # a directory copied whole, or a single file
    conf: str  # relative to root (a single file: its name)
    auto_conf: str = ""  # lines appended to the cluster's postgresql.auto.conf (linted with the tree when given)

    @classmethod
    def single(cls, path: Path, name: str | None = None) -> Case:
        return cls(name or path.name, path, path.name)


@dataclass(slots=True)
class Verdict:
    case: str
    started: bool
    log: str
    named: set[tuple[str, int]] = field(default_factory=set)  # file:line PostgreSQL names, relative to the tree
    invalid: set[str] = field(default_factory=set)  # parameters whose value PostgreSQL rejects (lower case)
    files: set[str] = field(default_factory=set)  # files PostgreSQL says contain errors
    startup: list[tuple[str, str | None, int | None]] = field(default_factory=list)  # pgvet (rule, file, line)
    # the lines pgvet sets aside as a template's (a repository's file: inputs/conf_templates.py), relative to the tree
    templated: set[tuple[str, int]] = field(default_factory=set)
    subjects: set[str] = field(default_factory=set)  # subjects of pgvet's startup findings (parameters)
    lint_error: str | None = None
    # per older major S: pgvet's startup findings on the tree as a host of S linted with --upgrade-to this major
    upgraded_from: dict[int, list[tuple[str, str | None, int | None]]] = field(default_factory=dict)

    @property
    def pgvet_refuses(self) -> bool:
        return bool(self.startup) or self.lint_error is not None

    @property
    def agrees(self) -> bool:
        """PostgreSQL and pgvet say the same — or PostgreSQL refuses only lines pgvet reads as a template's, which a
        renderer writes before PostgreSQL reads the file (`@POSTGRES_SHARED_BUFFERS@`)."""
        return self.started != self.pgvet_refuses or self.refused_as_template()

    def refused_as_template(self) -> bool:
        return not self.started and not self.pgvet_refuses and bool(self.named) and self.named <= self.templated

    def places(self) -> set[tuple[str, int]]:
        return {(path, line) for _, path, line in self.startup if path is not None and line is not None}

    def rules(self) -> list[str]:
        return [rule for rule, _, _ in self.startup]

    def points_where_postgresql_does(self) -> bool:
        """Every file:line, every rejected parameter and every erroneous file PostgreSQL names, pgvet names."""
        if self.refused_as_template():
            return True
        paths = {path for _, path, _ in self.startup}
        return self.named <= self.places() and self.invalid <= self.subjects and self.files <= paths

    def describe(self) -> str:
        tail = " | ".join(line for line in self.log.splitlines() if "LOG:  " not in line or "line" in line)[-700:]
        return (f"{self.case}: PostgreSQL {'started' if self.started else 'refused'}; pgvet startup findings "
                f"{self.startup} {self.lint_error or ''}; PostgreSQL names {sorted(self.named)} {sorted(self.invalid)} "
                f"{sorted(self.files)}; log: {tail}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def build_dependent_values(major: int) -> list[tuple[str, str, str]]:
    """(parameter, value, build option) of every value the parameter table of ``major`` records as build-dependent."""
    if major not in SUPPORTED_MAJORS:
        return []
    return [(param.name, value, option) for param in load_param_table(major).params.values()
            for value, option in param.build_options]


def accepts(major: int, name: str, value: str) -> bool:
    """Whether this build accepts ``name = value`` (``postgres -C``: parsed and checked, no server started)."""
    result = pgservers.run(major, "postgres", ["-C", name, "-c", f"{name}={value}",
                                               "-D", str(pgservers.template_cluster(major))], timeout=60)
    return result.returncode == 0


@cache
def build_lacks(major: int) -> frozenset[str]:
    """Features this build refuses whatever the value means (no SSL, no Bonjour, no time zone database or no
    'localtime' zone in it), and the ``name=value`` of each build-dependent value it refuses."""
    lacking = {feature for feature, (name, value) in _PROBES.items() if not accepts(major, name, value)}
    lacking.update(f"{name}={value}" for name, value, _ in build_dependent_values(major)
                   if not accepts(major, name, value))
    return frozenset(lacking)


def _build_line(feature: str) -> re.Pattern[str]:
    if feature in _BUILD_LINES:
        return _BUILD_LINES[feature]
    name, _, value = feature.partition("=")
    return re.compile(rf"^\s*{name}\s*(=\s*|\s+)'?{value}'?\s*(#.*)?$", re.IGNORECASE)


def machine_free(text: str, lacking: Iterable[str] = ()) -> str:
    """The file with the lines that depend on the machine (locales) or on the build commented out."""
    patterns = [_LOCALE_LINE, *(_build_line(feature) for feature in lacking)]
    return "".join("#" + line if any(pattern.match(line) for pattern in patterns) else line
                   for line in text.splitlines(keepends=True))


class Judge:
    """One worker: a fresh cluster copy reused for every case it judges."""

    def __init__(self, major: int, worker: int, overrides: dict[str, str] | None = None,
                 upgrades_from: Sequence[int] = ()) -> None:
        self.major = major
        self.upgrades_from = upgrades_from
        self.overrides = OVERRIDES if overrides is None else overrides
        self.base = pgservers.make_tempdir(f"pgvet-validity-{major}-{worker}-")
        self.data = self.base / "data"
        shutil.copytree(pgservers.template_cluster(major), self.data, symlinks=True)
        self.auto_conf = (self.data / "postgresql.auto.conf").read_text()
        self.socket_dir = self.base / "socket"
        self.socket_dir.mkdir()
        self.conf_dir = self.base / "conf"
        self.lacking = build_lacks(major)

    def _prepare(self, case: Case) -> Path:
        if self.conf_dir.exists():
            shutil.rmtree(self.conf_dir)
        if case.root.is_dir():
            shutil.copytree(case.root, self.conf_dir, symlinks=True)
        else:
            self.conf_dir.mkdir()
            shutil.copy(case.root, self.conf_dir / case.conf)
        for path in self.conf_dir.rglob("*"):
            if path.is_file() and not path.is_symlink():
                text = path.read_text(encoding="latin-1")
                path.write_text(machine_free(text, self.lacking), encoding="latin-1")
        (self.data / "postgresql.auto.conf").write_text(self.auto_conf + case.auto_conf)
        pgservers.chown_tree(self.base)
        self.data.chmod(0o700)
        return self.conf_dir / case.conf

    def _start(self, conf: Path) -> tuple[bool, str]:
        options = [f"-c {name}='{value}'" for name, value in self.overrides.items()]
        options += [f"-c port={_free_port()}", f"-c unix_socket_directories='{self.socket_dir}'",
                    f"-c config_file='{conf}'", f"-c data_directory='{self.data}'",
                    f"-c external_pid_file='{self.base}/external.pid'",
                    f"-c hba_file='{self.data}/pg_hba.conf'", f"-c ident_file='{self.data}/pg_ident.conf'"]
        if self.major < 15:  # the statistics collector's directory (a path of the file's machine), gone in 15
            options.append(f"-c stats_temp_directory='{self.base}'")
        log = self.base / "start.log"
        log.unlink(missing_ok=True)  # pg_ctl -l appends: keep this start's messages only
        # a long wait: the largest max_connections takes tens of seconds to start on a loaded machine, and a
        # start cut short would read as a refusal
        started = pgservers.run(self.major, "pg_ctl", ["start", "-w", "-t", "150", "-D", str(self.data),
                                                       "-l", str(log), "-o", " ".join(options)], timeout=210)
        text = log.read_text(errors="replace") if log.exists() else ""
        text += started.stderr
        if "did not start in time" in started.stderr:  # still starting: no verdict, and no server left running
            pgservers.run(self.major, "pg_ctl", ["stop", "-m", "immediate", "-w", "-D", str(self.data)], timeout=60)
            raise RuntimeError(f"PostgreSQL {self.major} took over 150 s to start: no verdict\n{text}")
        if started.returncode == 0:
            pgservers.run(self.major, "pg_ctl", ["stop", "-m", "immediate", "-w", "-D", str(self.data)], timeout=60)
            return True, text
        return False, text

    def _relative(self, path: str) -> str:
        return path.removeprefix(str(self.conf_dir) + "/")

    def judge(self, case: Case) -> Verdict:
        conf = self._prepare(case)
        started, log = self._start(conf)
        verdict = Verdict(case.name, started, log,
                          {(self._relative(path), int(line)) for path, line in PLACE.findall(log)},
                          {name.lower() for name in INVALID.findall(log)},
                          {self._relative(path) for path in ERRORS_IN.findall(log)})
        verdict.templated = {(self._relative(str(path)), line.line) for path in self.conf_dir.rglob("*")
                             if path.is_file() and not path.is_symlink()
                             for line in without_template_lines(path.read_text(encoding="latin-1"))[1]}
        auto = self.data / "postgresql.auto.conf" if case.auto_conf else None
        inputs = SnapshotInputs.of(postgresql_conf=conf, postgresql_auto_conf=auto)
        for source in self.upgrades_from:  # the same tree, as a host of an older major about to upgrade
            (self.conf_dir / "PG_VERSION").write_text(f"{source}\n")
            upgraded = lint([self.conf_dir], LintOptions(select=["startup"], explicit=inputs, upgrade_to=self.major))
            verdict.upgraded_from[source] = [(finding.rule_id, finding.path, finding.line)
                                             for host in upgraded.hosts for finding in host.findings]
        (self.conf_dir / "PG_VERSION").write_text(f"{self.major}\n")
        result = lint([self.conf_dir], LintOptions(select=["startup"], explicit=inputs))
        if result.errors:
            verdict.lint_error = "; ".join(str(error) for error in result.errors)
        else:
            findings = result.hosts[0].findings
            verdict.startup = [(finding.rule_id, finding.path, finding.line) for finding in findings]
            verdict.subjects = {(finding.subject or "").lower() for finding in findings}
        return verdict

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def judge_all(major: int, cases: Sequence[Case], workers: int = 2,
              overrides: dict[str, str] | None = None, upgrades_from: Sequence[int] = ()) -> list[Verdict]:
    """Judge every case, spread over a small pool of workers (each with its own cluster copy); with
    ``upgrades_from``, pgvet's verdict on each as a host of those majors upgraded to ``major`` too."""
    batches = [list(cases[index::workers]) for index in range(workers)]

    def run(index: int) -> list[Verdict]:
        judge = Judge(major, index, overrides, upgrades_from)
        try:
            return [judge.judge(case) for case in batches[index]]
        finally:
            judge.close()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(run, range(workers)))
    order = {case.name: position for position, case in enumerate(cases)}
    return sorted((verdict for batch in results for verdict in batch), key=lambda verdict: order[verdict.case])


def corpus_cases(corpus: Path) -> list[Case]:
    """Every file of the corpus; a file of an include tree keeps its tree (the tree's top directory)."""
    cases: list[Case] = []
    for path in sorted(corpus.rglob("*")):
        if not path.is_file():
            continue
        parts = path.relative_to(corpus).parts
        if "include-trees" in parts:
            top = parts.index("include-trees") + 2
            root = corpus.joinpath(*parts[:top])
            cases.append(Case("/".join(parts), root, str(path.relative_to(root))))
        else:
            cases.append(Case.single(path, "/".join(parts)))
    return cases
