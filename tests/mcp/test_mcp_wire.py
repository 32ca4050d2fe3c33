"""The wire types on their own, validated as FastMCP does (strict, JSON mode): the documented
nested-model pattern works and advertises one type per slot."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from velesmem.mcp.wire import ID_SCHEMA, Boolean, Id, Integer, Number, OptInteger, WireModel, array_of, optional


class FragmentRef(WireModel):
    fragment_id: Annotated[Id, Field(description="The fragment.")]
    priority: Annotated[OptInteger, optional("Packing priority.")]


class Request(BaseModel):
    fragments: Annotated[array_of(FragmentRef), Field(description="Fragments.")]
    budget: Integer
    ratio: Number = 0.5
    strict: Boolean = False


def _validate(payload: Any) -> Request:
    return TypeAdapter(Request).validate_json(json.dumps(payload), strict=True)


def test_nested_models_take_numbers_strings_and_json_encoded_forms() -> None:
    big = 2**64 - 1
    request = _validate({"fragments": json.dumps([{"fragment_id": big}, '{"fragment_id": "7", "priority": "2"}']),
                         "budget": "500", "ratio": "0.25", "strict": "true"})
    assert [(f.fragment_id, f.priority) for f in request.fragments] == [(big, None), (7, 2)]
    assert (request.budget, request.ratio, request.strict) == (500, 0.25, True)


@pytest.mark.parametrize("payload, field", [
    ({"fragments": [{"fragment_id": "x"}], "budget": 1}, ("fragments", 0, "fragment_id")),
    ({"fragments": [{"fragment_id": 1, "extra": 1}], "budget": 1}, ("fragments", 0, "extra")),
    ({"fragments": [{"fragment_id": 1, "priority": True}], "budget": 1}, ("fragments", 0, "priority")),
    ({"fragments": [], "budget": "1.5"}, ("budget",)),
    ({"fragments": [], "budget": 1, "ratio": False}, ("ratio",)),
    ({"fragments": [], "budget": 1, "strict": 1}, ("strict",)),
    ({"fragments": "{}", "budget": 1}, ("fragments",)),
])
def test_nested_models_refuse_incompatible_forms_naming_the_field(payload: dict, field: tuple) -> None:
    with pytest.raises(ValidationError) as caught:
        _validate(payload)
    assert field in [e["loc"] for e in caught.value.errors()]


def _untitled(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _untitled(v) for k, v in schema.items() if k != "title"}
    return schema


def test_nested_slots_advertise_one_type() -> None:
    schema = _untitled(TypeAdapter(Request).json_schema())  # FastMCP drops titles too
    ref = schema["$defs"]["FragmentRef"]["properties"]
    assert ref["fragment_id"] == {**ID_SCHEMA, "description": "The fragment."}
    assert ref["priority"] == {"type": "integer", "description": "Packing priority."}
    assert schema["properties"]["budget"] == {"type": "integer"}
    assert schema["properties"]["strict"] == {"type": "boolean", "default": False}
