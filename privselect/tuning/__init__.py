"""Private tuning: the run engine, its backends, search spaces and the PrivateTuner front end."""

from ..errors import AllRunsFailedError, TrainerContractError
from .backends import BACKENDS, Backend, WorkerLossError, get_backend, register_backend
from .guard import RandomnessLeakError
from .pipeline import FinalRun, FinalRunFailedError
from .privacy import CandidatePrivacyError
from .tuner import PrivateTuner, TuningResult

__all__ = ["PrivateTuner", "TuningResult", "BACKENDS", "Backend", "register_backend", "get_backend",
           "AllRunsFailedError", "TrainerContractError", "WorkerLossError", "RandomnessLeakError",
           "CandidatePrivacyError", "FinalRun", "FinalRunFailedError"]
