"""load(name, settings), the extractor and autograph settings, and the key kept out of sight."""

from __future__ import annotations

import pytest

from velesmem import config
from velesmem.config import Settings, settings_help
from velesmem.errors import Internal, InvalidInput
from velesmem.extract import (
    BACKENDS,
    Extractor,
    OllamaExtractor,
    OpenAIExtractor,
    OutlineExtractor,
    autograph_mode,
    load,
)

KEY = "sk-live-0123456789abcdef"


def _env(**values: str) -> Settings:
    return Settings.from_env({f"VELESDB_MEMORY_{k}": v for k, v in values.items()})


def test_the_backends_are_the_names_the_settings_accept() -> None:
    assert tuple(BACKENDS) == config.EXTRACTORS
    assert set(config.REMOTE_EXTRACTORS) < set(config.EXTRACTORS)


def test_defaults_leave_extraction_unconfigured_and_the_identifier_autograph_on() -> None:
    s = Settings.from_env({})
    assert s.extractor is None and s.extractor_model == "" and s.extractor_api_key == ""
    assert s.extractor_url == "http://localhost:11434" and s.extractor_timeout == 300
    assert autograph_mode(s) == "identifiers"


@pytest.mark.parametrize(("name", "cls"), [("outline", OutlineExtractor),
                                           ("ollama", OllamaExtractor),
                                           ("openai", OpenAIExtractor)])
def test_load_builds_the_named_backend_from_the_settings(name: str, cls: type) -> None:
    s = _env(EXTRACTOR=name, EXTRACTOR_MODEL="qwen3:8b", EXTRACTOR_URL="http://127.0.0.1:9/v1",
             EXTRACTOR_TIMEOUT="7")
    extractor = load(None, s)
    try:
        assert isinstance(extractor, cls) and isinstance(extractor, Extractor)
        assert extractor.name == name
        if name != "outline":
            assert extractor.model == "qwen3:8b" and extractor.timeout == 7
    finally:
        extractor.close()


def test_outline_is_always_available_even_with_nothing_configured() -> None:
    assert isinstance(load("outline", Settings()), OutlineExtractor)
    assert isinstance(load(" Outline ", _env(EXTRACTOR="ollama", EXTRACTOR_MODEL="m")),
                      OutlineExtractor)


def test_no_configured_extractor_is_an_actionable_internal_error() -> None:
    with pytest.raises(Internal, match=r"outline.*VELESDB_MEMORY_EXTRACTOR"):
        load(None, Settings())


def test_an_unknown_name_is_invalid_input_listing_the_valid_ones() -> None:
    with pytest.raises(InvalidInput, match=r"'llamacpp'.*outline, ollama, openai"):
        load("llamacpp", Settings())


def test_a_remote_name_must_be_the_configured_backend_or_it_is_invalid_input() -> None:
    s = _env(EXTRACTOR="ollama", EXTRACTOR_MODEL="m")
    with pytest.raises(InvalidInput, match=r"'openai' is not configured.*EXTRACTOR=ollama"):
        load("openai", s)
    with pytest.raises(InvalidInput, match="EXTRACTOR=unset"):
        load("ollama", Settings())


def test_a_remote_backend_without_a_model_names_the_variable() -> None:
    with pytest.raises(Internal, match="VELESDB_MEMORY_EXTRACTOR_MODEL"):
        load(None, _env(EXTRACTOR="openai"))


@pytest.mark.parametrize(("name", "raw"), [("EXTRACTOR", "gpt"), ("AUTOGRAPH", "always"),
                                           ("EXTRACTOR_TIMEOUT", "0"),
                                           ("EXTRACTOR_TIMEOUT", "soon")])
def test_bad_values_are_refused_with_the_variable_name(name: str, raw: str) -> None:
    with pytest.raises(Internal, match=f"VELESDB_MEMORY_{name}"):
        _env(**{name: raw})


def test_names_are_read_case_insensitively_and_blank_means_unset() -> None:
    assert _env(EXTRACTOR=" OpenAI ").extractor == "openai"
    assert _env(EXTRACTOR="  ").extractor is None
    assert _env(AUTOGRAPH="OFF").autograph == "off"


@pytest.mark.parametrize(("values", "mode"), [
    ({}, "identifiers"),
    ({"EXTRACTOR": "outline"}, "identifiers"),
    ({"EXTRACTOR": "ollama", "EXTRACTOR_MODEL": "m"}, "extractor"),
    ({"EXTRACTOR": "openai", "EXTRACTOR_MODEL": "m", "AUTOGRAPH": "identifiers"}, "identifiers"),
    ({"EXTRACTOR": "ollama", "AUTOGRAPH": "off"}, "off"),
    ({"AUTOGRAPH": "off"}, "off"),
])
def test_autograph_mode_defaults_to_the_model_when_one_is_configured(values: dict[str, str],
                                                                     mode: str) -> None:
    assert autograph_mode(_env(**values)) == mode


def test_an_extractor_autograph_without_a_model_backend_is_refused() -> None:
    with pytest.raises(Internal, match="VELESDB_MEMORY_AUTOGRAPH=extractor"):
        autograph_mode(_env(AUTOGRAPH="extractor", EXTRACTOR="outline"))


def test_the_api_key_is_kept_out_of_the_settings_repr_and_the_extractor_repr() -> None:
    s = _env(EXTRACTOR="openai", EXTRACTOR_MODEL="m", EXTRACTOR_API_KEY=f"  {KEY} ")
    assert s.extractor_api_key == KEY
    assert KEY not in repr(s) and KEY not in str(s)
    extractor = load(None, s)
    try:
        assert KEY not in repr(extractor)
    finally:
        extractor.close()


def test_help_lists_every_extraction_setting() -> None:
    text = settings_help()
    for name in ("EXTRACTOR", "EXTRACTOR_URL", "EXTRACTOR_MODEL", "EXTRACTOR_API_KEY",
                 "EXTRACTOR_TIMEOUT", "AUTOGRAPH"):
        assert f"VELESDB_MEMORY_{name} " in text
