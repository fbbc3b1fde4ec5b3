"""privselect report / Certificate.report(): the guarantee in words, the risk table, a self-contained page."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest

import privselect as ps
from privselect.cli import main
from privselect.report import Report

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
    assert CERT.report() == text


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
