"""The viewer's Jinja2 templates (autoescaped) and the filters they use.

Every string from a log reaches the page through autoescaping; the one exception is
assistant Markdown, rendered by markdown-it with raw HTML disabled (so a recorded
``<script>`` becomes text) and its default link check (no ``javascript:`` URLs).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from jinja2 import DictLoader, Environment, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from dsh.ui.diff_page import DIFF

_MARKDOWN = MarkdownIt("js-default", {"html": False, "linkify": False, "typographer": False})


def markdown(text: str) -> Markup:
    """Assistant text as HTML: raw HTML in the source is escaped, unsafe links are dropped."""
    return Markup(_MARKDOWN.render(text))


def when(ms: int | None) -> str:
    """Epoch milliseconds as ``2026-07-06 12:34:56Z`` (an em dash for ``None``)."""
    if ms is None:
        return "—"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return str(ms)


BASE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{% block title %}dsh{% endblock %} · dsh ui</title>
<link rel="stylesheet" href="/static/ui.css">
</head><body>
<header class="top"><a href="/">dsh ui</a><span class="store">{{ store_label }}</span>
{% if has_report %}<a href="/report">replay report</a>{% endif %}</header>
<main>{% block main %}{% endblock %}</main>
<script src="/static/ui.js"></script>
</body></html>
"""

SESSIONS: Final = """{% extends "base.html" %}
{% block title %}sessions{% endblock %}
{% block main %}
<form class="search" method="get" action="/">
  <input type="search" name="q" value="{{ q }}" placeholder="Search id, title, prompt, model, cwd…" aria-label="search">
  <input type="hidden" name="sort" value="{{ sort }}"><input type="hidden" name="dir" value="{{ dir }}">
  <button type="submit">Search</button>
</form>
<p class="pager" id="summary">{{ page.matched }} of {{ page.total }} sessions{% if q %} matching “{{ q }}”{% endif %}
 · page {{ page.page }} of {{ page.pages }}</p>
{% if page.rows %}
<table class="list" id="sessions">
<thead><tr>
{% for key, label, cls in columns %}
  <th class="{{ cls }}">{% if key %}<a href="{{ sort_link(key) }}">{{ label }}{% if sort == key %} {{ "▼" if dir == "desc" else "▲" }}{% endif %}</a>{% else %}{{ label }}{% endif %}</th>
{% endfor %}
</tr></thead>
<tbody>
{% for row in page.rows %}{% set d = row.derived %}{% set h = row.summary.header %}
<tr data-session="{{ h.id }}" data-depth="{{ row.depth }}" class="depth-{{ [row.depth, 4] | min }}">
  <td style="padding-left:{{ 8 + 18 * row.depth }}px">{% if row.depth %}<span class="nest">↳</span> {% endif %}<a href="/s/{{ h.id | urlencode }}">{{ d.title }}</a>
    {% if d.kind %}<span class="badge kind-{{ d.kind }}">{{ d.kind }}</span>{% endif %}
    {% if d.branch_turn is not none %}<span class="branched">at turn {{ d.branch_turn }}</span>{% endif %}
    <div class="mono" style="color:#667085;font-size:11px">{{ h.id }}</div></td>
  <td class="prompt-cell" title="{{ d.first_prompt }}">{{ d.first_prompt }}</td>
  <td>{{ d.model or "—" }}</td>
  <td>{{ when(h.created_at) }}</td>
  <td>{{ when(d.last_activity) }}</td>
  <td><span class="badge status-{{ d.status }}">{{ d.status }}</span></td>
  <td class="num">{{ row.summary.event_count }}</td>
  <td class="num">{{ row.children }}</td>
</tr>
{% endfor %}
</tbody></table>
{% else %}<p>No sessions{% if q %} match “{{ q }}”{% endif %}.</p>{% endif %}
<p class="pager">
{% if page.page > 1 %}<a href="{{ page_link(page.page - 1) }}" rel="prev">← previous</a>{% endif %}
{% if page.page < page.pages %}<a href="{{ page_link(page.page + 1) }}" rel="next">next →</a>{% endif %}
<a href="/api/sessions">JSON</a>
</p>
{% endblock %}
"""  # noqa: E501

TREE: Final = """{% macro tree(node, current) %}
<li class="{{ 'current' if node.id == current else '' }}" data-node="{{ node.id }}">
  <span class="node">
  {% if node.derived.kind %}<span class="badge kind-{{ node.derived.kind }}">{{ node.derived.kind }}</span>{% endif %}
  <a href="/s/{{ node.id | urlencode }}">{{ node.derived.label or node.derived.title }}</a>
  <span class="meta">{{ node.summary.event_count }} events{% if node.derived.kind == "fork" %} · cut {{ node.summary.inherited_event_count }}{% endif %}
   · {{ node.derived.status }}</span></span>
  {% if node.children %}<ul>{% for child in node.children %}{{ tree(child, current) }}{% endfor %}</ul>{% endif %}
</li>
{% endmacro %}
"""  # noqa: E501

ITEMS: Final = """{% macro items(list) %}{% for it in list %}{% set f = it.fields %}
<div class="item {{ it.kind }}{{ ' inherited' if it.inherited else '' }}{{ ' error' if f.is_error else '' }}" data-seq="{{ it.seq }}">
{%- if it.kind == "turn-start" -%}turn {{ it.turn }}{% if it.inherited %} (inherited){% endif %}
{%- elif it.kind == "prompt" -%}<div class="who">{{ f.source }}</div><div class="body">{{ f.text }}</div>
{%- elif it.kind == "answer" -%}<div class="who">assistant</div><div class="body md">{{ markdown(f.text) }}</div>
{%- elif it.kind == "reasoning" -%}<details><summary>reasoning</summary><pre>{{ f.text }}</pre></details>
{%- elif it.kind == "request" -%}request · model {{ f.model or "—" }}{% if f.reason %} · {{ f.reason }}{% endif %}
{%- elif it.kind == "usage" -%}usage (step {{ f.step }}):{% for k, v in f.usage.items() %} {{ k }} {{ v }}{% endfor %}
{%- elif it.kind == "attempt" -%}<div class="who">failed attempt (step {{ f.step }})</div>{{ f.code or "" }}{% if f.message %}: {{ f.message }}{% endif %}
{%- elif it.kind == "tool-call" -%}<div class="who">tool call · {{ f.name }}{% if f.subagent %} · subagent{% endif %}</div>
  {% if f.child %}<a class="child-link" href="/s/{{ f.child | urlencode }}">open child session {{ f.child }}</a>{% endif %}
  <details open><summary>arguments</summary><pre>{{ f.arguments }}</pre></details>
{%- elif it.kind == "tool-result" -%}<div class="who">{{ "tool error" if f.is_error else "tool result" }}{% if f.name %} · {{ f.name }}{% endif %}</div>
  {% if f.child %}<a class="child-link" href="/s/{{ f.child | urlencode }}">from child {{ f.child }}</a>{% endif %}
  <pre>{{ f.text }}</pre>
{%- elif it.kind == "hook" -%}hook {{ f.point }} · {{ f.handler }} → {{ f.decision }}{% if f.exit_code is not none %} · exit {{ f.exit_code }}{% endif %}{% if f.duration is not none %} · {{ f.duration }} ms{% endif %}
{%- elif it.kind == "turn-end" -%}turn end · {{ f.reason or "—" }}
{%- elif it.kind == "cut" -%}✂ inherited prefix ends here (cut {{ f.seq_cut }}); the child's own events follow
{%- elif it.kind == "title" -%}title: {{ f.title }}
{%- elif it.kind == "compaction" -%}<div class="who">⟲ {{ f.headline }}</div>
  {% if f.ok %}<div class="body md summary">{{ markdown(f.summary) }}</div>
  <details class="originals"><summary>the {{ f.originals | length }} replaced message{{ "" if f.originals | length == 1 else "s" }}</summary>
  {% for m in f.originals %}<div class="original" data-seq="{{ m.seq }}"><div class="who">#{{ m.seq }} · {{ m.role }}</div>
  {% if m.text %}<pre>{{ m.text }}</pre>{% endif %}{% for name, args in m.calls %}<div class="call">→ {{ name }}</div><pre>{{ args }}</pre>{% endfor %}
  {% for text, bad in m.results %}<pre class="{{ 'error' if bad else '' }}">{{ text }}</pre>{% endfor %}</div>{% endfor %}
  </details>{% endif %}
{%- endif -%}
</div>{% endfor %}{% endmacro %}
{% macro event_row(e, cut) %}
<tr class="{{ 'inherited' if e.seq < cut else '' }}" data-seq="{{ e.seq }}"><td class="num">{{ e.seq }}</td>
<td class="mono">{{ e.type }}</td><td>{{ when(e.time) }}</td><td class="data"><pre>{{ pretty_json(e.data) }}</pre></td></tr>
{% endmacro %}
"""  # noqa: E501

SESSION: Final = """{% extends "base.html" %}{% from "tree.html" import tree %}{% from "items.html" import items %}
{% block title %}{{ derived.title }}{% endblock %}
{% block main %}
<div data-live-url="/s/{{ h.id | urlencode }}/live" data-next-seq="{{ events | length }}" data-status="{{ derived.status }}">
<h1 style="font-size:19px;margin:4px 0 10px">{{ derived.title }}
 {% if derived.kind %}<span class="badge kind-{{ derived.kind }}">{{ derived.kind }}</span>{% endif %}
 <span id="status" class="badge status-{{ derived.status }}">{{ derived.status }}</span> <span id="live" class="live"></span></h1>
{% for w in warnings %}<p class="card store-warning" role="alert">⚠ {{ w }}</p>{% endfor %}
<div class="cols">
<div>
<section class="card" id="lineage"><h2>Lineage</h2><ul class="tree">{{ tree(root, h.id) }}</ul></section>
<section class="card"><h2>Session</h2><dl class="grid">
<dt>id</dt><dd class="mono">{{ h.id }}</dd>
<dt>parent</dt><dd>{% if h.parent_session %}<a class="mono" href="/s/{{ h.parent_session | urlencode }}">{{ h.parent_session }}</a>{% else %}—{% endif %}</dd>
<dt>model</dt><dd>{{ derived.model or "—" }}</dd>
<dt>created</dt><dd>{{ when(h.created_at) }}</dd>
<dt>last activity</dt><dd>{{ when(derived.last_activity) }}</dd>
<dt>events</dt><dd id="event-count">{{ events | length }}</dd>
<dt>cut</dt><dd>{{ cut }} inherited</dd>
<dt>origin</dt><dd>{{ h.origin or "—" }}</dd>
<dt>depth</dt><dd>{{ h.delegation_depth }}</dd>
</dl>
<p><a href="/s/{{ h.id | urlencode }}/events">raw events</a> · <a href="/api/sessions/{{ h.id | urlencode }}">JSON</a></p></section>
<section class="card" id="usage"><h2>Usage and cost</h2><dl class="grid">
{% for label, text in spend %}<dt>{{ label }}</dt><dd>{{ text }}</dd>{% endfor %}
</dl></section>
<section class="card" id="cache"><h2>Prompt-cache prefix</h2>
{% if reuse %}<table class="reuse-table"><tr><th>call</th><th>turn.step</th><th>shared / bytes</th><th>~tokens</th><th>cache read</th><th>against</th><th>break</th></tr>
{% for r in reuse %}<tr class="reuse{{ ' flagged' if r.flagged else '' }}"><td>{{ r.call }}</td><td>{% if r.turn is not none %}{{ r.turn }}.{{ r.step }}{% else %}—{% endif %}</td><td>{{ "{:,}".format(r.shared) }} / {{ "{:,}".format(r.size) }}</td><td>{{ "{:,}".format(r.estimate) }}</td><td>{{ "—" if r.cache_read is none else "{:,}".format(r.cache_read) }}</td><td>{{ r.against }}</td><td>{% if r.broke %}{{ "⚠ " if r.flagged else "expected: " }}{{ r.broke.text() }}{% else %}—{% endif %}</td></tr>{% endfor %}
</table>
<p class="legend">{% set flagged = reuse | selectattr("flagged") | list %}{% if flagged %}⚠ {{ flagged | length }} request(s) rewrote their prefix{% else %}no request rewrote its prefix{% endif %}</p>
{% else %}<p class="legend">no model request</p>{% endif %}</section>
</div>
<div>
<section class="card" id="timeline-card"><h2>Timeline</h2>
<div class="timeline" id="timeline">
{% for e in events %}<div class="tick t-{{ e.type.split('/')[0] }}{{ ' inherited' if e.seq < cut else '' }}" title="{{ e.seq }} {{ e.type }}"></div>{% endfor %}
{% if cut %}<div class="cutmark own" style="left:{{ 100 * cut / (events | length or 1) }}%"><span>own events from seq {{ cut }}</span></div>{% endif %}
{% for c in cuts %}<div class="cutmark fork-cut" data-child="{{ c.child }}" style="left:{{ 100 * c.seq / (events | length or 1) }}%">
<span>✂ fork {{ c.label or c.child[:8] }} · cut {{ c.seq }}</span></div>{% endfor %}
</div>
<p class="legend" id="timeline-legend">{% for cls, label in [("t-user", "user"), ("t-assistant", "assistant"), ("t-tool", "tool"), ("t-turn", "turn"), ("t-other", "other")] %}<span class="key {{ cls }}"></span>{{ label }} {% endfor %}{% if cut %}<span class="key inherited"></span>inherited{% endif %}</p>
{% if cuts %}<ul class="cuts">{% for c in cuts %}<li>fork child <a href="/s/{{ c.child | urlencode }}">{{ c.label or c.child }}</a> inherits seq 0–{{ c.seq - 1 }}; its cut is at seq {{ c.seq }}</li>{% endfor %}</ul>{% endif %}
</section>
<section class="card"><h2>Transcript</h2>
{% if inherited_items %}<details class="inherited-prefix"><summary>inherited prefix ({{ cut }} events from the parent)</summary>{{ items(inherited_items) }}</details>{% endif %}
<div id="transcript">{{ items(own_items) }}</div></section>
</div></div></div>
{% endblock %}
"""  # noqa: E501

EVENTS: Final = """{% extends "base.html" %}{% from "items.html" import event_row %}
{% block title %}events · {{ h.id }}{% endblock %}
{% block main %}
<div data-live-url="/s/{{ h.id | urlencode }}/live" data-next-seq="{{ events | length }}" data-status="{{ derived.status }}">
<p><a href="/s/{{ h.id | urlencode }}">← session {{ h.id }}</a> · <span id="event-count">{{ events | length }}</span> events, cut {{ cut }} <span id="live" class="live"></span></p>
{% for w in warnings %}<p class="card store-warning" role="alert">⚠ {{ w }}</p>{% endfor %}
<table class="list events"><thead><tr><th class="num">seq</th><th>type</th><th>time</th><th>data</th></tr></thead>
<tbody id="events-body">
{% for e in events %}
{% for c in cuts if c.seq == e.seq %}<tr class="cutrow"><td colspan="4">✂ fork child {{ c.label or c.child }} ({{ c.child }}): inherited prefix ends before seq {{ c.seq }}</td></tr>{% endfor %}
{{ event_row(e, cut) }}
{% if e.type == "turn/end" and e.data.turn is integer %}<tr class="forkhere"><td colspan="4">⑂ fork here: <code>dsh sessions fork {{ h.id }} --at {{ e.data.turn }}</code></td></tr>{% endif %}
{% endfor %}
</tbody></table></div>
{% endblock %}
"""  # noqa: E501

REPORT: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>replay report · {{ result.scenario }}</title>
<style>{{ css }}</style></head><body>
<header class="top"><span>dsh replay report</span><span class="store">{{ result.scenario }}</span></header>
<main>
<h1 style="font-size:19px">{{ result.scenario }}: {% if result.ok %}<span class="badge status-completed">replay ok</span>{% else %}<span class="badge status-error">replay failed</span>{% endif %}</h1>
{% for p in result.problems %}<pre class="item attempt problem">{{ p }}</pre>{% endfor %}
{% for s in result.sessions %}
<section class="card session-report{{ ' diverged' if s.divergence else '' }}" data-recorded="{{ s.recorded_id }}">
<h2><span class="badge kind-{{ s.kind }}">{{ s.kind }}</span> recorded {{ s.recorded_id }} → live {{ s.live_label }}</h2>
<p>cut {{ s.inherited_event_count }} · {{ s.consumed }}/{{ s.calls }} calls served · tool results {{ s.tool_results.equal }}/{{ s.tool_results.total }}</p>
{% if s.divergence %}{% set d = s.divergence %}
<p class="first-divergence"><strong>first divergence</strong> at call {{ d.call }}{% if d.turn is not none %} (turn {{ d.turn }} step {{ d.step }}){% endif %}: {{ d.what }}</p>
{% set sides = panes(d.recorded, d.live) %}
<div class="side">{% for name, pane in [("recorded", sides[0]), ("live", sides[1])] %}<div><h3>{{ name }}</h3><pre class="pane-{{ name }}">
{%- for line in pane.lines %}<span class="{{ 'first-divergence-line' if loop.index0 == pane.first else '' }}">{{ line }}</span>
{% endfor %}</pre></div>{% endfor %}</div>
<details open><summary>diff</summary><pre>{{ d.diff() }}</pre></details>
{% endif %}
<div class="side"><div><h3>recorded final text</h3><pre>{{ s.recorded_text }}</pre></div>
<div><h3>live final text</h3><pre class="{{ 'diverged' if s.recorded_text != s.final_text else '' }}">{{ s.final_text }}</pre></div></div>
{% for t in s.tolerated %}<p>tolerated ({{ t.tolerated_by }}): {{ t.what }}</p>{% endfor %}
</section>
{% endfor %}
{% if result.diff %}<section class="card"><h2>transcript differs</h2><pre>{{ result.diff }}</pre></section>{% endif %}
</main></body></html>
"""  # noqa: E501


def environment() -> Environment:
    """The autoescaping Jinja2 environment with the viewer's templates and helpers."""
    env = Environment(
        loader=DictLoader(
            {
                "base.html": BASE,
                "sessions.html": SESSIONS,
                "tree.html": TREE,
                "items.html": ITEMS,
                "session.html": SESSION,
                "events.html": EVENTS,
                "report.html": REPORT,
                "diff.html": DIFF,
            }
        ),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    helpers: dict[str, Any] = {"markdown": markdown, "when": when}
    env.globals.update(helpers)
    return env
