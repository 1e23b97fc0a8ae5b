"""A model-made session title (the original's first-prompt title provider), beside the turn.

With :attr:`AgentConfig.title_model` a top-level session, once its first eligible prompt is
in the log and it has no model title yet, logs ``session/title-llm-request`` when its first
request goes out and asks the title model concurrently with the turn (the original's system
text and framing, 32 tokens). An answer that finishes ``stop`` with text only becomes
``session/title {title, messageSeqs, source: {kind: "provider", provider, model}}`` —
appended once the turn has ended (a title never splits a turn's events), then checkpointed.
Any failure leaves the fallback title alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final, cast

from dsh import jsonx
from dsh.context.titles import MAX_TITLE_BYTES, cut, normalize
from dsh.events.messages import Message, Source, user_message
from dsh.events.payloads import blocks_of
from dsh.events.vocabulary import SESSION_TITLE, USER_MESSAGE
from dsh.loop.state import DelegatedState
from dsh.model import Model, ModelRequest, NamedModel

log = logging.getLogger("dsh.titles")

PROVIDER: Final = "session-title-first-prompt-llm"
REQUEST: Final = "session/title-llm-request"
SYSTEM: Final = "\n".join(
    [
        "Create a concise title for an AI coding-assistant session from the supplied human messages.",
        "Return only the title on one line, **in plain text of natural language**, with no quotes, prefix, "
        "explanation, Markdown, XML, or terminal control codes. No code is allowed.",
        "Use the language of the messages.",
        "Aim for about 5 words in non-CJK languages or 10 CJK characters.",
    ]
)
FRAME: Final = "Generate the session title from this JSON array of human messages:\n"
MAX_INPUT_BYTES: Final = 4096
MAX_TOKENS: Final = 32
TIMEOUT_S: Final = 5.0


def _human(events: Any) -> tuple[int, str] | None:
    for event in events:
        if event.type != USER_MESSAGE or not isinstance(event.data, dict):
            continue
        source = event.data.get("source")
        if isinstance(source, dict) and source.get("kind") == "user":
            text = "\n".join(
                str(b.get("text", ""))
                for b in blocks_of(cast(Message, event.data))
                if b.get("type") == "text"
            )
            if normalize(text):
                return event.seq, text
    return None


async def _ask(model: Model, request: ModelRequest) -> str | None:
    texts: dict[int, list[str]] = {}
    finish: str | None = None
    async for chunk in model.stream(request):
        kind = chunk.get("type")
        if kind == "text-delta":
            index = chunk.get("index", 0)
            texts.setdefault(index if isinstance(index, int) else 0, []).append(str(chunk.get("text", "")))
        elif kind in ("tool-call-delta",):
            return None
        elif kind == "finish":
            reason = chunk.get("reason")
            finish = reason.get("kind") if isinstance(reason, dict) else None
    if finish != "stop":
        return None
    title = cut(normalize(" ".join("".join(texts[i]) for i in sorted(texts))), MAX_TITLE_BYTES)
    return title or None


def _unanswered(events: Any) -> dict[str, Any] | None:
    """The last ``session/title-llm-request`` no model title followed, if any."""
    found: dict[str, Any] | None = None
    for event in events:
        if event.type == REQUEST and isinstance(event.data, dict):
            found = event.data
        elif (
            event.type == SESSION_TITLE
            and isinstance(event.data, dict)
            and event.data.get("source", {}).get("kind") != "fallback"
        ):
            found = None
    return found


class Titling:
    """One session's model-title work (nothing without a title model or in a child).

    In-process the title is asked beside the turn. A driver whose agent lives for one piece
    of a turn (``dsh.loop.stepwise``, Temporal's activities) :meth:`defer` s it: the request
    is logged where the loop logs it, and :meth:`after_logged_request`, when the turn ends,
    asks the title model that logged request — the same events, in the same places."""

    def __init__(self, agent: DelegatedState) -> None:
        self._agent = agent
        model = agent.config.title_model
        self._title_model = model if agent.delegation is None else None
        self._deferred = False
        done = any(
            e.type == REQUEST
            or (
                e.type == SESSION_TITLE
                and isinstance(e.data, dict)
                and e.data.get("source", {}).get("kind") != "fallback"
            )
            for e in agent.session.of_type(REQUEST, SESSION_TITLE, own=True)
        )
        self._model = model if agent.delegation is None and not done else None
        self._task: asyncio.Task[str | None] | None = None
        self._seqs: list[int] = []
        self._route: dict[str, str] = {}

    def on_request(self) -> None:
        """The session's request is going out: start the title work if it is due."""
        if self._model is None or self._task is not None:
            return
        human = _human(self._agent.session.own_events)
        if human is None:
            return
        seq, text = human
        framed = FRAME + jsonx.dumps([{"seq": seq, "text": text}]).decode()
        if len(framed.encode()) > MAX_INPUT_BYTES:
            self._model = None
            return
        message = user_message(framed, source_kind="plugin")
        message["source"] = cast(Source, {"kind": "plugin", "plugin": "dsh-session-title-llm"})
        own = self._model.model_name if isinstance(self._model, NamedModel) else None
        name = self._agent.config.title_model_name or own or self._agent.config.model
        route = {"provider": self._model.provider, "model": name}
        self._agent.append(
            REQUEST,
            {
                "titleProvider": PROVIDER,
                "messageSeqs": [seq],
                "route": route,
                "system": SYSTEM,
                "messages": [message],
                "maxTokens": MAX_TOKENS,
            },
        )
        self._seqs = [seq]
        if self._deferred:  # asked when the turn ends, from the logged request
            self._model = None
            return
        request = ModelRequest(
            session_id=self._agent.id,
            model=name,
            messages=[message],
            system=SYSTEM,
            max_tokens=MAX_TOKENS,
            extra={"purpose": "session-title"},
        )
        self._task = asyncio.create_task(asyncio.wait_for(_ask(self._model, request), TIMEOUT_S))
        self._route = route

    def defer(self) -> None:
        """Log the title request as always but ask it only at :meth:`after_logged_request`."""
        self._deferred = True

    async def after_logged_request(self) -> None:
        """After the turn's end: ask the title model the request the log holds without an
        answer (a deferred one, made by another piece of the turn) and append its title."""
        data = _unanswered(self._agent.session.own_events)
        if self._title_model is None or data is None or self._task is not None:
            return
        logged = data.get("route")
        route: dict[str, str] = (
            {str(k): str(v) for k, v in logged.items()} if isinstance(logged, dict) else {}
        )
        request = ModelRequest(
            session_id=self._agent.id,
            model=str(route.get("model") or self._agent.config.model),
            messages=cast(list[Message], data.get("messages") or []),
            system=data.get("system") if isinstance(data.get("system"), str) else None,
            max_tokens=MAX_TOKENS,
            extra={"purpose": "session-title"},
        )
        self._seqs = [s for s in data.get("messageSeqs", []) if type(s) is int]
        self._route = route
        self._task = asyncio.create_task(asyncio.wait_for(_ask(self._title_model, request), TIMEOUT_S))
        await self.after_turn()

    async def after_turn(self) -> None:
        """Append the model's title once the turn has ended (a failure only logs a warning)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._model = None
        try:
            title = await task
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the title is optional: never a turn failure
            log.warning("session %s: no model title (%s: %s)", self._agent.id, type(exc).__name__, exc)
            return
        if title is None:
            log.warning("session %s: the title model gave no usable title", self._agent.id)
            return
        source = {"kind": "provider", "provider": PROVIDER, "model": self._route}
        self._agent.append(SESSION_TITLE, {"title": title, "messageSeqs": self._seqs, "source": source})
        await self._agent.checkpoint()

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(Exception):
                self._task.exception() if self._task.done() else None
