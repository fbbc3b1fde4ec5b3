"""TukeyEM (Amin, Joseph, Ribero, Vassilvitskii 2023, "Easy Differentially Private Linear Regression"):
private linear regression that needs no feature or label bounds.

m models are fitted by least squares on m disjoint blocks of the records; a Propose-Test-Release
step checks privately that the region of approximate Tukey depth >= t = floor(m/4) is stable; if it
is, the exponential mechanism with utility = approximate Tukey depth, restricted to that region,
releases one point. Otherwise the release is ⊥ (the model predicts 0).

The privacy argument below is our own, proved in the class docstring from the sensitivity of
the depth alone; it follows the structure of the paper (PTR check on volume ratios of depth
regions, after Brown, Gaboardi, Smith, Ullman, Zakynthinou 2021) but its constants are ours and
err on the safe side: the exponential mechanism uses exp(a depth) with 2a + log1p(delta/2) <= eps_em
(the standard factor 2 for a data-dependent normaliser), where the public reference code uses
exp(eps_em depth).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ... import _validation as check
from ...mechanisms import ApproxDP
from .regression import PrivateLinearRegressor, RefusalWarning, SingleReleaseCertified

__all__ = ["TukeyEMRegressor", "approximate_tukey_depth", "block_models", "depth_box_bounds",
           "distance_lower_bound", "tukey_n_models", "ROWS_PER_MODEL"]

#: ``n_models="auto"``: m = floor(n_min / (ROWS_PER_MODEL d)) models (each block then has about
#: ROWS_PER_MODEL d records at the public lower bound n_min). Chosen on elevators (1.5-8 tried, eps = 10,
#: 4 seeds; 1.5-5 within seed noise) and synthetic data: a development choice, not tuned per set.
ROWS_PER_MODEL = 3.0

#: Independent U(0, TIE_JITTER) noise added to every model coordinate (data-independent): breaks
#: ties such as a coefficient that is 0 in every model, which would give every depth region volume 0.
TIE_JITTER = 1e-10


def tukey_n_models(n_min: int, d: int, rows_per_model: float = ROWS_PER_MODEL) -> int:
    """The public rule of ``n_models="auto"``: floor(n_min / (rows_per_model d)), at least 1."""
    return max(1, int(n_min // (rows_per_model * d)))


def block_models(X: np.ndarray, y: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """(m, d) least-squares models, one per block; each record joins a block drawn uniformly and independently.

    The minimum-norm solution pinv(X_b^T X_b) X_b^T y_b of each block (0 for an empty block), plus
    `TIE_JITTER` uniform noise. Adding or removing a record changes exactly one model (its block's),
    whatever n: the block labels are independent of the values and of each other.
    """
    n, d = X.shape
    labels = rng.integers(m, size=n)
    gram = np.zeros((m, d, d))
    np.add.at(gram, labels, X[:, :, None] * X[:, None, :])
    xty = np.zeros((m, d))
    np.add.at(xty, labels, X * y[:, None])
    models = np.einsum("bij,bj->bi", np.linalg.pinv(gram, hermitian=True), xty)
    return models + TIE_JITTER * rng.random((m, d))


def approximate_tukey_depth(models: np.ndarray, points: np.ndarray) -> np.ndarray:
    """min over coordinates j of min(#{i: models_ij <= y_j}, #{i: models_ij >= y_j}), for each row y of ``points``.

    Tukey depth restricted to the 2d axis-aligned half-spaces through y (Amin et al. 2023, Def. of
    approximate Tukey depth). Adding, removing or replacing one model moves it by at most 1.
    """
    points = np.atleast_2d(points)
    below = (models[None, :, :] <= points[:, None, :]).sum(axis=1)
    above = (models[None, :, :] >= points[:, None, :]).sum(axis=1)
    return np.minimum(below, above).min(axis=1)


def depth_box_bounds(models: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi), each (D + 2, d) with D = floor(m/2): {depth >= i} is the box prod_j [lo[i, j], hi[i, j]].

    lo[i] = i-th smallest coordinate, hi[i] = i-th largest (i = 1..D); row 0 is unused (the whole
    space) and row D + 1 is a single point inside box D, so V_{D+1} = 0 and the boxes are nested.
    """
    m, d = models.shape
    s = np.sort(models, axis=0)
    top = m // 2
    lo = np.full((top + 2, d), -np.inf)
    hi = np.full((top + 2, d), np.inf)
    idx = np.arange(1, top + 1)
    lo[1:top + 1], hi[1:top + 1] = s[idx - 1], s[m - idx]
    lo[top + 1] = hi[top + 1] = s[top] if m % 2 else s[top - 1]  # inside box D: the median / lower middle
    return lo, hi


def _log_volumes(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log V_i = sum_j log(hi - lo) for i = 0..D+1 (V_0 = inf; -inf where a box is flat)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(hi - lo).sum(axis=1)


def distance_lower_bound(log_volumes: np.ndarray, t: int, a: float, log_theta: float) -> int:
    """k(S) = the largest k in {0, .., t-3} with C_0 .. C_k, or -1, where C_k: some g >= 0 has
    e^{-a g} V_{t-k-2} / V_{t+k+g+1} <= theta.

    C_k(S) implies C_{k-1}(S') for every S' differing in one model (V_i(S') <= V_{i-1}(S), V_i(S') >=
    V_{i+1}(S)), so k has sensitivity 1; C_0 makes S safe (see `TukeyEMRegressor`).
    """
    top = len(log_volumes) - 2  # D
    ks = np.arange(0, max(t - 2, 0))
    if ks.size == 0:
        return -1
    gs = np.arange(0, top + 1)
    upper = t + ks[:, None] + gs[None, :] + 1
    valid = upper <= top
    lower_lv = log_volumes[t - ks - 2][:, None]
    upper_lv = log_volumes[np.minimum(upper, top + 1)]
    with np.errstate(invalid="ignore"):
        gap = np.where(valid & np.isfinite(upper_lv), lower_lv - upper_lv - a * gs[None, :], np.inf)
    holds = gap.min(axis=1) <= log_theta
    prefix = np.cumprod(holds).astype(bool)
    return int(ks[prefix].max()) if prefix.any() else -1


def _sample_restricted(lo: np.ndarray, hi: np.ndarray, log_volumes: np.ndarray, t: int, a: float,
                       rng: np.random.Generator) -> np.ndarray:
    """One draw from density proportional to exp(a depth(y)) on {depth >= t} (Amin et al. 2023's sampler).

    A level i in t..D with probability proportional to e^{a i} (V_i - V_{i+1}); then the shell {depth = i}
    split by the first coordinate j* whose depth is exactly i: coordinates before j* in box i + 1,
    j* in box i minus box i + 1, the rest in box i; pieces drawn by volume, points uniformly.
    """
    top = len(log_volumes) - 2
    levels = np.arange(t, top + 1)
    lv, lv_next = log_volumes[levels], log_volumes[levels + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_shell = lv + np.log1p(-np.exp(lv_next - lv))
    log_w = np.where(np.isfinite(lv), a * levels + log_shell, -np.inf)
    i = int(levels[np.argmax(log_w + rng.gumbel(size=log_w.shape))])
    outer, inner = hi[i] - lo[i], hi[i + 1] - lo[i + 1]
    with np.errstate(divide="ignore"):
        log_outer, log_inner, log_ring = np.log(outer), np.log(inner), np.log(outer - inner)
    d = outer.size
    before = np.concatenate([[0.0], np.cumsum(log_inner)[:-1]])
    after = np.concatenate([np.cumsum(log_outer[::-1])[::-1][1:], [0.0]])
    j_star = int(np.argmax(before + log_ring + after + rng.gumbel(size=d)))
    u = rng.random(d)
    y = np.where(np.arange(d) < j_star, lo[i + 1] + u * inner, lo[i] + u * outer)
    left = lo[i + 1, j_star] - lo[i, j_star]
    r = u[j_star] * (outer[j_star] - inner[j_star])
    y[j_star] = lo[i, j_star] + r if r < left else hi[i + 1, j_star] + (r - left)
    return y


class TukeyEMRegressor(SingleReleaseCertified, PrivateLinearRegressor):
    """TukeyEM (Amin, Joseph, Ribero, Vassilvitskii 2023, Alg. 1): (eps, delta)-DP for add/remove neighbours, no data bounds.

    1. Models: `block_models` (each record in one of m blocks, independently): adding or removing
       a record replaces one of the m models. ``n_models`` is public: an int, or ``"auto"`` =
       `tukey_n_models` (``n_min``, d) with ``n_min`` a public lower bound on n.
    2. Test (eps_1 = ``ptr_share`` eps): k = `distance_lower_bound` (sensitivity 1) at theta = delta/2;
       pass iff k + Lap(1/eps_1) > ln(1/(2 delta))/eps_1, else ⊥.
    3. Release: density proportional to exp(a T(y)) on {T >= t}, t = floor(m/4), T the approximate
       Tukey depth (`approximate_tukey_depth`), a = (eps_2 - log1p(delta/2))/2, eps_2 = eps - eps_1.

    Proof (ours). T has sensitivity 1 under replacing a model. With V_i = vol{T >= i} and Z_S the
    normaliser, for neighbours S, S' and any g >= 0: Z_S' <= e^a (Z_S + e^{a(t-1)} V_{t-1}(S)) and
    Z_S >= e^{a(t+g)} V_{t+g}(S), so on the common support p_S/p_S' <= e^{2a}(1 + e^{-a(g+1)}
    V_{t-1}/V_{t+g}); off it (T_S' < t forces T_S = t) p_S has mass <= e^{-a g} V_t/V_{t+g}. C_0
    bounds both ratios by V_{t-2}/V_{t+g+1}, hence P[A(S) in E] <= e^{eps_2} P[A(S') in E] + delta/2.
    PTR (Dwork, Lei 2009; Redberg, Zhu, Wang 2023, Thm 3.1 structure): if k(S) >= 0 the Laplace test
    is eps_1-DP and the release is (eps_2, delta/2) from S; if k(S) = -1 a pass has probability
    (1/2) e^{-eps_1 (tau + 1)} = delta e^{-eps_1}. Only S's side is needed in either case, so TukeyEM
    is (eps_1 + eps_2, max(delta/2, delta e^{-eps_1}))-DP: `privacy` is that ``ApproxDP`` (its delta
    below ``delta``, so ``privacy_profile(est.privacy).epsilon(delta) <= eps``). The block labels are
    independent of the data, so the add/remove guarantee is a mixture of the one-model-replaced one.

    No bounds are read or assumed: ``y_bound`` (optional) only clips predictions (post-processing).
    No intercept: append a constant feature. Fitted: ``coef_``, ``refused_``, ``n_models_``,
    ``distance_release_`` (the noisy k, already private). A refusal issues a `RefusalWarning`.
    """

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-6, n_models: int | str = "auto",
                 n_min: int | None = None, ptr_share: float = 0.5, y_bound: float | None = None,
                 random_state=None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.n_models = n_models
        self.n_min = n_min
        self.ptr_share = ptr_share
        self.y_bound = y_bound
        self.random_state = random_state

    @property
    def privacy(self) -> ApproxDP:
        """``ApproxDP(eps, max(delta/2, delta e^{-eps_1}))``: the whole mechanism (test, release or ⊥), class docstring."""
        eps1 = self.budget()[0]
        return ApproxDP(self.epsilon, max(self.delta / 2, self.delta * math.exp(-eps1)))

    def budget(self) -> tuple[float, float, float, float]:
        """(eps_1 of the test, the test threshold tau, eps_2 of the release, the exponent a)."""
        eps = check.positive("epsilon", self.epsilon)
        delta = check.open_unit("delta", self.delta)
        eps1 = eps * check.open_unit("ptr_share", self.ptr_share)
        eps2 = eps - eps1
        return eps1, math.log(1 / (2 * delta)) / eps1, eps2, (eps2 - math.log1p(delta / 2)) / 2

    def models_for(self, d: int) -> int:
        """m: ``n_models`` or the public rule on (``n_min``, d)."""
        if self.n_models == "auto":
            if self.n_min is None:
                raise ValueError("n_models='auto' needs n_min, a public lower bound on the number of records")
            return tukey_n_models(check.positive_int("n_min", self.n_min), d)
        return check.positive_int("n_models", self.n_models)

    def fit(self, X, y):
        eps1, tau, eps2, a = self.budget()
        if a <= 0:
            raise ValueError(f"epsilon x (1 - ptr_share) = {eps2:.3g} leaves no budget for the release")
        if self.y_bound is not None:
            check.positive("y_bound", self.y_bound)
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        d = X.shape[1]
        m = self.models_for(d)
        rng = self._rng()
        models = block_models(X, y, m, rng)
        lo, hi = depth_box_bounds(models)
        log_v = _log_volumes(lo, hi)
        t = m // 4
        k = distance_lower_bound(log_v, t, a, math.log(self.delta / 2))
        noisy = k + rng.laplace(scale=1.0 / eps1)
        passed = noisy > tau and t >= 1 and np.isfinite(log_v[t])  # a false pass on a flat region: ⊥ too
        self.n_models_ = m
        self.distance_release_ = float(noisy)
        self.refused_ = not passed
        self.coef_ = _sample_restricted(lo, hi, log_v, t, a, rng) if passed else np.zeros(d)
        self.intercept_ = 0.0
        if self.refused_:
            warnings.warn(RefusalWarning(
                f"TukeyEM refused (⊥): the private distance {noisy:.4g} is at most {tau:.4g}; the model predicts 0. "
                f"This refusal is the ({self.epsilon:g}, {self.delta:g})-DP release; refitting on the same data is "
                "another release and must be accounted for."), stacklevel=2)
        return self

    def predict(self, X) -> np.ndarray:
        """x . coef_ (clipped to [-y_bound, y_bound] only if ``y_bound`` is given)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        pred = X @ self.coef_
        return pred if self.y_bound is None else np.clip(pred, -self.y_bound, self.y_bound)
