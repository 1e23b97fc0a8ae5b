"""How a :class:`~dsh.trace.diff.RunDiff` reads: plain text for a terminal or a CI log, and
Markdown for a pull-request comment. Both carry the verdict, the first divergence with its
unified diff, and the per-step table of both sides (text is escaped by the caller's
terminal filter; Markdown cells are escaped here)."""

from __future__ import annotations

from dsh.replay.reuse import Reuse
from dsh.trace.diff import RunDiff, SessionPair, StepRow

HEADERS = ("call", "turn.step", "tool calls", "results", "text", "in/out tokens", "ms")


def _cells(row: StepRow | None) -> tuple[str, ...]:
    if row is None:
        return ("", "", "", "", "(no call)", "", "")
    where = f"{row.turn}.{row.step}" if row.turn is not None else "-"
    return (
        str(row.call),
        where,
        ", ".join(row.tools) or "-",
        " | ".join(row.results) or "-",
        row.text or "-",
        f"{row.input_tokens}/{row.output_tokens}",
        str(row.duration_ms),
    )


def pair_rows(pair: SessionPair) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for i in range(max(len(pair.rows_a), len(pair.rows_b))):
        out.append(("A", _cells(pair.rows_a[i] if i < len(pair.rows_a) else None)))
        out.append(("B", _cells(pair.rows_b[i] if i < len(pair.rows_b) else None)))
    return out


def spend_rows(diff: RunDiff) -> list[tuple[str, str, str]]:
    """``(what, A, B)``: calls, tokens and cost of each run's tree, before → after."""
    if diff.spend is None:
        return []
    a, b = (s.ledger for s in diff.spend)
    ta, tb = a.tokens, b.tokens
    return [
        ("calls", f"{len(a.calls):,}", f"{len(b.calls):,}"),
        ("tokens in", f"{ta.prompt:,}", f"{tb.prompt:,}"),
        ("cache read", f"{ta.cache_read:,}", f"{tb.cache_read:,}"),
        ("cache write", f"{ta.cache_write:,}", f"{tb.cache_write:,}"),
        ("tokens out", f"{ta.output:,}", f"{tb.output:,}"),
        ("reasoning", f"{ta.reasoning:,}", f"{tb.reasoning:,}"),
        ("cost", diff.prices.cost(a).text(), diff.prices.cost(b).text()),
    ]


def reuse_rows(diff: RunDiff) -> list[tuple[str, str, str]]:
    """``(request, A, B)``: each request's shared bytes with the previous one, and its break."""

    def cell(r: object) -> str:
        if r is None:
            return "-"
        assert isinstance(r, Reuse)  # narrowed for the checker
        broke = f" ⚠ {r.broke.text()}" if r.flagged and r.broke is not None else ""
        return f"{r.shared:,}/{r.size:,}{broke}"

    a, b = diff.reuse
    keyed_a = {(i, r.call): r for i, r in _placed(a)}
    keyed_b = {(i, r.call): r for i, r in _placed(b)}
    keys = list(dict.fromkeys([*keyed_a, *keyed_b]))
    names = {0: "root"}
    return [
        (f"{names.get(k[0], f'child {k[0]}')} call {k[1]}", cell(keyed_a.get(k)), cell(keyed_b.get(k)))
        for k in keys
    ]


def _placed(reuse: tuple[Reuse, ...]) -> list[tuple[int, Reuse]]:
    order = list(dict.fromkeys(r.session for r in reuse))
    return [(order.index(r.session), r) for r in reuse]


def headline(diff: RunDiff) -> str:
    """One line: ``equal`` or where the runs first differ."""
    d = diff.divergence
    if d is None:
        return f"A {diff.a} and B {diff.b} behave the same"
    where = f" (turn {d.turn} step {d.step})" if d.turn is not None else ""
    return f"A {diff.a} and B {diff.b} differ: session {d.session}, call {d.call}{where}: {d.what}"


def text_report(diff: RunDiff) -> str:
    """The terminal / CI log form."""
    lines = [headline(diff)]
    spent = spend_rows(diff)
    if spent:
        lines += ["", "spend (A → B): " + " · ".join(f"{what} {a} → {b}" for what, a, b in spent)]
    reused = reuse_rows(diff)
    if reused:
        lines += ["", "prefix reuse (shared/total bytes, A → B):"]
        lines += [f"  {what}: {a} → {b}" for what, a, b in reused]
        lines += [f"cache drop: {line}" for line in diff.cache_drops]
    if diff.divergence is not None:
        lines += ["", diff.divergence.diff().replace("--- recorded", "--- A").replace("+++ live", "+++ B")]
    for pair in diff.pairs:
        lines += ["", f"session {pair.label}: A {pair.a or '-'} · B {pair.b or '-'}"]
        table = [("", HEADERS), *pair_rows(pair)]
        widths = [max(len(r[1][i]) for r in table) for i in range(len(HEADERS))]
        for side, cells in table:
            lines.append(
                f"{side:1}  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
            )
    return "\n".join(lines) + "\n"


def _md(cell: str) -> str:
    return cell.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def markdown_report(diff: RunDiff) -> str:
    """The pull-request comment form."""
    mark = "✅" if diff.equal else "❌"
    lines = [f"### {mark} dsh diff", "", _md(headline(diff))]
    spent = spend_rows(diff)
    if spent:
        lines += ["", "| | A (before) | B (after) |", "|---|---|---|"]
        lines += [f"| {what} | {_md(a)} | {_md(b)} |" for what, a, b in spent]
    reused = reuse_rows(diff)
    if reused:
        lines += ["", "| prefix reuse (shared/total bytes) | A | B |", "|---|---|---|"]
        lines += [f"| {what} | {_md(a)} | {_md(b)} |" for what, a, b in reused]
        lines += [f"- ⚠ cache drop: {_md(line)}" for line in diff.cache_drops]
    if diff.divergence is not None:
        body = diff.divergence.diff().replace("--- recorded", "--- A").replace("+++ live", "+++ B")
        fence = "````" if "```" in body else "```"
        lines += ["", f"{fence}diff", body, fence]
    for pair in diff.pairs:
        lines += ["", f"**session {_md(pair.label)}** — A `{pair.a or '-'}` · B `{pair.b or '-'}`", ""]
        lines.append("| side | " + " | ".join(HEADERS) + " |")
        lines.append("|" + "---|" * (len(HEADERS) + 1))
        for side, cells in pair_rows(pair):
            lines.append(f"| {side} | " + " | ".join(_md(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
