"""What a front end's certificate covers, in one sentence for its result's repr.

The common mistake is to report one run's ε as the tuning's (an Optuna study storing each trial's ε in
``trial.user_attrs["epsilon"]``): the tuning ran K runs and released the best, and only the certificate of
the whole selection bounds that (Papernot, Steinke 2022; Koskela, Redberg, Wang 2024). The sentence says
so: the ε and δ, the K law, what was released, and the privacy of each run.
"""

from __future__ import annotations

from ..selection.certify import Certificate

__all__ = ["covers"]

_RELEASE_ALL = "mixture"  # certify(bound="mixture"): K and every run released


def covers(certificate: Certificate) -> str:
    """The sentence: what ``certificate`` covers (the whole selection, never one run)."""
    bound = str(certificate.bound)
    if bound == _RELEASE_ALL:
        released = f"K ~ {certificate.k!r} runs, K and every run released"
    elif bound.startswith("adaptive"):
        released = f"the best of K ~ {certificate.k!r} runs of an adaptive search (density ratio to the prior bounded)"
    else:
        released = f"the best of K ~ {certificate.k!r} runs"
    final = " and the final run" if any(str(note).startswith("pipeline:") for note in certificate.notes) else ""
    return (f"certificate covers the whole selection{final}: ε={certificate.epsilon:.4g} at δ={certificate.delta:.3g} "
            f"for {released}, each {certificate.base!s}; one run's ε is not the tuning's")
