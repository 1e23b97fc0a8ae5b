"""``dsh rewind ID --to TURN``: a branch at that turn with the workspace restored (undoable)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dsh.cli.common import JsonOption, StoreOption, fail, run_async, user_errors, write_json_line
from dsh.cli.tables import terminal_safe
from dsh.errors import UsageError

if TYPE_CHECKING:
    from dsh.loop.rewind import Confirm, Rewound
    from dsh.workspace import RestorePlan


def _ask(yes: bool) -> Confirm | None:
    """The rewind's ``confirm``: ``None`` with --yes, else ask on the terminal (none: refuse)."""

    async def confirm(plan: RestorePlan) -> bool:
        what = f"overwrite {len(plan.write)} and delete {len(plan.delete)} file(s) in the workspace"
        names = ", ".join(terminal_safe(p) for p in [*plan.write, *plan.delete][:5])
        if not sys.stdin.isatty():
            fail(f"{what} ({names}) — refusing without a terminal to confirm on: pass --yes", 2)
        return typer.confirm(f"{what} ({names})?", default=False, err=True)

    return None if yes else confirm


def rewind(
    session_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="The session to rewind (a unique prefix works).", show_default=False
        ),
    ],
    to: Annotated[
        int | None,
        typer.Option("--to", metavar="TURN", help="The completed turn to go back to.", show_default=False),
    ] = None,
    conversation_only: Annotated[
        bool, typer.Option("--conversation-only", help="Branch at the turn; leave the files as they are.")
    ] = False,
    files_only: Annotated[
        bool,
        typer.Option("--files-only", help="Restore the files only (the branch keeps every completed turn)."),
    ] = False,
    undo: Annotated[
        bool,
        typer.Option("--undo", help="ID is a rewind's branch: put back the files its last rewind replaced."),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Overwrite files without asking.")] = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rewind a session to a completed turn: a new branch there, with the workspace's files as they were.

    dsh run, chat and acp checkpoint the workspace after every turn (content-addressed in the
    store; .gitignore'd files, .git/, symlinks and files over 8 MiB are left out and never
    touched). The rewind makes a top-level branch at TURN (continue it with dsh run --resume
    BRANCH), checkpoints the files as they are now, then writes back those of TURN and
    deletes files that did not exist then; it is logged in the branch, and the original
    session is untouched. Asks before overwriting (--yes in scripts; without a terminal
    --yes is required). Undo with dsh rewind BRANCH --undo. With --json: {"session",
    "written", "deleted", "restored", "replaced"}.
    """
    from dsh.cli.resolve import resolve_id
    from dsh.loop.rewind import rewind_session, undo_rewind
    from dsh.store.url import open_store

    with user_errors():
        if undo == (to is not None):
            raise UsageError("dsh rewind: give --to TURN, or --undo (not both)")

    async def body() -> Rewound:
        s = open_store(store, create=False)
        try:
            sid = await resolve_id(s, session_id)
            cwd = (await s.load(sid)).header.cwd
            if cwd is None:
                raise UsageError(f"session {sid} has no recorded workspace (cwd) to restore")
            confirm = _ask(yes)
            root = Path(cwd)
            if undo:
                return await undo_rewind(s, sid, root=root, confirm=confirm)
            assert to is not None
            return await rewind_session(
                s, sid, to, root=root, files=not conversation_only, conversation=not files_only,
                confirm=confirm,
            )  # fmt: skip
        finally:
            await s.close()

    done = run_async(body)
    with user_errors():
        if as_json:
            write_json_line(
                {
                    "session": done.session,
                    "written": done.plan.write,
                    "deleted": done.plan.delete,
                    "restored": done.restored,
                    "replaced": done.replaced,
                }
            )
            return
        files = f"wrote {len(done.plan.write)}, deleted {len(done.plan.delete)} file(s)"
        if undo:
            typer.echo(f"undid the last rewind of {done.session}: {files}")
            return
        undo_hint = f"; undo: dsh rewind {done.session} --undo" if done.replaced else ""
        typer.echo(f"rewound {terminal_safe(session_id)} to turn {to} -> {done.session}: {files}{undo_hint}")
