"""The divergence check: at every replayed call, the live request against the recorded one.

Before call k of a session is served, :class:`SessionCheck` compares what the live request
carries with what the recorded model saw at call k — the model-visible history in order
(user prompts, assistant messages, tool results, injected messages) and, for version-2
recordings, the ``request/header`` in force (system prompt, every tool schema, model and
``maxTokens``; the provider is not compared: a replay is by definition another provider).

Version-0 recordings (the original's) carry messages the original injected itself
(``source.kind: "plugin"`` and friends: runtime context, AGENTS.md, hook context). Those are
compared only for the kinds dsh produces (:data:`REPRODUCED_KINDS`); the rest are dropped
from both sides and reported as ``notReproduced``.

A difference is tolerated only by a declared rule (:class:`Tolerances`: ``scrub``,
``ignore``) or by ``drift="warn"``; anything else is the scenario's divergence.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dsh import jsonx
from dsh.errors import ScenarioError
from dsh.events import Event
from dsh.events.compaction import CHECKPOINT_PLUGIN, INSTRUCTION_PLUGIN
from dsh.events.messages import Message
from dsh.events.payloads import HeaderConfig, message_of
from dsh.events.vocabulary import TOOL_RESULT
from dsh.model import ModelRequest
from dsh.redact import Redactor
from dsh.redact.settings import Settings
from dsh.replay.derive import Derived
from dsh.replay.views import Normalizer, View, ViewBuilder, pretty
from dsh.replay.wire_request import over_the_wire

Drift = Literal["strict", "warn"]
DRIFTS: tuple[Drift, ...] = ("strict", "warn")

REPRODUCED_KINDS: frozenset[str] = frozenset(
    {
        "hooks-claude-code",
        "hooks-codex",
        "subagent-settled",
        "subagent-report",
        "coordinator",
        "tool-jobs",
        "@deepseek-ai/dsh-system-prompt",
        "agent-instructions",
        "skill-catalog",
        "repeat-tool-reminder",
        CHECKPOINT_PLUGIN,
        INSTRUCTION_PLUGIN,
    }
)
"""Injected message kinds (``source.plugin`` or ``source.kind``) dsh itself produces."""


@dataclass(frozen=True, slots=True)
class Tolerances:
    """Declared tolerances of a scenario (``input.json`` → ``"replay"``) and the drift mode.

    ``scrub``: regex → replacement, applied to both sides' strings. ``ignore``: ``"system"``
    (the system prompt), ``"tools"`` (every tool schema and the tool set), or tool names
    (that tool's schema and its results).
    """

    scrub: tuple[tuple[re.Pattern[str], str], ...] = ()
    ignore: frozenset[str] = frozenset()
    drift: Drift = "strict"
    redactor: Redactor | None = None
    """The recording's redaction rule (``salt``, ``redact``: :mod:`dsh.redact`), applied to the
    live side before any comparison; ``None``: the recording was not redacted."""

    @classmethod
    def from_scenario(cls, document: object, where: str, drift: Drift = "strict") -> Tolerances:
        """Validate the ``"replay"`` object of ``input.json`` (absent ⇒ strict, no rules)."""
        if document is None:
            return cls(drift=drift)
        if not isinstance(document, dict) or not set(document) <= {"scrub", "ignore", "salt", "redact"}:
            raise ScenarioError(
                f'{where}: "replay" must be an object with optional "scrub", "ignore", "salt" and "redact"'
            )
        scrub_doc = document.get("scrub", {})
        if not isinstance(scrub_doc, dict) or not all(isinstance(v, str) for v in scrub_doc.values()):
            raise ScenarioError(f'{where}: "replay.scrub" must map regex strings to replacement strings')
        scrubs = []
        for pattern, replacement in scrub_doc.items():
            try:
                scrubs.append((re.compile(pattern), replacement))
            except re.error as exc:
                raise ScenarioError(f'{where}: "replay.scrub" regex {pattern!r} is invalid: {exc}') from exc
        ignore = document.get("ignore", [])
        if not isinstance(ignore, list) or not all(isinstance(i, str) and i for i in ignore):
            raise ScenarioError(f'{where}: "replay.ignore" must be a list of "system", "tools" or tool names')
        return cls(tuple(scrubs), frozenset(ignore), drift, Settings.of(document, where).live())

    @property
    def declared(self) -> bool:
        return bool(self.scrub or self.ignore)


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first difference at one replayed call (``call`` counts from 1)."""

    session: str
    recorded_id: str
    call: int
    turn: int | None
    step: int | None
    what: str
    recorded: str
    live: str
    tolerated_by: str | None = None

    def diff(self, max_lines: int | None = None) -> str:
        lines = list(
            difflib.unified_diff(
                self.recorded.splitlines(), self.live.splitlines(), "recorded", "live", lineterm="", n=2
            )
        )
        if max_lines is not None and len(lines) > max_lines:
            lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more diff lines; --json has all)"]
        return "\n".join(lines)

    def headline(self, scenario: str) -> str:
        where = f"turn {self.turn} step {self.step}" if self.turn is not None else "a compaction"
        verb = (
            ""
            if self.what.endswith("run)") or self.what.endswith("recording)")
            else " differs from the recording"
        )
        return (
            f"scenario {scenario}: session {self.session} ({self.recorded_id}) diverged at call "
            f"{self.call} ({where}): {self.what}{verb}"
        )

    def report(self, scenario: str, hint: str | None = None) -> str:
        """The one wording of a divergence: the headline, the diff (at most 40 lines) and,
        when given, how to accept the change (``hint``)."""
        text = f"{self.headline(scenario)}\n{self.diff(40)}"
        return text if hint is None else f"{text}\n{hint}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "call": self.call,
            "turn": self.turn,
            "step": self.step,
            "what": self.what,
            "recorded": self.recorded,
            "live": self.live,
        }
        if self.tolerated_by is not None:
            out["toleratedBy"] = self.tolerated_by
        return out


def cwd_spellings(cwd: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """The spellings of a live workspace path that normalize to ``{{cwd}}``."""
    if cwd is None:
        return ()
    raw = os.fspath(cwd)
    return tuple({raw, os.path.abspath(raw), os.path.realpath(raw)})


def recorded_cwd_spellings(header_cwd: str | None) -> tuple[str, ...]:
    """The recording's own workspace path, normalized to ``{{cwd}}`` on the recorded side by the
    same rule as the live workspace on the live side: a header ``cwd`` that is a literal
    absolute path (a fixture not cwd-tokenized) rather than ``{{cwd}}``. Never resolved on this
    machine: it names the recording machine's directory."""
    if not header_cwd or "{{" in header_cwd or not header_cwd.startswith("/") or header_cwd == "/":
        return ()
    return (header_cwd.rstrip("/"),)


def _extends(history: list[Message], earlier: list[Message]) -> bool:
    """Whether ``history`` starts with ``earlier``'s messages (each the same object, or an equal
    one), found without copying either list.

    ``earlier <= history`` (C) walks the two arrays side by side and passes over a slot that
    holds the same object without touching the object (a slice touched every message of a
    long session at every call, twice, to count and uncount a reference: cache misses that
    made a call cost its history's length). Every pair equal: the shorter list is the lesser,
    so ``earlier`` is a prefix iff it is not longer. At the first pair that is not equal,
    the two are ordered instead — messages are dicts, which have no order: ``TypeError``,
    not a prefix."""
    try:
        return earlier <= history
    except TypeError:
        return False


@dataclass(slots=True)
class _SurfaceViews:
    """One recorded surface's kept views and messages, over its first ``len(index) - 1`` nodes;
    ``index[j]``: how many of the first ``j`` nodes are kept."""

    nodes: list[int]
    views: list[View] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    index: list[int] = field(default_factory=lambda: [0])


class SessionCheck:
    """Compares one session's live requests with its recording, call by call."""

    def __init__(
        self,
        label: str,
        recorded_id: str,
        derived: Derived,
        *,
        version: int,
        tolerances: Tolerances,
        cwd: str | os.PathLike[str] | None,
        recorded_cwd: str | None = None,
    ) -> None:
        self.label = label
        self.recorded_id = recorded_id
        self.tolerances = tolerances
        self._calls = derived.calls
        self._v0 = version == 0
        self._cwd = cwd_spellings(cwd)
        self._redactor = tolerances.redactor
        self._live = ViewBuilder(Normalizer(self._cwd, redactor=self._redactor))
        self._recorded_headers: dict[int, dict[str, str]] = {}
        self._live_header: tuple[object, tuple[object, ...], dict[str, str]] | None = None
        self._accepted: set[tuple[str, str, str]] = set()
        self._matched: tuple[list[Message], int, int] = ([], 0, 0)
        """(live messages, recorded views, surface) found equal at the last call."""
        self._recorded_ids = Normalizer(recorded_cwd_spellings(recorded_cwd))
        self._recorded = ViewBuilder(self._recorded_ids)
        self._derived = derived
        self._views: list[View] = []
        """The recorded messages' views, built in message order as far as a call needs them
        (not all when the replay opens): ids are numbered in the same order either way."""
        self._surfaces: dict[int, _SurfaceViews] = {}

    @property
    def not_reproduced(self) -> list[str]:
        """v0: the injected kinds dsh does not produce, dropped from both sides (sorted)."""
        if not self._v0:
            return []
        views = self._views_to(len(self._derived.messages))
        return sorted({v.key for v in views if v.kind == "injected" and not self._keep(v)})

    def _views_to(self, n: int) -> list[View]:
        """The recorded views of the first ``n`` messages (built once, in order)."""
        views = self._views
        if len(views) < n:
            views.extend(self._recorded.views(self._derived.messages[len(views) : n]))
        return views

    def _surface(self, g: int, nodes: int) -> _SurfaceViews:
        """Surface ``g``'s kept views and messages over (at least) its first ``nodes`` nodes."""
        found = self._surfaces.get(g)
        if found is None:
            found = self._surfaces[g] = _SurfaceViews(self._derived.surfaces[g])
        done = len(found.index) - 1
        more = found.nodes[done:nodes]
        if more:
            views = self._views_to(max(more) + 1)
            messages = self._derived.messages
            for i in more:
                keep = self._keep(views[i])
                if keep:
                    found.views.append(views[i])
                    found.messages.append(messages[i])
                found.index.append(found.index[-1] + keep)
        return found

    def _keep(self, view: View) -> bool:
        return not (self._v0 and view.kind == "injected" and view.key not in REPRODUCED_KINDS)

    @property
    def calls(self) -> int:
        return len(self._calls)

    def live_ids(self) -> dict[str, str]:
        """Recorded id → live id, for the ids both histories have shown so far (the n-th id
        to appear in one is the n-th in the other: the histories were found equal)."""
        recorded = self._recorded_ids.ids()
        live = self._live.normalizer.ids()
        if len(live) > len(recorded) and len(self._views) < len(self._derived.messages):
            self._views_to(len(self._derived.messages))  # the ids the recording shows later too
            recorded = self._recorded_ids.ids()
        return {r: v for r, v in zip(recorded, live, strict=False) if r != v and not r.startswith("{{")}

    def check(self, k: int, request: ModelRequest) -> Divergence | None:
        """The divergence at call ``k`` (0-based), or ``None`` when the request matches."""
        if k >= len(self._calls):
            return None
        call = self._calls[k]
        if not call.checked:
            return None
        found = self._header(k, request) if call.header is not None and not self._v0 else None
        return found or self._history(k, request)

    # -- history ------------------------------------------------------------------------

    def _history(self, k: int, request: ModelRequest) -> Divergence | None:
        """Compare the history; the part already found equal at the previous call (the same
        message objects, or equal ones, in order) is not compared again. That part is checked
        with one list comparison (C: an object compared with itself costs nothing), not an
        identity test per message in Python, nor through a slice (:func:`_extends`)."""
        call = self._calls[k]
        views = self._surface(call.surface, call.history)
        recorded_all, end = views.views, views.index[call.history]
        given = request.messages  # a list is the request's own (the loop copies its history per call)
        live_raw = given if type(given) is list else list(given)
        seen, matched, surface = self._matched
        if seen and surface == call.surface and _extends(live_raw, seen):
            fresh = [v for v in self._live.views(live_raw[len(seen) :]) if self._keep(v)]
            if end >= matched and fresh == recorded_all[matched:end]:
                self._matched = (live_raw, end, call.surface)
                return None
        found = self._full_history(k, end, live_raw)
        if found is None or found.tolerated_by is not None:
            self._matched = (live_raw, end, call.surface)
        return found

    def _full_history(self, k: int, end: int, live_raw: list[Message]) -> Divergence | None:
        call = self._calls[k]
        views = self._surface(call.surface, call.history)
        recorded, recorded_raw = views.views[:end], views.messages
        live_all = self._live.views(live_raw)
        if not self._v0 and live_all == recorded:
            return None
        keep = [i for i, v in enumerate(live_all) if self._keep(v)]
        live = [live_all[i] for i in keep]
        if live == recorded:
            return None
        for i, (rec, got) in enumerate(zip(recorded, live, strict=False)):
            if rec == got:
                continue
            tolerated = self._tolerate(rec, got, recorded_raw[i], live_raw[keep[i]])
            found = self._divergence(k, rec.label or got.label, rec.text, got.text, tolerated)
            if found is not None:
                return found
        if len(live) < len(recorded):
            missing = recorded[len(live)]
            return self._divergence(k, f"{missing.label} (missing from the live run)", missing.text, "", None)
        if len(live) > len(recorded):
            extra = live[len(recorded)]
            return self._divergence(k, f"{extra.label} (not in the recording)", "", extra.text, None)
        return None

    def _tolerate(self, rec: View, got: View, rec_raw: Message, live_raw: Message) -> str | None:
        ignore = self.tolerances.ignore
        if rec.kind == got.kind == "tool-result" and rec.key == got.key:
            for tool in (rec.tool, got.tool):
                if tool and tool in ignore:
                    return f"ignore {tool}"
        if self.tolerances.scrub:
            scrubbed = ViewBuilder(Normalizer((), self.tolerances.scrub)).view(rec_raw)
            live = ViewBuilder(Normalizer(self._cwd, self.tolerances.scrub, self._redactor)).view(live_raw)
            if scrubbed == live:
                return "scrub"
        return None

    def _divergence(self, k: int, what: str, rec: str, got: str, tolerated: str | None) -> Divergence | None:
        seen = (what, rec, got)
        if seen in self._accepted:
            return None
        if tolerated is None and self.tolerances.drift == "warn":
            tolerated = "--drift=warn"
        call = self._calls[k]
        found = Divergence(
            self.label,
            self.recorded_id,
            k + 1,
            call.turn,
            call.step,
            what,
            pretty(rec) if rec else "(nothing)",
            pretty(got) if got else "(nothing)",
            tolerated,
        )
        if tolerated is not None:
            self._accepted.add(seen)
        return found

    # -- header -------------------------------------------------------------------------

    @staticmethod
    def _header_parts(
        norm: Normalizer, system: object, tools: object, model: object, max_tokens: object
    ) -> dict[str, str]:
        parts = {"system": norm.canonical(system if isinstance(system, str) else None)}
        for spec in tools if isinstance(tools, list | tuple) else []:
            if isinstance(spec, dict):
                parts[f"tool:{spec.get('name')}"] = norm.canonical(spec)
        parts["config"] = jsonx.dumps_sorted({"model": model, "maxTokens": max_tokens})
        return parts

    def _header(self, k: int, request: ModelRequest) -> Divergence | None:
        header = self._calls[k].header or {}
        recorded = self._recorded_headers.get(id(header))  # the header dicts live as long as self
        if recorded is None:
            raw_config = header.get("config")
            config: HeaderConfig = raw_config if isinstance(raw_config, dict) else {}
            recorded = self._header_parts(
                Normalizer(),
                header.get("system"),
                header.get("tools"),
                config.get("model"),
                config.get("maxTokens"),
            )
            self._recorded_headers[id(header)] = recorded
        key = (request.system, request.model, request.max_tokens)
        cached = self._live_header
        if cached is not None and cached[0] is request.tools and cached[1] == key:
            live = cached[2]
        else:
            live = self._header_parts(
                Normalizer(self._cwd, redactor=self._redactor), request.system, list(request.tools), *key[1:]
            )
            self._live_header = (request.tools, key, live)
        if live == recorded:
            return None
        return self._header_difference(k, recorded, live)

    def _header_difference(self, k: int, recorded: dict[str, str], live: dict[str, str]) -> Divergence | None:
        ignore = self.tolerances.ignore
        if recorded["system"] != live["system"]:
            by = "ignore system" if "system" in ignore else None
            found = self._divergence(k, "the system prompt", recorded["system"], live["system"], by)
            if found is not None:
                return found
        rtools = {n for n in recorded if n.startswith("tool:")}
        ltools = {n for n in live if n.startswith("tool:")}
        if rtools != ltools:
            by = "ignore tools" if "tools" in ignore else None
            shown = {side: sorted(n[5:] for n in names) for side, names in (("r", rtools), ("l", ltools))}
            found = self._divergence(
                k, "the tool set", jsonx.dumps_sorted(shown["r"]), jsonx.dumps_sorted(shown["l"]), by
            )
            if found is not None:
                return found
        for name in sorted(rtools & ltools):
            if recorded[name] != live[name]:
                tool = name[5:]
                by = "ignore tools" if "tools" in ignore else (f"ignore {tool}" if tool in ignore else None)
                found = self._divergence(k, f"the schema of tool {tool}", recorded[name], live[name], by)
                if found is not None:
                    return found
        if recorded["config"] != live["config"]:
            return self._divergence(k, "the model config", recorded["config"], live["config"], None)
        return None


def tool_results(
    recorded: Sequence[Event],
    live: Sequence[Event],
    cwd: str | os.PathLike[str] | None,
    *,
    over_wire: bool = False,
    recorded_cwd: str | None = None,
    redactor: Redactor | None = None,
) -> ToolTally:
    """Compare a session's own tool results with the recorded ones, by call id
    (``over_wire``: both seen through the wire, for a recording that saw only the wire;
    ``recorded_cwd``: the recording's header ``cwd``, see :func:`recorded_cwd_spellings`)."""
    spellings = cwd_spellings(cwd)

    def results(
        events: Sequence[Event], cwd_tokens: tuple[str, ...], live: Redactor | None = None
    ) -> dict[str, str]:
        out: dict[str, str] = {}
        for event in events:
            message = message_of(event) if event.type == TOOL_RESULT else None
            for seen in (over_the_wire(message) if over_wire else [message]) if message is not None else ():
                view = ViewBuilder(Normalizer(cwd_tokens, redactor=live)).view(seen)
                out[view.key] = view.text
        return out

    want = results(recorded, recorded_cwd_spellings(recorded_cwd))
    got = results(live, spellings, redactor)
    differing = tuple(call for call, text in want.items() if got.get(call) != text)
    return ToolTally(len(want) - len(differing), len(want), differing)


@dataclass(frozen=True, slots=True)
class ToolTally:
    """How many of a session's recorded tool results the live run reproduced exactly."""

    equal: int
    total: int
    differing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, int]:
        return {"equal": self.equal, "total": self.total}


_ACTION_KEYS: dict[str, tuple[str, ...]] = {
    "hook/invoked": ("turn", "point", "dialect", "matcher"),
    "hook/result": ("turn", "point", "decision", "exitCode"),
    "approval/asked": ("toolName", "callId"),
    "approval/decided": ("outcome",),
}
"""Events where the harness itself acted (ran a hook, asked the user) and the fields that say
how; a replay must act the same, though none of it is model-visible."""


def harness_actions(recorded: Sequence[Event], live: Sequence[Event]) -> tuple[list[str], list[str]] | None:
    """The recorded and live harness actions of one session when they differ, else ``None``."""

    def actions(events: Sequence[Event]) -> list[str]:
        out = []
        for event in events:
            keys = _ACTION_KEYS.get(event.type)
            if keys is not None and isinstance(event.data, dict):
                shown = {k: event.data[k] for k in keys if k in event.data}
                out.append(f"{event.type} {jsonx.dumps_sorted(shown)}")
        return out

    want, got = actions(recorded), actions(live)
    return None if want == got else (want, got)
