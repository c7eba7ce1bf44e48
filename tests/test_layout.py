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

# The models a learner reads, with their decoding: they need the padding conventions, never the data.
MODEL_MODULES = [
    "seqlab.rnn",
    "seqlab.encoder",
    "seqlab.decoder",
    "seqlab.attention",
    "seqlab.attention_decoder",
    "seqlab.seq2seq",
    "seqlab.decoding",
    "seqlab.pointer",
    "seqlab.pooling",
    "seqlab.entailment",
    "seqlab.memory_seq2seq",
    "seqlab.captioning",
    "seqlab.listener",
    "seqlab.multihead",
    "seqlab.transformer",
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def seqlab_imports(path: Path) -> list[tuple[str, int]]:
    """``(imported seqlab module, line)`` for every import statement of a module, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name.startswith("seqlab")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("seqlab"):
            for alias in node.names:  # `from seqlab import rnn` imports the module seqlab.rnn
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


def test_only_grading_imports_grading():
    for name, imported in graph().items():
        if not name.startswith("seqlab.grading"):
            assert not {m for m in imported if m.startswith("seqlab.grading")}, f"{name} imports the grading machinery"


def test_models_load_neither_the_data_nor_the_grading():
    # In a fresh interpreter: importing every model module must not import any task generator.
    code = (
        "import sys\n"
        f"import {', '.join(MODEL_MODULES)}\n"
        "print(sorted(m for m in sys.modules if m.startswith(('seqlab.data', 'seqlab.grading'))))\n"
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
