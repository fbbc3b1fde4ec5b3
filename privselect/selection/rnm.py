"""Report-Noisy-Max with additive Gaussian or Laplace noise (Koskela, Redberg, Wang 2024, Sec. 3).

``report_noisy_max`` releases only the index of the largest noisy score. Its privacy:

* profile bound (KRW Thm 3.2): H_{e^eps}(M(X) || M(X')) <= m * delta(eps), delta the profile
  of the additive-noise mechanism at sensitivity 2 * sensitivity (1 * sensitivity when the
  scores are monotone: all move in the same direction between neighbours);
* adaptive composition of k rounds (KRW Thm 3.3): m^k * delta_k(eps), where delta_k is the
  profile of the **k-fold** composition of that additive-noise mechanism. The printed
  statement says "m-wise"; the proof (KRW App. A.2) composes one noise copy per round, and
  ``tests/test_rnm.py`` shows the m-wise reading is violated by an exact computation;
* Gaussian closed form (KRW Cor. 3.4): eps = 2/sigma^2 + (2/sigma) sqrt(2 log(m/delta))
  (for sensitivity 1 and non-monotone scores);
* RDP baseline (KRW Thm 3.1, Zhu and Wang 2022 Thm 8): eps'(alpha) = eps_2(alpha) + log(m)/(alpha-1).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import _validation as check
from ..accounting import privacy_profile
from ..accounting.profile import PrivacyProfile, ScaledShiftedCurve
from ..mechanisms import Gaussian, Laplace

__all__ = ["report_noisy_max", "rnm_noise_mechanism", "rnm_profile", "rnm_epsilon_closed_form", "rnm_rdp_epsilon"]


def _check_noise(noise) -> Gaussian | Laplace:
    if not isinstance(noise, (Gaussian, Laplace)):
        raise TypeError(f"noise must be ps.Gaussian(noise_multiplier) or ps.Laplace(scale), got {type(noise).__name__}")
    return noise


def report_noisy_max(scores, noise: Gaussian | Laplace, rng: np.random.Generator, sensitivity: float = 1.0,
                     monotone: bool = False) -> int:
    """Index of the largest score after adding i.i.d. noise scaled to ``sensitivity``.

    ``noise=ps.Gaussian(s)`` adds N(0, (s * sensitivity)^2) to each score;
    ``noise=ps.Laplace(b)`` adds Lap(b * sensitivity). ``monotone`` does not change the
    release, only the privacy analysis ([`rnm_profile`][privselect.selection.rnm.rnm_profile]); it is accepted here so that
    calls document which analysis applies.
    """
    noise = _check_noise(noise)
    if noise.sensitivity != 1.0:
        raise ValueError("give the score sensitivity once, as report_noisy_max(..., sensitivity=...); "
                         "leave the noise mechanism's own sensitivity at 1")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    s = check.real_array("scores", scores)
    if s.ndim != 1 or s.size == 0:
        raise ValueError("scores must be a non-empty 1-d array")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    sensitivity = check.positive("sensitivity", sensitivity)
    scale = (noise.noise_multiplier if isinstance(noise, Gaussian) else noise.scale) * sensitivity
    if not math.isfinite(scale):
        raise ValueError(f"the noise scale times sensitivity={sensitivity!r} overflows double precision")
    draw = rng.normal if isinstance(noise, Gaussian) else rng.laplace
    with np.errstate(over="ignore"):
        noisy = s + draw(0.0, scale, size=s.size)
    if not np.isfinite(noisy).all():
        # An overflowed sum would tie at inf and bias the argmax: the release would no longer be RNM.
        raise ValueError("scores plus noise overflow double precision; rescale the scores and the sensitivity")
    return int(np.argmax(noisy))


def rnm_noise_mechanism(noise: Gaussian | Laplace, monotone: bool = False) -> Gaussian | Laplace:
    """The additive-noise mechanism whose profile bounds RNM (KRW Thm 3.2).

    The same absolute noise on a query of twice the score sensitivity (once if monotone):
    noise multiplier s/2 at sensitivity 2 (s at sensitivity 1 when monotone).
    """
    noise = _check_noise(noise)
    factor = 1.0 if monotone else 2.0
    if isinstance(noise, Gaussian):
        return Gaussian(noise.noise_multiplier / factor, sensitivity=factor)
    return Laplace(noise.scale / factor, sensitivity=factor)


_U = np.finfo(float).eps / 2  # unit roundoff of IEEE double
#: Largest m**rounds: the largest double (the bound m^rounds * delta_rounds(eps) is below 1
#: only where delta_rounds(eps) < 1 / m^rounds, i.e. below 5.6e-309 beyond it: no accountant
#: certifies such deltas, and 1 / m^rounds is not even a normal double).
_LOG_MAX_FACTOR = math.log(sys.float_info.max)


def candidates_factor(m: int, rounds: int) -> float:
    """m**rounds as a double rounded up (never below the exact integer); ValueError naming
    ``m`` and ``rounds`` when it exceeds the largest double. Work: O(log rounds) big-int
    multiplications of at most ~1024 bits."""
    if m == 1:
        return 1.0
    # m >= 2^(bit_length - 1), so m**rounds >= 2^((bit_length - 1) * rounds): decide before computing.
    if (m.bit_length() - 1) * rounds >= sys.float_info.max_exp:
        exact = None
    else:
        exact = m**rounds
        if exact > int(sys.float_info.max):
            exact = None
    if exact is None:
        raise ValueError(
            f"m**rounds = {m}**{rounds} (about e^{rounds * math.log(m):.6g}) exceeds the largest double "
            f"(e^{_LOG_MAX_FACTOR:.6g}): the Report-Noisy-Max bound m^rounds * delta_rounds(eps) (KRW Thm 3.3) "
            "is below 1 only where delta_rounds(eps) < 1/m**rounds < 5.6e-309, below every delta an accountant "
            "certifies in double precision; use fewer rounds or fewer candidates m")
    scale = float(exact)  # round to nearest; exact <= the largest double, so no overflow
    if scale < exact:
        scale = math.nextafter(scale, math.inf)
    return scale


def rnm_profile(noise: Gaussian | Laplace, m: int, *, rounds: int = 1, monotone: bool = False,
                accountant: str = "auto", **accountant_options) -> PrivacyProfile:
    """Certified profile of ``rounds`` adaptive RNM releases among ``m`` candidates (KRW Thm 3.2, 3.3).

    delta(eps) <= min(1, m^rounds * delta_rounds(eps)), delta_rounds the profile of the
    rounds-fold composition of [`rnm_noise_mechanism`][privselect.selection.rnm.rnm_noise_mechanism]. m^rounds must not exceed the
    largest double (~e^709.78; beyond it the bound is vacuous at every certifiable delta): a
    larger value raises ``ValueError`` naming ``m`` and ``rounds``.
    """
    m = check.positive_int("m", m)
    rounds = check.positive_int("rounds", rounds)
    scale = candidates_factor(m, rounds)
    base = privacy_profile(rnm_noise_mechanism(noise, monotone).compose(rounds), accountant=accountant,
                           **accountant_options)
    theorem = "Koskela-Redberg-Wang 2024, Thm 3.2" if rounds == 1 else "Koskela-Redberg-Wang 2024, Thm 3.3"
    curve = ScaledShiftedCurve(base, scale=scale, label="rnm_candidates")
    return PrivacyProfile(curves=(curve,), accountant=f"rnm[{base.accountant}]", mechanism=base.mechanism,
                          description=f"Report-Noisy-Max of {m} candidates, {rounds} round(s); {theorem}",
                          metadata=(("theorem", theorem), ("m", m), ("rounds", rounds), ("monotone", monotone)))


def rnm_epsilon_closed_form(noise_multiplier: float, m: int, delta: float) -> float:
    """KRW Cor. 3.4: Gaussian RNM (sensitivity 1, not monotone) is (eps, delta)-DP with
    eps = 2/sigma^2 + (2/sigma) sqrt(2 log(m/delta)).

    Evaluated as (2/sigma) (1/sigma + sqrt(2 (log m - log delta))), which never
    overflows in an intermediate step, and rounded up by 8 u relative (the ~9 operations,
    each within 1 ulp, err by at most ~5 u) plus 8 subnormal ulps (results below 2.2e-308).
    ``ValueError`` naming ``noise_multiplier`` when epsilon itself exceeds the largest double
    (noise_multiplier below ~1e-154).
    """
    sigma = check.positive("noise_multiplier", noise_multiplier)
    m = check.positive_int("m", m)
    delta = check.delta_scalar("delta", delta)
    log_ratio = math.log(m) - math.log(delta)  # log(m / delta) > 0; m / delta may exceed the float range
    eps = (2 / sigma) * (1 / sigma + math.sqrt(2 * log_ratio))
    eps = eps * (1 + 8 * _U) + 8 * math.ulp(0.0)  # rounded up; the absolute term covers subnormal results
    if not math.isfinite(eps):
        raise ValueError(
            f"noise_multiplier={noise_multiplier!r} is too small: the closed-form epsilon 2/sigma^2 + "
            f"(2/sigma) sqrt(2 log(m/delta)) exceeds the largest double (noise_multiplier must be above "
            f"~{math.sqrt(2 / sys.float_info.max):.3g})")
    return eps


def rnm_rdp_epsilon(noise: Gaussian | Laplace, m: int, delta: float, *, rounds: int = 1, monotone: bool = False) -> float:
    """RDP baseline (KRW Thm 3.1; Zhu, Wang 2022, Thm 8): per round eps_2(alpha) + log(m)/(alpha - 1),
    composed over ``rounds`` and converted to (eps, delta) (improved conversion)."""
    from ..accounting import rdp

    m = check.positive_int("m", m)
    rounds = check.positive_int("rounds", rounds)
    delta = check.delta_scalar("delta", delta)
    orders = rdp.DEFAULT_ORDERS
    per_round = rdp.rdp_curve(rnm_noise_mechanism(noise, monotone), orders) + math.log(m) / (orders - 1)
    return float(rdp.epsilon_from_rdp(orders, rounds * per_round, delta))
