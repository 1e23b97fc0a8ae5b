"""A worker's store identity (``dsh.temporal.sharing``) tells a JSONL root's two encodings apart:
a plain and a zstd worker over one directory are not one store (the root refuses one of them)."""

from __future__ import annotations

from pathlib import Path

from dsh.store import JsonlEventStore
from dsh.temporal.sharing import store_identity


def test_a_zstd_jsonl_worker_is_not_the_plain_one_over_the_same_root(tmp_path: Path) -> None:
    plain = store_identity(JsonlEventStore(tmp_path))
    zstd = store_identity(JsonlEventStore(tmp_path, compression="zstd"))
    assert str(plain).startswith("jsonl:") and str(zstd).startswith("jsonl+zstd:")
    assert plain != zstd and plain.key == zstd.key and not zstd.shared
    assert store_identity(JsonlEventStore(tmp_path, compression="zstd")) == zstd
