"""Exact accountants: closed-form profiles where one exists.

* Compositions of Gaussian mechanisms are exactly mu-GDP with mu^2 = sum_i k_i mu_i^2
  (Dong, Roth, Su 2022, Cor. 3.3), and mu-GDP has the closed-form profile of Balle, Wang
  2018, Thm 8 ([`GaussianCurve`][privselect.accounting.profile.GaussianCurve]).
"""

from .gaussian import ExactAccountant, gdp_mu_bracket, gdp_mu_squared

__all__ = ["ExactAccountant", "gdp_mu_bracket", "gdp_mu_squared"]
