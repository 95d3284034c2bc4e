"""Two looks of a group-sequential design (docs/verdicts.md, "The second wave").

A preset that states `second_wave` judges a cell's tests twice at most: look 1 at its first wave's
n₁ seeds, look 2 at the n seeds after a second wave. With Z₁, Z₂ the two looks' statistics
(correlation √(n₁/n)), the boundaries keep the test's α over both looks: P(Z₁ ≥ c₁ or Z₂ ≥ c₂) = α
under the null (|Z| for a two-sided test), computed by integrating the bivariate normal (scipy).
Their shape is the classical one: Pocock c₁ = c₂; O'Brien-Fleming c₁ = c₂/√(n₁/n_max), strict at
look 1 and nearly the plain test at look 2. Look 1's boundary is fixed before the data at the
planned fraction n₁/n_max (n_max the cap, `max_seeds`); look 2's is solved at the fraction the
second wave reached, spending what look 1 left. Each boundary becomes a nominal level (the normal
tail beyond it) at which the t-tests of `numbers` and `claims` are run. A cell whose first wave
already trains the cap (or more) has no second look and keeps the plain test at α; one whose first
wave tested nothing (fewer than `MIN_SEEDS`) spent nothing there, and its look 2 is the plain test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

OBRIEN_FLEMING, POCOCK = "obrien_fleming", "pocock"
SPENDINGS = (OBRIEN_FLEMING, POCOCK)
DEFAULT_SPENDING = OBRIEN_FLEMING  # look 2 close to the plain test: the second wave loses little power
MIN_SEEDS = 3  # a look with fewer seeds tests nothing (`numbers.MIN_SEEDS`, `claims.MIN_SEEDS`)


def _crossing(c1: float, c2: float, rho: float, sides: int) -> float:
    """P(Z₁ beyond c₁ or Z₂ beyond c₂), (Z₁, Z₂) standard bivariate normal of correlation `rho`."""
    from scipy import integrate
    from scipy.special import ndtr

    spread = math.sqrt(1.0 - rho**2)

    def within_at_two(z1: float) -> float:
        low = ndtr((-c2 - rho * z1) / spread) if sides == 2 else 0.0
        return math.exp(-z1 * z1 / 2) / math.sqrt(2 * math.pi) * float(ndtr((c2 - rho * z1) / spread) - low)

    lower = -c1 if sides == 2 else -12.0
    return 1.0 - integrate.quad(within_at_two, lower, c1, epsabs=1e-13, epsrel=1e-11)[0]


@lru_cache(maxsize=4096)
def boundaries(alpha: float, fraction: float, spending: str = DEFAULT_SPENDING, sides: int = 2) -> tuple[float, float]:
    """(c₁, c₂) of the two looks of `spending`'s shape at information fraction n₁/n₂ = `fraction`."""
    from scipy import optimize

    if spending not in SPENDINGS:
        raise ValueError(f"spending {spending!r}: one of {', '.join(SPENDINGS)}")
    rho = math.sqrt(fraction)
    first = 1.0 if spending == POCOCK else 1.0 / rho
    scale = optimize.brentq(lambda c: _crossing(c * first, c, rho, sides) - alpha, 0.1, 40.0, xtol=1e-12)
    return scale * first, scale


@lru_cache(maxsize=4096)
def second_boundary(alpha: float, c1: float, fraction: float, sides: int = 2) -> float:
    """c₂ spending what look 1's `c1` left of `alpha`, at the fraction n₁/n the second wave reached."""
    from scipy import optimize

    return optimize.brentq(lambda c: _crossing(c1, c, math.sqrt(fraction), sides) - alpha, 0.01, 40.0, xtol=1e-12)


def _tail(c: float, sides: int) -> float:
    from scipy.special import ndtr

    return float(sides * ndtr(-c))


@dataclass(frozen=True)
class Design:
    """A preset's `second_wave`: the boundaries' shape and the cap on a cell's seeds over both looks."""

    spending: str
    max_seeds: int
    numbers_once: bool = False  # `second_look: claims`: numbers judged once, at the plain test, on wave 1

    def look(self, n1: int, n: int) -> int:
        """Which look n seeds of a cell whose first wave planned n₁ are (0: none, the plain test)."""
        if n1 >= self.max_seeds and n <= n1:
            return 0
        return 1 if n <= n1 else 2

    def level(self, alpha: float, sides: int, n1: int, n: int) -> float:
        """The nominal level of a test at α (`sides` 1 or 2) at n seeds of a cell planned at n₁."""
        at = self.look(n1, n)
        if at == 0 or (at == 2 and n1 < MIN_SEEDS):
            return alpha
        c1, c2 = boundaries(alpha, n1 / max(self.max_seeds, n), self.spending, sides)
        return _tail(c1 if at == 1 else second_boundary(alpha, c1, n1 / n, sides), sides)

    def number_levels(self, n1: int):
        """n → (each one-sided test's level of a number's equivalence, its interval's two-sided
        level): `numbers.judge`'s `levels`."""
        from dmlbench.verdicts.numbers import ALPHA

        return lambda n: (self.level(ALPHA, 1, n1, n), self.level(ALPHA, 2, n1, n))


def design_of(entry: dict | None) -> Design | None:
    """The design of a certificate spec's `second_wave` entry (None: the plain tests)."""
    if not entry:
        return None
    return Design(entry["spending"], int(entry["max_seeds"]), entry.get("second_look") == "claims")
