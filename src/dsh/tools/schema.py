"""Tool argument models: the ``ToolArgs`` base and the clean JSON Schema the model sees."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

_FIRST_KEYS = ("type", "description", "properties", "items", "required", "additionalProperties")
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})


class ToolArgs(BaseModel):
    """Base for argument models: unknown arguments are refused, values are immutable."""

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
    """An optional property as the model should see it: ``T`` rather than ``T | null``.

    The registry treats ``null`` for an optional argument as "absent", so advertising the
    null branch (and a ``null`` default) would only add noise.
    """
    if not isinstance(prop, dict):
        return prop
    out = dict(prop)
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options) and isinstance(kept[0], dict):
            del out["anyOf"]
            out = _clean({**kept[0], **out})
    if "default" in out and out["default"] is None:
        del out["default"]
    return out


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema for ``model`` as a tool's ``parameters``.

    The root is always ``{"type": "object", "properties": ..., "required"?: [...],
    "additionalProperties": false}``; titles are removed everywhere (property names are
    kept, even a property called ``title``); the model's docstring is not sent (the tool has
    its own description); an optional ``T | None`` argument is shown as ``T``; nested models
    stay under ``$defs``.
    """
    cleaned: dict[str, Any] = _clean(model.model_json_schema())
    root: dict[str, Any] = {"type": "object", "properties": cleaned.pop("properties", {})}
    required = cleaned.pop("required", None)
    if required:
        root["required"] = required
    root["properties"] = {
        name: prop if name in (required or ()) else _optional(prop)
        for name, prop in root["properties"].items()
    }
    root["additionalProperties"] = False
    for key in ("type", "additionalProperties", "description"):
        cleaned.pop(key, None)
    root.update(cleaned)
    return root
