"""Each written payload's shape is stated once, by its TypedDict (``dsh.events.shapes.PAYLOADS``):
the store codec accepts every valid instance, refuses every key of the wrong JSON type, and
refuses every missing required key but those ``READ_LENIENT`` declares (older and foreign logs)."""

from __future__ import annotations

import types
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

import pytest

from dsh.errors import EventShapeError
from dsh.events.shapes import PAYLOADS, is_typeddict, json_fields
from dsh.store.codec import READ_LENIENT, check_data_shape

WRONG: tuple[object, ...] = (None, 7, "x", True, {}, [])


def sample(annotation: Any, depth: int = 0) -> Any:
    """A valid value of ``annotation`` (every key of a TypedDict, the first member of a union;
    a recursive list, as a block's content, empty below three levels)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Required, NotRequired):
        return sample(args[0], depth)
    if origin is Literal:
        return args[0]
    if origin is Union or origin is types.UnionType:
        return sample(next(a for a in args if a is not type(None)), depth)
    if origin is list:
        return [sample(args[0], depth + 1)] if depth < 3 else []
    if origin is dict or annotation is dict:
        return {}
    if is_typeddict(annotation):
        return {f.key: sample(f.annotation, depth) for f in json_fields(annotation)}
    return {int: 3, str: "text", bool: True}.get(annotation, "any")


def _accepts(etype: str, data: object) -> bool:
    try:
        check_data_shape(etype, 0, data, "test")
    except EventShapeError:
        return False
    return True


CASES = sorted(PAYLOADS.items())


@pytest.mark.parametrize(("etype", "typed"), CASES, ids=[e for e, _ in CASES])
def test_the_codec_accepts_every_valid_payload(etype: str, typed: Any) -> None:
    full = sample(typed)
    required = {k: v for k, v in full.items() if any(f.key == k and f.required for f in json_fields(typed))}
    assert _accepts(etype, full), full
    assert _accepts(etype, required), required


@pytest.mark.parametrize(("etype", "typed"), CASES, ids=[e for e, _ in CASES])
def test_the_codec_refuses_each_key_of_the_wrong_type(etype: str, typed: Any) -> None:
    full = sample(typed)
    for field in json_fields(typed):
        if field.types is None:
            continue
        for wrong in (w for w in WRONG if type(w) not in field.types):
            assert not _accepts(etype, {**full, field.key: wrong}), f"{etype}.{field.key} = {wrong!r}"


@pytest.mark.parametrize(("etype", "typed"), CASES, ids=[e for e, _ in CASES])
def test_the_codec_refuses_each_missing_required_key(etype: str, typed: Any) -> None:
    full = sample(typed)
    lenient = READ_LENIENT.get(etype, frozenset())
    for field in json_fields(typed):
        if not field.required:
            continue
        without = {k: v for k, v in full.items() if k != field.key}
        assert _accepts(etype, without) is (field.key in lenient), f"{etype} without {field.key}"


def test_the_lenient_keys_are_keys_of_their_typeddicts() -> None:
    for etype, keys in READ_LENIENT.items():
        required = {f.key for f in json_fields(PAYLOADS[etype]) if f.required}
        assert keys <= required, etype
