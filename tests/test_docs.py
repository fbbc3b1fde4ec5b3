"""Every ```python block in README.md and docs/*.md runs (blocks of one file share a namespace)."""

import importlib
import re
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_code_examples_run(page, capsys):
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for number, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")), 1):
        try:
            exec(compile(code, f"{page.name}[block {number}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the failure message names the block
            pytest.fail(f"{page.name} block {number} failed: {type(exc).__name__}: {exc}")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The docs built once with mkdocs --strict (a warning fails the build); skipped without the docs extra."""
    mkdocs = pytest.importorskip("mkdocs.commands.build")
    from mkdocs.config import load_config

    site_dir = tmp_path_factory.mktemp("site")
    config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(site_dir), strict=True)
    mkdocs.build(config)
    return site_dir


def test_docs_build_strict(site):
    assert (site / "index.html").is_file() and (site / "api" / "index.html").is_file()
    for page in ("trainers", "choosing_k", "reporting", "debugging"):
        assert (site / page / "index.html").is_file(), page


def test_api_reference_has_no_raw_sphinx_roles_and_its_cross_references_render(site):
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)
    raw = re.findall(r":(?:meth|class|mod|func|attr|data|exc|obj):`?[\w.~]*", text)
    assert raw == []
    assert re.findall(r"\]\[privselect[\w.]*\]", text) == []  # no cross-reference left unrendered (code blocks)
    # cross-references in docstrings render as links to the objects' anchors in the reference
    for target in ("privselect.tuning.backends", "privselect.selection.certify.certify"):
        assert re.search(rf'<a[^>]+href="#{re.escape(target)}"', html), target
    # a reference through a re-exporting module lands on the one place the object is documented
    assert re.search(r'<a[^>]+href="\.\./errors/#privselect\.errors\.AllRunsFailedError"', html)
    for documented in ("privselect.apps.ptr.gptr.GeneralizedPTR", "privselect.audit.audit", "privselect.tuning.engine"):
        assert f'id="{documented}"' in html, documented
    errors = (site / "errors" / "index.html").read_text(encoding="utf-8")
    assert 'id="privselect.errors.CertificationError"' in errors and ":class:" not in errors


def _documented_object(path: str):
    """The Python object an API-reference anchor names (the longest importable module, then attributes)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise AssertionError(path)


def test_api_reference_documents_each_object_once(site):
    """A class, function or module re-exported by another module is rendered under its home only."""
    html = "".join((site / page / "index.html").read_text(encoding="utf-8") for page in ("api", "errors"))
    anchors = sorted(set(re.findall(r'id="(privselect[\w.]*)"', html)))
    assert len(anchors) > 200
    homes: dict[int, list[str]] = {}
    for anchor in anchors:
        obj = _documented_object(anchor)
        if isinstance(obj, (type, types.FunctionType, types.ModuleType)):
            homes.setdefault(id(obj), []).append(anchor)
    assert [paths for paths in homes.values() if len(paths) > 1] == []
