"""The skill catalog the model is shown (the original's message) and the ``skill`` tool's text."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from dsh import jsonx
from dsh.context.folds import FoldMark
from dsh.context.skills import Skill
from dsh.events import Event
from dsh.events.messages import Message, Source, text_block
from dsh.events.vocabulary import USER_MESSAGE
from dsh.ids import new_message_id
from dsh.session import Session

KIND: Final = "skill-catalog"
DESCRIPTION_MAX: Final = 500
INTRO: Final = (
    "A skill is a reusable set of task-specific instructions. The following skills are available in "
    "this session:"
)
CHANGED: Final = (
    "The available skill catalog changed. This complete catalog replaces every earlier available-skills "
    "list in this session:"
)
USE: Final = (
    "If the user names a skill, or the task clearly matches a skill's description, call the `skill` tool "
    "with the exact skill name before taking task actions. Load all applicable skills, then follow their "
    "full instructions. This catalog contains summaries only; do not infer or follow a skill's "
    "instructions until it has been loaded."
)
USE_REPLACED: Final = (
    "Use only names in this replacement catalog. If the user names a listed skill, or the task clearly "
    "matches its description, call the `skill` tool with the exact name before acting."
)
DIRECT: Final = (
    "A user may also invoke a skill directly; its <skill_content> block then appears in this "
    "conversation. Follow it, and do not call the `skill` tool again for that skill."
)
NONE_LEFT: Final = (
    "No skills are currently available through the `skill` tool. Do not use names from earlier skill "
    "catalogs.\nA user may still invoke a skill directly; its <skill_content> block then appears in this "
    "conversation. Follow it, and do not call the `skill` tool for it."
)


def _description(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= DESCRIPTION_MAX else flat[: DESCRIPTION_MAX - 3] + "..."


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def entries(skills: Mapping[str, Skill]) -> list[dict[str, str]]:
    """The model-invocable skills by code point, ``{name, description}`` (raw text)."""
    return [
        {"name": s.name, "description": _description(s.description)}
        for s in sorted(skills.values(), key=lambda s: s.name)
        if s.model_invocable
    ]


def digest(items: Sequence[Mapping[str, str]]) -> str:
    lines = "".join(jsonx.dumps([e["name"], e["description"]]).decode() + "\n" for e in items)
    return hashlib.sha256(lines.encode()).hexdigest()


def visible_catalog(session: Session, hidden: set[int]) -> list[dict[str, str]] | None:
    """The entries of the last catalog still on the surface (``None``: none was published)."""
    for event in reversed(session.of_type(USER_MESSAGE)):
        if event.seq not in hidden and (found := _entries_of(event)) is not None:
            return found
    return None


def _entries_of(event: Event) -> list[dict[str, str]] | None:
    """The entries of a catalog message, ``None`` for any other user message (a walk's hot
    path: tens of thousands of prompts in a long session, each ``source: {kind: "user"}``)."""
    data = event.data
    source = data.get("source") if type(data) is dict else None
    if type(source) is not dict or source.get("kind") != KIND:
        return None
    raw = source.get("entries")
    return [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []


class ShownCatalog:
    """:func:`visible_catalog` of one session at each pre-step, paying for what came since the
    last (:class:`~dsh.context.folds.FoldMark`): the user messages appended since are read,
    the whole log again only when ``hidden`` grew (a compaction may have shadowed the catalog
    found)."""

    __slots__ = ("_found", "_mark")

    def __init__(self) -> None:
        self._mark = FoldMark()
        self._found: list[dict[str, str]] | None = None

    def __call__(self, session: Session, hidden: set[int]) -> list[dict[str, str]] | None:
        since = self._mark.since(session, len(hidden))
        if since == 0:
            found = visible_catalog(session, hidden)
        else:
            found = self._found
            for event in session.of_type(USER_MESSAGE, since=since):
                if event.seq not in hidden and (entries := _entries_of(event)) is not None:
                    found = entries
        self._found = found
        self._mark.reached(session, len(hidden))
        return found


def catalog_message(items: list[dict[str, str]], *, update: bool) -> Message:
    """The catalog message (``update``: the replacement text of a changed catalog)."""
    lines = "\n".join(f"- `{e['name']}`: {_escape(e['description'])}" for e in items)
    if not items:
        body = f"{CHANGED}\n\n<available_skills>\n</available_skills>\n\n{NONE_LEFT}"
    elif update:
        body = f"{CHANGED}\n\n<available_skills>\n{lines}\n</available_skills>\n\n{USE_REPLACED}\n{DIRECT}"
    else:
        body = f"{INTRO}\n\n<available_skills>\n{lines}\n</available_skills>\n\n{USE}\n{DIRECT}"
    source: dict[str, Any] = {"kind": KIND, "form": "catalog", "entries": items}
    if update:
        source["update"] = True
    text = f"<system-reminder>\n{body}\n</system-reminder>"
    return {
        "content": [text_block(text)],
        "source": cast(Source, source),
        "role": "user",
        "id": new_message_id(),
    }


def skill_content(skill: Skill) -> str:
    """The ``skill`` tool's result (the original's ``<skill_content>`` block)."""
    name = skill.name.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    base = _escape(str(skill.base_dir))
    return (
        f'<skill_content name="{name}">\n<skill_resources>\nBase directory for this skill: {base}\n'
        "Resolve relative paths mentioned by this skill against the base directory before using them. "
        "Load referenced resources only as needed.\n</skill_resources>\n\n<skill_instructions>\n"
        f"{skill.body}\n</skill_instructions>\n</skill_content>"
    )
