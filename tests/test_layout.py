"""The package's layout shows its architecture: models, data, grading; no cycles, no hidden imports."""

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "seqlab"

# Which part of the package may import which: every module belongs to the part of its folder, and the
# rule covers every module found below, with no list that could leave one out.
MAY_IMPORT = {
    "core": {"core"},  # padding, checks, device: shared by everything, depending on nothing
    "models": {"core", "models"},  # the models never load data, experiments or grading
    "data": {"core", "data"},  # the tasks need the padding conventions, never a model
    "experiments": {"core", "models", "data", "experiments"},  # training, measuring, plotting
    "grading": {"grading"},  # the grading machinery stands alone
    "": {"core"},  # seqlab/__init__.py
}

def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
MODEL_MODULES = sorted(name for name in MODULES if name.startswith("seqlab.models."))


def part(module: str) -> str:
    """The folder of seqlab a module lives in ("" for the package's own __init__)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def seqlab_imports(path: Path) -> list[tuple[str, int]]:
    """``(imported seqlab module, line)`` for every import statement of a module, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name.startswith("seqlab")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("seqlab"):
            for alias in node.names:  # `from seqlab.models import rnn` imports the module seqlab.models.rnn
                submodule = f"{node.module}.{alias.name}"
                found.append((submodule if submodule in MODULES else node.module, node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append((f"<relative import {node.module}>", node.lineno))
    return found


def graph() -> dict:
    return {name: {imported for imported, _ in seqlab_imports(path)} for name, path in MODULES.items()}


def test_every_import_names_an_existing_module():
    for path in MODULES.values():
        for imported, line in seqlab_imports(path):
            assert imported in MODULES, f"{path.relative_to(ROOT)}:{line} imports {imported}, which is not a module"


def test_the_import_graph_has_no_cycle():
    edges, state, stack = graph(), {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_no_import_is_hidden_in_a_function_or_a_module_getattr():
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
        for function in functions:
            if function.name == "__getattr__" and function in tree.body:
                pytest.fail(f"{name}: a module __getattr__ (line {function.lineno}) hides where names come from")
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    names = [getattr(node, "module", None) or ""] + [alias.name for alias in node.names]
                    if any(n.startswith("seqlab") for n in names):
                        pytest.fail(f"{name}: a seqlab import inside {function.name}() (line {node.lineno})")


def test_every_module_is_in_a_part_of_the_package():
    loose = sorted(name for name, path in MODULES.items() if path.parent == PACKAGE and name != "seqlab")
    assert not loose, f"{loose} sit at the package's root: put each in models/, core/, experiments/, data/ or grading/"
    assert {part(name) for name in MODULES} <= set(MAY_IMPORT), "a folder of seqlab has no rule in MAY_IMPORT"


def test_each_part_imports_only_what_it_may():
    for name, imported in graph().items():
        for other in imported:
            assert part(other) in MAY_IMPORT[part(name)], f"{name} ({part(name) or 'root'}) imports {other}"


def test_models_load_neither_the_data_nor_the_grading():
    # In a fresh interpreter: importing every model module must not import any task generator.
    code = (
        "import sys\n"
        f"import {', '.join(MODEL_MODULES)}\n"
        "others = ('seqlab.data', 'seqlab.experiments', 'seqlab.grading')\n"
        "print(sorted(m for m in sys.modules if m.startswith(others)))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"importing the models loaded {loaded}"


def test_the_readme_names_every_module_and_only_existing_ones():
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`(seqlab(?:\.\w+)+)", readme))
    modules = {name for name in MODULES if name != "seqlab"}
    missing = sorted(m for m in modules if m not in named)
    assert not missing, f"the README's layout tables do not name {missing}"
    for dotted in sorted(named):  # a module, or a name in one: seqlab.grading.cli.main
        module = max((m for m in MODULES if dotted == m or dotted.startswith(m + ".")), key=len)
        owner = importlib.import_module(module)
        for attribute in dotted[len(module) + 1 :].split(".") if dotted != module else []:
            assert hasattr(owner, attribute), f"the README names {dotted}, which does not exist"
            owner = getattr(owner, attribute)
