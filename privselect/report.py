"""What a certificate means to its reader: the guarantee in words, the attack risks, and a self-contained page.

[`report_text`][privselect.report.report_text] and [`report_html`][privselect.report.report_html] (also
``Certificate.report()`` and ``privselect report CERT.json [--html FILE] [--dataset-size N]``) read a
[`Certificate`][privselect.selection.certify.Certificate] and the certified risk bounds of
[`privselect.risk`][privselect.attack_risk.risk]. A report answers a reviewer's questions: what ε and δ mean
(δ next to 1/n where the data set size n is given; it is never read from data), who the attacker is (the worst
case: one who knows every other record), what the guarantee assumes (the sampler, the score counted, K and the
seeds secret, the neighbouring relation), "best of K" in words, when it was made and from which file (SHA-256),
and every curve of its figures in words. The page has no external resource: its figures are inline SVG drawn
here, its tables HTML, and it reads at 400 px (no sideways scroll). Nothing in a report comes from the data: a
certificate depends on the declarations only.
"""

from __future__ import annotations

import datetime
import hashlib
import html
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .accounting import privacy_profile
from .accounting.profile import PrivacyProfile
from .attack_risk import QUOTED_FPRS, Risk, certificate_risk, is_certificate, is_pipeline, mechanism_risk, risk
from .mechanisms import Mechanism
from .svgplot import Series, nice_step, svg_plot

__all__ = ["RISK_BASELINE", "Provenance", "Report", "canonical_json", "k_in_words", "report_html", "report_text"]

#: The reconstruction baseline the report quotes (an attacker who, without the record, rebuilds it 1 in 1000).
RISK_BASELINE = 1e-3
#: Trade-off curve points of the page's figure (log-spaced FPR).
_CURVE_FPRS = np.logspace(-6, 0, 121)
#: delta * n below this is "well below 1/n".
_WELL_BELOW = 0.1

#: K's law in words, by the law's class name (mean, and the law's own parameters).
_K_WORDS = {
    "Geometric": lambda k: f"a geometric law with mean {k.mean:.4g} (K = 1, 2, 3, ...: after each run, another "
                           f"follows with probability {1 - k.gamma:.4g})",
    "Logarithmic": lambda k: f"a logarithmic law with mean {k.mean:.4g} (K = 1, 2, 3, ...)",
    "TruncatedNegativeBinomial": lambda k: f"a truncated negative binomial law with eta = {k.eta:g} and mean "
                                           f"{k.mean:.4g} (K = 1, 2, 3, ...)",
    "Poisson": lambda k: f"a Poisson law with mean {k.mean:.4g} (K may be 0: then nothing is released)",
    "Binomial": lambda k: f"a binomial law with n = {k.n} and p = {k.p:.4g}, mean {k.mean:.4g} (K may be 0: then "
                          "nothing is released)",
}


def k_in_words(k: Any) -> str:
    """K's law in words, e.g. "a geometric law with mean 10 (K = 1, 2, 3, ...)"."""
    words = _K_WORDS.get(type(k).__name__)
    return words(k) if words is not None else f"the law {k!r} (mean {float(k.mean):.4g})"


def _one_in(x: float) -> str:
    """1e-3 -> '1 in 1,000'."""
    return f"1 in {round(1 / x):,}" if 0 < x < 1 else f"{x:g}"


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%" if x >= 1e-4 else f"{100 * x:.2e}%"


def _run_risk(cert: Any) -> Risk | None:
    """The risk of ONE run (for the comparison column), where the certificate knows its run."""
    if cert.run_profile is not None:
        return risk(cert.run_profile)
    if isinstance(cert.base, Mechanism):
        return risk(cert.base)
    return None


def _shared_base(cert: Any) -> PrivacyProfile | None:
    """The run's ``"auto"`` profile where a report would build it twice (the run's column and the tuning's selection
    profile, rebuilt from a certificate's base run): a certificate that carries no profile and no run profile."""
    if getattr(cert, "profile", None) is not None or getattr(cert, "run_profile", None) is not None:
        return None
    if not isinstance(getattr(cert, "base", None), Mechanism) or getattr(cert, "bound", None) not in ("profile", "rdp"):
        return None
    if is_pipeline(cert) or not is_certificate(cert):
        return None
    return privacy_profile(cert.base, accountant="auto")  # builds nothing until its first query


def canonical_json(cert: Any) -> bytes:
    """The certificate's canonical JSON (sorted keys, no spaces, strict numbers): what a report hashes when the
    certificate has no file."""
    return json.dumps(cert.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


@dataclass(frozen=True)
class Provenance:
    """When a report was made (UTC, ISO 8601) and from what: a certificate file, or the certificate's canonical
    JSON, with its SHA-256."""

    made: str
    sha256: str
    source: str

    @classmethod
    def of_bytes(cls, data: bytes, source: str) -> Provenance:
        """Made now, from ``data`` (hashed) that ``source`` names."""
        made = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
        return cls(made, hashlib.sha256(data).hexdigest(), source)

    @classmethod
    def of(cls, cert: Any, file: str | os.PathLike[str] | None = None) -> Provenance:
        """From ``file`` (checked to hold ``cert``) or, without one, from ``cert``'s canonical JSON."""
        if file is None:
            return cls.of_bytes(canonical_json(cert), "the certificate's canonical JSON (no file)")
        name = os.fspath(file)
        try:
            with open(name, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise ValueError(f"file: cannot read {name!r} ({exc.strerror})") from None
        try:
            held = type(cert).from_json(data.decode("utf-8")).to_dict()
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"file: {name!r} is not a certificate ({type(exc).__name__}: {exc})") from None
        if held != cert.to_dict():
            raise ValueError(f"file: {name!r} holds another certificate than the one reported")
        return cls.of_bytes(data, f"file {name}")

    def sentence(self) -> str:
        return f"Report made {self.made} (UTC) from {self.source}, SHA-256 {self.sha256}."


@dataclass(frozen=True)
class _Numbers:
    """The quoted risk bounds of one Risk, computed once (each is a search over eps)."""

    tpr: tuple[float, ...]
    advantage: float
    attribute: float
    reconstruction: float

    @classmethod
    def of(cls, r: Risk) -> _Numbers:
        """One search over eps for every FPR quoted (``Risk.summary``): the tuning's search costs CF evaluations of
        its whole eps range, and the quoted FPRs, the attribute's 1/2 and the reconstruction baseline share it."""
        quoted, advantage, attribute, reconstruction = r.summary(QUOTED_FPRS, prior=0.5, baseline=RISK_BASELINE)
        return cls(tuple(float(v) for v in quoted), advantage, attribute, reconstruction)

    def at(self, fpr: float) -> float:
        return self.tpr[QUOTED_FPRS.index(fpr)]


@dataclass(frozen=True)
class Report:
    """A certificate with its certified risks: the tuning's (``tuning``) and one run's (``run``, where known), the
    data set size (``dataset_size``, public, optional) and the report's provenance.

    Build it once with [`Report.of`][privselect.report.Report.of]; ``text()`` and ``html()`` render it.
    """

    cert: Any
    tuning: Risk
    run: Risk | None = None
    dataset_size: int | None = None
    provenance: Provenance | None = None
    #: The quoted bounds of ``tuning`` and ``run``, computed once (each is a search over ε).
    numbers: _Numbers = field(init=False, repr=False, compare=False)
    run_numbers: _Numbers | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.dataset_size is not None and (isinstance(self.dataset_size, bool) or
                                              not isinstance(self.dataset_size, int) or self.dataset_size < 1):
            raise ValueError(f"dataset_size must be a positive integer (the public number of records n), "
                             f"got {self.dataset_size!r}")
        if self.provenance is None:
            object.__setattr__(self, "provenance", Provenance.of(self.cert))
        if self.tuning.deferred is not None:  # a report plots every profile: built now (no floor), in the background
            self.tuning.deferred.prefetch()  # while the run's and the selection profile's searches run (same numbers)
        object.__setattr__(self, "run_numbers", None if self.run is None else _Numbers.of(self.run))
        object.__setattr__(self, "numbers", _Numbers.of(self.tuning))  # waits for the build where it needs it

    @classmethod
    def of(cls, cert: Any, *, with_run: bool = True, dataset_size: int | None = None,
           file: str | os.PathLike[str] | None = None, provenance: Provenance | None = None) -> Report:
        """The risks of ``cert`` (``ps.risk``) and, with ``with_run``, of one of its runs. ``dataset_size``: the
        public number of records n (δ is then compared with 1/n); ``file``: the certificate's file (hashed; else
        its canonical JSON is), or a ready ``provenance``."""
        if not all(hasattr(cert, name) for name in ("epsilon", "delta", "alternatives", "k", "bound", "theorem")):
            raise TypeError(f"cert must be a Certificate, got {type(cert).__name__}")
        if provenance is None:
            provenance = Provenance.of(cert, file)
        base = _shared_base(cert) if with_run else None
        if base is None:
            return cls(cert, risk(cert), _run_risk(cert) if with_run else None, dataset_size, provenance)
        # one profile of the run for both columns: the tuning's selection profile is built on it, and the run's
        # risk is ps.risk of the run from it (the same numbers as two profiles give; its accountant builds once)
        return cls(cert, certificate_risk(cert, base_profile=base), mechanism_risk(cert.base, base), dataset_size,
                   provenance)

    def text(self) -> str:
        """The guarantee in words and the table of certified risks."""
        return _text(self)

    def html(self) -> str:
        """A self-contained HTML page (inline SVG figures, no external resource), readable at 400 px."""
        return _html(self)

    def released(self) -> str:
        if self.cert.bound == "mixture":
            return f"K ~ {self.cert.k!r} runs, all of them and K itself released"
        return f"the best of K ~ {self.cert.k!r} runs"

    def best_of_k(self) -> str:
        """What is released, in words."""
        k = self.cert.k
        if self.cert.bound == "mixture":
            return (f"Every one of a random number K of training runs is released, and K too; K is drawn from "
                    f"{k_in_words(k)}, independently of the data.")
        return (f"Only the best of a random number K of training runs is released (its hyperparameters, score and "
                f"model), K drawn from {k_in_words(k)}, independently of the data. Drawing K at random is what "
                f"makes trying many runs cheap in privacy: the certificate covers all K runs and the choice of "
                f"the best.")

    def rows(self) -> list[tuple[str, str, float, float | None]]:
        """(attack, what, tuning bound, one-run bound)."""
        t, r = self.numbers, self.run_numbers
        out = []
        for i, a in enumerate(QUOTED_FPRS):
            out.append(("membership", f"TPR at FPR {a:g}", t.tpr[i], None if r is None else r.tpr[i]))
        out.append(("membership", "advantage (max TPR - FPR)", t.advantage, None if r is None else r.advantage))
        out.append(("attribute inference", "success guessing a secret bit, prior 1/2",
                    t.attribute, None if r is None else r.attribute))
        out.append(("reconstruction", f"success when the baseline is {_one_in(RISK_BASELINE)}",
                    t.reconstruction, None if r is None else r.reconstruction))
        return out

    def meaning(self) -> list[str]:
        """ε and δ in words, δ against 1/n where n is known."""
        c = self.cert
        factor = math.exp(c.epsilon) if c.epsilon < 700 else math.inf
        out = [f"ε (epsilon) = {c.epsilon:.4g} limits how much any one person's record can change what is released: "
               f"the probability of any result can grow or shrink by at most a factor e^ε ≈ {factor:.3g} between "
               f"two data sets that differ in that record.",
               f"δ (delta) = {c.delta:.3g} is the probability with which that limit may fail. It must be far below "
               f"1/n for n records: a release that published each record in full with probability δ would meet "
               f"δ, and would expose δ·n records on average."]
        n = self.dataset_size
        if n is None:
            out.append("The data set size n was not given (privselect report --dataset-size N, or "
                       "Report.of(cert, dataset_size=N)), so δ is not compared with 1/n here; n is public and is "
                       "never read from the data.")
        else:
            ratio = c.delta * n
            verdict = ("well below 1/n" if ratio < _WELL_BELOW else
                       "below 1/n, but not well below it (a common rule is δ ≤ 1/(10n))" if ratio < 1 else
                       "NOT below 1/n: the guarantee allows exposing a whole record; choose a smaller δ")
            out.append(f"With n = {n:,} records, 1/n = {1 / n:.3g}, and δ = {c.delta:.3g} is {verdict}. "
                       f"δ·n = {ratio:.3g}: the number of records the release above would expose on average.")
        return out

    def threat(self) -> str:
        """The threat model in one sentence."""
        return ("Worst case: every bound holds against any attacker, even one who knows every other record in the "
                "data, the training code, the search space and K's law, and sees everything that is released, "
                "trying to learn whether one person's record was used, or what it holds.")

    def assumptions(self) -> list[tuple[str, str]]:
        """What the certificate rests on: if one fails, the numbers do not hold."""
        c = self.cert
        run = _describe(c.base)
        sampler = _sampler(c.base)
        out = [("the runs", f"each training run, its scoring included, is exactly {run}; nothing else touched the "
                 "private data")]
        if sampler is not None:
            out.append(("the sampler", sampler))
        out += [("the selection score", "the score that picks the best run (e.g. a validation accuracy) is itself "
                 "private and counted: its noisy mechanism is part of the run described above, or it is computed "
                 "on public data. An exact score on private data is NOT covered"),
                ("K and the seeds", "K is drawn from its law independently of the data; " +
                 ("K and every run are released (the certificate counts it)" if c.bound == "mixture" else
                  "K, the seeds and random generators, the other runs, their scores and logs stay secret")),
                ("the candidates", "hyperparameters are drawn from a search space fixed in advance, independently "
                 "of the data (or of public data only), unless the certificate is an adaptive search's"),
                ("neighbouring data sets", f"{_relation(c.relation)}; a record is one example, or one person if all "
                 "of a person's examples are clipped together"),
                ("public values", "n, label sets, feature and target bounds and any constant used in pre-processing "
                 "are parameters, never read from the private data")]
        return out

    def sentences(self) -> list[str]:
        c, t = self.cert, self.numbers
        tpr = t.at(1e-3)
        out = [
            f"Releasing {self.released()} of {_describe(c.base)} is ({c.epsilon:.4g}, {c.delta:.3g})-differentially "
            f"private for {_relation(c.relation)} ({c.theorem})"
            + ("." if c.bound == "mixture" else "; K and the other runs are never released."),
            f"Membership: an attacker who wrongly accuses at most {_one_in(1e-3)} non-members catches at most "
            f"{_pct(tpr)} of the members, whatever the attack (at most {tpr / 1e-3:.3g} times the rate of a blind guess).",
            f"No attack's true-positive rate exceeds its false-positive rate by more than {t.advantage:.3g}.",
            f"Reconstruction: an attacker who would rebuild a record {_one_in(RISK_BASELINE)} times without it in the "
            f"data succeeds at most {_pct(t.reconstruction)} of the time with it.",
            f"Attribute inference: a secret yes/no attribute held with even odds is guessed right at most "
            f"{_pct(t.attribute)} of the time.",
        ]
        if not self.tuning.certified:
            out.append("These numbers rest on an error ESTIMATE of the accountant, not a proven bound.")
        return out

    def public(self) -> list[tuple[str, str]]:
        c = self.cert
        items = [("one run", _describe(c.base)), ("neighbouring data sets", _relation(c.relation)),
                 ("K's law", f"{c.k!r}, drawn independently of the data")]
        if isinstance(c.base, Mechanism):
            items.append(("from the run's description", "noise multiplier, sampling rate and number of steps "
                          "(hence the data set size n they were computed from) are parameters, never read from data"))
        if self.dataset_size is not None:
            items.append(("data set size n", f"{self.dataset_size:,} (given to the report)"))
        items += [("declared, not learnt", "label sets, feature and target bounds, and any constant used in "
                   "pre-processing are parameters of the run; the guarantee assumes they did not come from the data"),
                  ("target delta", f"{c.delta:.3g}"), ("accountant", c.accountant),
                  ("numerical error", _budget(c)), ("privselect", c.version)]
        return items


def _describe(base) -> str:
    """DP-SGD in words where the run is one Poisson-subsampled Gaussian composed T times; else the repr."""
    if not isinstance(base, Mechanism):
        return str(base)
    parts = list(base.components())
    if len(parts) == 1:
        (step, count), = parts
        inner = getattr(step, "base", None)
        sigma = getattr(inner, "noise_multiplier", None)
        if sigma is not None and hasattr(step, "rate"):
            sampling = "Poisson" if type(step).__name__ == "PoissonSubsampled" else "without-replacement"
            return (f"noisy training (DP-SGD: noise multiplier {sigma:g}, {sampling} sampling rate {step.rate:.4g}, "
                    f"{count:,} steps)")
        if count > 1:
            return f"{step!r} composed {count:,} times"
    return repr(base)


def _sampler(base) -> str | None:
    """The sampling assumption of a run, in words (None where the run samples nothing)."""
    if not isinstance(base, Mechanism):
        return None
    kinds = {type(step).__name__ for step, _ in base.components()}
    if "PoissonSubsampled" in kinds:
        return ("batches are drawn by Poisson sampling as described: each record joins each batch independently with "
                "the stated probability (shuffling into fixed-size batches is a different sampler, not covered)")
    if "SampledWithoutReplacement" in kinds:
        return "batches are fixed-size samples drawn without replacement, fresh at every step, as described"
    return None


def _relation(relation: str) -> str:
    return {"add_remove": "data sets that differ by adding or removing one record",
            "replace_one": "data sets that differ by replacing one record"}.get(relation, relation)


def _budget(c: Any) -> str:
    b = c.error_budget
    size = ("none: exact" if b.eps_error == 0 and b.delta_error == 0 else
            f"ε may be overstated by at most {b.eps_error:.3g}, δ by at most {b.delta_error:.3g}")
    return (f"the accountant's numerical error is already inside every number ({size}; never understated); its "
            "terms are in the certificate's JSON (error_budget)")


# -- text ---------------------------------------------------------------------------------------------------


def report_text(cert: Any, *, dataset_size: int | None = None) -> str:
    """The guarantee in words and the table of certified risks (tuning, and one run where known)."""
    return Report.of(cert, dataset_size=dataset_size).text()


def report_html(cert: Any, *, dataset_size: int | None = None) -> str:
    """A self-contained HTML page: the guarantee in words, the risk table, the trade-off curve with the quoted
    points marked, the profile, the certificate's alternatives and what is public."""
    return Report.of(cert, dataset_size=dataset_size).html()


def _text(facts: Report) -> str:
    cert = facts.cert
    provenance = facts.provenance
    assert provenance is not None  # __post_init__ sets it
    lines = ["privselect report", "=================", "", _wrap(provenance.sentence()), ""]
    lines += [_wrap(s) for s in facts.sentences()]
    lines += ["", "What epsilon and delta mean:"] + [_wrap("  " + s) for s in facts.meaning()]
    lines += ["", "What is released:", _wrap("  " + facts.best_of_k())]
    lines += ["", "Who the attacker is:", _wrap("  " + facts.threat())]
    lines += ["", "What the guarantee assumes (if one fails, the numbers do not hold):"]
    lines += [_wrap(f"  - {k}: {v}.") for k, v in facts.assumptions()]
    lines += ["", "Certified upper bounds on attack success:", ""]
    has_run = facts.run is not None
    head = f"  {'attack':<21}{'quantity':<42}{'tuning':>10}" + (f"{'one run':>10}" if has_run else "")
    lines += [head, "  " + "-" * (len(head) - 2)]
    for attack, what, tuned, run in facts.rows():
        lines.append(f"  {attack:<21}{what:<42}{tuned:>10.4g}" + (f"{run:>10.4g}" if has_run else ""))
    lines += ["", f"Bound families tried (epsilon at delta = {cert.delta:.3g}):"]
    for name, value in cert.alternatives.items():
        mark = "  <- certified" if name == cert.bound else ""
        lines.append(f"  {name:<18}{value:>10.4g}{mark}")
    lines += ["", "What is public (the guarantee assumes it):"]
    lines += [_wrap(f"  {k}: {v}") for k, v in facts.public()]
    lines += ["", _wrap(f"Risk bounds from {facts.tuning.source}. f-DP duality: Dong, Roth, Su 2022, Prop. 2.12; "
                        "reconstruction: Hayes, Mahloujifar, Balle 2023; Kaissis et al. 2023 (docs/risk.md).")]
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 100) -> str:
    import textwrap

    indent = " " * (len(text) - len(text.lstrip(" ")))
    return textwrap.fill(text, width=width, subsequent_indent=indent + "  ", break_long_words=False)


# -- html ---------------------------------------------------------------------------------------------------


def _profile_words(profile: Any, cert: Any) -> tuple[str, str]:
    """A tuning profile's name and what it is, in words (from the accountant name its bound gives it)."""
    name = profile.accountant
    if name.startswith("selection["):
        chosen = "; the certificate's ε comes from this curve" if cert.bound == "profile" else ""
        return ("best of K (selection bound)",
                f"releasing the best of K runs, the bound of {cert.theorem if cert.bound == 'profile' else 'Koskela, Redberg, Wang 2024, Thm 5.2'} "
                f"on one run's profile (accountant {name[len('selection['):-1]}){chosen}")
    if name.startswith("k-mixture["):
        return ("all K runs released (K-mixture bound)",
                "releasing every run and K itself (a mixture of k-fold compositions, accountant "
                f"{name[len('k-mixture['):-1]}); the best run is computed from them, so this also bounds it, and it is "
                "the tighter curve near ε = 0 (the advantage, large FPRs)")
    return (f"tuning ({name})", "the profile of the whole tuning the certificate carries")


_CSS = """
html { -webkit-text-size-adjust: 100%; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; max-width: 1100px;
       margin: 16px auto; padding: 0 16px; line-height: 1.5; overflow-wrap: break-word; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.5em; border-bottom: 1px solid #ddd; }
.guarantee { background: #f4f8fb; border-left: 4px solid #2c6e9b; padding: 8px 14px; }
.guarantee p { margin: 0.4em 0; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0; } th, td { padding: 5px 10px; border-bottom: 1px solid #e4e4e4;
       vertical-align: top; }
th { text-align: left; background: #fafafa; } td.num { text-align: right; font-variant-numeric: tabular-nums;
       overflow-wrap: normal; white-space: nowrap; }
tr.chosen td { font-weight: 600; background: #fdf6e3; }
.figures { display: flex; flex-wrap: wrap; gap: 24px; }
figure { margin: 0; flex: 1 1 420px; max-width: 560px; min-width: 0; }
figure h3 { font-size: 1em; margin: 0.4em 0; }
svg.figure { width: 100%; height: auto; display: block; }
.figure .tick { font-size: 15px; fill: #444; } .figure .axis { font-size: 16px; }
.figure .plabel { font-size: 16px; font-weight: 600; fill: #a93226; }
ul.legend { list-style: none; padding-left: 0; margin: 0.4em 0; } ul.legend li { margin: 0.3em 0; }
.swatch { display: inline-block; width: 28px; height: 0; margin-right: 6px; vertical-align: middle;
          border-top-width: 3px; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 50%; background: #c0392b; margin-right: 6px; }
.note, .provenance { color: #555; font-size: 0.92em; }
code, .hash { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.9em; }
.hash { word-break: break-all; }
@media (max-width: 560px) { body { padding: 0 10px; } th, td { padding: 4px 4px; } table { font-size: 0.86em; } .guarantee { padding: 4px 10px; }
  ul { padding-left: 1.2em; } }
"""


def _legend(series: Sequence[Series], words: Sequence[str]) -> str:
    items = []
    for s, w in zip(series, words):
        style = "dashed" if s.dash.startswith("6") else "dotted" if s.dash else "solid"
        items.append(f'<li class="curve"><span class="swatch" style="border-top: 3px {style} {s.colour}"></span>'
                     f'<b>{html.escape(s.label)}</b>: {html.escape(w)}</li>')
    return '<ul class="legend">' + "".join(items) + "</ul>"


def _points(points: Sequence[tuple[float, float, str]]) -> str:
    return '<ul class="legend">' + "".join(f'<li><span class="dot"></span>{i + 1}: {html.escape(label)}</li>'
                                          for i, (_, _, label) in enumerate(points)) + "</ul>"


def _plotted_delta(profile: PrivacyProfile, eps: np.ndarray, lo: float, chunk: int = 40) -> np.ndarray:
    """Upper delta on the increasing ``eps``, by chunks, until it falls below ``lo`` (the figure's floor, where every
    lower value is drawn alike); past that eps_0 the value there: the true delta is non-increasing, so
    delta(eps) <= delta(eps_0) <= its upper bound (the far tail, the costly one to certify, is never computed)."""
    out = np.empty(eps.shape)
    for start in range(0, eps.size, chunk):
        out[start:start + chunk] = np.asarray(profile.delta(eps[start:start + chunk]), float)
        if out[start:start + chunk].min() < lo:
            out[start + chunk:] = out[start:start + chunk].min()
            break
    return out


def _figures(facts: Report) -> str:
    cert, t, r = facts.cert, facts.tuning, facts.run
    curve_t = np.asarray(t.tpr(_CURVE_FPRS, precise=False))
    series = [Series("tuning", _CURVE_FPRS, curve_t, "#2c6e9b")]
    words = ["the certified upper bound for the whole tuning: at each FPR the smallest of all the tuning's "
             "privacy-profile curves (next figure) and the certified (ε, δ); the risk table's numbers are on it"]
    if r is not None:
        series.append(Series("one run", _CURVE_FPRS, np.asarray(r.tpr(_CURVE_FPRS, precise=False)), "#7f8c8d", "6 4"))
        words.append("the same bound for a single training run, for comparison (not released alone)")
    series.append(Series("random guess", _CURVE_FPRS, _CURVE_FPRS, "#999", "2 4"))
    words.append("TPR = FPR: an attack that learns nothing")
    quoted = [(a, facts.numbers.at(a), f"TPR ≤ {facts.numbers.at(a):.3g} at FPR {a:g}") for a in QUOTED_FPRS[1:]]
    title = "Membership inference: the best any attack can do"
    roc = svg_plot(series, x_range=(1e-6, 1.0), y_range=(1e-6, 1.0), x_label="false-positive rate (FPR)",
                   y_label="largest true-positive rate (TPR)", title=title, log_x=True, log_y=True, points=quoted)
    out = [f"<figure><h3>{title}</h3>{roc}<figcaption>{_legend(series, words)}{_points(quoted)}"
           "<p class='note'>Log-log axes: 1 − f(FPR) for the f-DP trade-off curve implied by the privacy profile "
           "(both neighbouring directions).</p></figcaption></figure>"]
    top = max(2.0 * cert.epsilon, 1.0) if math.isfinite(cert.epsilon) else 10.0
    top = math.ceil(top / nice_step(top)) * nice_step(top)
    eps_grid = np.linspace(0.0, top, 241)
    lo = max(min(cert.delta / 100, 1e-12), 1e-300)  # the figure's lowest delta
    colours = ("#2c6e9b", "#8e44ad", "#27ae60")
    prof, prof_words = [], []
    for i, p in enumerate(t.profiles):
        label, what = _profile_words(p, cert)
        prof.append(Series(label, eps_grid, _plotted_delta(p, eps_grid, lo), colours[i % 3]))
        prof_words.append(what)
    if r is not None and r.profile is not None:
        prof.append(Series("one run", eps_grid, _plotted_delta(r.profile, eps_grid, lo), "#7f8c8d", "6 4"))
        prof_words.append("a single training run's profile, for comparison")
    if prof:
        dot = [(cert.epsilon, cert.delta, f"certified (ε, δ) = ({cert.epsilon:.4g}, {cert.delta:.3g}), from the "
                                          f"{cert.bound} bound ({cert.theorem})")]
        title = "Privacy profile δ(ε)"
        svg = svg_plot(prof, x_range=(0.0, float(eps_grid[-1])), y_range=(lo, 1.0), x_label="ε",
                       y_label="δ(ε), certified upper bound", title=title, log_x=False, log_y=True, points=dot)
        out.append(f"<figure><h3>{title}</h3>{svg}<figcaption>{_legend(prof, prof_words)}{_points(dot)}"
                   "<p class='note'>Each curve is a valid upper bound on δ(ε) for the release; lower is more private. "
                   "The risk numbers use, at each point, the smallest of them and the certified (ε, δ).</p>"
                   "</figcaption></figure>")
    return "\n".join(out)


def _table(head: Sequence[str], rows: str, ident: str) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    thead = f"<thead><tr>{cells}</tr></thead>" if head else ""
    return f'<div class="scroll"><table id="{ident}">{thead}<tbody>{rows}</tbody></table></div>'


def _html(facts: Report) -> str:
    cert, t, r = facts.cert, facts.tuning, facts.run
    esc = html.escape
    rows = "\n".join(
        f"<tr><td>{esc(a)}</td><td>{esc(w)}</td><td class='num'>{v:.4g}</td>"
        + ("" if r is None else f"<td class='num'>{'' if rv is None else f'{rv:.4g}'}</td>") + "</tr>"
        for a, w, v, rv in facts.rows())
    alt_rows = "\n".join(
        f"<tr class='{'chosen' if n == cert.bound else ''}'><td>{esc(n)}</td><td class='num'>{v:.4g}</td>"
        f"<td>{'certified' if n == cert.bound else ''}</td></tr>" for n, v in cert.alternatives.items())
    public_rows = "\n".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts.public())
    assumptions = "".join(f"<li><b>{esc(k)}</b>: {esc(v)}.</li>" for k, v in facts.assumptions())
    notes = "".join(f"<li>{esc(n)}</li>" for n in cert.notes)
    p = facts.provenance
    assert p is not None  # __post_init__ sets it
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>privselect report: ({cert.epsilon:.4g}, {cert.delta:.3g})-DP</title>
<style>{_CSS}</style></head>
<body>
<h1>What this privacy guarantee means</h1>
<p class="provenance" id="provenance">Report made <time datetime="{esc(p.made)}">{esc(p.made)}</time> (UTC) from
{esc(p.source)}; SHA-256 <span class="hash">{p.sha256}</span>.</p>
<div class="guarantee" id="guarantee">{''.join(f"<p>{esc(s)}</p>" for s in facts.sentences())}</div>
<h2>What ε and δ mean</h2>
<div id="meaning">{''.join(f"<p>{esc(s)}</p>" for s in facts.meaning())}</div>
<h2>What is released</h2>
<p id="best-of-k">{esc(facts.best_of_k())}</p>
<h2>Who the attacker is</h2>
<p id="threat">{esc(facts.threat())}</p>
<h2>What the guarantee assumes</h2>
<p class="note">If one of these fails, the numbers on this page do not hold.</p>
<ul id="assumptions">{assumptions}</ul>
<h2>Certified risk bounds</h2>
<p class="note">Every number is an upper bound on the success of ANY attack, proven from the certified privacy profile
(its numerical error included).</p>
{_table(["attack", "quantity", "tuning"] + ([] if r is None else ["one run"]), rows, "risk-table")}
<h2>Trade-off curve and privacy profile</h2>
<div class="figures">
{_figures(facts)}
</div>
<h2>Bound families the certificate tried</h2>
{_table(["bound", f"ε at δ = {cert.delta:.3g}", ""], alt_rows, "alternatives")}
{'<ul class="note">' + notes + '</ul>' if notes else ''}
<h2>What is public, and how it was computed</h2>
{_table([], public_rows, "public")}
<p class="note">Risk bounds from {esc(t.source)}. Formulas and sources: docs/risk.md (f-DP duality, Dong, Roth, Su 2022,
Prop. 2.12; reconstruction, Hayes, Mahloujifar, Balle 2023 and Kaissis et al. 2023).</p>
</body></html>
"""
