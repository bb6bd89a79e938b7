"""The HTML report (issue #30): one self-contained page, every text of the inputs escaped, checked as a browser shows
it — Debian's chromium, headless, runs the page's script and gives back its DOM (skipped when it is absent; .ci/run
installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from pgvet.cli import app

CHROMIUM = next((found for name in ("chromium", "chromium-browser", "google-chrome")
                 if (found := shutil.which(name)) is not None), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no headless browser (Debian: apt-get install chromium)")
HOSTILE = '<script>alert("pgvet")</script>'


@dataclass
class Element:
    tag: str
    attributes: dict[str, str | None]
    text: list[str] = field(default_factory=list)

    @property
    def hidden(self) -> bool:
        return "hidden" in self.attributes


class Page(HTMLParser):
    """The elements of a page with their attributes and the text inside each."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self.open: list[Element] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.elements.append(element)
        if tag not in ("br", "meta", "input", "line", "img", "link", "rect"):
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop().tag != tag:
            pass

    def handle_data(self, data: str) -> None:
        for element in self.open:  # the text of an element is all the text inside it
            element.text.append(data)

    def all(self, tag: str, **wanted: str) -> list[Element]:
        return [element for element in self.elements if element.tag == tag
                and all(element.attributes.get(name.replace("_", "-")) == value for name, value in wanted.items())]

    def by_id(self, identifier: str) -> Element:
        [element] = [element for element in self.elements if element.attributes.get("id") == identifier]
        return element


runner = CliRunner()


def fleet(tmp_path: Path) -> Path:
    """big-server, small-vm, well-tuned, a host whose name and configuration hold markup, an empty directory;
    their HTML report."""
    hosts = tmp_path / "hosts"
    for name in ("big-server", "small-vm", "well-tuned"):
        shutil.copytree(FIXTURES / name, hosts / name)
    hostile = hosts / "hostile"
    shutil.copytree(FIXTURES / "small-vm", hostile)
    (hostile / "host.yaml").write_text(f"name: '{HOSTILE}'\npg_version: 16\nworkload: oltp\n")
    conf = hostile / "postgresql.conf"
    conf.write_text(conf.read_text() + "shared_buffers = 64MB # <img src=x onerror=alert(1)> & co\n")
    (hosts / "empty").mkdir()
    report = tmp_path / "report.html"
    done = runner.invoke(app, ["lint", *(str(path) for path in sorted(hosts.iterdir())), "-f", "html", "-o",
                               str(report)])
    assert done.exit_code == 2, done.output  # the empty directory could not be read
    return report


def test_the_page_is_self_contained_and_escapes_what_the_inputs_say(tmp_path: Path) -> None:
    text = fleet(tmp_path).read_text(encoding="utf-8")
    # nothing from elsewhere, and a policy that lets the page load nothing
    assert "default-src 'none'" in text
    page = Page(text)
    assert not [element for element in page.elements if element.tag in ("link", "img", "iframe", "object", "embed")
                or "src" in element.attributes or not (element.attributes.get("href") or "#").startswith("#")]
    assert "url(" not in "".join(page.all("style")[0].text) and "@import" not in text
    assert re.findall(r"https?://[^\s\"'<]+", text) == ["http://www.w3.org/2000/svg"] * text.count("<svg")
    # a host named <script>…: text wherever it appears, never an element; so are lines quoted from its files
    assert HOSTILE not in text and "&lt;script&gt;alert(&quot;pgvet&quot;)&lt;/script&gt;" in text
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt; &amp; co" in text
    assert len(page.all("script")) == 1
    assert page.all("section", data_host=HOSTILE)  # the attribute holds the name as it is, once parsed


def test_one_host_is_a_page_of_its_own() -> None:
    done = runner.invoke(app, ["lint", str(FIXTURES / "big-server"), "-f", "html"])
    assert done.exit_code == 1
    page = Page(done.output)
    assert "".join(page.all("title")[0].text) == "pgvet: db-prod-03"
    assert not page.all("section", **{"class": "fleet"})
    [chart] = page.all("figure", **{"class": "ram"})
    rects = page.all("rect")
    assert len(rects) == 3  # shared memory, the pool, the work_mem budget: nothing left to the OS
    legend = " ".join(" ".join(row.text) for row in page.all("td"))
    assert "end of RAM" in legend and "promised beyond RAM, more than it holds" in legend and "+188.2 GiB" in legend
    assert chart.attributes["class"] == "ram"


def dom(page: Path, fragment: str, profile: Path) -> Page:
    """The page as headless chromium has it once its script ran (the address's fragment sets the filters)."""
    assert CHROMIUM is not None
    done = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", f"--user-data-dir={profile}",
                           "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + fragment],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={"HOME": str(profile), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return Page(done.stdout)


def visible_findings(page: Page) -> list[Element]:
    hidden_hosts = {element.attributes["data-host"] for element in page.all("section") if element.hidden
                    and "data-host" in element.attributes}
    return [element for element in page.all("article") if not element.hidden
            and element.attributes["data-host"] not in hidden_hosts]


@needs_chromium
def test_the_browser_shows_the_findings_and_filters_them(tmp_path: Path) -> None:
    report = fleet(tmp_path)
    profile = tmp_path / "profile"
    page = dom(report, "", profile)
    findings = page.all("article")
    active = [element for element in findings if element.attributes["data-state"] == "active"]
    assert "".join(page.by_id("shown").text) == f"{len(active)} of {len(active)} findings shown"
    assert visible_findings(page) == active
    # the filters' options, made by the script from the page: every host (the hostile name as text), every rule
    hosts = ["".join(option.text) for option in page.all("option") if option.attributes.get("value")
             and option.attributes["value"] in {section.attributes.get("data-host") for section in page.all("section")}]
    assert sorted(hosts) == sorted(["db-prod-03", "web-db-01", "db-ok-01", HOSTILE])
    assert len(page.all("script")) == 1  # the hostile name made no element
    rules = {element.attributes["data-rule"] for element in findings}
    assert {option.attributes["value"] for option in page.all("option")} >= rules
    # the unreadable directory is said at the top
    assert any("no inputs found" in "".join(item.text) for item in page.all("li"))

    by_rule = dom(report, "#rule=PGV110", profile)
    shown = visible_findings(by_rule)
    expected = [element for element in active if element.attributes["data-rule"] == "PGV110"]
    assert shown and [element.attributes["data-host"] for element in shown] == [
        element.attributes["data-host"] for element in expected]
    assert "".join(by_rule.by_id("shown").text) == f"{len(expected)} of {len(active)} findings shown"
    well_tuned = [section for section in by_rule.all("section") if section.attributes.get("data-host") == "db-ok-01"]
    assert well_tuned and well_tuned[0].hidden  # no finding of the rule there: its section is hidden

    errors_of_one = dom(report, "#severity=error&host=db-prod-03", profile)
    shown = visible_findings(errors_of_one)
    assert shown and {(element.attributes["data-severity"], element.attributes["data-host"]) for element in shown} \
        == {("error", "db-prod-03")}

    by_text = dom(report, "#text=nr_hugepages", profile)
    shown = visible_findings(by_text)
    assert shown and len(shown) < len(active) and all("nr_hugepages" in "".join(element.text) for element in shown)
    assert len(shown) == sum(1 for element in active if "nr_hugepages" in "".join(element.text))


@needs_chromium
def test_the_browser_draws_the_ram_chart(tmp_path: Path) -> None:
    report = tmp_path / "one.html"
    assert runner.invoke(app, ["lint", str(FIXTURES / "big-server"), "-f", "html", "-o", str(report)]).exit_code == 1
    page = dom(report, "", tmp_path / "profile")
    [svg] = page.all("svg")
    assert svg.attributes["role"] == "img" and svg.attributes["aria-label"] == "Where the RAM goes (188.4 GiB)"
    widths = [float(rect.attributes["width"] or 0) for rect in page.all("rect")]
    assert len(widths) == 3 and abs(sum(widths) - 100) < 0.01  # the bar spans everything promised
    marks = ["".join(mark.text) for mark in page.all("div") if "mark" in (mark.attributes.get("class") or "")]
    assert any("end of RAM, 188.4 GiB" in mark for mark in marks) and any("CommitLimit" in mark for mark in marks)


@needs_chromium
def test_the_browser_shows_baseline_findings_on_demand(tmp_path: Path) -> None:
    host = tmp_path / "small-vm"
    shutil.copytree(FIXTURES / "small-vm", host)
    baseline, report = tmp_path / "baseline.json", tmp_path / "report.html"
    assert runner.invoke(app, ["baseline", "create", str(host), "-o", str(baseline)]).exit_code == 0
    done = runner.invoke(app, ["lint", str(host), "--baseline", str(baseline), "-f", "html", "-o", str(report)])
    assert done.exit_code == 0, done.output
    page = dom(report, "", tmp_path / "profile")
    recorded = page.all("article", data_state="baseline")
    assert recorded and visible_findings(page) == [] and "".join(page.by_id("shown").text) == "0 of 0 findings shown"
    shown = visible_findings(dom(report, "#quiet=1", tmp_path / "profile"))
    assert len(shown) == len(recorded) and all("in the baseline" in "".join(element.text) for element in shown)
