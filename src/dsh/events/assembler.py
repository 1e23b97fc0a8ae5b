"""BlockAssembler: the one place stream chunks become the final assistant content."""

from __future__ import annotations

from dataclasses import dataclass, field

from dsh.events.chunks import Chunk, Failure, Finish, Usage, finish_failure
from dsh.events.messages import Block


def assemble_block(block_type: str, index: int, parts: list[str], call_id: str = "", name: str = "") -> Block:
    """The content block built from a block's deltas (an id-less tool call gets ``call-<index>``)."""
    if block_type == "tool-call":
        return {
            "type": "tool-call",
            "id": call_id or f"call-{index}",
            "name": name,
            "arguments": "".join(parts),
        }
    return {"type": block_type, "text": "".join(parts)}


@dataclass(slots=True)
class _Open:
    block_type: str
    text: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    closed: Block | None = None


@dataclass(frozen=True, slots=True)
class Assembled:
    """What one model call produced, assembled from its chunks."""

    content: list[Block]
    usage: Usage | None
    finish_kind: str
    failure: Failure | None

    @property
    def tool_calls(self) -> list[Block]:
        return [b for b in self.content if b.get("type") == "tool-call"]


class BlockAssembler:
    """Feed chunks in order; read the assembled blocks, usage and finish.

    Rules: a delta for an unseen index opens the block implicitly; deltas after a block's
    ``block-end`` are ignored; the first ``block-end`` wins and is authoritative; a missing
    ``finish`` counts as ``stop``; a ``max-tokens`` finish drops every tool-call block; an
    open tool call without an id gets ``call-<index>``.
    """

    __slots__ = ("_blocks", "_finish", "_usage")

    def __init__(self) -> None:
        self._blocks: dict[int, _Open] = {}
        self._usage: Usage | None = None
        self._finish: Finish | None = None

    def _open(self, index: int, block_type: str) -> _Open:
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Open(block_type)
        return block

    def feed(self, chunk: Chunk) -> None:
        if chunk["type"] == "text-delta" or chunk["type"] == "reasoning-delta":
            block = self._open(chunk["index"], "text" if chunk["type"] == "text-delta" else "reasoning")
            if block.closed is None:
                block.text.append(chunk["text"])
        elif chunk["type"] == "tool-call-delta":
            block = self._open(chunk["index"], "tool-call")
            if block.closed is None:
                if chunk.get("id"):
                    block.call_id = chunk["id"]
                if chunk.get("name"):
                    block.name = chunk["name"]
                block.text.append(chunk.get("argumentsDelta", ""))
        elif chunk["type"] == "block-start":
            self._open(chunk["index"], chunk["blockType"])
        elif chunk["type"] == "block-end":
            block = self._open(chunk["index"], chunk["block"].get("type", "text"))
            if block.closed is None:
                block.closed = chunk["block"]
        elif chunk["type"] == "usage":
            self._usage = chunk["usage"]
        elif chunk["type"] == "finish" and self._finish is None:
            self._finish = chunk

    def _block(self, index: int, block: _Open) -> Block:
        if block.closed is not None:
            return block.closed
        return assemble_block(block.block_type, index, block.text, block.call_id, block.name)

    @property
    def finished(self) -> bool:
        return self._finish is not None

    def result(self) -> Assembled:
        finish = self._finish
        kind = str(finish["reason"]["kind"]) if finish is not None else "stop"
        blocks = [self._block(i, b) for i, b in self._blocks.items()]
        if kind == "max-tokens":
            blocks = [b for b in blocks if b.get("type") != "tool-call"]
        failure = finish_failure(finish) if finish is not None else None
        return Assembled(blocks, self._usage, kind, failure)

    def interrupted_blocks(self) -> list[Block]:
        """Text and reasoning blocks with non-blank text, closed or still open."""
        out: list[Block] = []
        for i, b in self._blocks.items():
            if b.block_type not in ("text", "reasoning"):
                continue
            block = self._block(i, b)
            if str(block.get("text", "")).strip():
                out.append(block)
        return out
