"""The report page rendered by a headless browser (chromium) at 400 and 1280 px: no sideways scroll at 400 px,
figures that fill the width with readable text, and every item a reviewer asks for visible on the page.

Skipped only where no chromium is installed; tests/test_report.py checks the same items on the markup always.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest

import privselect as ps
from privselect.report import Report

BROWSER = next((path for name in ("chromium", "chromium-browser", "google-chrome") if (path := shutil.which(name))),
               None)
WIDTHS = (400, 1280)
#: SVG tick labels are 15 px in a 480-wide viewBox: on screen they must stay at least this large.
MIN_TICK_PX = 10.0

_MEASURE = """
function measure(frame) {
  var w = frame.contentWindow, doc = frame.contentDocument, d = doc.documentElement;
  var figures = Array.prototype.map.call(doc.querySelectorAll('svg.figure'), function (s) {
    var r = s.getBoundingClientRect(); return {width: r.width, right: r.right, viewbox: s.viewBox.baseVal.width}; });
  var sections = {};
  Array.prototype.forEach.call(doc.querySelectorAll('[id]'), function (e) { sections[e.id] = e.innerText; });
  var legends = Array.prototype.map.call(doc.querySelectorAll('figure'), function (f) {
    return Array.prototype.map.call(f.querySelectorAll('li.curve'), function (li) {
      var r = li.getBoundingClientRect(); return {text: li.innerText, visible: r.width > 0 && r.height > 0}; }); });
  return {scrollWidth: d.scrollWidth, innerWidth: w.innerWidth, figures: figures, sections: sections,
          legends: legends};
}
var frames = document.querySelectorAll('iframe'), left = frames.length, out = {};
Array.prototype.forEach.call(frames, function (f) {
  f.addEventListener('load', function () {
    out[f.width] = measure(f);
    if (--left === 0) {
      var pre = document.createElement('pre'); pre.id = 'measured'; pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    }
  });
});
"""


def _render(page: str, tmp_path) -> dict:
    """The page in one iframe per width (srcdoc: same origin, so the parent can measure it), measured by chromium."""
    frames = "".join(f'<iframe width="{w}" style="width:{w}px;height:2000px;border:0;display:block" '
                     f'srcdoc="{html.escape(page, quote=True)}"></iframe>' for w in WIDTHS)
    wrapper = tmp_path / "measure.html"
    wrapper.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body style='margin:0'>{frames}"
                       f"<script>{_MEASURE}</script></body></html>", encoding="utf-8")
    done = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,2000",
                           "--virtual-time-budget=10000", "--dump-dom", wrapper.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'<pre id="measured">(.*?)</pre>', done.stdout, re.S)
    assert found, f"chromium measured nothing (exit {done.returncode}): {done.stderr[-2000:]}"
    return {int(k): v for k, v in json.loads(html.unescape(found.group(1))).items()}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    if BROWSER is None:
        pytest.skip("no chromium installed (apt-get install chromium); tests/test_report.py checks the markup")
    cert = ps.certify(ps.Gaussian(3.0).compose(20), ps.Geometric(mean=5), 1e-5)
    return cert, _render(Report.of(cert, dataset_size=60_000).html(), tmp_path_factory.mktemp("browser"))


@pytest.mark.parametrize("width", WIDTHS)
def test_page_has_no_sideways_scroll_and_figures_fill_the_width(rendered, width):
    _, measured = rendered
    m = measured[width]
    assert m["innerWidth"] == width
    assert m["scrollWidth"] <= width  # document.documentElement.scrollWidth: nothing sticks out sideways
    assert len(m["figures"]) == 2
    for figure in m["figures"]:
        assert figure["right"] <= width
        assert figure["width"] >= min(0.8 * width - 40, 420)  # the figure uses the width it has
        assert 15.0 * figure["width"] / figure["viewbox"] >= MIN_TICK_PX  # its tick labels stay readable


def test_every_item_a_reviewer_asks_for_is_visible_at_400px(rendered):
    cert, measured = rendered
    s = {k: " ".join(v.split()) for k, v in measured[400]["sections"].items()}
    assert f"ε (epsilon) = {cert.epsilon:.4g}" in s["meaning"] and "With n = 60,000 records, 1/n = 1.67e-05" in s[
        "meaning"]
    assert "knows every other record" in s["threat"]
    for item in ("the selection score", "K and the seeds", "neighbouring data sets", "stay secret"):
        assert item in s["assumptions"]
    assert "the best of a random number K of training runs" in s["best-of-k"]
    assert "a geometric law with mean 5" in s["best-of-k"]
    assert re.search(r"Report made \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 \(UTC\).*SHA-256 [0-9a-f]{64}",
                     s["provenance"])
    legends = measured[400]["legends"]
    assert [len(f) for f in legends] == [3, 3]  # tuning, one run, random guess; selection, K-mixture, one run
    assert all(item["visible"] for figure in legends for item in figure)
    assert any("K-mixture bound" in item["text"] for item in legends[1])
    assert "TPR at FPR 0.001" in s["risk-table"]
