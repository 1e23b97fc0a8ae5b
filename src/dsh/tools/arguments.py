"""Argument checks against a tool's JSON Schema, worded as the original words its violations.

``violations(schema, value)`` walks the advertised ``parameters`` schema (``type``,
``enum``, ``required``, ``properties``, ``items``, ``additionalProperties: false``, ``$ref``
into ``$defs``, ``anyOf``) and returns one text per problem::

    missing required property "file_path"
    "offset" must be a number            (a string, an integer, a boolean, an array, an object, null)
    "mode" must be one of ["a","b"]
    "p.k" is not a declared property (additionalProperties: false)

The top-level object allows undeclared keys (the original ignores them). Required
properties are checked first, then the declared properties in order, then undeclared keys
of closed nested objects. Nested paths read ``"points[0].x"``.
"""

from __future__ import annotations

from typing import Any

from dsh.jsonx import dumps

_ARTICLE = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def _is(kind: str, value: Any) -> bool:
    match kind:
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "integer":
            if isinstance(value, bool):
                return False
            return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
        case "null":
            return value is None
    return True


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _quoted(path: str) -> str:
    return f'"{path or "arguments"}"'


class _Checker:
    def __init__(self, root: dict[str, Any]) -> None:
        self._defs: dict[str, Any] = root.get("$defs", {})
        self.problems: list[str] = []

    def _deref(self, schema: Any) -> Any:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 32:
            ref = str(schema["$ref"])
            name = ref.rsplit("/", 1)[-1]
            schema = self._defs.get(name, {})
            seen += 1
        return schema

    def check(self, schema: Any, value: Any, path: str, *, top: bool = False) -> None:
        schema = self._deref(schema)
        if not isinstance(schema, dict):
            return
        options = schema.get("anyOf")
        if isinstance(options, list) and options:
            trials = []
            for option in options:
                trial = _Checker({})
                trial._defs = self._defs
                trial.check(option, value, path)
                if not trial.problems:
                    return
                trials.append(trial.problems)
            self.problems.extend(trials[0])
            return
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if kinds and not any(_is(k, value) for k in kinds):
            self.problems.append(f"{_quoted(path)} must be {' or '.join(_ARTICLE.get(k, k) for k in kinds)}")
            return
        enum = schema.get("enum")
        if isinstance(enum, list) and value not in enum:
            self.problems.append(f"{_quoted(path)} must be one of {dumps(enum).decode()}")
            return
        if isinstance(value, dict):
            self._object(schema, value, path, top=top)
        elif isinstance(value, list) and "items" in schema:
            for i, item in enumerate(value):
                self.check(schema["items"], item, f"{path}[{i}]")

    def _object(self, schema: dict[str, Any], value: dict[str, Any], path: str, *, top: bool) -> None:
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            properties = {}
        for name in schema.get("required", []):
            if name not in value:
                self.problems.append(f'missing required property "{_join(path, str(name))}"')
        for name, sub in properties.items():
            if name in value:
                self.check(sub, value[name], _join(path, name))
        if not top and schema.get("additionalProperties") is False:
            for name in value:
                if name not in properties:
                    self.problems.append(
                        f'"{_join(path, name)}" is not a declared property (additionalProperties: false)'
                    )


def violations(schema: dict[str, Any], value: Any) -> list[str]:
    """Every way ``value`` breaks the tool ``schema`` (empty when it conforms)."""
    if not isinstance(value, dict):
        return ['"arguments" must be an object']
    checker = _Checker(schema)
    checker.check(schema, value, "", top=True)
    return checker.problems
