"""What a model takes besides text: the one rule for whether a model accepts images.

``DSH_IMAGE_MODELS`` (comma/space separated ``fnmatch`` patterns) replaces the built-in
patterns; ``AgentConfig.image_input`` overrides the rule for one agent. The built-ins are
model families known to take image input over the Chat Completions wire (``image_url``
parts): names with ``vision`` or ``-vl`` in them, GPT-4o/4.1/5, Claude, Gemini, Qwen-VL,
Llama 4 and Pixtral. DeepSeek's text models (``deepseek-chat``, ``deepseek-v4-flash``) do not.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping

IMAGE_MODEL_PATTERNS: tuple[str, ...] = (
    "*vision*",
    "*-vl*",
    "*-vl-*",
    "gpt-4o*",
    "gpt-4.1*",
    "gpt-5*",
    "claude-*",
    "gemini-*",
    "llama-4*",
    "pixtral*",
)


def accepts_images(model: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether requests to ``model`` may carry images."""
    environ = os.environ if env is None else env
    listed = environ.get("DSH_IMAGE_MODELS")
    patterns = listed.replace(",", " ").split() if listed is not None else IMAGE_MODEL_PATTERNS
    name = model.lower().rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p.lower()) for p in patterns)


CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("deepseek-v4*", 256_000),
    ("deepseek-chat", 131_072),
    ("deepseek-reasoner", 131_072),
)
"""Context windows (tokens) of models whose window is known: the original publishes 256,000
for its DeepSeek V4 entries; DeepSeek's API documents 128K for ``deepseek-chat`` and
``deepseek-reasoner``."""


def known_context_window(model: str) -> int | None:
    """The context window of ``model`` when dsh knows it (``CONTEXT_WINDOWS``), else ``None``."""
    name = model.lower().rsplit("/", 1)[-1]
    return next((size for pattern, size in CONTEXT_WINDOWS if fnmatch.fnmatchcase(name, pattern)), None)
