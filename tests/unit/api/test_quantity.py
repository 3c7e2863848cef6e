"""Resource quantities are read exactly and written back in Kubernetes' usual form."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tfjob_api.quantity import QuantityError, format_quantity, is_binary, is_quantity, parse_quantity


@pytest.mark.parametrize(("text", "value"), [
    ("2", Fraction(2)), ("500m", Fraction(1, 2)), ("1.5", Fraction(3, 2)), ("4Gi", Fraction(4 * 2**30)),
    ("1k", Fraction(1000)), ("1e3", Fraction(1000)), ("100n", Fraction(1, 10**7)), (3, Fraction(3)),
])
def test_quantities_are_read_exactly(text: str | int, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "two", "1.2.3", "5 Gi", "1Xi", True])
def test_what_is_no_quantity_is_refused(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)  # type: ignore[arg-type]
    assert not is_quantity(text)


def test_three_tenths_of_a_cpu_sum_to_exactly_300_millicores() -> None:
    assert format_quantity(sum((parse_quantity("100m") for _ in range(3)), Fraction(0))) == "300m"


@pytest.mark.parametrize(("value", "text"), [
    (Fraction(3), "3"), (Fraction(3, 2), "1500m"), (Fraction(6 * 2**30), "6442450944"), (Fraction(1, 3), "333333334n"),
])
def test_values_are_written_in_the_coarsest_exact_unit(value: Fraction, text: str) -> None:
    assert format_quantity(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (Fraction(5 * 512 * 2**20), "2560Mi"), (Fraction(6 * 2**30), "6Gi"), (Fraction(1000), "1000"),
    (Fraction(3, 2), "1500m"), (Fraction(0), "0"),
])
def test_values_given_in_binary_units_are_written_in_the_largest_exact_one(value: Fraction, text: str) -> None:
    assert format_quantity(value, binary=True) == text


def test_only_binary_suffixes_count_as_binary_units() -> None:
    assert [is_binary(q) for q in ("4Gi", "512Mi", "4G", "500m", 3)] == [True, True, False, False, False]
