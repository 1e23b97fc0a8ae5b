"""The one rule that keeps the secrets dsh holds out of every text a tool or a hook produces.

Stripping a tool's environment (:mod:`dsh.tools.environment`) keeps the provider key out of
the command's *own* environment, but a command can still read it elsewhere: the launching
shell's ``/proc/<pid>/environ`` (Landlock has no PID namespace, ``danger-full-access`` no
confinement at all), a file, a hook's ``/proc`` walk. So every text that leaves a tool or a
hook is scrubbed of the exact secret values before it is logged, spilled or sent to a model:

- a tool's result and its meta, in :meth:`dsh.tools.ToolRegistry.run`, before the spill
  rule saves it to a file (so spill files, ``job_output`` and the next model request are
  covered: a background job's output leaves through ``job_output``);
- a hook command's stdout and stderr, in :class:`dsh.hooks.SessionHooks`, before they are
  decoded or logged (its decision, context messages and summaries come from them);
- a background job's completion notice (``dsh.loop.job_notices``);
- what the model itself writes: a model call's settlement (its answer, reasoning and
  tool-call arguments, and the streamed deltas they were assembled from, recut so that a
  value split across deltas is masked where it starts), in
  :func:`dsh.loop.model_call.settle_model_call`, before it is logged, shown or used (the
  next request is built from the log; the tools run with the masked arguments). A streamed
  delta is masked on its own before it is shown live: a value split across two deltas was
  already on the terminal, never in the log.

The values are the agent's: its model's (:class:`dsh.model.HoldsSecrets`, the provider key
and a base-URL password) and those of the variables :func:`dsh.tools.environment.secret_names`
withholds from tools. Each occurrence becomes :data:`MASK`. Only the exact value is caught
— a command that encodes it (base64, reversed) gets it out; that is what the kernel
sandboxes are for (see ``docs/threat-model.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from dsh.events.chunks import Chunk
from dsh.events.messages import Block, Message
from dsh.events.redaction import redact_chunk, redact_data
from dsh.redact import Redactor

MASK: Final = "***"
MIN_SECRET: Final = 8
"""Shorter values are not scrubbed: they would mask ordinary words."""


@dataclass(frozen=True, slots=True, repr=False)
class Redaction:
    """The secret values to scrub (longest first, each at least :data:`MIN_SECRET` long)."""

    values: tuple[str, ...] = ()
    _rule: Redactor = field(init=False, compare=False)

    def __post_init__(self) -> None:
        kept = {v for v in self.values if isinstance(v, str) and len(v) >= MIN_SECRET}
        object.__setattr__(self, "values", tuple(sorted(kept, key=lambda v: (-len(v), v))))
        rule = Redactor("", values=dict.fromkeys(self.values, "agent-secret"), shapes=(), mask=MASK)
        object.__setattr__(self, "_rule", rule)

    def __repr__(self) -> str:  # never the values themselves
        return f"Redaction({len(self.values)} secret values)"

    def __bool__(self) -> bool:
        return bool(self.values)

    def with_values(self, values: Iterable[str]) -> Redaction:
        """This redaction and ``values`` too."""
        return Redaction((*self.values, *values))

    def text(self, text: str) -> str:
        """``text`` with every occurrence of every value replaced by :data:`MASK`."""
        return self._rule.text(text) if self.values else text

    def chunk(self, chunk: Chunk) -> Chunk:
        """A streamed delta with the values wholly inside it masked (one split across
        deltas is masked by :meth:`event_data` over the settled stream)."""
        return redact_chunk(chunk, self._rule) if self.values else chunk

    def event_data(self, data: Any) -> Any:
        """An event's data masked, a stream record's deltas recut per block so that they
        still assemble the masked message (``data`` itself when it holds no value)."""
        return redact_data(data, self._rule) if self.values else data

    def data(self, value: Any) -> Any:
        """A JSON value with every string in it scrubbed (keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def blocks(self, blocks: list[Block]) -> list[Block]:
        return [self.data(block) for block in blocks]

    def message(self, message: Message) -> Message:
        """A message with its content scrubbed."""
        if not self.values:
            return message
        scrubbed: Message = {**message, "content": self.blocks(list(message["content"]))}
        return scrubbed


NO_REDACTION: Final = Redaction()
