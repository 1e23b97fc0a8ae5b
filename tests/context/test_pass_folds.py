"""A pre-step's workspace pass reads only what was appended since the last, and still sees a
compaction take its instructions and catalog off the surface."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from dsh.context import WorkspaceConfig
from dsh.context.pass_ import WorkspacePass
from dsh.events import Event, SessionHeader
from dsh.session import Session
from tests.context.test_skills import good, skill


class CountingSession(Session):
    """A session that notes from which seq each question was asked of its index."""

    __slots__ = ("asked",)

    def __init__(self, header: SessionHeader) -> None:
        super().__init__(header)
        self.asked: list[int] = []

    def of_type(self, *types: str, own: bool = False, since: int = 0) -> list[Any]:
        self.asked.append(since)
        return super().of_type(*types, own=own, since=since)


def _step(workspace: WorkspacePass, session: Session) -> tuple[Any, Any]:
    """One pre-step: its instruction and catalog messages, appended as the loop appends them."""
    sent = workspace.instructions(session), workspace.catalog(session)
    for message in sent:
        if message is not None:
            session.append("user/message", message)
    return sent


def test_a_pass_folds_what_came_since_and_a_compaction_sends_both_again(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Root rule.\n")
    skill(tmp_path / ".dsh" / "skills", "a-skill", good("a-skill", "First."))
    session = CountingSession(SessionHeader(id="s", created_at=1, cwd=str(tmp_path)))
    workspace = WorkspacePass(WorkspaceConfig.inside(), tmp_path)
    session.append("user/message", {"role": "user", "content": [{"type": "text", "text": "hi"}]})
    passed = session.next_seq  # where this step's passes read to
    baseline, catalog = _step(workspace, session)
    assert baseline is not None and baseline["source"]["baseline"] is True
    assert catalog is not None and "a-skill" in catalog["content"][0]["text"]
    for turn in range(3):  # later steps: both still on the surface, nothing sent again
        session.append("user/message", {"role": "user", "content": [{"type": "text", "text": f"t{turn}"}]})
        session.asked.clear()
        now = session.next_seq
        assert _step(workspace, session) == (None, None)
        assert min(session.asked) == passed, "each question asked from what came since the last pass"
        passed = now
    shown = [e.seq for e in session.of_type("user/message") if isinstance(e.data.get("source"), dict)]
    summary = {"role": "user", "content": [{"type": "text", "text": "summary"}]}
    replace = {"op": "replace", "start": 0, "end": shown[-1]}  # a compaction's checkpoint
    session.append_event(Event("user/message", session.next_seq, 2, summary, replace))
    again, catalog_again = _step(workspace, session)
    assert again is not None and again["source"]["baseline"] is True, "the compaction shadowed the baseline"
    assert catalog_again is not None and "source" in catalog_again and "a-skill" in str(catalog_again)
    assert _step(workspace, session) == (None, None)
    session.append_event(
        Event("user/message", session.next_seq, 3, summary, replace | {"end": session.next_seq - 1})
    )
    shutil.rmtree(tmp_path / ".dsh" / "skills")  # the skills are gone with the catalog shadowed:
    assert _step(workspace, session)[1] is None, "no catalog shown, none to send"
    assert _step(workspace, session) == (None, None), "what the compactions shadowed stays shadowed"
