"""Cells of a submission that touch the test machinery, listed for the instructor's review.

The verdict kernel (:mod:`seqlab.grading.verdict`) keeps the tests out of the student's reach, but the
guard that switches references off while a hidden test calls an answer runs where the student's code
runs, and an answer can try to get around it. :func:`findings` reads a cell's code (it never runs it)
and says where it does what an answer has no reason to do:

* change how IPython runs cells (input transformers, AST transformers, events, custom exceptions);
* change the interpreter (``sys.modules``, import hooks, tracing, builtins);
* assign to, or delete, an attribute of torch, numpy or seqlab (``torch.testing.assert_close = ...``,
  ``seqlab.grading.disabled = ...``), or ``setattr`` one;
* assign to an attribute of any module it imported (``pkgutil.resolve_name = ...``), or to an
  object's ``__class__``;
* reach into functions or modules (``__code__``, ``__globals__``, ``__closure__``, ``__dict__``), the
  garbage collector, ``importlib.reload`` or ``ctypes``;
* load a module's code a second time or read its source (``importlib.util.spec_from_file_location``,
  ``runpy``, ``inspect.getsource``, ``__import__``): a copy's functions are new objects, which the guard
  never switches off;
* import the grading machinery (``seqlab.grading.verdict``, ``seqlab.grading.references``, ...; not the
  tests' helpers such as ``check_tensor``), or name a reference that the hidden tests switch off (the
  lists of ``seqlab.grading.references``: ``from torch import gru_cell`` keeps torch's own cell past
  the guard, which cannot swap a builtin);
* call torch's internals (``torch._VF``, ``torch._C``, ``torch.ops``, however reached), or a private
  attribute of torch, numpy or seqlab by name (``getattr(torch, "_C")``);
* name a file outside the notebook's folder (a path that is absolute or climbs with ``..``);
* run code made at run time (``exec``, ``eval``, ``compile`` of anything but a literal).

A finding is a reason to look, not a verdict: the score stays what the tests gave.
"""

import ast

from seqlab.grading import references

__all__ = ["findings"]

IPYTHON = {
    "input_transformers_cleanup": "how IPython reads cells (an input transformer)",
    "input_transformers_post": "how IPython reads cells (an input transformer)",
    "input_transformer_manager": "how IPython reads cells (an input transformer)",
    "ast_transformers": "how IPython compiles cells (an AST transformer)",
    "events": "IPython's events (code run around every cell)",
    "set_custom_exc": "how IPython reports errors",
    "showtraceback": "how IPython reports errors",
}
INTERPRETER = {
    ("sys", "modules"): "the interpreter's loaded modules (sys.modules)",
    ("sys", "meta_path"): "how modules are imported (sys.meta_path)",
    ("sys", "path_hooks"): "how modules are imported (sys.path_hooks)",
    ("sys", "settrace"): "tracing (sys.settrace)",
    ("sys", "setprofile"): "tracing (sys.setprofile)",
    ("sys", "addaudithook"): "audit hooks (sys.addaudithook)",
    ("importlib", "reload"): "modules reloaded (importlib.reload)",
    ("gc", "get_objects"): "every object of the interpreter (gc.get_objects)",
    ("gc", "get_referrers"): "objects found through the garbage collector (gc.get_referrers)",
    ("gc", "get_referents"): "objects found through the garbage collector (gc.get_referents)",
}
FUNCTION_INSIDES = {"__code__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__", "__builtins__"}
FUNCTION_INSIDES |= {"__dict__"}
# Calls that load a module's code a second time (its functions new objects, out of the guard's reach), or
# its source.
LOADERS = {"spec_from_file_location", "module_from_spec", "exec_module", "SourceFileLoader", "SourcelessFileLoader"}
LOADERS |= {"load_module", "run_path", "run_module", "getsource", "getsourcelines", "__import__"}
LIBRARIES = ("torch", "numpy", "seqlab")
# seqlab.grading's modules that run the grading (the tests' helpers, check_tensor and disabled, are not)
GRADING_MACHINERY = {"verdict", "references", "executor", "sandbox", "autograde", "repair", "review"}
GRADING_MACHINERY |= {"nbgrader_plugins", "class_grading", "cli"}
INTERNALS = {"_VF", "_C", "ops"}  # torch._VF, torch._C, torch.ops
FILE_CALLS = {"open", "Path", "PurePath", "listdir", "scandir", "walk", "remove", "unlink", "rename", "replace"}
FILE_CALLS |= {"rmtree", "copy", "copyfile", "copytree", "move", "glob", "iglob", "chdir", "load", "save", "loadtxt"}


def _dotted(node) -> list | None:
    """``["torch", "testing", "assert_close"]`` for ``torch.testing.assert_close``; ``None`` otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _aliases(tree) -> dict:
    """``{local name: module path}`` of the cell's imports (``import numpy as np`` gives np: numpy)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _library(parts: list | None, aliases: dict) -> str | None:
    """The dotted name, through the cell's imports, when it belongs to torch, numpy or seqlab."""
    if not parts:
        return None
    root = aliases.get(parts[0], parts[0] if parts[0] in LIBRARIES else None)
    if root is None or root.split(".")[0] not in LIBRARIES:
        return None
    return ".".join([root, *parts[1:]])


# The dotted names of every reference that a hidden test switches off (the lists of
# seqlab.grading.references).
SWITCHED_OFF = frozenset(
    target
    for name in dir(references)
    if name.endswith("REFERENCES") and isinstance(getattr(references, name), tuple)
    for target in getattr(references, name)
)


def _outside(value) -> bool:
    return isinstance(value, str) and (value.startswith(("/", "~")) or ".." in value.replace("\\", "/").split("/"))


def findings(source: str) -> list:
    """``(line, what)`` for each place where the cell's code touches the test machinery, in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    aliases, found = _aliases(tree), []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in IPYTHON:
            found.append((line, f"changes {IPYTHON[node.attr]}"))
        if isinstance(node, ast.Attribute) and node.attr in FUNCTION_INSIDES:
            found.append((line, f"reaches into a function ({node.attr})"))
        parts = _dotted(node) if isinstance(node, ast.Attribute) else None
        if parts and len(parts) >= 2 and (aliases.get(parts[0], parts[0]), parts[1]) in INTERPRETER:
            found.append((line, f"touches {INTERPRETER[aliases.get(parts[0], parts[0]), parts[1]]}"))
        name = _library(parts, aliases)
        if name and name.startswith("torch.") and INTERNALS & set(name.split(".")[1:]):
            found.append((line, f"calls torch's internals ({name})"))
        if name and name in SWITCHED_OFF:
            found.append((line, f"names a reference that the hidden tests switch off ({name})"))
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                dotted = _dotted(target) if isinstance(target, ast.Attribute) else None
                changed = _library(dotted, aliases)
                if changed is None and dotted and dotted[0] in aliases:  # an attribute of any imported module
                    changed = ".".join([aliases[dotted[0]], *dotted[1:]])
                if changed:
                    found.append((line, f"replaces {changed}"))
                if isinstance(target, ast.Attribute) and target.attr == "__class__":
                    found.append((line, "changes an object's class (__class__)"))
                if isinstance(target, ast.Name) and target.id == "__builtins__":
                    found.append((line, "replaces the builtins"))
        if isinstance(node, ast.Call):
            function = _dotted(node.func) or []
            if function[-1:] == ["setattr"] and node.args and _library(_dotted(node.args[0]), aliases):
                found.append((line, f"replaces an attribute of {_library(_dotted(node.args[0]), aliases)}"))
            if (
                function in (["exec"], ["eval"], ["compile"])
                and node.args
                and not isinstance(node.args[0], ast.Constant)
            ):
                found.append((line, f"runs code made at run time ({function[0]})"))
            if function and function[-1] in LOADERS:
                found.append((line, f"loads a module's code a second time, or its source ({function[-1]})"))
            if (
                function[-1:] == ["getattr"]
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_")
                and _library(_dotted(node.args[0]), aliases)
            ):
                found.append((line, f"reaches a private attribute by name ({node.args[1].value!r})"))
            if function[:1] == ["ctypes"] or aliases.get(function[0] if function else "", "") == "ctypes":
                found.append((line, "uses ctypes"))
            if function and function[-1] in FILE_CALLS:
                paths = [a.value for a in node.args if isinstance(a, ast.Constant)]
                if any(_outside(p) for p in paths):
                    found.append(
                        (
                            line,
                            f"names a file outside the notebook's folder ({next(p for p in paths if _outside(p))!r})",
                        )
                    )
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            imported = [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.module:
                imported = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for module in imported:
                if module.split(".")[:3][-1] in GRADING_MACHINERY and module.startswith("seqlab.grading."):
                    found.append((line, f"imports the grading machinery ({module})"))
                elif module in SWITCHED_OFF:
                    found.append((line, f"names a reference that the hidden tests switch off ({module})"))
            if any((m or "").split(".")[0] in ("ctypes", "gc") for m in modules):
                found.append(
                    (line, f"imports {', '.join(m for m in modules if m and m.split('.')[0] in ('ctypes', 'gc'))}")
                )
    return sorted(set(found))
