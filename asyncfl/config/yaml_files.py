"""Scenario and study files as plain data: YAML read safely (a key written twice is an error), trace
file names made relative to their file, and ``--set`` overrides.  Nothing here knows the schema."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

import yaml

from asyncfl.errors import ConfigError


def read_scenario(path: str | Path) -> dict[str, Any]:
    """A scenario file as a dict, with its trace file names made relative to the file's own folder
    (for a scenario a user wrote; a run's config.yaml already holds the resolved paths)."""
    raw = read_yaml(path)
    _resolve_trace_paths(raw, Path(path).parent)
    return raw


def read_yaml(path: str | Path) -> dict[str, Any]:
    if not isinstance(path, (str, PathLike)):
        hint = "; for a dict of keys, use Scenario.from_dict" if isinstance(path, Mapping) else ""
        raise ConfigError(f"expected the path of a YAML file (a str or pathlib.Path), got {type(path).__name__} "
                          f"{_short(path)}{hint}.")  # fmt: skip
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
    """Trace and partition files named in a scenario file are relative to that file, not to the working
    directory."""
    population = raw.get("population")
    population = population if isinstance(population, dict) else {}
    targets = [(population, "device_trace")]
    if isinstance(population.get("availability"), dict):
        targets.append((population["availability"], "file"))
    data = raw.get("data")
    if isinstance(data, dict) and isinstance(data.get("partition"), dict) and data["partition"].get("kind") == "file":
        targets.append((data["partition"], "path"))
    for section, key in targets:
        value = section.get(key)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            section[key] = str(folder / value)
    for changes in _study_sets(raw):  # a study's variants and sensitivity values name files the same way
        for dotted, value in list(changes.items()):
            parts = str(dotted).split(".")
            nested: dict[str, Any] = {}
            node = nested
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
            _resolve_trace_paths(nested, folder)
            changes[dotted] = node[parts[-1]]


def _study_sets(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``set`` mappings of a study's ``compare:`` variants and ``sensitivity.values`` (asyncfl.study)."""
    compare, sensitivity = raw.get("compare"), raw.get("sensitivity")
    sets = [item.get("set") for item in compare if isinstance(item, dict)] if isinstance(compare, list) else []
    if isinstance(sensitivity, dict) and isinstance(sensitivity.get("values"), dict):
        sets += list(sensitivity["values"].values())
    return [changes for changes in sets if isinstance(changes, dict)]


def override_list(overrides: Iterable[str], what: str = "overrides") -> list[str]:
    """``--set`` items handed over from Python (``overrides=``), checked: a list of ``'key=value'``
    strings.  One string alone would otherwise be read as a list of its characters."""
    if isinstance(overrides, (str, bytes)):
        return _not_a_list(what, f"got {type(overrides).__name__} {_short(overrides)}: wrap it in a list, "
                                 f"[{_short(overrides)}]")  # fmt: skip
    if isinstance(overrides, Mapping) or not isinstance(overrides, Iterable):
        return _not_a_list(what, f"got {type(overrides).__name__} {_short(overrides)}")
    items = list(overrides)
    for item in items:
        if not isinstance(item, str):
            _not_a_list(what, f"but its item {_short(item)} is {type(item).__name__}, not str")
    return items


def path_argument(value: Any, what: str) -> Path | None:
    """A directory handed over from Python (``out=``, ``out_dir=``) as a Path, None staying None; a ConfigError
    naming the argument ``what`` for anything that is not a path."""
    if value is None or isinstance(value, Path):
        return value
    if isinstance(value, str) or (isinstance(value, PathLike) and isinstance(value.__fspath__(), str)):
        return Path(value)
    raise ConfigError(f"{what}: expected a path (str or os.PathLike), got {type(value).__name__} {_short(value)}.")


def flower_run_config(value: Any, what: str = "run_config") -> dict[str, bool | int | float | str]:
    """Flower's run config handed over from Python, checked as ``flower.run_config`` is in YAML: a mapping of
    str keys to scalars (flwr's ``UserConfigValue``: bool, int, float, str); ConfigError naming ``what``."""
    allowed = "allowed: a dict of str keys to bool, int, float or str values, e.g. {'num-server-rounds': 3}"
    if not isinstance(value, Mapping):
        raise ConfigError(f"{what}: expected a mapping, got {type(value).__name__} {_short(value)}; {allowed}.")
    for key, item in value.items():
        if not isinstance(key, str):
            raise ConfigError(f"{what}: key {_short(key)} is {type(key).__name__}, not str; {allowed}.")
        if not isinstance(item, (bool, int, float, str)):
            raise ConfigError(
                f"{what}[{key!r}]: {type(item).__name__} {_short(item)} is no Flower run-config value (they are "
                f"flat: no nested mapping or list); {allowed}."
            )
    return dict(value)


def _not_a_list(what: str, problem: str) -> list[str]:
    raise ConfigError(f"{what} must be a list of 'key=value' strings such as ['server.k=5'], {problem}.")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def scenario_keys(data: Any, source: str = "<dict>", call: str = "Scenario.from_dict") -> dict[str, Any]:
    """``data`` handed over from Python as a scenario's keys: a mapping of sections, copied."""
    if not isinstance(data, Mapping):
        hint = f"; for a YAML file, use Scenario.from_yaml({_short(data)})" if isinstance(data, (str, Path)) else ""
        raise ConfigError(
            f"{source}: {call} takes a dict of sections (name, data, server, ...), got "
            f"{type(data).__name__} {_short(data)}{hint}."
        )
    return dict(data)


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
