"""Pydantic's validation errors as the messages users read: one line per problem, naming its YAML path
(without pydantic's union tags) and the allowed values, with a did-you-mean hint for unknown keys."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Mapping

from pydantic import BaseModel, ValidationError


def problems_message(exc: ValidationError, root: type[BaseModel], source: str) -> str:
    """Every problem of ``exc`` (raised validating ``root``) as one paragraph starting with ``source``."""
    problems = [describe(error, root) for error in exc.errors()]
    return f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems)


def describe(error: Mapping[str, Any], root: type[BaseModel]) -> str:
    path, parent = _clean_path(tuple(error["loc"]), root)
    where = ".".join(path) if path else "(top level)"
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = sorted(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(path[-1]), allowed, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return f"{where}: unknown key.{hint} Allowed here: {', '.join(allowed)}."
    message = error["msg"].removeprefix("Value error, ")
    if kind == "union_tag_invalid":
        ctx = error["ctx"]
        key = ctx["discriminator"].strip("'")
        return f"{where}.{key}: unknown value {ctx['tag']!r}; allowed: {ctx['expected_tags']}."
    if kind == "union_tag_not_found":
        return f"{where}: the key {error['ctx']['discriminator']} is required to say which kind this is."
    if not path:
        return f"{message}."
    if kind in ("literal_error", "enum"):
        return f"{where}: {message} (got {error.get('input')!r})."
    if kind == "missing":
        return f"{where}: required key is missing."
    if "input" in error and not isinstance(error["input"], (dict, list)):
        return f"{where}: {message} (got {error['input']!r})."
    return f"{where}: {message}."


def _clean_path(loc: tuple[Any, ...], root: type[BaseModel]) -> tuple[list[str], type[BaseModel] | None]:
    """Turn pydantic's location (which includes union tags) into the YAML path, and find the model
    that owns the last key (for the did-you-mean hint)."""
    path: list[str] = []
    current: Any = root
    owner: type[BaseModel] | None = root
    for part in loc:
        members = union_members(current)
        if members is not None:  # a tagged union: this part is the tag, not a YAML key
            current = next((m for m in members if tag_of(m) == part), None)
            owner = current if _is_model(current) else None
            continue
        if _is_model(current) and isinstance(part, str) and part in current.model_fields:
            owner = current
            path.append(part)
            current = strip_wrappers(current.model_fields[part].annotation)
        elif isinstance(part, int):
            path[-1:] = [f"{path[-1]}[{part}]"] if path else [f"[{part}]"]
            args = typing.get_args(current)
            current = strip_wrappers(args[0]) if args else None
        else:
            path.append(str(part))
            owner = current if _is_model(current) else owner
            current = None
    return path, owner


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def strip_wrappers(tp: Any) -> Any:
    """Remove Annotated[...] and Optional[...] wrappers."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
            else:
                return tp
        else:
            return tp


def union_members(tp: Any) -> list[Any] | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if _is_model(a)]
        return members if members and all(tag_of(m) is not None for m in members) else None
    return None


def tag_of(model: Any) -> str | None:
    for key in ("name", "kind", "dist"):
        field = model.model_fields.get(key)
        if field is not None and typing.get_origin(field.annotation) is typing.Literal:
            return typing.get_args(field.annotation)[0]
    return None
