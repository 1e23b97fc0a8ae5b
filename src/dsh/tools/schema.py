"""Tool argument models: the ``ToolArgs`` bases and the JSON Schema the model sees.

The schema has the original's shape: ``{"type": "object", "properties", "required"?}``
(no ``required`` when nothing is required, no ``additionalProperties`` at the top: the
original accepts and ignores undeclared top-level keys), and each top-level property keeps
only ``type``, ``description`` and ``enum`` (plus ``items``/``properties``/``$ref`` for
structured values). Nested objects stay closed (``additionalProperties: false``).
"""

from __future__ import annotations

import copy
import functools
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, WithJsonSchema

_FIRST_KEYS = ("type", "description", "properties", "items", "required", "additionalProperties")
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
_PROPERTY_KEYS = ("type", "description", "enum", "items", "properties", "required", "additionalProperties")
_STRUCTURE_KEYS = ("$ref", "anyOf")

Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
"""A JSON number (integer or not), advertised as ``{"type": "number"}`` like the original's."""


class ToolArgs(BaseModel):
    """Base for a tool's top-level arguments: undeclared keys are ignored, values immutable."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class ClosedArgs(BaseModel):
    """Base for nested argument objects: undeclared keys are refused (``additionalProperties: false``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _clean(node: Any) -> Any:
    """Drop pydantic's ``title`` noise and put the usual keys first, recursively."""
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key in (*_FIRST_KEYS, *sorted(k for k in node if k not in _FIRST_KEYS)):
        if key not in node or key == "title":
            continue
        value = node[key]
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _clean(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS or key in ("items", "additionalProperties", "not"):
            out[key] = _clean(value)
        else:
            out[key] = value
    return out


def _optional(prop: Any) -> Any:
    """An optional property as the model should see it: ``T`` rather than ``T | null``."""
    if not isinstance(prop, dict):
        return prop
    out = dict(prop)
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options) and isinstance(kept[0], dict):
            del out["anyOf"]
            out = _clean({**kept[0], **out})
    return out


def _property(prop: Any) -> Any:
    """A top-level property reduced to the original's keys (defaults and bounds are not sent)."""
    if not isinstance(prop, dict):
        return prop
    keys = (*_PROPERTY_KEYS, *_STRUCTURE_KEYS)
    return {key: prop[key] for key in keys if key in prop}


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema for ``model`` as a tool's ``parameters`` (a fresh copy each call).

    The root is ``{"type": "object", "properties": ..., "required"?: [...]}`` (plus
    ``$defs`` when there are nested models); titles are removed everywhere (property names
    are kept, even a property called ``title``); the model's docstring is not sent; an
    optional ``T | None`` argument is shown as ``T``. Computed once per model class: every
    agent registers the same standard tools, and pydantic's schema generation is the
    costliest part of building a registry.
    """
    return copy.deepcopy(_schema_of(model))


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """:func:`parameters_schema`'s value, shared: never handed out without a copy."""
    cleaned: dict[str, Any] = _clean(model.model_json_schema())
    properties: dict[str, Any] = cleaned.pop("properties", {})
    required = cleaned.pop("required", None) or []
    root: dict[str, Any] = {
        "type": "object",
        "properties": {
            name: _property(prop if name in required else _optional(prop))
            for name, prop in properties.items()
        },
    }
    if required:
        root["required"] = required
    for key in ("type", "additionalProperties", "description"):
        cleaned.pop(key, None)
    root.update(cleaned)
    return root
