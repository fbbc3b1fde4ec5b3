"""Every ```python block in README.md and docs/*.md runs (blocks of one file share a namespace), and every
number that a docs comment (or a sentence listed in PROSE) shows is what the code gives, to the digits shown."""

import importlib
import math
import re
import types
from pathlib import Path

import pytest
from scipy import optimize, stats

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
# a number the comment shows as a value: not a call argument (delta(1), Geometric(10)) nor part of a name
SHOWN_NUMBER = re.compile(r"(?<![\w(.\-])\d+(?:\.\d+)?(?![\w(.])")
# a comment that shows a computed value: two or more decimals, or a "~" figure
COMPUTED = re.compile(r"~\d|\d\.\d\d")


def gaussian_delta(eps: float, sigma: float = 1.0) -> float:
    """Exact profile of the Gaussian mechanism (Balle, Wang 2018, Thm 8): a closed form."""
    return stats.norm.cdf(0.5 / sigma - eps * sigma) - math.exp(eps) * stats.norm.cdf(-0.5 / sigma - eps * sigma)


def gaussian_epsilon(delta: float, sigma: float = 1.0) -> float:
    return optimize.brentq(lambda eps: gaussian_delta(eps, sigma) - delta, 0.0, 50.0, xtol=1e-13)


def fixed_sigma_tuning(namespace, sigma):
    run = namespace["privacy"]({"noise_multiplier": sigma})
    return namespace["ps"].certify(namespace["ps"].compose(run, namespace["ps"].Laplace(2.0)),
                                   namespace["ps"].Geometric(mean=10), 1e-5, accountant="prv").epsilon


# page -> {the code of a line, before its comment: namespace -> the values its comment shows, in order}
SHOWN = {
    "index.md": {
        "profile.delta(1.0)": lambda ns: [ns["profile"].delta(1.0), gaussian_delta(1.0)],
        "profile.epsilon(1e-5)": lambda ns: [ns["profile"].epsilon(1e-5), gaussian_epsilon(1e-5)],
    },
    "pipelines.md": {
        "print(tune_then_train.epsilon, tune_then_train.alternatives)":
            lambda ns: [ns["tune_then_train"].epsilon, ns["tune_then_train"].alternatives["rdp"]],
        "print(subsampled.epsilon)": lambda ns: [ns["subsampled"].epsilon],
        "assert complement.epsilon < full.epsilon": lambda ns: [ns["complement"].epsilon, ns["full"].epsilon],
    },
    "calibration.md": {
        "sigma = ps.calibrate_noise(3.0, 1e-5, **run)": lambda ns: [ns["sigma"]],
        "sigma_k = ps.calibrate_noise(3.0, 1e-5, **run, k=ps.Geometric(mean=10))": lambda ns: [ns["sigma_k"]],
        "except ps.UnreachableTargetError as exc:": lambda ns: [2.4, ns["refused"].floor],
    },
    "risk.md": {
        "r.tpr(1e-3)": lambda ns: [ns["r"].tpr(1e-3)],
        "r.advantage": lambda ns: [ns["r"].advantage],
    },
    "trainers.md": {
        "steps = math.ceil(epochs / sample_rate)": lambda ns: [ns["steps"]],
        "print(ps.privacy_profile(one_run).epsilon(1e-5))": lambda ns: [ns["ps"].privacy_profile(ns["one_run"]).epsilon(1e-5)],
    },
}
# page -> [(a sentence's pattern, whose groups are the numbers shown; namespace -> those numbers)], after the page ran
PROSE = {
    "tuning.md": [
        (r"the mixture-profile certificate is ε = (\d+(?:\.\d+)?) and Cor\. 6\.2 gives ε = (\d+(?:\.\d+)?)",
         lambda ns: [ns["mixed"].certificate.alternatives["mixture-profile"], ns["mixed"].certificate.alternatives["cor62"]]),
        (r"a fixed noise multiplier of 1\.5, 2 or 3 gives (\d+(?:\.\d+)?), (\d+(?:\.\d+)?) or (\d+(?:\.\d+)?)",
         lambda ns: [fixed_sigma_tuning(ns, sigma) for sigma in (1.5, 2.0, 3.0)]),
    ],
    "pipelines.md": [
        (r"Geometric\(mean 10\), δ = 1e-5\) the certificate is (\d+(?:\.\d+)?)",
         lambda ns: [ns["ps"].certify_pipeline(ns["run"], ns["k"], 1e-5, final=ns["run"]).epsilon]),
    ],
}


def assert_shows(shown: list[str], values: list[float], where: str) -> None:
    """Each shown number is its value rounded to the digits shown."""
    assert len(shown) == len(values), f"{where}: shows {shown}, the check gives {len(values)} values"
    for text, value in zip(shown, values):
        digits = len(text.split(".")[1]) if "." in text else 0
        assert abs(float(value) - float(text)) <= 0.5 * 10.0 ** -digits * (1 + 1e-9), \
            f"{where}: the docs show {text}, the code gives {float(value)!r}"


def shown_lines(code: str, checked: dict) -> list[tuple[str, str]]:
    """(code, comment) of every line whose comment shows a computed number, or that has a check."""
    found = []
    for line in code.splitlines():
        if "#" in line:
            statement, comment = line[:line.index("#")].strip(), line[line.index("#"):]
            if COMPUTED.search(comment) or statement in checked:
                found.append((statement, comment))
    return found


#: Pages whose examples take seconds (calibrations, pipelines, K-law sweeps): the slow tier runs them.
SLOW_PAGES = {"pipelines.md", "calibration.md", "README.md", "choosing_k.md", "errors.md", "regression.md", "trainers.md"}


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_PAGES else p
                                  for p in PAGES], ids=lambda p: p.name)
def test_code_examples_run_and_give_the_numbers_their_comments_show(page, capsys):
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    text = page.read_text(encoding="utf-8")
    checks = SHOWN.get(page.name, {})
    for number, code in enumerate(BLOCK.findall(text), 1):
        try:
            exec(compile(code, f"{page.name}[block {number}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the failure message names the block
            pytest.fail(f"{page.name} block {number} failed: {type(exc).__name__}: {exc}")
        for line, comment in shown_lines(code, checks):
            assert line in checks, f"{page.name}: the comment on `{line}` shows a number that no check covers (SHOWN)"
            assert_shows(SHOWN_NUMBER.findall(comment), checks[line](namespace), f"{page.name}: {line}")
    for pattern, values in PROSE.get(page.name, []):
        match = re.search(pattern, " ".join(text.split()))
        assert match, f"{page.name}: no sentence matches {pattern!r}"
        assert_shows(list(match.groups()), values(namespace), f"{page.name}: {match.group(0)}")


def test_the_number_checks_fail_on_a_drifted_number():
    with pytest.raises(AssertionError, match="the docs show 0.1282"):
        assert_shows(["0.1282"], [0.126937], "index.md")
    assert_shows(["0.126937", "4.3772"], [0.12693673750664508, 4.377178095681232], "index.md")
    assert SHOWN_NUMBER.findall("# certified upper bound on δ(1): 0.1282 (exact: 0.12694)") == ["0.1282", "0.12694"]
    assert SHOWN_NUMBER.findall("# tuning: best of K ~ Geometric(10) runs at ε(1e-5)") == []


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


def test_reporting_example_sentence_names_the_installed_version():
    import importlib.metadata

    import privselect

    text = (Path(__file__).resolve().parents[1] / "docs" / "reporting.md").read_text()
    named = re.findall(r"with privselect (\d+\.\d+\.\d+)", text)
    assert named and set(named) == {privselect.__version__}
    try:
        assert importlib.metadata.version("privselect") == privselect.__version__
    except importlib.metadata.PackageNotFoundError:  # run from a clone that is not installed
        pass
