"""The skeleton's contracts: FNV golden ids, u64 bit reinterpretation, id parsing, settings."""

from __future__ import annotations

import pytest

from velesmem import ids
from velesmem.config import INTERNAL_FIELDS, SETTINGS, Settings
from velesmem.errors import Category, Internal, InvalidInput, NotFound


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0xCBF29CE484222325), ("hello", 0xA430D84680AABD0B), ("café", 0x48E8823ACFA40D89)],
)
def test_fact_id_matches_reference_golden_values(text: str, expected: int) -> None:
    assert ids.fact_id(text) == expected


def test_fact_id_hashes_trimmed_text() -> None:
    assert ids.fact_id("  hello\n") == ids.fact_id("hello")


@pytest.mark.parametrize("u", [0, 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1])
def test_u64_int64_round_trip_keeps_every_bit(u: int) -> None:
    i = ids.to_i64(u)
    assert -(2**63) <= i < 2**63
    assert ids.to_u64(i) == u


@pytest.mark.parametrize("value", [12, "12", " 12 ", 12.0, str(2**64 - 1)])
def test_parse_id_accepts_numbers_and_decimal_strings(value: object) -> None:
    assert ids.parse_id(value) in (12, 2**64 - 1)


@pytest.mark.parametrize("value", [True, -1, 2**64, "abc", "1.5", "-3", "", 1.5, None, [1], {"a": 1}, "١٢"])
def test_parse_id_refuses_everything_else(value: object) -> None:
    with pytest.raises(InvalidInput):
        ids.parse_id(value)


def test_error_categories() -> None:
    assert InvalidInput("x").category is Category.INVALID_INPUT
    assert NotFound("x").category is Category.NOT_FOUND
    assert Internal("x").category is Category.INTERNAL


def test_settings_defaults_and_env() -> None:
    s = Settings.from_env({})
    assert s.http_bind == "127.0.0.1:18090" and s.http_port == 18090
    assert s.embedder is None and s.default_ttl is None  # unset: the store's own embedder
    s = Settings.from_env({"VELESDB_MEMORY_DEFAULT_TTL": "60", "VELESDB_MEMORY_HTTP": "1"})
    assert s.default_ttl == 60 and s.http is True


@pytest.mark.parametrize(("name", "raw"), [("DEFAULT_TTL", "abc"), ("DEFAULT_TTL", "-5"),
                                            ("HTTP", "maybe"), ("RECALL_MODE", "magic")])
def test_settings_refuse_bad_values_with_the_variable_name(name: str, raw: str) -> None:
    with pytest.raises(Internal, match=f"VELESDB_MEMORY_{name}"):
        Settings.from_env({f"VELESDB_MEMORY_{name}": raw})


def test_every_setting_is_a_settings_field() -> None:
    fields = set(Settings.__dataclass_fields__)
    assert {s.attr for s in SETTINGS} == fields - INTERNAL_FIELDS
    assert INTERNAL_FIELDS <= fields


def test_a_huge_decimal_id_is_invalid_input_not_a_crash() -> None:
    from velesmem.errors import InvalidInput
    from velesmem.ids import parse_id

    with pytest.raises(InvalidInput, match="4400-digit number, outside the u64 range"):
        parse_id("9" * 4400)
    assert parse_id("0" * 30 + "42") == 42  # leading zeros are only zeros
    with pytest.raises(InvalidInput, match="outside the u64 range"):
        parse_id(str(1 << 64))


def test_a_default_ttl_of_zero_means_no_default_ttl() -> None:
    assert Settings.from_env({"VELESDB_MEMORY_DEFAULT_TTL": "0"}).default_ttl is None
    assert Settings.from_env({"VELESDB_MEMORY_DEFAULT_TTL": "60"}).default_ttl == 60
