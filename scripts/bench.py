"""Benchmark pgvet: cold start, throughput over fleets of synthetic hosts, peak memory — as ratios to
`python -c pass` and to importing the dependencies, so the numbers read the same on any machine.

From a clone, with pgvet installed in the interpreter that runs it (no dev dependencies, no valgrind):

    python -m venv /tmp/venv && /tmp/venv/bin/pip install .
    /tmp/venv/bin/python scripts/bench.py --hosts 200 --no-write     # about a minute
    /tmp/venv/bin/python scripts/bench.py            # 1 000 and 10 000 hosts (minutes); writes docs/performance.md
    /tmp/venv/bin/python scripts/bench.py --jobs     # where --jobs starts to pay: prints the crossover

It may be run from any directory. Its temporary files (the synthetic hosts, ~0.9 GB for 10 000, and the
rule-pack caches) go in one directory under TMPDIR, removed at the end, also on an error or Ctrl-C. A
failing pgvet, an unreadable host or a report without findings stops it (exit 1, pgvet's stderr shown).

Synthetic hosts copy the bundled fixtures (a `sysctl -a` of ~1 300 lines, the 800-line sample
postgresql.conf with site settings, meminfo, lscpu, mounts, sysfs, host.yaml) with values varied so that
different rules fire.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / "fixtures"
TEMPLATES = ("small-vm", "big-server", "well-tuned")


def make_hosts(directory: Path, count: int, seed: int = 5) -> list[Path]:
    rng = random.Random(seed)
    hosts: list[Path] = []
    for number in range(count):
        template = FIXTURES / TEMPLATES[number % len(TEMPLATES)]
        host = directory / f"host-{number:05d}"
        shutil.copytree(template, host)
        conf = host / "postgresql.conf"
        conf.write_text(conf.read_text() + f"\nwork_mem = {rng.choice([4, 16, 64, 256])}MB\n"
                        f"max_connections = {rng.choice([100, 200, 500, 1000])}\n")
        # a fleet's hosts have names of their own (two of one name share fingerprints: pgvet says so)
        host_yaml = host / "host.yaml"
        host_yaml.write_text(re.sub(r"(?m)^name: (.*)$", rf"name: \g<1>-{number:05d}", host_yaml.read_text(), count=1))
        sysctl = host / "sysctl.txt"
        swappiness = f"vm.swappiness = {rng.choice([1, 10, 60])}\n#"
        sysctl.write_text(sysctl.read_text().replace("vm.swappiness = ", swappiness))
        hosts.append(host)
    return hosts


class BenchError(SystemExit):
    """The benchmark stops: a number taken from a failing or wrong run would read as a fast pgvet."""

    def __init__(self, message: str) -> None:
        super().__init__(f"bench.py: {message}")


@dataclass(frozen=True)
class Run:
    seconds: float  # wall time, from starting the process to reaping it
    cpu: float  # user + system time of the process and the children it waited for
    peak_mb: float  # peak resident memory: the largest of the process and the children it waited for


def run_once(command: list[str], env: dict[str, str]) -> Run:
    """One run of a command in a new process; its exit status checked, its resources read from ``wait4``.
    The peak is at least this process's own resident size (Linux carries it into the child across exec):
    run the benchmark as its own small process, not from a large one."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env={**os.environ, **env})
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")[-3000:]
            raise BenchError(f"{shlex.join(command[:8])}{' …' if len(command) > 8 else ''} exited "
                             f"{process.returncode}; nothing was measured. Its stderr:\n{message}")
    # ru_maxrss is in kilobytes on Linux, in bytes on macOS
    peak = usage.ru_maxrss / (1024**2 if sys.platform == "darwin" else 1024)
    return Run(seconds, usage.ru_utime + usage.ru_stime, peak)


def measure(command: list[str], repeat: int, env: Callable[[], dict[str, str]] | dict[str, str] | None = None) -> Run:
    """Medians of wall and CPU time over ``repeat`` runs, a new process each time (``env`` called before each
    run when it is a function), and the highest peak memory. A failing run stops the benchmark."""
    return _summary([run_once(command, env() if callable(env) else env or {}) for _ in range(repeat)])


def measure_in_turn(commands: list[tuple[list[str], dict[str, str]]], repeat: int) -> list[Run]:
    """``measure`` of each command, the commands run one after the other ``repeat`` times: a ratio of two of
    them is taken in the same state of the machine (a slow spell of a shared one falls on both)."""
    runs: list[list[Run]] = [[] for _ in commands]
    for _ in range(repeat):
        for index, (command, env) in enumerate(commands):
            runs[index].append(run_once(command, env))
    return [_summary(each) for each in runs]


def _summary(runs: list[Run]) -> Run:
    return Run(statistics.median(run.seconds for run in runs), statistics.median(run.cpu for run in runs),
               max(run.peak_mb for run in runs))


def check_report(command: list[str], env: dict[str, str], hosts: int) -> None:
    """Lint once, untimed, in JSON, and stop unless every host was read, without an error or a notice, and
    findings came out: the timed runs write to /dev/null, and a pgvet that read nothing, or evaluated no rule,
    would be fast."""
    done = subprocess.run([*command, "--format", "json"], capture_output=True, text=True, check=False,
                          env={**os.environ, **env})
    if done.returncode != 0:
        raise BenchError(f"pgvet lint exited {done.returncode} on the benchmark's hosts:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    summary = report["summary"]
    if (summary["hosts"] != hosts or summary["hosts_failed"] or report["errors"] or report["notices"]
            or not report["findings"]):
        raise BenchError(f"pgvet lint did not read the benchmark's {hosts} hosts as expected: {summary['hosts']} "
                         f"read, {summary['hosts_failed']} failed, {len(report['findings'])} findings; errors "
                         f"{report['errors'][:3]}, notices {report['notices'][:3]}")


# Where a batch spends its time: each stage of `pgvet lint` timed on its own over the same hosts, in one
# process, a batch of hosts at a time as a lint goes, without a profiler (which inflates the small functions
# the stages are made of).
STAGE_PROBE = """
import io, sys, time
from pathlib import Path
from pgvet.engine.evaluate import evaluate_hosts
from pgvet.run.hosts import BATCH_HOSTS
from pgvet.run.lint import LintRun
from pgvet.run.options import LintOptions
from pgvet.run.workers import collecting_garbage_for_batches
from pgvet.report import ReportOptions
from pgvet.report.jsonl import Writer
from pgvet.snapshot.load import load_host
from pgvet.run.suppress import suppress_inline

directories = [Path(path) for path in sys.argv[1:]]
run = LintRun(directories, LintOptions())
plan = run.linter
plan.lint_batch(directories[:20])
seconds = dict.fromkeys(("read and parse the inputs", "evaluate the rules", "plan the targets (fixes)",
                         "suppressions", "write the report (jsonl)"), 0.0)
writer = Writer(run, ReportOptions(), io.StringIO())
with collecting_garbage_for_batches():  # as a lint does, a batch of hosts at a time
    for start in range(0, len(directories), BATCH_HOSTS):
        began = time.perf_counter()
        hosts = [load_host(directory, None, wanted=plan.wanted) for directory in directories[start:start + BATCH_HOSTS]]
        loaded = time.perf_counter()
        caches = [{} for _ in hosts]  # each host's derived values, which the planner starts from, as a lint does
        results = evaluate_hosts(plan.pack, hosts, plan=plan.rules, host_caches=caches)  # rule by rule over the batch
        evaluated = time.perf_counter()
        for host, result, cache in zip(hosts, results, caches):
            result.target = plan.planner.plan(host, result, cache)
            plan.planner.fix_findings(result, result.target)
        planned = time.perf_counter()
        for result in results:
            suppress_inline(result, [], plan.rule_names, plan.evaluated)
        suppressed = time.perf_counter()
        for result in results:
            writer.host(result)
        written = time.perf_counter()
        for stage, (begin, end) in zip(seconds, ((began, loaded), (loaded, evaluated), (evaluated, planned),
                                                 (planned, suppressed), (suppressed, written))):
            seconds[stage] += end - begin
for stage, total in seconds.items():
    print(stage, total / len(directories) * 1000, sep="\t")
"""


def stages(hosts: list[str], env: dict[str, str]) -> dict[str, float]:
    """Milliseconds per host of each stage of a lint."""
    done = subprocess.run([sys.executable, "-c", STAGE_PROBE, *hosts], capture_output=True, text=True, check=False,
                          env={**os.environ, **env})
    if done.returncode != 0:
        raise BenchError(f"the stage probe failed (it uses pgvet's internals):\n{done.stderr[-3000:]}")
    return {stage: float(ms) for stage, ms in (line.split("\t") for line in done.stdout.splitlines())}


# "Flat": what each further host adds to pgvet's peak, beyond what its command line alone costs, stays under
# this — holding a host's results would add tens of kB (its JSON Lines weigh 20 to 50 kB).
FLAT_KB_PER_HOST = 1.0
# The command line's own cost, measured apart: an interpreter given the same host arguments, each made a Path
# as pgvet's command line makes it (the kernel's copy, argv and orig_argv, the Path: about 1 kB a host).
ARGUMENTS_PROBE = "import sys, pathlib; paths = [pathlib.Path(argument) for argument in sys.argv[1:]]"


def memory_verdict(peaks: dict[int, float], arguments: dict[int, float]) -> str:
    """Whether the peak resident memory is flat in the number of hosts: what each further host adds to pgvet's
    peak (``peaks``), less what it adds to the peak of an interpreter given the same arguments and nothing to
    do (``arguments``). The hosts' results are not held: that difference is the allocator's noise."""
    listed = ", ".join(f"{peak:.0f} MB for {count} hosts" for count, peak in peaks.items())
    if len(peaks) < 2:
        return f"not judged (one fleet size; give --hosts two sizes): peak {listed}"
    (few, low), (many, high) = min(peaks.items()), max(peaks.items())
    per_host = (high - low) * 1024 / (many - few)
    command_line = (arguments[many] - arguments[few]) * 1024 / (many - few)
    own = per_host - command_line
    verdict = "met" if own <= FLAT_KB_PER_HOST else "not met"
    return (f"{verdict}: peak {listed}; each further host adds {per_host:.1f} kB, of which its command line alone "
            f"{command_line:.1f} kB (an interpreter given the same arguments), pgvet {own:.1f} kB (flat here means "
            f"at most {FLAT_KB_PER_HOST:.1f} kB; a host's results held would add tens of kB)")


NOTES = "## Notes\n"
# The import name of each of pgvet's dependencies (pyproject.toml's [project] dependencies).
IMPORT_NAMES = {"typer": "typer", "rich": "rich", "pydantic": "pydantic", "ruamel-yaml": "ruamel.yaml",
                "pglast": "pglast", "psycopg": "psycopg"}
# Run by the measured interpreter: a lint as the command line runs it, then which dependencies it imported.
USED_PROBE = """
import runpy, sys
modules, sys.argv = sys.argv[1].split(","), ["pgvet", *sys.argv[2:]]
try:
    runpy.run_module("pgvet", run_name="__main__")
except SystemExit:
    pass
print("imported:" + ",".join(module for module in modules if module in sys.modules), file=sys.stderr)
"""
# The formats whose throughput is judged (issue #27: at least 300 hosts a second per core in each).
FORMATS = ("jsonl", "json", "sarif", "text")
TARGET_PER_CORE = 300


def used_dependencies(python: str, modules: list[str], arguments: list[str], env: dict[str, str]) -> list[str]:
    """The dependencies (of ``modules``) that ``pgvet ARGUMENTS`` imports, in one process as the command line runs
    it: a warm lint is judged against importing those, not the ones only other commands need."""
    done = subprocess.run([python, "-c", USED_PROBE, ",".join(modules), *arguments], capture_output=True, text=True,
                          check=False, env={**os.environ, **env})
    found = re.search(r"^imported:(.*)$", done.stderr, re.M)
    if found is None:
        raise BenchError(f"could not tell what `pgvet {' '.join(arguments)}` imports:\n{done.stderr[-2000:]}")
    return [module for module in found.group(1).split(",") if module] or ["sys"]


def dependencies() -> list[str]:
    """The modules of pgvet's declared dependencies, read from pyproject.toml: a dependency added there and not
    here would make the comparison flattering, so it stops the benchmark."""
    declared = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [re.sub(r"[-_.]+", "-", re.split(r"[\s<>=!~;\[(]", spec, maxsplit=1)[0]).lower() for spec in declared]
    unknown = [name for name in names if name not in IMPORT_NAMES]
    if unknown:
        raise BenchError(f"dependencies {unknown} of pyproject.toml have no import name in IMPORT_NAMES")
    return list(dict.fromkeys(IMPORT_NAMES[name] for name in names))  # psycopg is declared twice (its binary extra)


def measured_pgvet() -> str:
    """Which pgvet the benchmark runs: its version and place, and the clone's commit. Its bytecode is written
    first, as `pip install` does for a regular install: from an editable install or a source tree, or with
    PYTHONDONTWRITEBYTECODE set, every measured process would compile pgvet's modules (~30 ms a start) — a
    cost no installed pgvet pays."""
    import compileall

    spec = importlib.util.find_spec("pgvet")
    if spec is None or spec.origin is None:
        raise BenchError(f"pgvet is not importable by {sys.executable}: install it in this interpreter's "
                         f"environment (`pip install .` from the clone) or set PYTHONPATH={PROJECT / 'src'}")
    package = Path(spec.origin).parent
    compileall.compile_dir(package, quiet=1)
    try:
        version = importlib.metadata.version("pgvet")
    except importlib.metadata.PackageNotFoundError:
        version = "not installed"
    if package.is_relative_to(PROJECT / "src"):
        where = "this clone's src/"
    else:
        where = str(package)
        declared = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["version"]
        if version != declared:
            raise BenchError(f"the pgvet at {package} is version {version}, this clone's is {declared}: "
                             "install the clone's (`pip install .`) so that the benchmark measures it")
    commit = subprocess.run(["git", "-C", str(PROJECT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True, check=False).stdout.strip() if shutil.which("git") else ""
    return f"pgvet {version} from {where}" + (f", the clone at {commit}" if commit else "")


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (f"{model or platform.machine()}, {os.cpu_count()} CPUs, {memory:.0f} GiB RAM, Python "
            f"{platform.python_version()}, {platform.system()} {platform.release()}, load average {load} when "
            f"the benchmark started; Python's speed here: `sum(range(100))` takes {python_speed():.2f} µs "
            "(hosts per second scale with it from one machine to another)")


def python_speed() -> float:
    """Microseconds for ``sum(range(100))``, best of five, as ``python -m timeit`` gives it."""
    import timeit

    return min(timeit.repeat("sum(range(100))", number=200_000, repeat=5)) / 200_000 * 1e6


def check_disk(directory: Path, count: int) -> None:
    """Stop before copying hosts into a temporary directory too small for them (10 000 hosts take ~0.9 GB)."""
    size = sum(path.stat().st_size for template in TEMPLATES for path in (FIXTURES / template).rglob("*")
               if path.is_file()) / len(TEMPLATES)
    needed, free = size * count * 1.2, shutil.disk_usage(directory).free
    if needed > free:
        raise BenchError(f"{count} synthetic hosts need about {needed / 1e9:.1f} GB in {directory}, which has "
                         f"{free / 1e9:.1f} GB free: set TMPDIR to a larger place")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000], metavar="N",
                        help="fleet sizes to lint in one process (default: 1000 10000)")
    parser.add_argument("--repeat", type=int, default=11,
                        help="runs of each start-up measurement, whose median is kept (default: 11)")
    parser.add_argument("--no-write", action="store_true", help="print only; do not write docs/performance.md")
    parser.add_argument("--jobs", action="store_true",
                        help="only time one process against several on fleets of --hosts (default: 125 250 500 1000 "
                             "2000), and print where several start to pay (run.workers.JOBS_MIN_HOSTS)")
    options = parser.parse_args()
    python = sys.executable
    pgvet = [python, "-m", "pgvet"]
    if options.jobs:
        counts = options.hosts if options.hosts != parser.get_default("hosts") else [125, 250, 500, 1000, 2000]
        with tempfile.TemporaryDirectory(prefix="pgvet-bench-") as scratch:
            print("\n".join(jobs_crossover(counts, max(3, options.repeat), pgvet, Path(scratch))))
        return
    modules = dependencies()
    version = measured_pgvet()
    with tempfile.TemporaryDirectory(prefix="pgvet-bench-") as scratch:
        root = Path(scratch)
        report = benchmark(options.hosts, options.repeat, python, pgvet, modules, root, version)
    print("\n".join(report))
    if options.no_write:
        return
    target = PROJECT / "docs" / "performance.md"
    # the hand-written part (from its "## Notes" heading on) is kept as it is
    previous = target.read_text() if target.exists() else ""
    notes = previous[previous.index(NOTES):] if NOTES in previous else ""
    target.write_text("\n".join(report) + ("\n" + notes if notes else ""))
    print(f"written to {target}")


def jobs_crossover(counts: list[int], runs: int, pgvet: list[str], root: Path) -> list[str]:
    """One process against 2 … the usable CPUs, on fleets of each size, for the jsonl report (the parent process only
    writes lines) and the text report (the default, whose rendering stays in the parent): the runs of a size
    interleaved (1, 2, …, 1, 2, …) so that a slow spell of a shared machine falls on each, medians kept. Processes
    are started whatever the fleet's size (PGVET_JOBS_MIN_HOSTS=1). The report's lines, the crossover last."""
    env = {"PGVET_CACHE_DIR": str(root / "cache"), "PGVET_JOBS_MIN_HOSTS": "1"}
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cpus < 2:
        raise BenchError("one CPU usable: --jobs has nothing to spread over")
    directory = root / "hosts"
    directory.mkdir()
    check_disk(directory, max(counts))
    hosts = [str(path) for path in make_hosts(directory, max(counts))]
    check_report([*pgvet, "lint", *hosts[:len(TEMPLATES)], "--exit-zero"], env, len(TEMPLATES))
    processes = [1, *range(2, cpus + 1)]
    lines = [f"`scripts/bench.py --jobs`: {machine()}; {runs} runs of each, interleaved, medians.", "",
             "| hosts | report | " + " | ".join(f"--jobs {jobs}" for jobs in processes) + " |",
             "|---|---|" + "---|" * len(processes)]
    faster: dict[tuple[str, int], bool] = {}
    for fmt in ("jsonl", "text"):
        for count in counts:
            timed: dict[int, list[Run]] = {jobs: [] for jobs in processes}
            for _ in range(runs):
                for jobs in processes:
                    timed[jobs].append(run_once([*pgvet, "lint", *hosts[:count], "--format", fmt, "--exit-zero",
                                                 "--jobs", str(jobs)], env))
            medians = {jobs: (statistics.median(run.seconds for run in timed[jobs]),
                              statistics.median(run.cpu for run in timed[jobs])) for jobs in processes}
            faster[fmt, count] = min(medians[jobs][0] for jobs in processes[1:]) < medians[1][0]
            lines.append(f"| {count} | {fmt} | " + " | ".join(f"{wall:.2f} s ({cpu:.2f} s CPU)"
                                                              for wall, cpu in medians.values()) + " |")
    lines += ["", f"Load average {os.getloadavg()[0]:.1f} at the end."]
    paying = [count for count in counts if all(faster[fmt, larger] for fmt in ("jsonl", "text")
                                               for larger in counts if larger >= count)]
    if paying:
        lines.append(f"Several processes are faster, for both reports, from {paying[0]} hosts on: "
                     f"{paying[0] // cpus} hosts for each of {cpus} processes (run.workers.JOBS_MIN_HOSTS, "
                     "PGVET_JOBS_MIN_HOSTS).")
    else:
        lines.append(f"Several processes were never faster for both reports, up to {max(counts)} hosts: keep "
                     "run.workers.JOBS_MIN_HOSTS above that.")
    return lines


def benchmark(counts: list[int], repeat: int, python: str, pgvet: list[str], modules: list[str], root: Path,
              version: str) -> list[str]:
    """Every measurement, every temporary file under ``root``; the report's lines."""
    described = machine()
    env = {"PGVET_CACHE_DIR": str(root / "cache")}
    rows: list[tuple[str, str]] = []
    throughput: dict[int, tuple[float, float]] = {}
    peaks: dict[int, float] = {}
    arguments: dict[int, float] = {}  # the peak of an interpreter given the same host arguments
    shares: dict[str, float] = {}
    per_format: dict[str, float] = {}  # hosts per CPU-second, on the first fleet
    colds = iter(range(1_000_000))

    one = str(FIXTURES / "big-server")
    lint_one = [*pgvet, "lint", one, "--exit-zero"]
    check_report(lint_one, env, 1)  # also compiles the rule pack into the benchmark's cache, before any timing
    used = used_dependencies(python, modules, [*lint_one[3:], "--format", "json", "-o", os.devnull], env)
    bare, deps, warm = measure_in_turn([([python, "-c", "pass"], {}),
                                        ([python, "-c", f"import {', '.join(used)}"], {}),
                                        ([*lint_one, "--format", "json"], env)], repeat)
    cold = measure([*lint_one, "--format", "json"], 3,
                   lambda: {"PGVET_CACHE_DIR": str(root / f"cold-{next(colds)}")})
    rows += [
        ("`python -c pass`", f"{bare.seconds * 1000:.0f} ms"),
        (f"import {', '.join(used)} (the dependencies a one-host lint imports)", f"{deps.seconds * 1000:.0f} ms"),
        ("`pgvet lint` one host, warm rule-pack cache",
         f"{warm.seconds * 1000:.0f} ms ({warm.seconds / deps.seconds:.2f}× the import of its dependencies)"),
        ("`pgvet lint` one host, cold (pack compiled)",
         f"{cold.seconds * 1000:.0f} ms ({cold.seconds / deps.seconds:.2f}×)"),
        ("peak memory, one host", f"{warm.peak_mb:.0f} MB"),
    ]
    for count in counts:
        directory = root / f"hosts-{count}"
        directory.mkdir()
        check_disk(directory, count)
        hosts = [str(path) for path in make_hosts(directory, count)]
        check_report([*pgvet, "lint", *hosts[:len(TEMPLATES)], "--exit-zero", "--strict"], env, min(count, 3))
        command = [*pgvet, "lint", *hosts, "--format", "jsonl", "--exit-zero", "--strict"]
        runs = 3  # a median: one run of a shared machine can fall in a slow spell (10 000 hosts: a minute more)
        if count == counts[0]:  # every judged format, in turn, the others to a file as CI and people keep them
            timed = measure_in_turn([(command, env), *(([*pgvet, "lint", *hosts, "--format", fmt, "--exit-zero",
                                                          "--strict", "-o", str(root / f"report.{fmt}")], env)
                                                        for fmt in FORMATS[1:])], runs)
            batch, others = timed[0], timed[1:]
        else:
            batch, others = measure(command, runs, env), []
        throughput[count] = (count / batch.seconds, count / batch.cpu)
        peaks[count] = batch.peak_mb
        arguments[count] = run_once([python, "-c", ARGUMENTS_PROBE, *hosts], {}).peak_mb
        if not shares:
            shares = stages(hosts[:500], env)
        rows.append((f"{count} hosts, one process, JSON Lines (median of {runs})",
                     f"{batch.seconds:.1f} s ({batch.cpu:.1f} s CPU), {count / batch.seconds:.0f} hosts/s, "
                     f"peak {batch.peak_mb:.0f} MB"))
        if others:
            per_format["jsonl"] = count / batch.cpu
        for fmt, each in zip(FORMATS[1:], others, strict=False):  # others: the first fleet only
            per_format[fmt] = count / each.cpu
            rows.append((f"{count} hosts, one process, {fmt} (median of {runs})",
                         f"{each.seconds:.1f} s ({each.cpu:.1f} s CPU), {count / each.seconds:.0f} hosts/s"))
        shutil.rmtree(directory)
    ratio = warm.seconds / deps.seconds
    return ["# Performance", "",
            f"Measured by `python scripts/bench.py` (medians of {repeat} runs for the start-up rows, of 3 for "
            "the fleets and the formats; a new process each time; peak memory from `wait4`, the "
            "largest of the process and its children and of the runs). Read the ratios: they carry to other "
            "machines.", "",
            f"Machine: {described}.", "", f"Measured: {version}.", "",
            "| measurement | result |", "|---|---|", *[f"| {name} | {value} |" for name, value in rows], "",
            "## Against the targets", "",
            f"- A warm one-host lint within 1.5× the import of the dependencies it uses ({', '.join(used)}): "
            f"{ratio:.2f}× — " + ("met" if ratio <= 1.5 else "not met") + " (a new process each time, the rule pack "
            f"compiled by an earlier run; the first run after an install or a rule change compiles it: "
            f"{cold.seconds / deps.seconds:.2f}×).",
            *[f"- {TARGET_PER_CORE} hosts per second per core in {fmt} ({counts[0]} hosts, one process): "
              f"{rate:.0f} per CPU-second — " + ("met" if rate >= TARGET_PER_CORE else "not met") + "."
              for fmt, rate in per_format.items()],
            *[f"- JSON Lines over {count} hosts, one process: {rate:.0f} hosts/s ({per_cpu:.0f} per CPU-second)."
              for count, (rate, per_cpu) in throughput.items()],
            f"- Memory flat in the number of hosts: {memory_verdict(peaks, arguments)}. Hosts are linted 16 at a "
            "time (all read, then all evaluated), and each is written to the reports, then dropped.",
            "", "## Where the time goes", "",
            f"Milliseconds per host of each stage, timed apart over {min(500, counts[0])} synthetic hosts in one "
            "process, batch by batch as a lint goes (the rest of a run: starting, reading the rule pack, the "
            "summary):", "",
            "| stage | ms per host |", "|---|---|", *[f"| {stage} | {ms:.2f} |" for stage, ms in shares.items()],
            f"| total | {sum(shares.values()):.2f} |", ""]


if __name__ == "__main__":
    main()
