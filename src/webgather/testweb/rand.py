"""Stable, counter-based randomness for the synthetic web. Pure.

Everything random in the synthetic web is a function of a 64-bit key: a host's
key is BLAKE2b-8 of ``(seed, host name)`` (stable across runs and Python
versions, unlike ``hash()``); a page's key derives from its host's key and its
index, a link's draw from the page key, a stream number and the link's index.
Derivation is the SplitMix64 finalizer, written twice with identical results:
on Python ints (one page, rendered lazily) and on ``uint64`` numpy arrays (the
whole web at once, for :meth:`WebModel.link_graph`). A counter-based generator
is what makes "one page lazily" and "all pages vectorized" agree exactly;
a seeded ``random.Random`` per page would cost a generator per page.
"""

from __future__ import annotations

import hashlib
import math
from typing import TypeVar

import numpy as np
from scipy.special import ndtri

__all__ = [
    "MASK64",
    "derive",
    "derive_arr",
    "key64",
    "lognormal_from_unit",
    "lognormal_from_unit_arr",
    "pick_from_mix",
    "unit",
    "unit_arr",
    "weyl",
]

T = TypeVar("T")

MASK64 = 0xFFFF_FFFF_FFFF_FFFF
_GOLDEN = 0x9E37_79B9_7F4A_7C15
_M1 = 0xBF58_476D_1CE4_E5B9
_M2 = 0x94D0_49BB_1331_11EB
_U_GOLDEN = np.uint64(_GOLDEN)
_U_M1 = np.uint64(_M1)
_U_M2 = np.uint64(_M2)
_S30, _S27, _S31, _S11 = (np.uint64(s) for s in (30, 27, 31, 11))
_PHI_FRAC = (math.sqrt(5.0) - 1.0) / 2.0


def key64(*parts: object) -> int:
    """BLAKE2b-8 of the parts' text, little-endian: the stable root of every key."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def _mix(x: int) -> int:
    x = ((x ^ (x >> 30)) * _M1) & MASK64
    x = ((x ^ (x >> 27)) * _M2) & MASK64
    return x ^ (x >> 31)


def derive(key: int, salt: int) -> int:
    """A new 64-bit key from ``key`` and a small ``salt`` (stream, index)."""
    return _mix(key ^ ((salt * _GOLDEN) & MASK64))


def derive_arr(keys: np.ndarray, salts: np.ndarray | int) -> np.ndarray:
    """:func:`derive` elementwise on ``uint64`` arrays (same values as the scalar form)."""
    salt = np.atleast_1d(np.asarray(salts, dtype=np.uint64)) * _U_GOLDEN
    x = np.atleast_1d(np.asarray(keys, dtype=np.uint64)) ^ salt
    x = (x ^ (x >> _S30)) * _U_M1
    x = (x ^ (x >> _S27)) * _U_M2
    result: np.ndarray = x ^ (x >> _S31)
    return result


def unit(key: int) -> float:
    """A float in [0, 1) from a key (53 high bits)."""
    return (key >> 11) * (1.0 / 9007199254740992.0)


def unit_arr(keys: np.ndarray) -> np.ndarray:
    """:func:`unit` elementwise."""
    result: np.ndarray = (np.asarray(keys, dtype=np.uint64) >> _S11).astype(np.float64) * (
        1.0 / 9007199254740992.0
    )
    return result


def _clip_unit(u: float) -> float:
    return min(max(u, 1e-12), 1.0 - 1e-12)


def lognormal_from_unit(u: float, mean: float, sigma: float) -> float:
    """Inverse-CDF lognormal draw with the given *mean* (not median) and log-sd."""
    mu = math.log(mean) - sigma * sigma / 2.0
    return math.exp(mu + sigma * float(ndtri(_clip_unit(u))))


def lognormal_from_unit_arr(u: np.ndarray, mean: float, sigma: float) -> np.ndarray:
    """:func:`lognormal_from_unit` elementwise."""
    mu = math.log(mean) - sigma * sigma / 2.0
    clipped = np.clip(u, 1e-12, 1.0 - 1e-12)
    result: np.ndarray = np.exp(mu + sigma * ndtri(clipped))
    return result


def weyl(index: int, offset: float) -> float:
    """The golden-ratio sequence ``frac(offset + index * phi)``: evenly spread in [0, 1).

    Used where a small web must still contain every rare variant (robots kinds):
    a share p appears about every 1/p consecutive indices, not by luck.
    """
    return (offset + index * _PHI_FRAC) % 1.0


def pick_from_mix(mix: tuple[tuple[T, float], ...], u: float) -> T:
    """The value whose share of ``mix`` (weights need not sum to 1) contains the unit draw ``u``."""
    total = sum(share for _, share in mix)
    acc = 0.0
    for value, share in mix:
        acc += share / total
        if u < acc:
            return value
    return mix[-1][0]
