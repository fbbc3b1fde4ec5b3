"""The package boundary and lazy imports: what ``import privselect`` loads, and what the library imports."""

import ast
import importlib
import json
import subprocess
import sys

import pytest

import privselect
from tests.support import REPO_ROOT, project_files

HEAVY = ("sklearn", "optuna", "joblib", "matplotlib", "tqdm", "dask", "ray", "torch", "opacus", "jax")


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_privselect_loads_no_heavy_dependency():
    out = _python("import sys, json, privselect\n"
                  f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    assert json.loads(out) == []


def test_the_release_guard_and_the_opacus_description_load_no_framework():
    out = _python("import sys, json, numpy as np\n"
                  "from privselect.tuning.guard import find_leaks\n"
                  "from privselect.integrations import opacus\n"
                  "leaks = find_leaks({'g': np.random.default_rng()})\n"
                  "opacus.description(1.0, sample_rate=0.01, epochs=2)\n"
                  "print(json.dumps([len(leaks), sorted({m.split('.')[0] for m in sys.modules} & "
                  "{'torch', 'opacus', 'jax', 'tensorflow'})]))")
    assert json.loads(out) == [1, []]


def test_every_public_name_resolves_lazily_and_star_import_works():
    out = _python("import sys, json, privselect as ps\n"
                  "missing = [n for n in ps.__all__ if getattr(ps, n, None) is None]\n"
                  "ns = {}; exec('from privselect import *', ns)\n"
                  "print(json.dumps({'missing': missing, 'star': sorted(set(ps.__all__) - set(ns)),"
                  " 'sklearn_after_dpsgd': (ps.DPSGDClassifier, 'sklearn' in sys.modules)[1]}))")
    found = json.loads(out)
    assert found == {"missing": [], "star": [], "sklearn_after_dpsgd": True}


def test_search_space_laws_are_at_top_level_without_importing_them_on_import():
    from privselect.tuning import space

    for name in ("Choice", "Uniform", "LogUniform", "IntUniform"):
        assert name in privselect.__all__ and getattr(privselect, name) is getattr(space, name)
    out = _python("import sys, json, privselect\n"
                  "print(json.dumps('privselect.tuning.space' in sys.modules))")
    assert json.loads(out) is False  # `import privselect` stays light: the laws load on first use


def test_lazy_names_are_the_defining_objects():
    from privselect.mechanisms import Gaussian
    from privselect.selection import certify

    assert privselect.Gaussian is Gaussian and privselect.certify is certify
    assert privselect.space.__name__ == "privselect.tuning.space"
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


def test_importing_every_submodule_leaves_each_public_name_its_defining_object():
    """``import privselect.apps.dpsgd`` (and every other submodule) must leave ``ps.dpsgd`` the function
    and ``ps.space`` the search-space module: no submodule binds a public name on the package."""
    out = _python("import importlib, json, pkgutil, privselect as ps\n"
                  "names = [m.name for m in pkgutil.walk_packages(ps.__path__, 'privselect.')\n"
                  "         if not m.name.endswith('__main__')]\n"
                  "for name in names: importlib.import_module(name)\n"
                  "print(json.dumps([len(names), ps.dpsgd.__module__, ps.space.__name__, ps.certify.__module__]))")
    count, dpsgd_home, space_home, certify_home = json.loads(out)
    assert count > 40
    assert (dpsgd_home, space_home, certify_home) == (
        "privselect.mechanisms", "privselect.tuning.space", "privselect.selection.certify")


REMOVED_IN_0_2 = ("privselect.ptr", "privselect.ptr.ops", "privselect.dpsgd", "privselect.demo", "privselect.space",
                  "privselect.selection.certificate", "privselect.selection.mixture",
                  "privselect.selection.rdp_bounds", "privselect.selection.hyperparameter")


@pytest.mark.parametrize("path", REMOVED_IN_0_2)
def test_each_public_object_has_one_import_path(path):
    """The 0.1 alias modules are gone (CHANGELOG.md names each one's home): one path per object."""
    with pytest.raises(ModuleNotFoundError) as missing:
        importlib.import_module(path)
    assert path.startswith(missing.value.name)
    assert f"`{missing.value.name}`" in (REPO_ROOT / "CHANGELOG.md").read_text()
