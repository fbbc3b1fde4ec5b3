"""The procedures the calibration tests calibrate: K's law, delta, score noise, an adaptive search's density ratio,
a risk target, and two small DP-SGD schedules that keep each certificate cheap."""

from __future__ import annotations

import privselect as ps

K = ps.Geometric(mean=10)
DELTA = 1e-5
SCORE_NOISE = ps.Laplace(2.0)
RATIO = (1.5, 0.8)
TPR_TARGET = ps.RiskTarget(tpr=0.05, fpr=1e-3)
SUBSAMPLED = {"sample_rate": 0.01, "steps": 100}
FULL_BATCH = {"sample_rate": 1.0, "steps": 4}  # full-batch steps (a Gaussian): a risk calibration in about 1 s

__all__ = ["K", "DELTA", "SCORE_NOISE", "RATIO", "TPR_TARGET", "SUBSAMPLED", "FULL_BATCH"]
