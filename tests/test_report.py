"""privselect report / Certificate.report(): the guarantee in words, the risk table, a self-contained page."""

from __future__ import annotations

import datetime
import hashlib
import json
import math
from html.parser import HTMLParser

import numpy as np
import pytest

import privselect as ps
from privselect.attack_risk import Risk
from privselect.cli import main
from privselect.report import Provenance, Report, canonical_json, k_in_words
from tests.support.report_page import ReportPage

CERT = ps.certify(ps.Gaussian(3.0).compose(20), ps.Geometric(mean=5), 1e-5)


class _Page(HTMLParser):
    """Collects the tags, the risk table's cells and the figures' marked points."""

    def __init__(self):
        super().__init__()
        self.tags, self.external, self.table, self.svgs, self.quoted = [], [], [], 0, 0
        self._in_table = self._in_cell = False
        self._row: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag in ("script", "link", "img", "iframe") or (tag in ("img", "script") and "src" in a):
            self.external.append(tag)
        if tag == "svg":
            self.svgs += 1
        if tag == "circle" and a.get("class") == "quoted":
            self.quoted += 1
        if tag == "table" and a.get("id") == "risk-table":
            self._in_table = True
        if self._in_table and tag == "tr":
            self._row = []
        if self._in_table and tag in ("td", "th"):
            self._in_cell = True
            self._row.append("")

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False
        if self._in_table and tag == "tr" and self._row:
            self.table.append(self._row)
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data):
        if self._in_table and self._in_cell:
            self._row[-1] += data.strip()


@pytest.fixture(scope="module")
def built():
    return Report.of(CERT)


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_html_page_is_self_contained_with_the_tradeoff_figure_and_the_risk_table(built):
    page = _Page()
    page.feed(built.html())
    assert page.external == [] and "http" not in built.html().replace("http://www.w3.org/2000/svg", "")
    assert page.svgs == 2  # the trade-off curve and the profile
    assert page.quoted == 3 + 1  # the quoted FPRs 1e-3, 1e-2, 0.1 and the certified (eps, delta)
    header, *rows = page.table
    assert header == ["attack", "quantity", "tuning", "one run"]
    by_name = {r[1]: (float(r[2]), float(r[3])) for r in rows}
    r = ps.risk(CERT)
    for fpr in (1e-4, 1e-3, 1e-2, 0.1):
        tuned, one = by_name[f"TPR at FPR {fpr:g}"]
        assert tuned == pytest.approx(r.tpr(fpr), rel=1e-3)
        assert one == pytest.approx(ps.risk(CERT.base).tpr(fpr), rel=1e-3)
        assert one <= tuned  # the tuning is no safer than one of its runs
    assert by_name["advantage (max TPR - FPR)"][0] == pytest.approx(r.advantage, rel=1e-3)


def test_text_report_states_the_guarantee_and_the_risk_table(built):
    text = built.text()
    words = " ".join(text.split())
    assert "Gaussian(noise_multiplier=3.0) composed 20 times" in words
    assert f"({CERT.epsilon:.4g}, {CERT.delta:.3g})-differentially private" in words
    assert "K and the other runs are never released" in words
    assert "TPR at FPR 0.001" in text and "advantage" in text and "reconstruction" in text
    assert "<- certified" in text
    assert CERT.report().split("(UTC)")[1] == text.split("(UTC)")[1]  # the same but for the time it was made


@pytest.mark.slow  # seconds per case, measured: the slow tier runs it
def test_cli_report_writes_the_page_and_prints_the_text(tmp_path, capsys):
    cert_path, page_path = tmp_path / "cert.json", tmp_path / "report.html"
    cert_path.write_text(CERT.to_json())
    assert main(["report", str(cert_path), "--html", str(page_path)]) == 0
    out = capsys.readouterr().out
    assert "Certified upper bounds on attack success" in out and f"wrote {page_path}" in out
    page = _Page()
    page.feed(page_path.read_text())
    assert page.svgs == 2 and len(page.table) == 8
    assert main(["report", str(cert_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["risk"]["bounds"]["tpr@0.001"] == pytest.approx(float(ps.risk(CERT).tpr(1e-3)), rel=1e-12)


def test_cli_report_errors_name_the_argument(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path / "missing.json")])
    assert "argument CERT" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"epsilon": 1}')
    with pytest.raises(SystemExit):
        main(["report", str(bad)])
    assert "not a certificate" in capsys.readouterr().err


def test_report_of_a_cor62_certificate_rests_on_its_pair_and_has_no_one_run_column():
    cert = ps.Certificate(epsilon=2.0, delta=1e-6, bound="cor62", theorem="KRW Cor. 6.2", alternatives={"cor62": 2.0},
                          k=ps.Geometric(mean=5), base="candidates checked at run", accountant="auto",
                          error_budget=ps.ErrorBudget())
    built = Report.of(cert)
    assert built.run is None
    page = _Page()
    page.feed(built.html())
    assert page.table[0] == ["attack", "quantity", "tuning"]
    assert page.svgs == 1  # no profile to draw: the trade-off curve only
    assert np.isclose(float(page.table[2][2]), float(ps.risk(cert).tpr(1e-3)), rtol=1e-3)


# -- a report that answers a reviewer (checked on the page's markup; tests/test_report_browser.py renders it) ------


@pytest.fixture(scope="module")
def reviewed():
    """The report of CERT with the public data set size n = 60,000 given, and its page."""
    facts = Report.of(CERT, dataset_size=60_000)
    return facts, ReportPage(facts.html())


def test_page_says_what_epsilon_and_delta_mean_with_delta_against_one_over_n(reviewed):
    facts, page = reviewed
    meaning = page.words("meaning")
    assert f"ε (epsilon) = {CERT.epsilon:.4g}" in meaning
    assert f"a factor e^ε ≈ {math.exp(CERT.epsilon):.3g}" in meaning  # e^9.843 = 1.88e4
    assert "δ (delta) = 1e-05 is the probability with which that limit may fail" in meaning
    # n = 60,000: 1/n = 1.67e-05 and delta * n = 0.6
    assert "With n = 60,000 records, 1/n = 1.67e-05" in meaning and "δ·n = 0.6" in meaning
    assert "below 1/n, but not well below it" in meaning


@pytest.mark.parametrize(("n", "verdict"), [(1_000, "is well below 1/n"), (60_000, "not well below it"),
                                            (100_000, "is NOT below 1/n"), (None, "was not given")])
def test_delta_is_judged_against_one_over_n_only_where_n_is_given(n, verdict):
    facts = Report(CERT, Risk(pairs=((CERT.epsilon, CERT.delta),)), dataset_size=n)
    assert verdict in " ".join(facts.meaning())  # delta * n = 0.01, 0.6, 1, unknown


def test_dataset_size_must_be_a_positive_integer():
    tuning = Risk(pairs=((CERT.epsilon, CERT.delta),))
    for bad in (0, -5, 2.5, True, "60000"):
        with pytest.raises(ValueError, match="dataset_size"):
            Report(CERT, tuning, dataset_size=bad)


def test_page_states_the_worst_case_attacker_in_one_sentence(reviewed):
    _, page = reviewed
    threat = page.words("threat")
    assert threat.count(". ") == 0 and threat.endswith(".")  # one sentence
    assert "knows every other record" in threat and "any attacker" in threat


def test_page_lists_the_assumptions_the_certificate_rests_on(reviewed):
    _, page = reviewed
    assumptions = page.words("assumptions")
    assert "the selection score" in assumptions and "itself private and counted" in assumptions
    assert "K, the seeds and random generators, the other runs, their scores and logs stay secret" in assumptions
    assert "K is drawn from its law independently of the data" in assumptions
    assert "data sets that differ by adding or removing one record" in assumptions
    assert "the sampler" not in assumptions  # Gaussian(3).compose(20) samples nothing


def test_assumptions_name_the_sampler_of_a_subsampled_run():
    poisson = ps.Certificate(epsilon=2.0, delta=1e-6, bound="profile", theorem="KRW Thm 5.2", alternatives={"profile": 2.0},
                             k=ps.Geometric(mean=10), base=ps.Gaussian(1.0).poisson_subsample(0.01).compose(100),
                             accountant="auto", error_budget=ps.ErrorBudget())
    facts = Report(poisson, Risk(pairs=((2.0, 1e-6),)))
    items = dict(facts.assumptions())
    assert "Poisson sampling" in items["the sampler"] and "each record joins each batch independently" in items[
        "the sampler"]
    shuffled = ps.Certificate(**{**poisson.__dict__, "base": ps.Gaussian(1.0).sample_without_replacement(0.01)
                                 .compose(100), "relation": "", "profile": None, "run_profile": None})
    assert "without replacement" in dict(Report(shuffled, Risk(pairs=((2.0, 1e-6),))).assumptions())["the sampler"]


def test_best_of_k_is_said_in_words(reviewed):
    _, page = reviewed
    released = page.words("best-of-k")
    assert ("Only the best of a random number K of training runs is released (its hyperparameters, score and "
            "model), K drawn from a geometric law with mean 5") in released
    # Geometric(mean 5): P[K = k] = 0.2 * 0.8^(k-1), another run follows with probability 0.8
    assert "another follows with probability 0.8" in released
    assert k_in_words(ps.Poisson(3)).startswith("a Poisson law with mean 3 (K may be 0")
    assert "n = 20 and p = 0.5" in k_in_words(ps.Binomial.from_mean(10, 20))
    assert "eta = 0.5 and mean 10" in k_in_words(ps.TruncatedNegativeBinomial(0.5, mean=10))


def test_page_gives_the_date_and_the_sha256_of_the_certificate(reviewed):
    facts, page = reviewed
    provenance = page.words("provenance")
    digest = hashlib.sha256(canonical_json(CERT)).hexdigest()
    assert digest in provenance and "canonical JSON (no file)" in provenance
    made = datetime.datetime.fromisoformat(page.times[0])
    assert made.tzinfo is not None and made.utcoffset() == datetime.timedelta(0)
    assert made.isoformat() == facts.provenance.made
    assert json.loads(canonical_json(CERT)) == CERT.to_dict()


def test_provenance_of_a_file_hashes_its_bytes_and_refuses_another_certificate(tmp_path):
    path = tmp_path / "cert.json"
    path.write_text(CERT.to_json(indent=2))
    p = Provenance.of(CERT, path)
    assert p.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and p.source == f"file {path}"
    other = ps.certify(ps.Gaussian(2.0).compose(20), ps.Geometric(mean=5), 1e-5)
    with pytest.raises(ValueError, match="another certificate"):
        Provenance.of(other, path)
    with pytest.raises(ValueError, match="cannot read"):
        Provenance.of(CERT, tmp_path / "missing.json")


def test_every_curve_is_named_in_words_with_the_one_the_numbers_use(reviewed):
    _, page = reviewed
    assert len(page.figures) == 2
    for figure in page.figures:
        names = [item.split(":")[0].strip() for item in figure["legend"]]
        assert figure["curves"] and sorted(figure["curves"]) == sorted(names)  # each drawn curve has its legend item
        for item in figure["legend"]:
            assert len(item.split(":", 1)[1].split()) >= 4  # and says what it is in words
    trade_off, profile = page.figures
    assert any("the risk table's numbers are on it" in item for item in trade_off["legend"])
    mixture = next(item for item in profile["legend"] if item.startswith("all K runs released (K-mixture bound)"))
    assert "releasing every run and K itself" in mixture and "k-mixture[" not in " ".join(profile["curves"])
    chosen = next(item for item in profile["legend"] if item.startswith("best of K (selection bound)"))
    assert "the certificate's ε comes from this curve" in chosen


def test_page_is_laid_out_for_a_narrow_screen(reviewed):
    _, page = reviewed
    assert {"name": "viewport", "content": "width=device-width, initial-scale=1"} in page.metas
    css = " ".join(page.style.split())
    assert "max-width: 1100px" in css and "svg.figure { width: 100%; height: auto;" in css
    assert ".scroll { max-width: 100%; overflow-x: auto; }" in css
    assert all("width" not in svg for svg in page.svgs)  # sized by CSS from the viewBox, never a fixed width
    assert page.table_parents and all(parent == "scroll" for parent in page.table_parents)


def test_error_budget_is_said_in_words(reviewed):
    facts, page = reviewed
    public = dict(facts.public())
    assert "already inside every number" in public["numerical error"]
    assert "error_budget" in public["numerical error"]  # the terms are left to the JSON
