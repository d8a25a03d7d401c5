"""Aggregates in exact arithmetic, so that aggregates equal on paper are equal floats (issue 27).

A value is the decimal it prints as (its shortest repr: what JSON and CSV hold and what people
read), so 0.1 + 0.2 is 0.3 here, as on paper and as challengeR's data sets are written. Every
aggregate (a mean, a median's midpoint, a weighted mean of ranks, a combined leaderboard's weighted
ranks) is a ratio of integers rounded once to the nearest float, by `ratio` (by `weighted` for a
few Python numbers): equal ratios give the same float whatever the order of the cases, unequal
ones never swap, and ranks then compare floats with == under R's tie rule, as challengeR does.

Why it keeps the bootstrap's speed: the integers are numerators over one power of ten, summed by
the same float64 matrix products as before. In limbs of at most 52 - headroom bits (headroom: the
bits of the largest total weight), every product and partial sum stays below 2**53, so BLAS sums
them exactly in any order. Decimals with up to 15 places whose numerators fit (Dice to three
places, accuracies k/200, 1.0, times in ms) take one limb, found by a vectorised test, and cost as
much as floating-point sums did; other values take a limb per ~44 bits, joined as Python integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

EXACT = 2**53  # float64 holds every integer below this


@dataclass(frozen=True)
class Fixed:
    """Finite values as integers over 10**scale: value = sum(limbs[k] * 2**(bits * k)) / 10**scale.
    A value that is not finite has numerator 0 (callers carry infinities apart)."""

    limbs: np.ndarray  # limbs x the values' shape; integer-valued floats below 2**bits in size
    bits: int
    scale: int

    def like(self, limbs: np.ndarray) -> Fixed:
        """Sums (or other exact integer combinations) of these limbs, in the same units."""
        return Fixed(limbs, self.bits, self.scale)


def printed(value: float) -> Decimal:
    """The decimal a finite float prints as, exactly: 0.1 is one tenth, not the binary fraction
    nearest it."""
    return Decimal(repr(float(value)))


def whole(decimals: Sequence[Decimal]) -> tuple[list[int], int]:
    """Decimals as integers over one power of ten: the numerators and the power."""
    scale = max(0, *(-int(d.as_tuple().exponent) for d in decimals))
    return [int(d.scaleb(scale)) for d in decimals], scale


def fixed(values: np.ndarray, *, headroom: int) -> Fixed:
    """Values as integers over one power of ten, in limbs so small that a sum of weights below
    2**headroom times a limb stays exact."""
    bits = 52 - headroom
    finite = np.isfinite(values)
    short = _short_decimals(values[finite], below=2**bits)
    if short is None:
        return _long_decimals(values, finite, bits=bits)
    limbs = np.zeros((1, *values.shape))
    limbs[0, finite], scale = short
    return Fixed(limbs, bits, scale)


def _short_decimals(values: np.ndarray, *, below: int) -> tuple[np.ndarray, int] | None:
    """The numerators over the fewest places that give back every value, each one under `below`;
    None if no number of places up to 15 does. Below 2**52 no other decimal with as many places
    rounds to the same float, so these are the decimals the values print as."""
    for scale in range(16):
        numerators = np.rint(values * 10.0**scale)
        if numerators.size and np.abs(numerators).max() >= below:
            return None
        if np.array_equal(numerators / 10.0**scale, values):
            return numerators, scale
    return None


def _long_decimals(values: np.ndarray, finite: np.ndarray, *, bits: int) -> Fixed:
    """Any values, through the decimals they print as (Python integers), one distinct value at a time."""
    distinct, where = np.unique(values[finite], return_inverse=True)
    numerators, scale = whole([printed(v) for v in distinct.tolist()])
    count = -(-max(abs(n).bit_length() + 1 for n in numerators) // bits)
    mask = (1 << bits) - 1  # every limb but the top one in [0, 2**bits); the top one keeps the sign
    digits = np.array([[n >> (bits * k) & mask if k < count - 1 else n >> (bits * k) for n in numerators]
                       for k in range(count)], dtype=float)
    limbs = np.zeros((count, *values.shape))
    limbs[:, finite] = digits[:, where]
    return Fixed(limbs, bits, scale)


def ratio(sums: Fixed, denominator: np.ndarray) -> np.ndarray:
    """sums / denominator (positive integers) rounded once to the nearest float; NaN where the
    denominator is 0. The one place an aggregate becomes a float."""
    scaled = denominator * 10.0**sums.scale if sums.scale < 23 else None  # powers of ten exact up to 1e22
    with np.errstate(divide="ignore", invalid="ignore"):
        if len(sums.limbs) == 1 and scaled is not None and (scaled < EXACT).all():
            quotient: np.ndarray = sums.limbs[0] / scaled  # IEEE division of exact integers: rounded once
            return quotient
    numerator = sum(limb.astype(np.int64).astype(object) << (sums.bits * k) for k, limb in enumerate(sums.limbs))
    below = np.asarray(denominator, dtype=np.int64).astype(object) * 10**sums.scale
    out = np.full(np.shape(denominator), np.nan)
    taken = below != 0
    out[taken] = (np.asarray(numerator)[taken] / below[taken]).astype(float)  # Python int / int: rounded once
    return out


def weighted(values: Sequence[int], weights: Sequence[float], *, mean: bool) -> float:
    """sum(value * weight), over sum(weight) for a mean, on the weights' printed decimals, rounded
    once: weights 0.1, 0.2 and 0.3 give values (1, 1, 2) and (2, 2, 1) the same 0.9."""
    shares = [Fraction(printed(w)) for w in weights]
    total = sum((v * share for v, share in zip(values, shares)), Fraction(0))
    return float(total / sum(shares) if mean else total)


def infinite_part(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """What infinite values add to a finite aggregate: inf where +inf counts, -inf where -inf
    does, NaN where both do, 0 elsewhere."""
    with np.errstate(invalid="ignore"):
        part: np.ndarray = np.where(positive, np.inf, 0.0) + np.where(negative, -np.inf, 0.0)
        return part
