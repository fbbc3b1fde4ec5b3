"""The connect-the-dots PLD accountant ("pld"): pessimistic and optimistic discretisations of each step's
privacy loss (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022), composed by one long-double FFT with proven
wrap-around and floating-point terms. Its bracket has no eps slack and no delta floor beyond those terms."""

from .accountant import PLD, PLDAccountant, pld_profile

__all__ = ["PLD", "PLDAccountant", "pld_profile"]
