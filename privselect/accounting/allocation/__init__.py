"""The random-allocation accountant ("allocation"): epochs of balls-in-bins sampling, redrawn every epoch
(`privselect.mechanisms.RandomAllocation`), bracketed between two Gaussian-DP curves (`accountant`)."""

from .accountant import Allocation, allocation_mu_bracket

__all__ = ["Allocation", "allocation_mu_bracket"]
