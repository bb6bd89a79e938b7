"""The HTML report: one self-contained page for one host or a fleet, to open in a browser and attach to a ticket.

Everything is in the file — its style, its script and, for each host, the picture of where the RAM goes drawn as
an SVG chart (report/memory.py computes it, as for the text report) — and its Content-Security-Policy lets it load
nothing: no network, whoever opens it. Findings are grouped by host, worst first, each with its message, the line
it points at, the lines its values were read from, the values and the fix; the page filters them by severity, host,
rule and text, and shows suppressed and baseline findings on demand.

Every text that comes from the inputs (host names, paths, lines of files, values, messages that quote them) is
HTML-escaped, its control characters written as escapes first (``visible``): a host named ``<script>`` is text.
The script reads what it filters from the elements' data attributes and makes its options as text, never markup.

Written host by host: the sections of the hosts are held (Spool) until the run ends, when the summary that heads
them is known; the page keeps one short row per host for its table of hosts.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pgvet.findings import SEVERITY_RANK, Finding, HostError, HostResult, LintResult
from pgvet.numbers import size_text
from pgvet.report import Spool, error_label, host_file_path, prose, relative_path, render_with_writer, visible
from pgvet.report.memory import MemoryPicture, memory_picture
from pgvet.report.text import NOT_A_FILE, HostFiles, summary_text, value_text
from pgvet.run.summary import SEVERITIES, TOP_RULES

if TYPE_CHECKING:
    from pgvet.report import Out, ReportOptions, RunInfo
    from pgvet.run.summary import RunSummary


def escape(text: object) -> str:
    """Text from anywhere, safe in an element and in a quoted attribute: control characters escaped, then HTML's
    five special characters."""
    return html.escape(visible(str(text)), quote=True)


def escape_prose(text: str) -> str:
    """A message or a fix's text as every report writes it (``prose``: a line break a value brought in written
    ``\\n``, not folded into a blank that would name another database), then HTML's special characters."""
    return html.escape(prose(text), quote=True)


# The segments' colours by the style report/memory.py gives them (the text report's terminal colours).
SEGMENT_COLOURS = {"bold magenta": "#7b3294", "magenta": "#c2a5cf", "yellow": "#e6b400", "green": "#4dac26"}
CHART_WIDTH = 1000  # the SVG's own units; it is drawn at the page's width


def memory_chart(picture: MemoryPicture) -> str:
    """The RAM picture as a chart: an SVG stacked bar of what is promised, segment by segment, on a scale of RAM (or
    of all that is promised, when more is), the end of RAM and the CommitLimit marked on it; then its legend. The
    bar stretches to the page's width; the marks' labels and the scale are text of the page, readable at any width."""
    total = picture.total
    shares = [segment.size / total * 100 for segment in picture.segments]
    rects = []
    x = 0.0
    for segment, share in zip(picture.segments, shares, strict=True):
        if share > 0:
            rects.append(f'<rect x="{x:.3f}" y="0" width="{share:.3f}" height="10" '
                         f'fill="{SEGMENT_COLOURS.get(segment.style, "#999999")}"><title>{escape(segment.label)}: '
                         f"{escape(size_text(segment.size))}</title></rect>")
        x += share
    marks = []
    if picture.ram < total:
        marks.append((picture.ram / total * 100, "over", f"end of RAM, {size_text(picture.ram)}"))
    if picture.commit_limit is not None:
        marks.append((min(100.0, picture.commit_limit / total * 100), "limit",
                      f"CommitLimit, {size_text(picture.commit_limit)}"))
    lines = "".join(f'<line class="{kind}" x1="{at:.3f}" y1="0" x2="{at:.3f}" y2="10" '
                    'vector-effect="non-scaling-stroke"/>' for at, kind, _ in marks)
    labels = "".join(f'<div class="mark {kind} right" style="left:{at:.3f}%">{escape(label)} ▼</div>' if at > 60
                     else f'<div class="mark {kind}" style="left:{at:.3f}%">▼ {escape(label)}</div>'
                     for at, kind, label in marks)
    title = "Where the cgroup's memory goes" if picture.cgroup else "Where the RAM goes"
    title += f" ({size_text(picture.ram)}{', memory.max' if picture.cgroup else ''})"
    rows = []
    for segment in picture.segments:
        swatch = SEGMENT_COLOURS.get(segment.style, "#999999")
        rows.append((f'<span class="swatch" style="background:{swatch}"></span>', segment.label,
                     size_text(segment.size) if segment.size else "nothing left",
                     f"{segment.size / picture.ram * 100:.1f} %", ""))
    if picture.commit_limit is not None:
        rows.append(('<span class="swatch limit"></span>', "CommitLimit (overcommit strict)",
                     size_text(picture.commit_limit), f"{picture.commit_limit / picture.ram * 100:.1f} %", ""))
    if picture.overcommitted:
        rows.append(('<span class="swatch over"></span>', "end of RAM", size_text(picture.ram), "100.0 %", "over"))
        rows.append(("", "promised beyond RAM, more than it holds", f"+{size_text(picture.overcommitted)}",
                     f"+{picture.overcommitted / picture.ram * 100:.1f} %", "over"))
    legend = "".join(f'<tr class="{kind}"><td>{swatch}</td><td>{escape(label)}</td><td>{escape(size)}</td>'
                     f"<td>{escape(share)}</td></tr>" for swatch, label, size, share, kind in rows)
    note = '<p class="note">shared memory estimated from shared_buffers</p>' if picture.estimated else ""
    scale = f"{size_text(total)}{' promised' if picture.ram < total else ''}"
    return (f'<figure class="ram"><figcaption>{escape(title)}</figcaption><div class="marks">{labels}</div>'
            f'<svg viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label="{escape(title)}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(rects)}{lines}</svg>'
            f'<div class="scale"><span>0</span><span>{escape(scale)}</span></div>{note}'
            f'<table class="legend">{legend}</table></figure>')


def _place(path: str, line: int | None, host: HostResult, options: ReportOptions) -> str:
    place = host_file_path(path, host, options.repo_root)
    return f"{place}:{line}" if line else place


def _line_of(path: str, line: int | None, host: HostResult, files: HostFiles, options: ReportOptions) -> str:
    """``path:line`` and the line as written, as the text report shows a place."""
    shown = files.line(path, line)
    text = f'<code class="place">{escape(_place(path, line, host, options))}</code>'
    if shown is not None and shown.strip():
        text += f' <code class="src">{escape(shown.strip())}</code>'
    return text


def finding_html(finding: Finding, host: HostResult, files: HostFiles, options: ReportOptions) -> str:
    """One finding: severity, rule and subject, its message, where it is, every place its values were read from
    (with the line), the values, the fix; its data attributes are what the page filters by."""
    state = "suppressed" if finding.suppressed is not None else "baseline" if finding.baseline else "active"
    label = f"{finding.rule_id} {finding.rule_name}"
    head = (f'<span class="sev">{finding.severity.upper()}</span> <span class="rule">{escape(label)}</span>'
            + (f' <span class="subject">[{escape(finding.subject)}]</span>' if finding.subject else ""))
    if state == "suppressed":
        head += f' <span class="state">suppressed: {escape(finding.suppressed)}</span>'
    elif state == "baseline":
        head += ' <span class="state">in the baseline</span>'
    rows = []
    if finding.path:
        rows.append(("at", _line_of(finding.path, finding.line, host, files, options)))
    places: list[tuple[str, int | None]] = []
    for item in finding.evidence:
        source = item.source
        if source is None or source.path.startswith(NOT_A_FILE):
            continue
        place = (source.path, source.line)
        if place != (finding.path, finding.line) and place not in places:
            places.append(place)
    if places:
        rows.append(("from", "<br>".join(_line_of(path, line, host, files, options) for path, line in places)))
    if finding.values:
        cells = "".join(f"<tr><th>{escape(name)}</th><td>{escape(value_text(name, value))}</td></tr>"
                        for name, value in finding.values.items())
        rows.append(("values", f'<table class="values">{cells}</table>'))
    fix = [f"sysctl: {key} = {value}" for key, value in finding.fix.sysctl.items()]
    fix += finding.fix.postgresql_lines(*(host.declared_by or (None,)))
    lines = "".join(f"<code>{escape(line)}</code><br>" for line in fix)
    if finding.fix.text:
        lines += f"<p>{escape_prose(finding.fix.text)}</p>"
    if lines:
        rows.append(("fix", f'<div class="fix">{lines}</div>'))
    details = "".join(f"<dt>{name}</dt><dd>{content}</dd>" for name, content in rows)
    return (f'<article class="finding {finding.severity}" data-severity="{finding.severity}" '
            f'data-host="{escape(host.host_facts.name)}" data-rule="{escape(finding.rule_id)}" '
            f'data-rule-label="{escape(label)}" data-state="{state}"{" hidden" if state != "active" else ""}>'
            f"<h3>{head}</h3><p class=\"title\">{escape(finding.title)}</p>"
            f"<p class=\"message\">{escape_prose(finding.message)}</p><dl>{details}</dl></article>")


@dataclass(frozen=True, slots=True)
class _Row:
    """A host of the page's table of hosts: what it needs of each, once the host itself is gone."""

    anchor: str
    name: str
    path: str
    counts: tuple[int, int, int]  # active errors, warnings, info


class Writer:
    def __init__(self, run: RunInfo, options: ReportOptions, out: Out) -> None:
        self.run = run
        self.options = options
        self.out = out
        self.errors: list[HostError] = []
        self.sections = Spool()
        self.rows: list[_Row] = []

    def host(self, host: HostResult) -> None:
        anchor = f"host-{len(self.rows) + 1}"
        path = relative_path(".", host.host_facts.root, self.options.repo_root)
        active = [finding for finding in host.findings if finding.suppressed is None and not finding.baseline]
        counts = tuple(sum(1 for finding in active if finding.severity == severity) for severity in SEVERITIES)
        self.rows.append(_Row(anchor, host.host_facts.name, path, (counts[0], counts[1], counts[2])))
        parts = [f'<section class="host" id="{anchor}" data-host="{escape(host.host_facts.name)}">'
                 f'<h2>{escape(host.host_facts.name)} <small>{escape(path)}</small></h2>']
        picture = memory_picture(host.host_facts)
        if picture is not None:
            parts.append(memory_chart(picture))
        parts += [f'<p class="input-warning">warning: {escape(warning)}</p>' for warning in host.host_facts.warnings]
        files = HostFiles(host.host_facts.root)
        ordered = sorted(host.findings, key=lambda item: (-item.rank, item.rule_id, item.subject or ""))
        parts += [finding_html(finding, host, files, self.options) for finding in ordered]
        parts.append('<p class="clean"' + ("" if not active else " hidden") + ">no findings</p>")
        if self.options.verbose and host.not_evaluated:
            items = "".join(f"<li>{escape(item.rule_id)} {escape(item.rule_name)}"
                            f"{' [' + escape(item.subject) + ']' if item.subject else ''}: "
                            f"{escape(item.reason or 'missing ' + ', '.join(item.missing))}</li>"
                            for item in host.not_evaluated)
            parts.append(f'<details class="skipped"><summary>{len(host.not_evaluated)} not evaluated</summary>'
                         f"<ul>{items}</ul></details>")
        elif host.not_evaluated:
            parts.append(f'<p class="note">{len(host.not_evaluated)} not evaluated (missing inputs; --verbose lists '
                         "them)</p>")
        parts.append("</section>\n")
        self.sections.write("".join(parts))

    def error(self, error: HostError) -> None:
        self.errors.append(error)

    def finish(self, notices: list[str], summary: RunSummary) -> None:
        out = self.out
        hosts = "host" if summary.hosts == 1 else "hosts"
        title = (f"pgvet: {self.rows[0].name}" if summary.hosts == 1 and not summary.hosts_failed
                 else f"pgvet: {summary.hosts} {hosts}")
        generated = datetime.now(UTC).isoformat(timespec="seconds")
        out.write(f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  '<meta name="viewport" content="width=device-width, initial-scale=1">'
                  # nothing from elsewhere: the page is whole, and loads nothing whoever opens it
                  '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
                  "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
                  f'<meta name="generator" content="pgvet {escape(self.run.tool_version)}">'
                  f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n<header>"
                  f"<h1>{escape(title)}</h1><p class=\"meta\">pgvet {escape(self.run.tool_version)}, rule pack "
                  f"{escape(self.run.pack_version)}, {generated}</p></header>\n")
        out.write(self._counts(summary))
        if self.errors:
            items = "".join(f"<li><strong>{escape(error_label(error, self.options.repo_root))}</strong>: "
                            f"{escape(error.message)}</li>" for error in self.errors)
            out.write(f'<section class="errors"><h2>Could not be read ({len(self.errors)})</h2><ul>{items}</ul>'
                      "</section>\n")
        if summary.is_fleet():
            out.write(self._fleet(summary))
        out.write(FILTERS)
        out.write('<main id="hosts">\n')
        self.sections.copy_to(out)
        out.write("</main>\n")
        if notices:
            items = "".join(f"<li>{escape(notice)}</li>" for notice in notices)
            out.write(f'<section class="notices"><h2>Notices</h2><ul>{items}</ul></section>\n')
        out.write(f"<footer><pre>{escape(summary_text(summary, self.options.verbose))}</pre></footer>\n"
                  f"<script>{SCRIPT}</script>\n</body></html>\n")

    def _counts(self, summary: RunSummary) -> str:
        cards = [(summary.counts[severity], severity if severity == "info" or summary.counts[severity] == 1
                  else f"{severity}s", severity) for severity in SEVERITIES]
        cards.append((summary.hosts, "host" if summary.hosts == 1 else "hosts", "hosts"))
        if summary.hosts_failed:
            cards.append((summary.hosts_failed, "could not be read", "unread"))
        quiet = summary.suppressed + summary.baseline_only
        if quiet:
            cards.append((quiet, "suppressed or in the baseline", "quiet"))
        return ('<section class="counts">' + "".join(f'<div class="card {kind}"><b>{count}</b> {label}</div>'
                                                     for count, label, kind in cards) + "</section>\n")

    def _fleet(self, summary: RunSummary) -> str:
        """Every host with its counts, worst first (a link to its section), and the findings on the most hosts."""
        worst = summary.hosts_by_worst
        ordered = sorted(self.rows, key=lambda row: (-row.counts[0], -row.counts[1], -row.counts[2]))
        rows = "".join(f'<tr><td><a href="#{row.anchor}">{escape(row.name)}</a> <small>{escape(row.path)}</small>'
                       f"</td><td>{row.counts[0]}</td><td>{row.counts[1]}</td><td>{row.counts[2]}</td></tr>"
                       for row in ordered)
        rules = summary.top_rules()
        frequent = "".join(f'<tr><td>{escape(rule.rule_id)} {escape(rule.rule_name)}</td>'
                           f'<td class="{rule.severity}">{rule.severity}</td><td>{rule.hosts}</td></tr>'
                           for rule in rules[:TOP_RULES])
        more = f"<p>… and {len(rules) - TOP_RULES} more rules</p>" if len(rules) > TOP_RULES else ""
        return (f'<section class="fleet"><h2>Fleet: {summary.hosts} hosts</h2>'
                f"<p>{worst['error']} with errors, {worst['warning']} with warnings (no error), {worst['info']} "
                f"with info only, {worst['clean']} without findings</p>"
                '<div class="tables"><div class="scroll tall"><table class="hosts"><thead><tr><th>host</th>'
                f"<th>errors</th><th>warnings</th><th>info</th></tr></thead><tbody>{rows}</tbody></table></div>"
                + (f'<div class="scroll"><table class="rules"><thead><tr><th>most frequent findings</th>'
                   f"<th>severity</th><th>hosts</th></tr></thead><tbody>{frequent}</tbody></table>{more}</div>"
                   if rules else "")
                + "</div></section>\n")

    def close(self) -> None:
        self.sections.close()


def render(result: LintResult, options: ReportOptions) -> str:
    return render_with_writer(Writer, result, options)


SEVERITY_ORDER = sorted(SEVERITY_RANK, key=SEVERITY_RANK.__getitem__, reverse=True)

FILTERS = ('<section class="filters" aria-label="filters"><fieldset><legend>severity</legend>'
           + "".join(f'<label class="{severity}"><input type="checkbox" name="severity" value="{severity}" checked> '
                     f"{severity}</label>" for severity in SEVERITY_ORDER)
           + '</fieldset><label>host <select id="filter-host"><option value="">all hosts</option></select></label>'
           '<label>rule <select id="filter-rule"><option value="">all rules</option></select></label>'
           '<label>text <input type="search" id="filter-text" placeholder="parameter, file, value…"></label>'
           '<label><input type="checkbox" id="filter-quiet"> suppressed and baseline</label>'
           '<output id="shown" aria-live="polite"></output></section>\n')

STYLE = """
:root{--error:#b3261e;--warning:#a15c00;--info:#0b62a4;--line:#d0d4d9;--soft:#f4f6f8;--text:#1d2125}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1200px;padding:0 1.2rem 2rem;font:15px/1.45 system-ui,-apple-system,"Segoe UI",
Roboto,sans-serif;color:var(--text);background:#fff}
h1{font-size:1.5rem;margin:1.2rem 0 .2rem}h2{font-size:1.2rem;margin:1.4rem 0 .6rem}
h2 small,td small{color:#5f6b76;font-weight:normal;font-size:.85rem}
.meta,.note{color:#5f6b76;font-size:.85rem;margin:.2rem 0}
code,pre{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.counts{display:flex;flex-wrap:wrap;gap:.6rem;margin:1rem 0}
.card{border:1px solid var(--line);border-radius:8px;padding:.5rem .9rem;background:var(--soft)}
.card b{font-size:1.3rem;margin-right:.25rem}.card.error b{color:var(--error)}.card.warning b{color:var(--warning)}
.card.info b{color:var(--info)}.card.unread{border-color:var(--error)}
.errors{border-left:4px solid var(--error);padding:.2rem 1rem;background:#fdf0ef}
.tables{display:flex;flex-wrap:wrap;gap:1.5rem}.scroll{overflow-x:auto;max-width:100%}
.tables table{border-collapse:collapse}.tables th,.tables td{padding:.25rem .7rem;border-bottom:1px solid var(--line);
text-align:left}.tables td+td{text-align:right}.rules td+td{text-align:left}
.scroll.tall{max-height:24rem;overflow-y:auto}.tables thead th{position:sticky;top:0;background:#fff}
.filters{position:sticky;top:0;z-index:1;display:flex;flex-wrap:wrap;gap:.5rem 1.2rem;align-items:center;
padding:.6rem .8rem;margin:1rem 0;background:#fffffff2;border:1px solid var(--line);border-radius:8px}
.filters fieldset{border:0;margin:0;padding:0;display:flex;gap:.7rem;align-items:center}
.filters legend{float:left;margin-right:.4rem;color:#5f6b76}.filters select,.filters input[type=search]{max-width:16rem;
font:inherit}#shown{color:#5f6b76;margin-left:auto}
.host{border-top:2px solid var(--line);margin-top:1rem}
.finding{border:1px solid var(--line);border-left:6px solid;border-radius:6px;margin:.8rem 0;padding:.5rem .9rem}
.finding.error{border-left-color:var(--error)}.finding.warning{border-left-color:var(--warning)}
.finding.info{border-left-color:var(--info)}.finding[data-state=suppressed],.finding[data-state=baseline]{opacity:.65}
.finding h3{font-size:1rem;margin:.1rem 0;overflow-wrap:anywhere}
.sev{font-size:.75rem;font-weight:700;letter-spacing:.04em;padding:.05rem .4rem;border-radius:4px;color:#fff}
.error .sev{background:var(--error)}.warning .sev{background:var(--warning)}.info .sev{background:var(--info)}
.rule{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}.subject,.state{color:#5f6b76;font-weight:400}
.title{margin:.2rem 0;color:#5f6b76}.message{margin:.3rem 0 .5rem}
dl{display:grid;grid-template-columns:5rem 1fr;gap:.3rem .8rem;margin:.3rem 0}dt{color:#5f6b76}dd{margin:0;min-width:0}
code.place{text-decoration:underline dotted}code.src{background:var(--soft);padding:0 .3rem;font-style:italic}
table.values{border-collapse:collapse}table.values th{font-weight:400;color:#5f6b76;text-align:left;padding:0 .8rem 0 0}
table.values td{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;overflow-wrap:anywhere}
.fix{background:#eef7ee;border-radius:4px;padding:.3rem .6rem}.fix p{margin:.2rem 0}
.input-warning{color:var(--warning)}.clean{color:#2e7d32}
figure.ram{margin:.6rem 0 1rem;max-width:900px}figcaption{font-weight:600;margin-bottom:.3rem}
figure.ram svg{width:100%;height:2.6rem;display:block}
svg line{stroke-width:3}svg line.over{stroke:var(--error)}svg line.limit{stroke:var(--text);stroke-dasharray:6 4}
.marks{position:relative;font-size:.8rem}.mark{position:relative;width:max-content;max-width:100%;
transform:translateX(-.35em)}.mark.right{transform:translateX(calc(-100% + .35em))}
.mark.over{color:var(--error);font-weight:600}
.scale{display:flex;justify-content:space-between;font-size:.8rem;color:#5f6b76}
.legend{border-collapse:collapse;font-size:.9rem;margin-top:.3rem}.legend td{padding:.05rem .6rem .05rem 0}
.legend td:nth-child(3),.legend td:nth-child(4){text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.legend tr.over{color:var(--error);font-weight:600}
.swatch{display:inline-block;width:1.6rem;height:.8rem;vertical-align:middle;border-radius:2px}
.swatch.limit,.swatch.over{width:.6rem;border-radius:0;border-left:3px dashed var(--text)}
.swatch.over{border-left:3px solid var(--error)}
footer pre{white-space:pre-wrap;font-weight:600}
@media (max-width:640px){body{padding:0 .6rem 1rem}dl{grid-template-columns:1fr}dt{font-weight:600}
.filters{position:static}#shown{margin-left:0}}
"""

SCRIPT = """
(function () {
  "use strict";
  var findings = Array.prototype.slice.call(document.querySelectorAll("article.finding"));
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.host"));
  var hostFilter = document.getElementById("filter-host"), ruleFilter = document.getElementById("filter-rule");
  var textFilter = document.getElementById("filter-text"), quietFilter = document.getElementById("filter-quiet");
  var severities = Array.prototype.slice.call(document.querySelectorAll("input[name=severity]"));
  var shown = document.getElementById("shown");
  var hosts = {}, rules = {};
  sections.forEach(function (section) { hosts[section.dataset.host] = true; });
  findings.forEach(function (finding) { rules[finding.dataset.rule] = finding.dataset.ruleLabel; });
  Object.keys(hosts).sort().forEach(function (host) { hostFilter.add(new Option(host, host)); });
  Object.keys(rules).sort().forEach(function (rule) { ruleFilter.add(new Option(rules[rule], rule)); });
  var words = {};
  function text(finding) {
    var key = findings.indexOf(finding);
    if (!(key in words)) { words[key] = finding.textContent.toLowerCase(); }
    return words[key];
  }
  function apply() {
    var wanted = {};
    severities.forEach(function (box) { wanted[box.value] = box.checked; });
    var host = hostFilter.value, rule = ruleFilter.value, quiet = quietFilter.checked;
    var needle = textFilter.value.trim().toLowerCase();
    var narrowed = !!(rule || needle || severities.some(function (box) { return !box.checked; }));
    var count = 0, total = 0;
    findings.forEach(function (finding) {
      var data = finding.dataset;
      var counted = data.state === "active" || quiet;
      var visible = counted && wanted[data.severity] && (!host || data.host === host) && (!rule || data.rule === rule)
        && (!needle || text(finding).indexOf(needle) >= 0);
      finding.hidden = !visible;
      if (counted) { total += 1; }
      if (visible) { count += 1; }
    });
    sections.forEach(function (section) {
      section.hidden = host ? section.dataset.host !== host
        : narrowed && !section.querySelector("article.finding:not([hidden])");
    });
    shown.textContent = count + " of " + total + " findings shown";
  }
  // The filters live in the address's fragment too (#severity=error,warning&host=db1&rule=PGV110&text=…&quiet=1):
  // a link to the page shows what its sender saw.
  function readFragment() {
    var given = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at > 0) { given[decodeURIComponent(pair.slice(0, at))] = decodeURIComponent(pair.slice(at + 1)); }
    });
    if ("severity" in given) {
      var listed = given.severity.split(",");
      severities.forEach(function (box) { box.checked = listed.indexOf(box.value) >= 0; });
    }
    if ("host" in given && given.host in hosts) { hostFilter.value = given.host; }
    if ("rule" in given && given.rule in rules) { ruleFilter.value = given.rule; }
    if ("text" in given) { textFilter.value = given.text; }
    quietFilter.checked = given.quiet === "1";
  }
  function writeFragment() {
    var parts = [];
    var checked = severities.filter(function (box) { return box.checked; }).map(function (box) { return box.value; });
    if (checked.length !== severities.length) { parts.push("severity=" + checked.join(",")); }
    if (hostFilter.value) { parts.push("host=" + encodeURIComponent(hostFilter.value)); }
    if (ruleFilter.value) { parts.push("rule=" + encodeURIComponent(ruleFilter.value)); }
    if (textFilter.value.trim()) { parts.push("text=" + encodeURIComponent(textFilter.value.trim())); }
    if (quietFilter.checked) { parts.push("quiet=1"); }
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
  }
  function changed() { apply(); writeFragment(); }
  [hostFilter, ruleFilter, quietFilter].concat(severities).forEach(function (input) {
    input.addEventListener("change", changed);
  });
  textFilter.addEventListener("input", changed);
  window.addEventListener("hashchange", function () {
    if (location.hash.indexOf("=") >= 0) { readFragment(); apply(); }
  });
  if (location.hash.indexOf("=") >= 0) { readFragment(); }
  apply();
})();
"""
