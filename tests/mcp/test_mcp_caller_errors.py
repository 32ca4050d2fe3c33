"""A caller's wrong choice is -32602, names what was wrong, and changes nothing — through a real
MCP client session: an unknown or unconfigured extractor for remember_extracted, an unknown
target_backend for migration_start. migration_recover with nothing to recover answers the
contract's {configured, job} instead of an error."""

from __future__ import annotations

import pytest
from fastmcp import Client, FastMCP
from mcp_helpers import INVALID_PARAMS, call, ok

pytestmark = pytest.mark.anyio

TEXT = "fact: the canary rolls back on a 1% error rate | canary"


async def _nothing_stored(client: Client) -> None:
    status = await ok(client, "memory_status", {})
    assert status["memory"]["facts"] == 0
    assert (await ok(client, "migration_status", {}))["job"] is None


@pytest.mark.parametrize("extractor", ["nonsense", "Outlines", "gpt"])
async def test_remember_extracted_with_an_unknown_extractor_is_invalid_params_naming_it(
        server: FastMCP, extractor: str) -> None:
    async with Client(server) as client:
        outcome = await call(client, "remember_extracted", {"text": TEXT, "extractor": extractor})
        assert outcome.error is not None, outcome.describe()
        assert outcome.error.error.code == INVALID_PARAMS, outcome.describe()
        assert repr(extractor.lower()) in outcome.error.error.message
        assert "outline" in outcome.error.error.message  # names what would work
        await _nothing_stored(client)


@pytest.mark.parametrize("extractor", ["ollama", "openai", " OpenAI "])
async def test_remember_extracted_with_an_unconfigured_remote_extractor_names_the_setting(
        server: FastMCP, extractor: str) -> None:
    async with Client(server) as client:
        outcome = await call(client, "remember_extracted", {"text": TEXT, "extractor": extractor})
        assert outcome.error is not None, outcome.describe()
        assert outcome.error.error.code == INVALID_PARAMS, outcome.describe()
        assert "VELESDB_MEMORY_EXTRACTOR" in outcome.error.error.message
        assert extractor.strip().lower() in outcome.error.error.message
        await _nothing_stored(client)


async def test_remember_extracted_with_outline_is_still_accepted(server: FastMCP) -> None:
    async with Client(server) as client:
        receipt = await ok(client, "remember_extracted", {"text": TEXT, "extractor": "outline"})
        assert receipt["state"] in ("accepted", "running", "committed")


@pytest.mark.parametrize("backend", ["nonsense", "faiss", "minilm"])
async def test_migration_start_with_an_unknown_target_backend_is_invalid_params_naming_it(
        server: FastMCP, backend: str) -> None:
    async with Client(server) as client:
        outcome = await call(client, "migration_start",
                             {"target_backend": backend, "pause_budget_ms": 500})
        assert outcome.error is not None, outcome.describe()
        assert outcome.error.error.code == INVALID_PARAMS, outcome.describe()
        message = outcome.error.error.message
        assert "target_backend" in message and repr(backend) in message
        assert "VELESDB_MEMORY_EMBEDDER" not in message  # the caller's value, not a setting
        assert "local" in message and "hash" in message  # names what would work
        await _nothing_stored(client)


async def test_migration_recover_with_nothing_to_recover_answers_the_contract_shape(
        server: FastMCP) -> None:
    async with Client(server) as client:
        outcome = await call(client, "migration_recover", {})
        assert outcome.ok, outcome.describe()
        assert outcome.result == {"configured": True, "job": None}
        await _nothing_stored(client)
