"""The connect-the-dots PLD accountant ("pld"): a pessimistic discretisation of each step's privacy loss
(Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022) and an optimistic one from tangent lines (a contraction in
e^{-L}), composed by FFT (float64, with the low frequencies in long double about each law's mode) with proven
wrap-around and floating-point terms. Its bracket has no eps slack and no delta floor beyond those terms."""

from .accountant import PLD, PLDAccountant, pld_profile

__all__ = ["PLD", "PLDAccountant", "pld_profile"]
