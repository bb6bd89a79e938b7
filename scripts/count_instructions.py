"""Instructions per host of each stage of a lint, counted by valgrind's callgrind (not timed).

On a shared or virtual machine, two timings of the same code differ by ±10 %: too much to judge a change
of a few per cent. Callgrind counts the instructions a process executes, the same from one run to the
next (PYTHONHASHSEED pinned), whatever else the machine does. What it does not see: time spent in the
kernel (system calls, page faults) — count those with `strace -c`.

Each stage is counted as the difference of two runs over the same synthetic hosts (scripts/bench.py's):
one that prepares the stage's input, one that prepares it and runs the stage.

    python scripts/count_instructions.py [--hosts 20]

Needs valgrind (Debian: apt-get install valgrind) and pgvet installed in the interpreter that runs it,
as scripts/bench.py does; not the dev dependencies. Takes about a minute per stage.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import make_hosts

# Run by the counted interpreter: argv = stage, "run" or "prepare", host directories.
PROBE = """
import io, sys
from pathlib import Path
from pgvet.engine.evaluate import evaluate_host
from pgvet.run.lint import LintRun
from pgvet.run.options import LintOptions
from pgvet.report import ReportOptions
from pgvet.report.jsonl import Writer
from pgvet.snapshot.load import load_host
from pgvet.run.suppress import suppress_inline

stage, mode, directories = sys.argv[1], sys.argv[2], [Path(path) for path in sys.argv[3:]]
run = LintRun(directories, LintOptions())
plan = run.linter
writer = Writer(run, ReportOptions(), io.StringIO())
for directory in directories[:3]:  # what a first host costs once (caches, lazy imports): in both runs
    writer.host(evaluate_host(plan.pack, load_host(directory, None, wanted=plan.wanted), plan=plan.rules,
                              host_cache={}))
if stage == "read and parse the inputs":
    if mode == "run":
        for directory in directories:
            load_host(directory, None, wanted=plan.wanted)
elif stage == "evaluate the rules":
    hosts = [load_host(directory, None, wanted=plan.wanted) for directory in directories]
    if mode == "run":
        for host in hosts:
            evaluate_host(plan.pack, host, plan=plan.rules, host_cache={})
elif stage == "plan the targets (fixes)":
    hosts = [load_host(directory, None, wanted=plan.wanted) for directory in directories]
    caches = [{} for _ in hosts]  # each host's derived values, which the planner starts from, as a lint does
    results = [evaluate_host(plan.pack, host, plan=plan.rules, host_cache=cache) for host, cache in zip(hosts, caches)]
    if mode == "run":
        for host, result, cache in zip(hosts, results, caches):
            plan.planner.fix_findings(result, plan.planner.plan(host, result, cache))
else:
    results = [evaluate_host(plan.pack, load_host(directory, None, wanted=plan.wanted), plan=plan.rules,
                             host_cache={}) for directory in directories]
    if mode == "run":
        for result in results:
            suppress_inline(result, [], plan.rule_names, plan.evaluated)
            writer.host(result)
"""
STAGES = ("read and parse the inputs", "evaluate the rules", "plan the targets (fixes)", "suppressions and JSON Lines")


def instructions(arguments: list[str], cache: str) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                           "-c", PROBE, *arguments], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "0", "PGVET_CACHE_DIR": cache})
    if done.returncode != 0:
        raise SystemExit(f"the counted probe exited {done.returncode} (it uses pgvet's internals):\n"
                         f"{done.stderr[-3000:]}")
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no count from callgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=20)
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="pgvet-count-") as directory:
        hosts = [str(path) for path in make_hosts(Path(directory) / "hosts", options.hosts)]
        cache = str(Path(directory) / "cache")
        compiled = subprocess.run([sys.executable, "-m", "pgvet", "rules"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, check=False,
                                  env={**os.environ, "PGVET_CACHE_DIR": cache})  # the pack compiled before counting
        if compiled.returncode != 0:
            raise SystemExit(f"`pgvet rules` exited {compiled.returncode} with {sys.executable} (is pgvet installed "
                             f"in its environment?):\n{compiled.stderr[-3000:]}")
        total = 0
        for stage in STAGES:
            per_host = (instructions([stage, "run", *hosts], cache)
                        - instructions([stage, "prepare", *hosts], cache)) // options.hosts
            total += per_host
            print(f"{stage}\t{per_host / 1e6:.2f} M instructions a host", flush=True)
        print(f"total\t{total / 1e6:.2f} M instructions a host")


if __name__ == "__main__":
    main()
