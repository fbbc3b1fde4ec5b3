"""Every ```python block in README.md and docs/*.md runs (blocks of one file share a namespace)."""

import re
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


def test_docs_build_strict(tmp_path):
    """mkdocs build --strict (warnings fail); skipped when the docs extra is not installed."""
    mkdocs = pytest.importorskip("mkdocs.commands.build")
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=True)
    mkdocs.build(config)
