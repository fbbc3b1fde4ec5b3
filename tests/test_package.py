"""The package boundary and lazy imports: what ``import privselect`` loads, and what the library imports."""

import ast
import json
import subprocess
import sys

import pytest

import privselect
from tests.support import REPO_ROOT, project_files

HEAVY = ("sklearn", "optuna", "joblib", "matplotlib", "tqdm", "dask")


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_privselect_loads_no_heavy_dependency():
    out = _python("import sys, json, privselect\n"
                  f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    assert json.loads(out) == []


def test_every_public_name_resolves_lazily_and_star_import_works():
    out = _python("import sys, json, privselect as ps\n"
                  "missing = [n for n in ps.__all__ if getattr(ps, n, None) is None]\n"
                  "ns = {}; exec('from privselect import *', ns)\n"
                  "print(json.dumps({'missing': missing, 'star': sorted(set(ps.__all__) - set(ns)),"
                  " 'sklearn_after_dpsgd': (ps.DPSGDClassifier, 'sklearn' in sys.modules)[1]}))")
    found = json.loads(out)
    assert found == {"missing": [], "star": [], "sklearn_after_dpsgd": True}


def test_lazy_names_are_the_defining_objects():
    from privselect.mechanisms import Gaussian
    from privselect.selection import certify

    assert privselect.Gaussian is Gaussian and privselect.certify is certify
    assert privselect.space.__name__ == "privselect.space"
    assert set(privselect.__all__) <= set(dir(privselect))
    with pytest.raises(AttributeError, match="no attribute 'Gausian'"):
        privselect.Gausian  # noqa: B018


def _imported_modules(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            yield str(node.args[0].value)


def test_library_never_imports_experiments_benchmarks_or_tests():
    library = [p for p in project_files(".py") if p.is_relative_to(REPO_ROOT / "privselect")]
    assert len(library) > 20
    crossing = {(str(p.relative_to(REPO_ROOT)), name) for p in library for name in _imported_modules(p)
                if name.split(".")[0] in ("experiments", "benchmarks", "tests")}
    assert crossing == set()


def test_experiments_and_benchmarks_depend_on_privselect_and_test_support_only():
    crossing = set()
    for folder, forbidden in (("experiments", ("benchmarks",)), ("benchmarks", ("experiments",))):
        for p in project_files(".py"):
            if p.is_relative_to(REPO_ROOT / folder):
                crossing |= {(str(p.relative_to(REPO_ROOT)), n) for n in _imported_modules(p)
                             if n.split(".")[0] in forbidden or (n.startswith("tests") and not n.startswith("tests.support"))}
    assert crossing == set()


def test_installed_package_holds_no_test_scaffolding():
    """Test helpers live in tests/support; the package ships no deliberately broken code."""
    scaffolding = ("LeakyTuner", "leak=", "neighbour_quantities", "best_of_k_mechanism", "(for tests)")
    found = {(str(p.relative_to(REPO_ROOT)), word) for p in project_files(".py")
             if p.is_relative_to(REPO_ROOT / "privselect") for word in scaffolding if word in p.read_text()}
    assert found == set()


def test_errors_have_one_home_and_keep_their_old_import_paths():
    from privselect import errors
    from privselect.accounting import CertificationError
    from privselect.accounting.plrv import UnsupportedMechanismError
    from privselect.integrations.optuna import PrivateStudyError

    assert (errors.CertificationError, errors.UnsupportedMechanismError, errors.PrivateStudyError) == (
        CertificationError, UnsupportedMechanismError, PrivateStudyError)
    assert privselect.CertificationError is CertificationError
    assert issubclass(CertificationError, ValueError) and issubclass(PrivateStudyError, RuntimeError)


def test_distribution_ships_the_library_only():
    """The packages setuptools installs (pyproject's find rule) are privselect's: no tests, experiments, benchmarks."""
    tomllib = pytest.importorskip("tomllib")
    setuptools = pytest.importorskip("setuptools")
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = setuptools.find_packages(where=str(REPO_ROOT), include=config["include"])
    assert "privselect" in packages and "privselect.accounting" in packages
    assert all(p == "privselect" or p.startswith("privselect.") for p in packages), packages


def test_an_old_submodule_path_does_not_shadow_a_public_name():
    """``import privselect.dpsgd`` (the old module path) must leave ``ps.dpsgd`` the function."""
    out = _python("import privselect as ps, privselect.dpsgd\n"
                  "from privselect.dpsgd import DPSGDClassifier\n"
                  "print(callable(ps.dpsgd) and ps.dpsgd.__module__, DPSGDClassifier.__name__)")
    assert out.split() == ["privselect.mechanisms", "DPSGDClassifier"]


# -- the import graph of the library ------------------------------------------------------


def _library_modules() -> dict[str, tuple[ast.Module, bool]]:
    """Dotted name -> (syntax tree, is a package) of every module under privselect/."""
    out = {}
    for p in project_files(".py"):
        if p.is_relative_to(REPO_ROOT / "privselect"):
            parts = list(p.relative_to(REPO_ROOT).with_suffix("").parts)
            package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if package else parts)] = (ast.parse(p.read_text()), package)
    return out


def _imports(name: str, tree: ast.Module, package: bool, modules) -> list[tuple[str, str]]:
    """(imported module, imported name) of every import statement, module level or inside functions;
    ``from pkg import sub`` counts as importing the module pkg.sub where there is one."""
    here = name if package else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here.split(".")[: len(here.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            out += [(f"{target}.{a.name}", "") if f"{target}.{a.name}" in modules else (target, a.name)
                    for a in node.names]
    return out


def test_no_module_imports_another_packages_private_name():
    """A private (underscore) name is imported only within its package or from an enclosing one (e.g. the
    root's ``_validation``), so an accountant's internals can change without breaking another package."""
    modules = _library_modules()
    crossing = set()
    for name, (tree, package) in modules.items():
        here = name if package else name.rsplit(".", 1)[0]
        for target, imported in _imports(name, tree, package, modules):
            owner = target if target in modules and modules[target][1] else target.rsplit(".", 1)[0]
            private = imported.startswith("_") and not imported.startswith("__")
            if private and target.startswith("privselect") and not (here + ".").startswith(owner + "."):
                crossing.add((name, f"{target}.{imported}"))
    assert crossing == set()


def test_the_import_graph_has_no_cycle():
    """Imports never run in a circle (lazy imports inside functions included): e.g. the selection bounds never
    import ``certify``, which composes them."""
    modules = _library_modules()
    graph = {}
    for name, (tree, package) in modules.items():
        deps = set()
        for target, _ in _imports(name, tree, package, modules):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                deps.add(target)
        graph[name] = deps
    done: set[str] = set()

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        for dep in sorted(graph[node]):
            found = cycle_from(dep, path + [node])
            if found:
                return found
        done.add(node)
        return None

    cycles = [c for c in (cycle_from(name, []) for name in sorted(graph)) if c]
    assert cycles == []
