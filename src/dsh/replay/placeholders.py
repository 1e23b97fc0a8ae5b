"""What a replayed entry takes from the live run: ``{{fromRequest:<regex>}}`` placeholders,
resolved against the live request's text, and recorded ids swapped for the live ones."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dsh import jsonx
from dsh.errors import ReplayError
from dsh.events.messages import Message

_OPEN = "{{fromRequest:"
_OPEN_BYTES = _OPEN.encode()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def request_corpus(messages: Sequence[Message]) -> str:
    """Every string leaf of the request's messages, depth-first, joined with newlines."""
    return "\n".join(_strings(list(messages)))


def _resolve(text: str, corpus: str) -> str:
    out: list[str] = []
    pos = 0
    while True:
        start = text.find(_OPEN, pos)
        if start < 0:
            out.append(text[pos:])
            return "".join(out)
        close = text.find("}}", start + len(_OPEN))
        if close < 0:
            raise ReplayError(f"unterminated {_OPEN} placeholder in {text!r}")
        end = close + 2
        while end < len(text) and text[end] == "}":
            end += 1
        pattern = text[start + len(_OPEN) : end - 2]
        try:
            matches = list(re.finditer(pattern, corpus))
        except re.error as exc:
            raise ReplayError(f"invalid regex in placeholder {pattern!r}: {exc}") from exc
        if not matches:
            raise ReplayError(f"placeholder regex {pattern!r} matched nothing in the request")
        last = matches[-1]
        out.append(text[pos:start])
        out.append(last.group(1) if last.re.groups else last.group(0))
        pos = end


def resolve_placeholders(value: Any, corpus: str) -> Any:
    """Return ``value`` with every placeholder in its strings resolved."""
    if isinstance(value, str):
        return _resolve(value, corpus) if _OPEN in value else value
    if isinstance(value, dict):
        return {k: resolve_placeholders(v, corpus) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_placeholders(v, corpus) for v in value]
    return value


def has_placeholder(chunks: Sequence[Any]) -> bool:
    return any(_OPEN in s for s in _strings(list(chunks)))


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def with_live_ids(value: Any, live: dict[str, str]) -> Any:
    """``value`` with every recorded id (a UUID) that ``live`` maps replaced by the live one.

    A recorded model that read a child's id in its history (``started subagent <id>``) passes
    it back in a later call (``send_message``); served verbatim that id names nobody live.
    """
    if not live:
        return value
    if isinstance(value, str):
        return _UUID.sub(lambda m: live.get(m.group(0).lower(), m.group(0)), value) if "-" in value else value
    if isinstance(value, dict):
        return {k: with_live_ids(v, live) for k, v in value.items()}
    if isinstance(value, list):
        return [with_live_ids(v, live) for v in value]
    return value


def with_live_cwd(value: Any, recorded: Sequence[str], live: str) -> Any:
    """``value`` with the recording's spellings of its workspace (``{{cwd}}``, a literal
    recorded path) replaced by the live workspace, where a path starts with one: a recorded
    tool call naming a file by its absolute path names the same file live."""
    if isinstance(value, str):
        for spelling in recorded:
            if spelling in value:
                value = re.sub(re.escape(spelling) + r"(?![A-Za-z0-9_.\-])", lambda _m: live, value)
        return value
    if isinstance(value, dict):
        return {k: with_live_cwd(v, recorded, live) for k, v in value.items()}
    if isinstance(value, list):
        return [with_live_cwd(v, recorded, live) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class Needs:
    """What serving one recorded entry may take from the live run, found once when the replay
    opens (in the entry's JSON, one scan each) so that serving it walks its chunks only for
    what it holds: ``{{fromRequest:`` placeholders, ids to swap, the recording's workspace."""

    placeholders: bool
    ids: bool
    cwd: bool


EVERYTHING = Needs(placeholders=True, ids=True, cwd=True)

_UUID_MIDDLE = re.compile(rb"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
"""What every UUID holds, led by a literal ``-`` (``re`` skips to it fast; the whole UUID
pattern, led by a class, is tried at every position: 20x slower on a reply's chunks)."""


def needs_of(chunks: Sequence[Any], spellings: Sequence[str]) -> Needs:
    """The :class:`Needs` of an entry's ``chunks`` given the recording's ``spellings`` of its
    workspace: what is in a string of the chunks is in their JSON (escaped as JSON escapes
    it), so a part the JSON lacks is no part of any string."""
    try:  # the JSON bytes, searched as bytes: orjson writes non-ASCII text as UTF-8 alike
        text = jsonx.dumps_unchecked(chunks if isinstance(chunks, list | tuple) else list(chunks))
    except TypeError:  # not JSON (a test's chunks): walk them as before
        return EVERYTHING
    escaped = [jsonx.dumps_unchecked(spelling)[1:-1] for spelling in spellings]
    return Needs(
        placeholders=_OPEN_BYTES in text,
        ids=_UUID_MIDDLE.search(text) is not None,
        cwd=any(spelling in text for spelling in escaped),
    )
