"""Workspace checkpoints: content-addressed manifests of a workspace's files, and restoring one.

:func:`~dsh.workspace.snapshot.scan` lists the files a checkpoint holds (``.gitignore``
respected, size caps), :class:`~dsh.workspace.snapshot.Checkpointer` stores them
incrementally through a :class:`~dsh.workspace.snapshot.Blobs` (an unchanged file costs a
``stat``), and :mod:`dsh.workspace.restore` plans and applies a restore.
"""

from dsh.workspace.restore import RestorePlan, apply_restore, plan_restore
from dsh.workspace.snapshot import Blobs, Checkpointer, Limits, Manifest

__all__ = ["Blobs", "Checkpointer", "Limits", "Manifest", "RestorePlan", "apply_restore", "plan_restore"]
