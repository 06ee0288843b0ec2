"""Generate the scenario-key reference (Markdown) from the schema itself, so it can't drift.

python -m asyncfl reference > docs.md
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from asyncfl.config.base import Distribution
from asyncfl.config.loading import _strip, _tag_of, _union_members
from asyncfl.config.schema import Scenario


def reference_markdown() -> str:
    lines = [
        "| key | allowed values | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    _walk(Scenario, "", lines)
    lines += ["", "Distributions (per-client values): a plain number means `{dist: constant, value: number}`.", ""]
    lines += ["| dist | keys | meaning |", "| --- | --- | --- |"]
    for member in _union_members(_strip(Distribution)):
        keys = ", ".join(f"`{k}`" for k in member.model_fields if k != "dist")
        lines.append(f"| `{_tag_of(member)}` | {keys} | {(member.__doc__ or '').strip()} |")
    return "\n".join(lines)


START, END = "<!-- reference:start -->", "<!-- reference:end -->"


def update_block(path) -> None:
    """Replace the text between the reference markers of a Markdown file with the current reference."""
    text = open(path, encoding="utf-8").read()
    head, sep, rest = text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"{path}: no {START} ... {END} block")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{head}{START}\n{reference_markdown()}\n{END}{tail}")


def _walk(model: type[BaseModel], prefix: str, lines: list[str]) -> None:
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        annotation = _strip(field.annotation)
        members = _union_members(annotation)
        if members is not None and "dist" in members[0].model_fields:
            lines.append(f"| `{path}` | a distribution (below) | {_default(field)} | {_doc(field)} |")
        elif members is not None:
            tag_key = next(k for k in ("name", "kind", "dist") if k in members[0].model_fields)
            tags = ", ".join(f"`{_tag_of(m)}`" for m in members)
            lines.append(f"| `{path}.{tag_key}` | {tags} | {_default(field, tag_key)} | {_doc(field)} |")
            for member in members:
                _walk_variant(member, path, tag_key, lines)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            _walk(annotation, f"{path}.", lines)
        else:
            lines.append(f"| `{path}` | {_allowed(field.annotation, field)} | {_default(field)} | {_doc(field)} |")


def _walk_variant(member: type[BaseModel], path: str, tag_key: str, lines: list[str]) -> None:
    tag = _tag_of(member)
    for name, field in member.model_fields.items():
        if name == tag_key:
            continue
        sub = _strip(field.annotation)
        if isinstance(sub, type) and issubclass(sub, BaseModel) and _union_members(sub) is None:
            _walk(sub, f"{path}.{name}.", lines)
            continue
        lines.append(
            f"| `{path}.{name}` (when {tag_key} = `{tag}`) | {_allowed(field.annotation, field)} | "
            f"{_default(field)} | {_doc(field)} |"
        )


def _allowed(annotation: Any, field: Any) -> str:
    tp = _strip(annotation)
    if typing.get_origin(tp) is typing.Literal:
        return ", ".join(f"`{v}`" for v in typing.get_args(tp))
    members = _union_members(tp)
    if members is not None:
        return "number, or {" + "dist: " + "/".join(str(_tag_of(m)) for m in members) + ", ...}"
    bounds = [f"{op} {getattr(m, attr)}" for m in field.metadata for attr, op in
              (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")) if getattr(m, attr, None) is not None]  # fmt: skip
    name = getattr(tp, "__name__", str(tp)).replace("typing.", "")
    optional = " or null" if type(None) in typing.get_args(annotation) else ""
    return f"{name}{' ' + ', '.join(bounds) if bounds else ''}{optional}"


def _default(field: Any, key: str | None = None) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    if key is not None and isinstance(value, (BaseModel, dict)):
        value = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_defaults=False)
    if isinstance(value, dict) and value.get("dist") == "constant":
        value = value["value"]
    return f"`{value}`" if value is not None else "null"


def _doc(field: Any) -> str:
    return (field.description or "").replace("|", "\\|")
