"""Secrets out of recordings: one rule (:class:`Redactor`), used by every recording writer,
by replay on the live side, and by ``dsh scenario scan``. Stdlib only."""

from __future__ import annotations

from dsh.redact.patterns import PLACEHOLDER, SHAPES, Shape
from dsh.redact.rule import Finding, Redactor, new_salt, secret_values

__all__ = ["PLACEHOLDER", "SHAPES", "Finding", "Redactor", "Shape", "new_salt", "secret_values"]
