"""The exceptions privselect raises on purpose, in one place (no dependencies: importing it is free).

Bad input (wrong type, out of range, NaN) raises the built-in ``TypeError`` / ``ValueError`` with
a message that names the parameter; the classes below mark the situations where the input is
valid but privselect refuses, so that callers can tell them apart. None of them carries run data:
a message names parameters, mechanisms and regimes, never a score, a trial or a record.
"""

from __future__ import annotations

__all__ = ["CertificationError", "UnsupportedMechanismError", "PrivateStudyError", "AllRunsFailedError",
           "TrainerContractError", "RandomnessLeakError", "ReleaseRefusedError", "CandidatePrivacyError", "WorkerLossError",
           "FinalRunFailedError", "DensityRatioError", "UnreachableTargetError"]


class CertificationError(ValueError):
    """A query asks for a value that cannot be certified (e.g. delta below the float floor).

    Raised by a profile's ``delta``/``epsilon`` queries and by ``certify`` when no certified
    answer exists in the regime asked for. The message names the regime (the accountant's floor
    ``error_budget.min_delta``, the epsilon range) and what would certify it (another accountant,
    a larger delta).
    """


class UnreachableTargetError(CertificationError):
    """A calibration target lies below the floor that the parts of the procedure independent of the calibrated
    parameter cost on their own (``ps.calibrate_noise`` with ``score_noise=`` or ``search=``: the certificate with
    no training at all). The message names the parameter and gives the floor; ``floor`` holds it."""

    def __init__(self, message: str, floor: float) -> None:
        super().__init__(message)
        self.floor = floor


class UnsupportedMechanismError(ValueError):
    """An accountant cannot interpret a mechanism; the message names the failing piece."""


class PrivateStudyError(RuntimeError):
    """A private study was used in a way that would leak (pruning, persistent storage, ...)."""


# -- the run engine (privselect.tuning; docs/release.md) ---------------------------------------


class AllRunsFailedError(RuntimeError):
    """Every run raised or returned a non-finite score; nothing was released.

    The message is fixed: it carries no exception text, score or parameter of any run.
    """


class TrainerContractError(TypeError):
    """The trainer or objective broke its contract (signature or return type): a programming error."""


class RandomnessLeakError(ValueError):
    """The winner's output or params hold randomness state (or a data-derived public fact); not released."""


class ReleaseRefusedError(RandomnessLeakError, TypeError):
    """A value in the winner is not of a release type (``privselect.tuning.release``); the message names its type
    and position only, never its contents."""


class CandidatePrivacyError(ValueError):
    """A drawn candidate's privacy exceeds what the certificate assumes; nothing was released."""


class WorkerLossError(RuntimeError):
    """Workers were lost more often than the backend re-executes runs (``privselect.tuning.backends.MAX_REEXECUTIONS``);
    nothing was released.

    The message is fixed: it carries no run data (no score, parameter, exception text or count).
    """


class FinalRunFailedError(RuntimeError):
    """The final training run of a pipeline raised; nothing was released. The message is fixed (no run data)."""


class DensityRatioError(ValueError):
    """An adaptive search's sampling density would leave its declared bounds c <= pi/pi0 <= C; it is refused."""
