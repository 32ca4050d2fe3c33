"""Schema tests that walk EVERY advertised tool, so a tool added later is covered for free.

The contract's live-schema invariants: one advertised JSON type per input slot; same-named scalar
slots share wire tolerance; every non-string scalar slot rejects incompatible forms; every id-named
input advertises the string form; every id in every result has its decimal-string twin.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from mcp_helpers import (
    DELIBERATELY_UNTYPED,
    ID_ACCEPT,
    ID_REJECT,
    NON_STRING_SCALARS,
    Slot,
    all_samples,
    refused_samples,
    battery,
    call,
    count_ids,
    is_id_name,
    is_ids_name,
    missing_twins,
    seed,
    slots,
    with_value,
)

pytestmark = pytest.mark.anyio

MEMORY_TOOLS = {"remember", "recall", "recall_where", "recall_fused", "feedback", "relate", "unrelate",
                "forget", "why", "list_memories", "memory_status"}
UNION_KEYS = ("anyOf", "oneOf", "allOf", "$ref", "not")


async def _tools(server: FastMCP) -> list[Any]:
    async with Client(server) as client:
        return list(await client.list_tools())


async def test_the_eleven_memory_tools_are_advertised(server: FastMCP) -> None:
    names = {tool.name for tool in await _tools(server)}
    assert MEMORY_TOOLS <= names


async def test_every_tool_has_a_description_and_a_closed_object_schema(server: FastMCP) -> None:
    for tool in await _tools(server):
        assert tool.description and tool.description.strip(), tool.name
        assert tool.input_schema.get("type") == "object", tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name


async def test_every_input_slot_advertises_exactly_one_json_type(server: FastMCP) -> None:
    problems = []
    for tool in await _tools(server):
        for slot in slots(tool):
            unions = [k for k in UNION_KEYS if k in slot.schema]
            if unions:
                problems.append(f"{tool.name}.{slot.path} publishes {unions}: {slot.schema}")
            elif slot.type is None and (tool.name, slot.path) not in DELIBERATELY_UNTYPED:
                problems.append(f"{tool.name}.{slot.path} advertises no single type: {slot.schema}")
            if slot.schema.get("default", 0) is None:
                problems.append(f"{tool.name}.{slot.path} advertises default null")
            if slot.type == "array" and isinstance(slot.schema.get("items"), dict):
                items = slot.schema["items"]
                if not isinstance(items.get("type"), str) or any(k in items for k in UNION_KEYS):
                    problems.append(f"{tool.name}.{slot.path}[] items advertise no single type: {items}")
    assert not problems, "\n".join(problems)


async def test_every_id_named_input_advertises_the_string_form(server: FastMCP) -> None:
    problems, seen = [], 0
    for tool in await _tools(server):
        for slot in slots(tool):
            if is_id_name(slot.name):
                seen += 1
                if slot.type != "string":
                    problems.append(f"{tool.name}.{slot.path} advertises {slot.schema}, not a string")
            elif is_ids_name(slot.name) and slot.type == "array":
                seen += 1
                if slot.schema.get("items", {}).get("type") != "string":
                    problems.append(f"{tool.name}.{slot.path}[] ids advertise {slot.schema}, not strings")
    assert not problems, "\n".join(problems)
    assert seen >= 7  # relate/unrelate from+to, forget/feedback id, links[].target, cursor


async def test_same_named_scalar_slots_advertise_the_same_type(server: FastMCP) -> None:
    by_name: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for tool in await _tools(server):
        for slot in slots(tool):
            if slot.type in NON_STRING_SCALARS:
                by_name[slot.name].add((slot.type, f"{tool.name}.{slot.path}"))
    mixed = {n: v for n, v in by_name.items() if len({t for t, _ in v}) > 1}
    assert not mixed, f"same name, different advertised scalar types: {mixed}"


async def _probe(client: Client, slot: Slot, base: dict[str, Any], value: Any) -> bool | None:
    """True: the wire accepted ``value`` in ``slot``; False: -32602 named the slot; None: n/a."""
    arguments = with_value(base, slot.keys, value)
    if arguments is None:
        return None
    outcome = await call(client, slot.tool, arguments)
    return not outcome.wire_rejected(slot.error_path)


def _base(slot: Slot, samples: dict[str, dict[str, Any]]) -> dict[str, Any]:
    base = samples.get(slot.tool)
    assert base is not None, (
        f"no valid sample arguments for tool {slot.tool!r}: add them to tests/mcp/mcp_helpers.py "
        f"memory_samples() or as EXAMPLES in its module under velesmem/mcp/tools/"
    )
    return base


async def test_every_non_string_scalar_input_rejects_incompatible_forms(server: FastMCP) -> None:
    """Each integer/number/boolean slot (nested ones too) accepts its scalar and the scalar's JSON
    string, and refuses every other form with -32602 naming the slot."""
    problems, probed = [], 0
    async with Client(server) as client:
        samples = all_samples(await seed(client))
        for tool in await client.list_tools():
            for slot in slots(tool):
                if slot.type not in NON_STRING_SCALARS:
                    continue
                base = _base(slot, samples)
                for value, should_accept in battery(slot.type):
                    accepted = await _probe(client, slot, base, value)
                    if accepted is None:
                        break  # nested slot absent from the sample (e.g. an empty array)
                    probed += 1
                    if accepted != should_accept:
                        verb = "refused" if should_accept else "accepted"
                        problems.append(f"{tool.name}.{slot.path} ({slot.type}) {verb} {value!r}")
    assert not problems, "\n".join(problems)
    assert probed >= 100


async def test_same_named_scalar_input_slots_share_wire_tolerance(server: FastMCP) -> None:
    """Same field name + same advertised type → identical accept/refuse verdicts on one battery."""
    verdicts: dict[tuple[str, str], dict[str, tuple[bool | None, ...]]] = defaultdict(dict)
    async with Client(server) as client:
        samples = all_samples(await seed(client))
        for tool in await client.list_tools():
            for slot in slots(tool):
                if slot.type not in NON_STRING_SCALARS:
                    continue
                base = _base(slot, samples)
                verdict = tuple([await _probe(client, slot, base, v) for v, _ in battery(slot.type)])
                if None not in verdict:
                    verdicts[(slot.name, slot.type)][f"{tool.name}.{slot.path}"] = verdict
    shared = {key: v for key, v in verdicts.items() if len(v) > 1}
    assert ("k", "integer") in shared and len(shared[("k", "integer")]) >= 3
    for key, by_slot in shared.items():
        assert len(set(by_slot.values())) == 1, f"{key} slots disagree: {by_slot}"


async def test_every_id_input_accepts_a_number_or_a_decimal_string_and_nothing_else(server: FastMCP) -> None:
    problems, probed = [], 0
    async with Client(server) as client:
        samples = all_samples(await seed(client))
        for tool in await client.list_tools():
            for slot in slots(tool):
                if not (is_id_name(slot.name) and slot.schema.get("pattern") == "^[0-9]+$"):
                    continue
                base = _base(slot, samples)
                for value, should_accept in [(v, True) for v in ID_ACCEPT] + [(v, False) for v in ID_REJECT]:
                    accepted = await _probe(client, slot, base, value)
                    if accepted is None:
                        break
                    probed += 1
                    if accepted != should_accept:
                        verb = "refused" if should_accept else "accepted"
                        problems.append(f"{tool.name}.{slot.path} (id) {verb} {value!r}")
    assert not problems, "\n".join(problems)
    assert probed >= 7 * len(ID_ACCEPT + ID_REJECT)


async def test_every_tool_answers_its_sample_and_every_id_in_every_result_has_its_twin(server: FastMCP) -> None:
    problems, ids_seen = [], 0
    refused = refused_samples()
    async with Client(server) as client:
        samples = all_samples(await seed(client))
        for tool in await client.list_tools():
            arguments = samples.get(tool.name)
            assert arguments is not None, f"no sample arguments for {tool.name!r} (see mcp_helpers.py)"
            outcome = await call(client, tool.name, arguments)
            if tool.name in refused:  # a domain refusal: the wire took the call
                error = outcome.error
                if error is None or error.error.data.get("category") != refused[tool.name] \
                        or "fields" in error.error.data:
                    problems.append(f"{tool.name}: expected a {refused[tool.name]} refusal, "
                                    f"got {outcome.describe()}")
                continue
            if not outcome.ok:
                problems.append(f"{tool.name}({arguments}) failed: {outcome.describe()}")
                continue
            assert isinstance(outcome.result, dict), tool.name
            problems += [f"{tool.name}: {p}" for p in missing_twins(outcome.result)]
            ids_seen += count_ids(outcome.result)
    assert not problems, "\n".join(problems)
    assert ids_seen >= 10
