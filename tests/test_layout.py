"""The package layout: privselect's import graph has no cycle, and no module imports a private name
from outside the package that owns it.

Both walk every ``import`` statement of ``privselect/`` with ``ast``, including the imports inside
functions (a lazy import that closes a circle is still a circle).
"""

from __future__ import annotations

import ast
import graphlib

from tests.support import REPO_ROOT

PACKAGE = REPO_ROOT / "privselect"


def _module_name(path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_package(module: str) -> bool:
    return module in MODULES and MODULES[module].name == "__init__.py"


def _imported(module: str, source: str) -> set[tuple[str, str]]:
    """(imported object's full dotted path, privselect module that provides it) for every import in ``source``."""
    package = module if _is_package(module) else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {(alias.name, alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            origin = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                path = f"{origin}.{alias.name}"
                found.add((path, path if path in MODULES else origin))
    return {(path, provider) for path, provider in found if provider in MODULES}


def import_graph() -> dict[str, set[str]]:
    """privselect module -> the privselect modules it imports."""
    return {m: {provider for _, provider in _imported(m, p.read_text())} - {m} for m, p in MODULES.items()}


def _owner(path: str) -> str | None:
    """The package that owns a private name or module on ``path`` (``None`` if nothing on it is private):
    the package holding the first underscored component, e.g. ``privselect`` for ``privselect._validation.x``,
    ``privselect.accounting.prv`` for ``privselect.accounting.prv._U`` and ``privselect.accounting.exact`` for
    ``privselect.accounting.exact.gaussian._sqrt_bracket``."""
    parts = path.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            holder = ".".join(parts[:i])
            return holder if _is_package(holder) else holder.rpartition(".")[0]
    return None


def private_imports_across_packages(module: str, source: str) -> set[str]:
    """Private names that ``module`` imports from outside the package owning them (a private name of a
    package is for that package and its subpackages: ``privselect._validation`` serves all of privselect)."""
    crossing = set()
    for path, _ in _imported(module, source):
        owner = _owner(path)
        if owner is not None and module != owner and not module.startswith(owner + "."):
            crossing.add(path)
    return crossing


def test_the_walk_sees_the_whole_package_and_its_imports():
    graph = import_graph()
    assert len(graph) > 50 and "privselect.selection.bounds.mixture" in graph
    assert "privselect.selection.bounds" in graph["privselect.selection.certify"]
    assert "privselect.selection.certify" in graph["privselect.selection.calibrate"]
    assert "privselect.apps.demo" in graph["privselect.cli_commands"]  # an import inside a function counts


def test_import_graph_has_no_cycle():
    """Imports run one way, down the data flow; a circle (even through a lazy import) is a defect."""
    try:
        tuple(graphlib.TopologicalSorter(import_graph()).static_order())
    except graphlib.CycleError as cycle:
        raise AssertionError(f"import cycle: {' -> '.join(cycle.args[1])}") from None


def test_the_private_name_check_flags_a_crossing_and_allows_a_package_own():
    module = "privselect.selection.bounds.mixture"
    source = ("from ...accounting.prv import MAX_COMPOSITIONS, _U\n"
              "from ...accounting.exact.gaussian import _sqrt_bracket\n"
              "from ... import _validation as check, __version__\n"
              "from .registry import _family\n")
    assert private_imports_across_packages(module, source) == {
        "privselect.accounting.prv._U", "privselect.accounting.exact.gaussian._sqrt_bracket"}
    assert private_imports_across_packages("privselect.accounting.prv", "from .. import _hidden") == set()


def test_no_module_imports_another_package_private_name():
    crossing = {(m, path) for m, p in MODULES.items() for path in private_imports_across_packages(m, p.read_text())}
    assert crossing == set()


def test_every_module_fits_in_a_readers_head():
    """docs/design.md, "Module size": at most 600 lines per module."""
    sizes = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert len(sizes) > 50
    assert {name: n for name, n in sizes.items() if n > 600} == {}
