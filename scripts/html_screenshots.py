"""Screenshots of the HTML report for docs/output.md, taken by headless chromium at two widths.

    python scripts/html_screenshots.py           # writes docs/html-report-wide.png and docs/html-report-narrow.png

At a desktop's width, the report of a small fleet of the bundled hosts (its tables, the filters, big-server's RAM
chart and findings); at a phone's, the report of big-server alone. pngquant, when installed, makes the files
smaller. Needs chromium (Debian:
apt-get install chromium pngquant). Look at them before committing them: they are what the docs show.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
# name: (the hosts of the report, the window's width and height)
SHOTS = {"wide": (["big-server", "small-vm", "well-tuned", "config-repo"], 1280, 1200),
         "narrow": (["big-server"], 420, 1200)}


def main() -> int:
    chromium = next((found for name in ("chromium", "chromium-browser", "google-chrome")
                     if (found := shutil.which(name)) is not None), None)
    if chromium is None:
        print("no chromium found (Debian: apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="pgvet-shots-") as scratch:
        for name, (hosts, width, height) in SHOTS.items():
            report = Path(scratch) / f"{name}.html"
            lint = subprocess.run([sys.executable, "-m", "pgvet", "lint", *(f"fixtures/{host}" for host in hosts),
                                   "-f", "html", "-o", str(report)], cwd=PROJECT, capture_output=True, text=True,
                                  check=False)
            if lint.returncode not in (0, 1):
                print(lint.stderr, file=sys.stderr)
                return 1
            target = PROJECT / "docs" / f"html-report-{name}.png"
            # errors and warnings only: the fragment sets the page's filters
            subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--no-first-run", f"--user-data-dir={Path(scratch) / 'profile'}",
                            f"--window-size={width},{height}", "--virtual-time-budget=5000",
                            f"--screenshot={target}", report.as_uri() + "#severity=error,warning"],
                           capture_output=True, check=True, env={"HOME": scratch, "PATH": "/usr/bin:/bin"})
            if shutil.which("pngquant"):
                subprocess.run(["pngquant", "--force", "--skip-if-larger", "--quality=60-90", "--output",
                                str(target), str(target)], check=False)
            print(f"{target.relative_to(PROJECT)}: {target.stat().st_size // 1024} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
