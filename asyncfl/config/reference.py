"""Generate the scenario-key reference (Markdown) from the schema itself, so it can't drift.

python -m asyncfl reference > docs.md
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from asyncfl.config.problems import strip_wrappers, tag_of, union_members
from asyncfl.config.schema import scenario_model


def reference_markdown() -> str:
    lines = [
        "| key | allowed values | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    distributions: dict[str, type[BaseModel]] = {}
    _walk(scenario_model(), "", lines, (), distributions)
    lines += [
        "",
        "Distributions (per-client values): a plain number means `{dist: constant, value: number}`. An "
        "availability probability `p` takes a number, `uniform` or `tiers` with values in (0, 1], or "
        "`label_correlated` (for `p` only).",
        "",
    ]
    lines += ["| dist | keys (default) | meaning |", "| --- | --- | --- |"]
    for tag, member in distributions.items():
        lines.append(f"| `{tag}` | {_keys_with_defaults(member)} | {_class_doc(member, whole=True)} |")
    return "\n".join(lines)


START, END = "<!-- reference:start -->", "<!-- reference:end -->"


def update_block(path) -> None:
    """Replace the text between the reference markers of a Markdown file with the current reference."""
    text = open(path, encoding="utf-8").read()
    head, sep, rest = text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"{path}: no {START} ... {END} block")
    table = reference_markdown()  # before the file is opened for writing: an error must not truncate it
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{head}{START}\n{table}\n{END}{tail}")


def _walk(
    model: type[BaseModel],
    prefix: str,
    lines: list[str],
    when: tuple[tuple[str, str], ...],
    distributions: dict[str, type[BaseModel]],
    skip: str | None = None,
) -> None:
    """One row per key of ``model``; every variant of every tagged union is walked, its rows marked
    with the tag values they need (``when``)."""
    for name, field in model.model_fields.items():
        if name == skip:
            continue
        path = f"{prefix}{name}"
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if "allowed" in extra:  # a field that spells out its own allowed values
            lines.append(_row(path, when, extra["allowed"], _default(field), _doc(field)))
            for arg in typing.get_args(strip_wrappers(field.annotation)):  # the keys of a list of mappings
                item = typing.get_args(arg)[0] if typing.get_origin(arg) is list else None
                if isinstance(item, type) and issubclass(item, BaseModel):
                    _walk(item, f"{path}.", lines, when, distributions)
            continue
        annotation = strip_wrappers(field.annotation)
        members = union_members(annotation)
        if members is not None and "dist" in members[0].model_fields:  # a number or {dist: ...}
            for member in members:
                distributions.setdefault(tag_of(member), member)
            tags = ", ".join(f"`{tag_of(m)}`" for m in members)
            lines.append(_row(path, when, f"a number, or a distribution: {tags} (below)", _default(field), _doc(field)))
        elif members is not None:
            tag_key = next(k for k in ("name", "kind", "dist") if k in members[0].model_fields)
            tags = ", ".join(f"`{tag_of(m)}`" for m in members)
            meaning = "; ".join(filter(None, [_doc(field)] + [f"`{tag_of(m)}`: {_class_doc(m)}" for m in members
                                                               if tag_key != "name" and _class_doc(m)]))  # fmt: skip
            lines.append(_row(f"{path}.{tag_key}", when, tags, _default(field, tag_key), meaning))
            for member in members:
                condition = (f"{path}.{tag_key}", str(tag_of(member)))
                _walk(member, f"{path}.", lines, (*when, condition), distributions, skip=tag_key)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            _walk(annotation, f"{path}.", lines, when, distributions)
        else:
            lines.append(_row(path, when, _allowed(field.annotation, field), _default(field), _doc(field)))


def _row(path: str, when: tuple[tuple[str, str], ...], allowed: str, default: str, meaning: str) -> str:
    condition = f" (when {', '.join(f'`{key}` = `{tag}`' for key, tag in when)})" if when else ""
    return f"| `{path}`{condition} | {allowed} | {default} | {meaning} |"


def _keys_with_defaults(member: type[BaseModel]) -> str:
    parts = []
    for name, field in member.model_fields.items():
        if name == "dist":
            continue
        nested = [m for m in typing.get_args(strip_wrappers(field.annotation)) if isinstance(m, type) and
                  issubclass(m, BaseModel)]  # fmt: skip
        if nested:  # tiers: a list of mappings
            parts.append(f"`{name}`: a list of {{{', '.join(f'`{k}`' for k in nested[0].model_fields)}}}")
        else:
            default = _default(field)
            parts.append(f"`{name}`" if default == "required" else f"`{name}` ({default})")
    return ", ".join(parts)


def _class_doc(member: type[BaseModel], whole: bool = False) -> str:
    """The first paragraph of a class docstring (or all of it), on one line."""
    doc = (member.__doc__ or "").strip()
    doc = doc if whole else doc.split("\n\n")[0]
    return " ".join(doc.split()).replace("|", "\\|")


def _allowed(annotation: Any, field: Any) -> str:
    tp = strip_wrappers(annotation)
    if typing.get_origin(tp) is typing.Literal:
        return ", ".join(f"`{v}`" for v in typing.get_args(tp))
    members = union_members(tp)
    if members is not None:
        return "number, or {" + "dist: " + "/".join(str(tag_of(m)) for m in members) + ", ...}"
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
