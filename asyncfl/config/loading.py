"""YAML in, a validated :class:`Scenario` out, or one :class:`ConfigError` naming every bad YAML path."""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml
from pydantic import BaseModel, ValidationError

from asyncfl.config.schema import Scenario
from asyncfl.errors import ConfigError
from asyncfl.sim.availability import kind_of
from asyncfl.sim.profiles import read_device_trace


def load_scenario(path: str | Path, overrides: Iterable[str] = ()) -> Scenario:
    """Read ``path``, apply ``--set key=value`` overrides and validate."""
    raw = read_scenario(path)
    for item in overrides:
        apply_override(raw, item)
    return validate_scenario(raw, source=str(path))


def read_scenario(path: str | Path) -> dict[str, Any]:
    """A scenario file as a dict, with its trace file names made relative to the file's own folder
    (for a scenario a user wrote; a run's config.yaml already holds the resolved paths)."""
    raw = read_yaml(path)
    _resolve_trace_paths(raw, Path(path).parent)
    return raw


def read_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        hint = " (it is a directory)" if path.is_dir() else ""
        raise ConfigError(f"{path}: scenario file not found{hint}.")
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except DuplicateKeyError as exc:
        raise ConfigError(f"{path}: {exc.lines()}; {DUPLICATE_HINT}.") from None
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (expected UTF-8 YAML).") from None
    if raw is None:  # running every default instead would hide a wrong or truncated file
        raise ConfigError(
            f"{path}: the file is empty (no keys, only comments or blank lines), so it sets nothing; write the "
            "keys of a scenario (python -m asyncfl reference lists them), or {} to run every default."
        )
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: the top level must be a mapping of keys (name, data, server, ...), got {type(raw).__name__}."
        )
    return raw


class DuplicateKeyError(yaml.YAMLError):
    """Keys written twice in one mapping: ``twice`` holds (YAML path, first line, second line) of each."""

    def __init__(self, twice: list[tuple[str, int, int]]) -> None:
        super().__init__(twice)
        self.twice = twice

    def lines(self) -> str:
        """Each key with both of its lines, for a file."""
        return "; ".join(
            f"{where} is set at line {first} and again at line {again}" for where, first, again in self.twice
        )

    def keys(self) -> str:
        """Each key, for a one-line value (``--set``)."""
        return "; ".join(f"{where} is set twice" for where, _, _ in self.twice)


DUPLICATE_HINT = "YAML would silently keep only the last value; write each key once"


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key written twice in one mapping is an error: the safe
    loader keeps the last value silently, so a second ``server:`` section would replace the first.
    ``under``: the YAML path the document sits at (a ``--set`` value), to name keys by their full path."""

    under = ""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        twice: list[tuple[str, int, int]] = []
        self._find_duplicates(node, self.under, set(), twice)
        if twice:
            raise DuplicateKeyError(twice)
        return self.construct_document(node)

    def _find_duplicates(self, node: yaml.Node, path: str, seen: set[int], twice: list) -> None:
        if id(node) in seen:  # an alias of a node already checked (or a recursive one)
            return
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._find_duplicates(item, f"{path}[{i}]", seen, twice)
        elif isinstance(node, yaml.MappingNode):
            first: dict[Any, yaml.Node] = {}
            for key_node, value_node in node.value:
                # ``<<: *base`` merges are meant to be overridden by the mapping's own keys
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                where = f"{path}.{key}" if path else str(key)
                if key in first:
                    twice.append((where, first[key].start_mark.line + 1, key_node.start_mark.line + 1))
                else:
                    first[key] = key_node
                self._find_duplicates(value_node, where, seen, twice)


def load_yaml(text: str, under: str = "") -> Any:
    """``text`` as YAML (safe types only); a key written twice in one mapping raises
    :class:`DuplicateKeyError`.  ``under``: the YAML path of the document (a ``--set`` value)."""
    loader = UniqueKeyLoader(text)
    loader.under = under
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _resolve_trace_paths(raw: dict[str, Any], folder: Path) -> None:
    """Trace files named in a scenario file are relative to that file, not to the working directory."""
    population = raw.get("population")
    if not isinstance(population, dict):
        return
    targets = [(population, "device_trace")]
    if isinstance(population.get("availability"), dict):
        targets.append((population["availability"], "file"))
    for section, key in targets:
        value = section.get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            section[key] = str(folder / value)


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one ``a.b.c=value`` override in place; the value is parsed as YAML (``5``, ``true``, ``[1, 2]``)."""
    key, sep, text = item.partition("=")
    parts = key.strip().split(".")
    if not sep or not all(parts):
        raise ConfigError(f"--set {item!r}: expected KEY.PATH=VALUE, e.g. --set server.k=5.")
    try:
        value = load_yaml(text, under=key.strip())
    except DuplicateKeyError as exc:
        raise ConfigError(f"--set {item!r}: {exc.keys()}; {DUPLICATE_HINT}.") from None
    except yaml.YAMLError:
        value = text
    dotted_parent(raw, parts, f"--set {item!r}")[parts[-1]] = value


def dotted_parent(raw: dict[str, Any], parts: list[str], where: str) -> dict[str, Any]:
    """The mapping that holds key ``parts[-1]`` of a dotted path, creating missing sections;
    ``where`` starts the error message when a step of the path is a value, not a section."""
    node = raw
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"{where}: {'.'.join(parts[: i + 1])} is a value, not a section.")
        node = child
    return node


def check_trace_files(scenario: Scenario) -> None:
    """Read the scenario's trace files as a run would, so that ``validate`` reports a missing file,
    a wrong header or a bad interval (with file and line) instead of the run failing later."""
    population = scenario.population
    if population.device_trace is not None:
        read_device_trace(population.device_trace, scenario.data.clients, population.compute.jitter_sigma)
    availability = population.availability
    check = kind_of(availability).check_files  # kinds that read files (trace) say how
    if check is not None:
        check(availability, scenario.data.clients)


def validate_scenario(raw: Mapping[str, Any], source: str = "<scenario>") -> Scenario:
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        problems = [_describe(error) for error in exc.errors()]
        raise ConfigError(f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems)) from None


def _describe(error: Mapping[str, Any]) -> str:
    path, parent = _clean_path(tuple(error["loc"]))
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


def _clean_path(loc: tuple[Any, ...]) -> tuple[list[str], type[BaseModel] | None]:
    """Turn pydantic's location (which includes union tags) into the YAML path, and find the model
    that owns the last key (for the did-you-mean hint)."""
    path: list[str] = []
    current: Any = Scenario
    owner: type[BaseModel] | None = Scenario
    for part in loc:
        members = _union_members(current)
        if members is not None:  # a tagged union: this part is the tag, not a YAML key
            current = next((m for m in members if _tag_of(m) == part), None)
            owner = current if _is_model(current) else None
            continue
        if _is_model(current) and isinstance(part, str) and part in current.model_fields:
            owner = current
            path.append(part)
            current = _strip(current.model_fields[part].annotation)
        elif isinstance(part, int):
            path[-1:] = [f"{path[-1]}[{part}]"] if path else [f"[{part}]"]
            args = typing.get_args(current)
            current = _strip(args[0]) if args else None
        else:
            path.append(str(part))
            owner = current if _is_model(current) else owner
            current = None
    return path, owner


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _strip(tp: Any) -> Any:
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


def _union_members(tp: Any) -> list[Any] | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if _is_model(a)]
        return members if members and all(_tag_of(m) is not None for m in members) else None
    return None


def _tag_of(model: Any) -> str | None:
    for key in ("name", "kind", "dist"):
        field = model.model_fields.get(key)
        if field is not None and typing.get_origin(field.annotation) is typing.Literal:
            return typing.get_args(field.annotation)[0]
    return None
