"""The power of the pre-registered comparison (docs/PREREGISTRATION.md): an exact paired
McNemar test of one arm against greedy on N problems.

    python scripts/prereg_power.py [--n 500] [--effect 0.06] [--alpha 0.05]
        [--discordant 0.10,0.15,0.20,0.25,0.30]

For a true accuracy difference ``effect`` (arm minus greedy) and a share ``d`` of problems
where the two disagree (discordant pairs), the discordant count D ~ Binomial(N, d) and,
given D, the arm's wins W ~ Binomial(D, (d + effect) / (2 d)). The test rejects at
``alpha`` when the exact two-sided McNemar p of (W, D - W) is below it. The power is the
probability of a rejection in the arm's favour, summed exactly over D and W (no
simulation, no normal approximation). Printed for each ``d``, with the normal
approximation's N for 80% power beside it for comparison.
"""
from __future__ import annotations

import argparse
import math
import sys


def mcnemar_p(plus: int, minus: int) -> float:
    """Exact two-sided McNemar p: twice the binomial(plus + minus, 1/2) tail of the smaller."""
    n = plus + minus
    if n == 0:
        return 1.0
    k = min(plus, minus)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def critical_wins(D: int, alpha: float) -> int | None:
    """The least number of the arm's wins out of D discordant pairs that the exact test
    rejects at ``alpha`` (in the arm's favour), or None if none does."""
    for w in range((D + 1) // 2, D + 1):
        if w > D - w and mcnemar_p(w, D - w) < alpha:
            return w
    return None


def power(n: int, effect: float, discordant: float, alpha: float = 0.05) -> float:
    """P(the exact McNemar test rejects in the arm's favour) for ``n`` paired problems."""
    if not 0 < discordant <= 1 or abs(effect) > discordant:
        raise ValueError("the discordant share must be in (0, 1] and at least |effect|")
    q = (discordant + effect) / (2 * discordant)      # P(a discordant pair is the arm's)
    total = 0.0
    for D in range(n + 1):
        pD = math.comb(n, D) * discordant ** D * (1 - discordant) ** (n - D)
        if pD < 1e-15:
            continue
        w0 = critical_wins(D, alpha)
        if w0 is None:
            continue
        total += pD * sum(math.comb(D, w) * q ** w * (1 - q) ** (D - w)
                          for w in range(w0, D + 1))
    return total


def normal_n(effect: float, discordant: float, alpha: float = 0.05, beta: float = 0.2) -> int:
    """The usual normal-approximation sample size for McNemar (Connor 1987)."""
    from statistics import NormalDist
    za, zb = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(1 - beta)
    return math.ceil((za * math.sqrt(discordant) + zb * math.sqrt(discordant - effect ** 2)) ** 2
                     / effect ** 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--effect", type=float, default=0.06)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--discordant", default="0.10,0.15,0.20,0.25,0.30")
    args = ap.parse_args(argv)
    print(f"exact McNemar, N = {args.n}, true difference {args.effect:+.2f}, "
          f"alpha {args.alpha} (two-sided)")
    print("discordant share | power | N for 80% (normal approximation)")
    for d in (float(x) for x in args.discordant.split(",")):
        print(f"{d:16.2f} | {power(args.n, args.effect, d, args.alpha):5.3f} | "
              f"{normal_n(args.effect, d, args.alpha)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
