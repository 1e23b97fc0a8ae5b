"""The front matter of a ``SKILL.md``: the small YAML subset skills use (scalars, block scalars)."""

from __future__ import annotations

import re

from dsh.errors import SkillFileError as FrontMatterError

_KEY = re.compile(r"^([A-Za-z0-9_-]+):(?:\s+(.*)|\s*)$")


def split(text: str) -> tuple[dict[str, str | dict[str, str]], str]:
    """The front matter's top-level keys (nested maps one level deep) and the body after it."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise FrontMatterError("the first line is not ---")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip("\r") == "---")
    except StopIteration:
        raise FrontMatterError("the front matter has no closing ---") from None
    fields: dict[str, str | dict[str, str]] = {}
    block = [line.rstrip("\r") for line in lines[1:end]]
    i = 0
    while i < len(block):
        line = block[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY.match(line)
        if match is None:
            raise FrontMatterError(f"cannot read front matter line {i + 1}: {line.strip()[:60]!r}")
        key, raw = match.group(1), (match.group(2) or "").strip()
        nested: list[str] = []
        while i < len(block) and (block[i].startswith((" ", "\t")) or not block[i].strip()):
            nested.append(block[i])
            i += 1
        if raw in ("|", ">", "|-", ">-", "|+", ">+"):
            fields[key] = _block_scalar(raw, nested)
        elif not raw and any(n.strip() for n in nested):
            fields[key] = dict(_pair(n) for n in nested if n.strip())
        else:
            fields[key] = _scalar(raw + "".join(" " + n.strip() for n in nested if n.strip()))
    return fields, "\n".join(lines[end + 1 :]).strip()


def _pair(line: str) -> tuple[str, str]:
    match = _KEY.match(line.strip())
    if match is None:
        raise FrontMatterError(f"cannot read nested front matter line {line.strip()[:60]!r}")
    return match.group(1), _scalar((match.group(2) or "").strip())


def _scalar(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1].replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    if raw[:1] in ('"', "'"):
        raise FrontMatterError(f"unterminated quoted value {raw[:60]!r}")
    return raw.split(" #", 1)[0].strip()


def _block_scalar(style: str, lines: list[str]) -> str:
    body = [line.strip() for line in lines]
    while body and not body[-1]:
        body.pop()
    if style.startswith("|"):
        return "\n".join(body)
    return " ".join(b for b in body if b)


TRUE = frozenset({"true", "yes", "on", "1"})
FALSE = frozenset({"false", "no", "off", "0"})


def flag(value: object, key: str) -> bool | None:
    """A boolean-ish value (``true/false/yes/no/on/off/1/0``); absent ⇒ ``None``."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise FrontMatterError(f"{key} must be true or false, got {str(value)[:40]!r}")
