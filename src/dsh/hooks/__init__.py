"""Hooks: Claude Code and Codex compatible commands at PreToolUse, PostToolUse, UserPromptSubmit, Stop."""

from dsh.hooks.config import DIALECTS, FILE_NAMES, Dialect, HookFile, load_hook_file, parse_hooks
from dsh.hooks.handler_ids import next_handler_id, reset_handler_ids
from dsh.hooks.hookset import HookSet, user_hooks_dir
from dsh.hooks.outcome import PLUGINS, HookOutcome, approval_refusal
from dsh.hooks.session import SessionHooks

__all__ = [
    "DIALECTS",
    "FILE_NAMES",
    "PLUGINS",
    "Dialect",
    "HookFile",
    "HookOutcome",
    "HookSet",
    "SessionHooks",
    "approval_refusal",
    "load_hook_file",
    "next_handler_id",
    "parse_hooks",
    "reset_handler_ids",
    "user_hooks_dir",
]
