"""A recording's redaction settings: the ``"replay"`` object of its ``input.json``.

``salt`` (the HMAC key of its placeholders, made at its first record and kept) and
``redact`` (the user's regexes). The one reader of both, for the writers (which keep or make
the salt) and for replay (which redacts the live side with it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh import jsonx
from dsh.errors import ScenarioError, UsageError
from dsh.redact.rule import Redactor, custom_shapes, new_salt

SETTINGS_FILE = "input.json"
"""Where a recording keeps them (a scenario's ``input.json``; ``dsh mcp record``'s too)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What ``"replay"`` says about redaction: its salt (``None``: not redacted) and regexes."""

    salt: str | None
    regexes: tuple[str, ...]

    @classmethod
    def of(cls, replay: object, where: str) -> Settings:
        """Validate ``replay`` (the ``"replay"`` value; anything but an object: none)."""
        found: Mapping[str, Any] = replay if isinstance(replay, dict) else {}
        salt, listed = found.get("salt"), found.get("redact", [])
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise ScenarioError(f'{where}: "replay.redact" must be a list of regex strings')
        if salt is not None and (not isinstance(salt, str) or not salt):
            raise ScenarioError(f'{where}: "replay.salt" must be a non-empty string')
        try:
            custom_shapes(listed, f'{where}: "replay.redact"')
        except UsageError as exc:
            raise ScenarioError(str(exc)) from exc
        return cls(salt, tuple(listed))

    def live(self) -> Redactor | None:
        """The redactor replay applies to the live side (``None`` when nothing was redacted):
        the recording's salt and regexes, the token shapes, this environment's secret values."""
        return None if self.salt is None else Redactor.for_recording(self.salt, custom=self.regexes)

    def for_record(
        self,
        *,
        custom: Sequence[str] = (),
        provider_key: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> tuple[Settings, Redactor]:
        """The settings a new record keeps (this salt, or a new one; these regexes and
        ``custom``) and the redactor it writes with."""
        salt = self.salt or new_salt()
        kept = Settings(salt, tuple(dict.fromkeys([*self.regexes, *custom])))
        return kept, Redactor.for_recording(
            salt, provider_key=provider_key, environ=environ, custom=kept.regexes
        )


def settings_in(directory: Path) -> Settings:
    """The settings of the recording in ``directory`` (no ``input.json``: none)."""
    path = directory / SETTINGS_FILE
    if not path.exists():
        return Settings(None, ())
    try:
        document = jsonx.loads(path.read_bytes())
    except ValueError as exc:
        raise ScenarioError(f"{path}: not valid JSON: {exc}") from exc
    return Settings.of(document.get("replay") if isinstance(document, dict) else None, str(path))


def keep_settings(directory: Path, settings: Settings) -> None:
    """Write ``settings`` as ``directory``'s ``input.json`` ``"replay"`` (other keys kept; atomic)."""
    path = directory / SETTINGS_FILE
    found = jsonx.loads(path.read_bytes()) if path.exists() else {}
    document: dict[str, Any] = dict(found) if isinstance(found, dict) else {}
    replay = dict(document.get("replay") or {})
    replay.update({"salt": settings.salt, **({"redact": list(settings.regexes)} if settings.regexes else {})})
    document["replay"] = replay
    staged = path.with_name(f".{path.name}.tmp")
    staged.write_text(jsonx.dumps_pretty(document) + "\n")
    os.replace(staged, path)
