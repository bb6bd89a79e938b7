"""scripts/bench.py stops rather than time an error, and builds hosts pgvet reads (the benchmark itself is not
run here: it takes minutes)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import bench  # scripts/ is on the path (tests/conftest.py)
from pgvet.run.lint import lint
from pgvet.run.options import LintOptions


def test_a_failing_command_stops_the_benchmark_with_its_stderr() -> None:
    command = [sys.executable, "-c", "import sys; sys.stderr.write('rule pack invalid'); sys.exit(2)"]
    with pytest.raises(SystemExit, match=r"(?s)exited 2; nothing was measured.*rule pack invalid"):
        bench.run_once(command, {})


def test_a_run_reports_its_time_and_peak_memory() -> None:
    run = bench.run_once([sys.executable, "-c", "block = bytearray(60_000_000)"], {})
    assert run.seconds > 0 and run.cpu > 0
    assert run.peak_mb > 55  # the child's own peak, not the test process's


def _printing(report: dict[str, object]) -> list[str]:
    return [sys.executable, "-c", f"print({json.dumps(json.dumps(report))})", "--"]


def _report(hosts: int, failed: int = 0, findings: int = 1) -> dict[str, object]:
    return {"summary": {"hosts": hosts, "hosts_failed": failed}, "errors": [{"host": "x"}] if failed else [],
            "notices": [], "findings": [{"host": "x"}] * findings}


def test_a_report_with_an_unread_host_or_no_finding_stops_the_benchmark() -> None:
    bench.check_report(_printing(_report(3)), {}, 3)
    with pytest.raises(SystemExit, match="1 failed"):
        bench.check_report(_printing(_report(2, failed=1)), {}, 3)
    with pytest.raises(SystemExit, match="0 findings"):
        bench.check_report(_printing(_report(3, findings=0)), {}, 3)


def test_the_dependency_import_is_every_declared_dependency() -> None:
    modules = bench.dependencies()
    assert "typer" in modules and "ruamel.yaml" in modules
    assert all(importlib.util.find_spec(module) is not None for module in modules)


def test_synthetic_hosts_are_read_with_distinct_names(tmp_path: Path) -> None:
    hosts = bench.make_hosts(tmp_path, 6)
    result = lint(hosts, LintOptions())
    assert not result.errors and not result.notices
    assert len(result.hosts) == 6 and any(host.findings for host in result.hosts)


def test_memory_is_judged_flat_net_of_what_the_command_line_costs() -> None:
    arguments = {1000: 12.0, 10000: 21.0}  # 1 kB a host for the arguments alone
    met = bench.memory_verdict({1000: 30.0, 10000: 40.0}, arguments)
    assert met.startswith("met: peak 30 MB for 1000 hosts, 40 MB for 10000 hosts; each further host adds 1.1 kB, "
                          "of which its command line alone 1.0 kB (an interpreter given the same arguments), pgvet "
                          "0.1 kB")
    assert bench.memory_verdict({1000: 30.0, 10000: 62.0}, arguments).startswith("not met")  # 2.6 kB its own
    assert bench.memory_verdict({200: 28.0}, {200: 11.0}).startswith("not judged")


def test_the_argument_probe_holds_its_arguments() -> None:
    """The baseline must grow with its arguments as pgvet's command line does, or the verdict flatters. Run
    from a small interpreter, as bench.py is: Linux carries the launching process's resident size into its
    child's peak across exec, and pytest's is larger than the probe's."""
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import bench\n"
             "arguments = ['/tmp/' + 'h' * 60]\n"
             "few = bench.run_once([sys.executable, '-c', bench.ARGUMENTS_PROBE, *arguments * 100], {})\n"
             "many = bench.run_once([sys.executable, '-c', bench.ARGUMENTS_PROBE, *arguments * 20000], {})\n"
             "print((many.peak_mb - few.peak_mb) * 1024 / 19900)")
    done = subprocess.run([sys.executable, "-c", probe, str(Path(bench.__file__).parent)], capture_output=True,
                          text=True, check=True)
    assert float(done.stdout) > 0.3  # kB a host
