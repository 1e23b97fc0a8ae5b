"""Script entries: what one replayed model call serves (chunks, a throw, or a hang)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dsh.errors import OverrideError
from dsh.events.chunks import Chunk, as_chunk

EntryKind = Literal["chunks", "throw", "hang"]

HANG_CHUNKS: tuple[Chunk, ...] = (
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "partial"},
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One recorded (or overridden) model call."""

    kind: EntryKind
    chunks: tuple[Chunk, ...] = ()
    code: str = ""
    message: str = ""
    ready_file: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.kind == "chunks":
            return {"kind": "chunks", "chunks": list(self.chunks)}
        if self.kind == "throw":
            return {"kind": "throw", "chunks": list(self.chunks), "message": self.message, "code": self.code}
        out: dict[str, Any] = {"kind": "hang"}
        if self.ready_file is not None:
            out["readyFile"] = self.ready_file
        return out


def _chunks(value: object, where: str) -> tuple[Chunk, ...]:
    if not isinstance(value, list):
        raise OverrideError(f"{where}: 'chunks' must be a list")
    out: list[Chunk] = []
    for i, item in enumerate(value):
        chunk = as_chunk(item)
        if chunk is None:
            raise OverrideError(f"{where}: chunks[{i}] is not a stream chunk")
        out.append(chunk)
    return tuple(out)


def entry_from_json(obj: object, where: str) -> Entry:
    """Validate one override entry strictly (exact key sets)."""
    if not isinstance(obj, dict):
        raise OverrideError(f"{where}: an entry must be an object")
    kind = obj.get("kind")
    keys = set(obj)
    if kind == "chunks":
        if keys != {"kind", "chunks"}:
            raise OverrideError(f"{where}: a chunks entry has exactly 'kind' and 'chunks'")
        return Entry("chunks", _chunks(obj["chunks"], where))
    if kind == "throw":
        if keys != {"kind", "chunks", "message", "code"}:
            raise OverrideError(f"{where}: a throw entry has exactly kind, chunks, message, code")
        message, code = obj["message"], obj["code"]
        if not isinstance(message, str) or not message or not isinstance(code, str) or not code:
            raise OverrideError(f"{where}: a throw entry needs a non-empty message and code")
        return Entry("throw", _chunks(obj["chunks"], where), code=code, message=message)
    if kind == "hang":
        if not keys <= {"kind", "readyFile"}:
            raise OverrideError(f"{where}: a hang entry has only 'kind' and optional 'readyFile'")
        ready = obj.get("readyFile")
        if ready is not None and (not isinstance(ready, str) or not ready):
            raise OverrideError(f"{where}: 'readyFile' must be a non-empty string")
        return Entry("hang", HANG_CHUNKS, ready_file=ready)
    raise OverrideError(f"{where}: unknown entry kind {kind!r} (chunks, throw or hang)")


def apply_override(derived: list[Entry], document: object, where: str) -> list[Entry]:
    """A bare list replaces the script; ``{"patches": [{"at", "entry"}]}`` swaps or appends."""
    if isinstance(document, list):
        return [entry_from_json(e, f"{where}[{i}]") for i, e in enumerate(document)]
    if not isinstance(document, dict) or set(document) != {"patches"}:
        raise OverrideError(f'{where}: expected a list of entries or {{"patches": [...]}}')
    patches = document["patches"]
    if not isinstance(patches, list):
        raise OverrideError(f"{where}: 'patches' must be a list")
    script = list(derived)
    seen: set[int] = set()
    for i, patch in enumerate(patches):
        if not isinstance(patch, dict) or set(patch) != {"at", "entry"}:
            raise OverrideError(f"{where}: patches[{i}] has exactly 'at' and 'entry'")
        at = patch["at"]
        if type(at) is not int or at < 0 or at > len(script):
            raise OverrideError(f"{where}: patches[{i}].at must be 0..{len(script)}")
        if at in seen:
            raise OverrideError(f"{where}: patches[{i}] repeats at={at}")
        seen.add(at)
        entry = entry_from_json(patch["entry"], f"{where}: patches[{i}].entry")
        if at == len(script):
            script.append(entry)
        else:
            script[at] = entry
    return script
