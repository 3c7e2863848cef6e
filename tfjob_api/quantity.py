"""Kubernetes resource quantities ("500m", "2Gi", "1e3") as exact numbers, and back.

A gang scheduler's PodGroup states the resources its whole gang needs (`minResources`): when a job
does not say, the operator sums its pods' requests (`controller.job.gang`). Summing needs the
quantities' values, and comparing an existing PodGroup with the wanted one needs them too ("1000m"
and "1" are the same request), so both go through `parse_quantity`. Exact arithmetic (`Fraction`): a float
would turn 0.1 CPU times three into 0.30000000000000004.

`format_quantity` writes a value the way Kubernetes' canonical form would for the common cases: an integer
as is ("3"), or, for a quantity given in binary units (`is_binary`: memory, as people write it), in the
largest binary unit that keeps it whole ("2560Mi", not "2684354560"), as the API server writes a Gi
request back; anything finer in milli-units ("1500m") or, below that, nano-units.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a quantity (a string as Kubernetes writes it, or a plain number)."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    match = _QUANTITY.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise QuantityError(f"{value!r} is not a quantity (e.g. 2, 500m, 4Gi, 1e3)")
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def is_binary(value: str | int | float) -> bool:
    """Whether a quantity is written in a binary unit ("4Gi", "512Mi")."""
    return isinstance(value, str) and value.strip()[-2:] in _BINARY


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """A quantity string for an exact value: "3", "1500m", or nano-units ("1n" at the finest);
    `binary`: a whole value in its largest exact binary unit ("2560Mi", "6Gi", "1000" for 1000)."""
    if value.denominator == 1:
        if binary and value:
            for suffix, size in reversed(_BINARY.items()):
                if value.numerator % size == 0:
                    return f"{value.numerator // size}{suffix}"
        return str(value.numerator)
    milli = value * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    nano = value * 10**9
    return f"{-(-nano.numerator // nano.denominator)}n"  # rounded up: never ask for less


def is_quantity(value: object) -> bool:
    try:
        parse_quantity(value)  # type: ignore[arg-type]
    except QuantityError:
        return False
    return True
