"""Secrets out of every recording dsh writes: the one rule (:mod:`dsh.redact`) applied to logs.

Every writer of a recording — ``dsh scenario save``, ``dsh scenario record`` and the pytest
record modes (:mod:`dsh.snapshot.runner`, :mod:`dsh.snapshot.fixture`), ``dsh serve record``
— passes what it writes through :func:`redact_sessions` and the transcript through
:func:`redact_lines`, with the rule of :func:`recording_rule`: the recording's salt (kept in
``input.json`` → ``replay.salt``, made once and reused by every later record so placeholders
stay stable) and the user's regexes (``replay.redact`` plus ``--redact``). The user's own
store is never redacted.

A stream record's deltas are redacted as the text they make per block (a secret the model
streamed across chunks becomes one placeholder in the chunk where it started), so a replay
serving the chunks assembles exactly the redacted message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.errors import ScenarioError
from dsh.events import encode_event
from dsh.events.redaction import json_values, redact_encoded
from dsh.redact import Redactor
from dsh.redact.scan import scan
from dsh.redact.settings import Settings
from dsh.replay.layout import INPUT
from dsh.store import LoadedSession


@dataclass(frozen=True, slots=True)
class RecordingRule:
    """How one recording is redacted: ``redactor`` ``None`` is ``--no-redact`` (no salt kept)."""

    salt: str | None
    custom: tuple[str, ...]
    redactor: Redactor | None

    def input_document(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """``input.json``'s document with this rule's ``replay.salt`` / ``replay.redact``."""
        out = dict(document)
        replay = dict(out.get("replay") or {})
        replay.pop("salt", None)
        if self.salt is not None:
            replay["salt"] = self.salt
        if self.custom:
            replay["redact"] = list(self.custom)
        if replay:
            out["replay"] = replay
        else:
            out.pop("replay", None)
        return out


@dataclass(frozen=True, slots=True)
class RedactOptions:
    """What a recording command was told: more regexes (``--redact``), the provider key in use,
    or ``--no-redact`` (``enabled=False``)."""

    custom: tuple[str, ...] = ()
    enabled: bool = True
    provider_key: str | None = None

    def rule(self, document: Mapping[str, Any]) -> RecordingRule:
        return recording_rule(
            document, provider_key=self.provider_key, custom=self.custom, enabled=self.enabled
        )


DEFAULT_REDACTION = RedactOptions()
"""The default: redact, no extra regexes (the provider key comes from the environment)."""

NO_REDACT_WARNING = (
    "--no-redact: secrets (provider keys, tokens, secret environment values) are written to the "
    "recording verbatim; never commit it"
)


def read_input_document(directory: Path) -> dict[str, Any]:
    """``input.json`` of ``directory`` (``{}`` when there is none)."""
    path = directory / INPUT
    if not path.exists():
        return {}
    try:
        doc = jsonx.loads(path.read_bytes())
    except ValueError as exc:
        raise ScenarioError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ScenarioError(f"{path}: must hold a JSON object")
    return doc


def input_file(directory: Path, rule: RecordingRule) -> dict[str, bytes]:
    """``{"input.json": bytes}`` when ``rule``'s salt or regexes are new to the scenario's
    ``input.json`` (written with the recording, as one step), else ``{}``."""
    document = read_input_document(directory)
    updated = rule.input_document(document)
    return {} if updated == document else {INPUT: (jsonx.dumps_pretty(updated) + "\n").encode()}


def recording_rule(
    document: Mapping[str, Any],
    *,
    provider_key: str | None = None,
    custom: Sequence[str] = (),
    enabled: bool = True,
    environ: Mapping[str, str] | None = None,
) -> RecordingRule:
    """The rule a recording is written with: ``document`` is its ``input.json`` (its salt and
    ``replay.redact`` regexes are kept, :class:`dsh.redact.settings.Settings`), ``custom`` more
    regexes (``--redact``)."""
    settings = Settings.of(document.get("replay"), INPUT)
    if not enabled:
        return RecordingRule(None, tuple(dict.fromkeys([*settings.regexes, *custom])), None)
    kept, redactor = settings.for_record(custom=custom, provider_key=provider_key, environ=environ)
    return RecordingRule(kept.salt, kept.regexes, redactor)


def redact_session(loaded: LoadedSession, redactor: Redactor | None) -> LoadedSession:
    """``loaded`` with every secret replaced (``None``: unchanged). Each event is encoded once
    (the line a writer of the log needs anyway) and the rule's cheap test made over those
    lines; an event it passes keeps its line, remembered (``Event.remember_line``), so the
    writer does not encode it again."""
    if redactor is None:
        return loaded
    lines = [encode_event(e) for e in loaded.events]
    events = redact_encoded(loaded.events, lines, redactor)
    for event, before, line in zip(events, loaded.events, lines, strict=True):
        if event is before and event.line_json is None:
            event.remember_line(line)
    return replace(loaded, events=events)


def redact_sessions(
    sessions: Mapping[str, LoadedSession], redactor: Redactor | None
) -> dict[str, LoadedSession]:
    """Every session of a recording, redacted (``None``: unchanged)."""
    return {sid: redact_session(loaded, redactor) for sid, loaded in sessions.items()}


def redact_tree(root: Path, redactor: Redactor | None) -> list[Path]:
    """Redact every text file below ``root`` in place (a copy of a workspace a recording
    carries: a ``cat`` of it replays to the same placeholder); returns the files changed.
    Binary files (a NUL in the first 8 KiB) and files not in UTF-8 are left alone."""
    if redactor is None:
        return []
    changed = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            text = data.decode()
        except UnicodeDecodeError:
            continue
        redacted = redactor.text(text)
        if redacted != text:
            path.write_text(redacted)
            changed.append(path)
    return changed


def secrets_left(directory: Path, names: Iterable[str], redact: RedactOptions) -> list[str]:
    """``dsh scenario scan`` over the files a record wrote (``names``, in ``directory``), with
    the recording's regexes and ``redact``'s: one ``file:line: KIND`` per secret still there
    (never the secret); nothing under ``--no-redact``."""
    if not redact.enabled:
        return []
    custom = recording_rule(read_input_document(directory), custom=redact.custom).custom
    paths = [directory / name for name in names if (directory / name).is_file()]
    return [str(hit) for hit in scan(paths, custom=custom)]


def redact_lines(lines: Iterable[dict[str, Any]], redactor: Redactor | None) -> list[dict[str, Any]]:
    """Transcript lines (or any JSON objects), redacted (``None``: unchanged)."""
    if redactor is None:
        return list(lines)
    return json_values(list(lines), redactor)
