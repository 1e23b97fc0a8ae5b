"""The viewer's diff page: ``/diff?a=ID&b=ID`` compares two stored runs as ``dsh diff`` does.

The verdict, the first divergence side by side (A | B, the first differing line marked)
with its unified diff, and each session pair's per-step table. Everything from the logs is
autoescaped.
"""

from __future__ import annotations

from typing import Final

from dsh.errors import DshError, SessionNotFoundError
from dsh.store.base import EventStore
from dsh.store.deletion import descendants
from dsh.trace.diff import RunDiff, Tree, diff_runs
from dsh.trace.diff_report import HEADERS, headline, pair_rows

DIFF: Final = """{% extends "base.html" %}
{% block title %}diff{% endblock %}
{% block main %}
<form class="search" method="get" action="/diff">
  <input name="a" value="{{ a }}" placeholder="session A (baseline)" aria-label="session A">
  <input name="b" value="{{ b }}" placeholder="session B" aria-label="session B">
  <button type="submit">Compare</button>
</form>
{% if error %}<p class="item attempt" id="diff-error">{{ error }}</p>{% endif %}
{% if diff %}
<h1 style="font-size:19px" id="verdict">{% if diff.equal %}<span class="badge status-completed">same behaviour</span>{% else %}<span class="badge status-error">different</span>{% endif %}
 <a class="mono" href="/s/{{ diff.a | urlencode }}">A</a> · <a class="mono" href="/s/{{ diff.b | urlencode }}">B</a></h1>
<p id="headline">{{ headline }}</p>
{% if diff.divergence %}{% set d = diff.divergence %}{% set sides = panes(d.recorded, d.live) %}
<div class="side">{% for name, pane in [("A", sides[0]), ("B", sides[1])] %}<div><h3>{{ name }}</h3><pre class="pane-{{ name }}">
{%- for line in pane.lines %}<span class="{{ 'first-divergence-line' if loop.index0 == pane.first else '' }}">{{ line }}</span>
{% endfor %}</pre></div>{% endfor %}</div>
<details open><summary>diff</summary><pre id="unified">{{ d.diff() }}</pre></details>
{% endif %}
{% for p in diff.pairs %}
<section class="card"><h2>session {{ p.label }}</h2>
<table class="list steps"><thead><tr><th>side</th>{% for h in headers %}<th>{{ h }}</th>{% endfor %}</tr></thead><tbody>
{% for side, cells in rows(p) %}<tr class="side-{{ side }}"><td>{{ side }}</td>{% for c in cells %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}
</tbody></table></section>
{% endfor %}
{% endif %}
{% endblock %}
"""  # noqa: E501


async def load_tree(store: EventStore, session_id: str) -> Tree:
    """``session_id`` with every descendant (``SessionNotFoundError`` naming it)."""
    if not await store.exists(session_id):
        raise SessionNotFoundError(f"no session {session_id} in this store")
    return session_id, {sid: await store.load(sid) for sid in await descendants(store, session_id)}


async def compare(store: EventStore, a: str, b: str) -> tuple[RunDiff | None, str | None]:
    """The comparison of two stored runs, or the one-line reason it cannot be made."""
    if not a or not b:
        return None, None if not (a or b) else "give two session ids"
    try:
        return diff_runs(await load_tree(store, a), await load_tree(store, b)), None
    except DshError as exc:
        return None, str(exc)


def context(diff: RunDiff | None) -> dict[str, object]:
    """What the template needs beside the form values."""
    return {"diff": diff, "headline": headline(diff) if diff else "", "headers": HEADERS, "rows": pair_rows}
