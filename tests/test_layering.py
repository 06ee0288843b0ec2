"""Layers only point down (docs/explanation/architecture.md section 2): the package's import graph, read with ast.

The graph has an edge A -> B for every ``import B`` / ``from B import ...`` in module A, at the top or
inside a function (a deferred import still runs, and may not dodge a circle) or under ``if
TYPE_CHECKING:`` (it never runs, but an annotation naming a module above is an upward reference all
the same: modules below the schema annotate its sections with their base, asyncfl.sections.Section).
Importing ``a.b.c`` runs the
package ``a.b`` first, but that is not an edge of the graph: a package's ``__init__`` imports its own
modules, and a module of it importing a sibling is no circle.

See the circles and upward edges with:  python -m pytest tests/test_layering.py -q
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "asyncfl"

# The command line and the Python API sit above everything; below them the sweeps (running many scenarios,
# then the analysis of what they wrote), then the analysis, which reads run directories only.
ABOVE_SWEEPS = ("asyncfl.__main__", "asyncfl.tools", "asyncfl.cli", "asyncfl.api")
ABOVE_ANALYSIS = (*ABOVE_SWEEPS, "asyncfl.sweep")
# the run loop and what it calls at each aggregation (the callbacks, checkpoints, the learning side)
RUN_LOOP = ("asyncfl.runner",)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str) -> set[str]:
    """What ``module`` imports: modules of the package by their full name, anything else by its top name."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:  # from a.b import c: the module a.b.c if it is one, else a.b
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {name if name in MODULES else name.split(".")[0] for name in found if name}


GRAPH = {module: _imports(module) - {module} for module in MODULES}


def _inside(module: str, *roots: str) -> bool:
    return any(module == root or module.startswith(root + ".") for root in roots)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start] & graph.keys())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child] & graph.keys()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _path_to(start: str, target) -> list[str] | None:
    """The first import chain from ``start`` to a module for which ``target`` holds (breadth first)."""
    seen, frontier = {start: [start]}, [start]
    while frontier:
        following = []
        for module in frontier:
            for child in sorted(GRAPH.get(module, ())):
                if child in seen:
                    continue
                seen[child] = seen[module] + [child]
                if target(child):
                    return seen[child]
                if child in GRAPH:
                    following.append(child)
        frontier = following
    return None


def _reaching(roots: tuple[str, ...], target) -> list[str]:
    """Every module under ``roots`` that reaches a ``target`` module, as its import chain."""
    chains = (_path_to(module, target) for module in MODULES if _inside(module, *roots))
    return [" -> ".join(chain) for chain in chains if chain]


def test_the_import_graph_has_no_circle():
    circles = _circles(GRAPH)
    edges = [f"{a} -> {b}" for circle in circles for a in circle for b in sorted(GRAPH[a] & set(circle))]
    assert not circles, "import circles (the edges inside them):\n" + "\n".join(edges)


def test_no_lazy_face_hides_an_edge():
    """A module-level ``__getattr__`` (PEP 562) or an ``importlib.import_module`` call imports what the
    graph above cannot see: allowed only at the top package face (``asyncfl.Scenario``), for the
    registries' discovery and for the lazy torch."""
    allowed = {
        "asyncfl": {"__getattr__", "import_module"},
        "asyncfl.registry": {"import_module"},
        "asyncfl.lazy": {"import_module"},
        "asyncfl.flower.apps": {"import_module"},
    }  # fmt: skip  (flower.apps: a user's app, 'module:attribute')
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"}
        names |= {"import_module" for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "import_module"}
        found += [f"{module}: {name}" for name in sorted(names - allowed.get(module, set()))]
    assert not found, "lazy imports the graph cannot follow:\n" + "\n".join(found)


def test_the_worlds_and_the_algorithms_never_reach_the_assembled_schema():
    """sim, learn and algorithms are below asyncfl.config: its Scenario is built from their registries."""
    chains = _reaching(("asyncfl.sim", "asyncfl.learn", "asyncfl.algorithms"), lambda m: _inside(m, "asyncfl.config"))
    assert not chains, "upward edges into asyncfl.config:\n" + "\n".join(chains)


def test_the_timing_world_never_reaches_torch():
    chains = _reaching(("asyncfl.sim",), lambda m: m == "torch")
    assert not chains, "asyncfl.sim reaching torch:\n" + "\n".join(chains)
    lazy_torch = [  # asyncfl.lazy also holds the lazy torch of the algorithm modules
        module
        for module, path in MODULES.items()
        if _inside(module, "asyncfl.sim")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and node.module == "asyncfl.lazy"
        and "torch" in {a.name for a in node.names}
    ]
    assert not lazy_torch, f"asyncfl.sim importing the lazy torch: {lazy_torch}"


def test_the_learning_world_never_reaches_simpy():
    chains = _reaching(("asyncfl.learn",), lambda m: m == "simpy")
    assert not chains, "asyncfl.learn reaching SimPy:\n" + "\n".join(chains)


def test_the_core_never_imports_the_analysis():
    edges = {
        (module, child)
        for module, children in GRAPH.items()
        if not _inside(module, "asyncfl.study", *ABOVE_ANALYSIS)
        for child in children
        if _inside(child, "asyncfl.study")
    }
    unknown = sorted(edges)
    assert not unknown, "core modules importing asyncfl.study:\n" + "\n".join(f"{a} -> {b}" for a, b in unknown)


def test_only_the_command_line_and_the_api_import_the_sweeps():
    edges = sorted(
        (module, child)
        for module, children in GRAPH.items()
        if not _inside(module, "asyncfl.sweep", *ABOVE_SWEEPS)
        for child in children
        if _inside(child, "asyncfl.sweep")
    )
    assert not edges, "modules below the sweeps importing asyncfl.sweep:\n" + "\n".join(f"{a} -> {b}" for a, b in edges)


def test_the_analysis_never_reaches_the_run_loop_or_the_sweeps():
    """study/ reads run directories: no import chain leads from it to the loop that writes them (it reaches
    the registries' sections through asyncfl.config, which is why sim modules are not named here)."""
    chains = _reaching(("asyncfl.study",), lambda m: _inside(m, "asyncfl.sweep", *RUN_LOOP))
    assert not chains, "asyncfl.study reaching the run loop or the sweeps:\n" + "\n".join(chains)


def test_flower_is_a_front_door_and_flwr_stays_in_it():
    """asyncfl.flower (Flower apps on the virtual clock) sits above the run loop and below the sweeps: only the
    command line and a sweep's run of a Flower scenario (asyncfl.sweep.jobs, at its one point of use, since
    ``flwr`` is an optional extra) import it, it reads its results through asyncfl.results (never the API, which
    runs sweeps), and ``flwr`` is imported by it alone."""
    importers = sorted(m for m, children in GRAPH.items() if any(_inside(c, "asyncfl.flower") for c in children)
                       and not _inside(m, "asyncfl.flower", "asyncfl.cli") and m != "asyncfl.sweep.jobs")  # fmt: skip
    assert not importers, f"modules importing asyncfl.flower: {importers}"
    assert not any(
        _inside(c, "asyncfl.api") for m, children in GRAPH.items() if _inside(m, "asyncfl.flower") for c in children
    )
    flwr_users = sorted(m for m, children in GRAPH.items() if "flwr" in children and not _inside(m, "asyncfl.flower"))
    assert not flwr_users, f"modules outside asyncfl.flower importing flwr: {flwr_users}"


def test_the_graph_sees_deferred_and_type_checking_imports():
    """The reading itself: a function-level import is an edge, and so is an annotation-only one."""
    assert "asyncfl.runner.checkpoint" in GRAPH["asyncfl.runner.start"]  # resume_run imports it when called
    assert "asyncfl.api" in GRAPH["asyncfl"]  # the package face names it under TYPE_CHECKING


def _loaded(module: str) -> set[str]:
    code = f"import sys\nimport {module}\nprint(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    return set(done.stdout.split())


def test_the_trainer_loads_no_simpy_and_the_clients_no_torch():
    trainer, clients = _loaded("asyncfl.learn.trainer"), _loaded("asyncfl.sim.clients")
    assert not {m for m in trainer if _inside(m, "simpy", "asyncfl.config", "asyncfl.sim")}
    assert not {m for m in clients if _inside(m, "torch", "asyncfl.config", "asyncfl.learn")}


def test_the_package_face_is_light():
    """``import asyncfl`` builds no schema; its public names load on first use."""
    assert not {m for m in _loaded("asyncfl") if _inside(m, "asyncfl.config", "pydantic", "torch", "simpy")}
    assert "asyncfl.config.schema" in _loaded("asyncfl\nasyncfl.Scenario")
