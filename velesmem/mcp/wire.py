"""Wire types for MCP tool parameters: one advertised JSON type per slot, lenient where the contract says.

The contract's "Scalar inputs on the wire" and "Ids on the wire" rules, as reusable pydantic types.
Every tool module (and every nested model, e.g. a fragment inside an array of objects) declares its
parameters with these, so all slots of the same kind share one tolerance by construction.

- ``Integer`` advertises ``integer``; also takes ``"6"`` (a string whose JSON is an integer);
  refuses ``"abc"``, ``"1.5"``, ``1.5``, ``"1e3"``, booleans, arrays, objects, null.
- ``Number`` advertises ``number``; also takes ``"0.5"``, ``"2"``; refuses ``"abc"``, ``"NaN"``,
  booleans, arrays, objects.
- ``Boolean`` advertises ``boolean``; also takes ``"true"`` / ``"false"``; refuses ``1``, ``"1"``,
  ``"yes"``, ``"True"``.
- ``Id`` advertises ``{"type": "string", "pattern": "^[0-9]+$"}``; takes a decimal string or a JSON
  number (u64, above 2**53 too); refuses whatever :func:`velesmem.ids.parse_id` refuses.
- ``JsonObject`` advertises ``object``; also takes a string whose JSON is an object.
- ``ArrayOf[M]`` advertises ``array`` of M; also takes a string whose JSON is an array
  (``array_of(M)`` builds the same for an item type chosen at run time).
- ``WireModel`` subclasses (nested objects) also take a string whose JSON is the object.
- ``JsonScalar`` is deliberately untyped (a value compared type-strictly); passed through.
- plain ``str`` advertises ``string`` and is never re-parsed as JSON.

``Opt*`` variants (``OptInteger``, ``OptNumber``, ``OptBoolean``, ``OptId``, ``OptObject``,
``OptString``, ``OptArrayOf[M]``) also take ``null`` as "absent" while still advertising the
single non-null type. Use them with :func:`optional` (never with a ``= None`` default, which pydantic
refuses next to the factory) so an omitted slot reads as ``None`` without ``"default": null``::

    from typing import Annotated
    from pydantic import Field
    from velesmem.mcp.wire import Integer, OptObject, optional

    def recall(
        *,  # keyword-only: optional() slots carry no Python default, so they may follow defaults
        query: Annotated[str, Field(description="Natural-language query.")],
        k: Annotated[Integer, Field(description="Result count.")] = 10,
        filter: Annotated[OptObject, optional("Exact-match metadata filter.")],
    ) -> dict: ...

Nested models subclass :class:`WireModel` (extra keys refused, and the object itself may arrive as
its JSON-encoded string) and use the same types for their fields::

    class FragmentRef(WireModel):
        fragment_id: Annotated[Id, Field(description="The fragment (decimal string or number).")]
        priority: Annotated[OptInteger, optional("Packing priority.")]   # no "= None" here either

    fragments: Annotated[array_of(FragmentRef), Field(description="...")]

These types need the server's ``strict_input_validation=True`` (set by ``build_server``): strict
mode stops pydantic's own lax coercions (``"yes"`` → True, ``1`` → True), so the only leniency
left is the one written here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic_core import CoreSchema
from pydantic.fields import FieldInfo

from velesmem.errors import InvalidInput
from velesmem.ids import parse_id

__all__ = [
    "ID_SCHEMA",
    "SCALAR_SCHEMA",
    "ArrayOf",
    "Boolean",
    "Id",
    "Integer",
    "JsonObject",
    "JsonScalar",
    "Number",
    "OptArrayOf",
    "OptBoolean",
    "OptId",
    "OptInteger",
    "OptNumber",
    "OptObject",
    "OptString",
    "WireModel",
    "array_of",
    "opt_array_of",
    "optional",
]

ID_SCHEMA: dict[str, Any] = {"type": "string", "pattern": "^[0-9]+$"}
"""The advertised form of every id input: a u64 as a decimal string (a JSON number is accepted too)."""

SCALAR_SCHEMA: dict[str, Any] = {
    "description": "A JSON string, number or boolean, compared type-strictly (no coercion)."
}
"""The one deliberately untyped slot kind (a filter predicate's value): publishing a union would be
flattened to ``{}`` by degraded harnesses anyway, so the schema says so in words."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _decode(text: str) -> Any:
    """Decode a JSON text strictly (no NaN/Infinity); raise ValueError when it is not JSON."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        raise ValueError(f"{_show(text)} is not valid JSON") from None


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _scalar(value: Any, expected: str, accepts: Any, convert: Any, nullable: bool) -> Any:
    """Shared body of the lenient scalar validators."""
    if value is None and nullable:
        return None
    decoded = value
    if isinstance(value, str):
        try:
            decoded = _decode(value)
        except ValueError:
            raise ValueError(
                f"expected {expected} (or a string holding one as JSON), got the string {_show(value)}"
            ) from None
        if isinstance(decoded, str):
            raise ValueError(f"expected {expected}, got the string {_show(value)}")
    if not accepts(decoded):
        where = f"the string {_show(value)}, which decodes to {_kind(decoded)}" if value is not decoded \
            else f"{_kind(value)} ({_show(value)})"
        raise ValueError(f"expected {expected}, got {where}")
    return convert(decoded)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _integer(nullable: bool) -> Callable[[Any], Any]:
    return lambda v: _scalar(v, "an integer", _is_int, int, nullable)


def _number(nullable: bool) -> Callable[[Any], Any]:
    return lambda v: _scalar(v, "a number", _is_number, float, nullable)


def _boolean(nullable: bool) -> Callable[[Any], Any]:
    return lambda v: _scalar(v, "a boolean (true or false)", _is_bool, bool, nullable)


def _id(nullable: bool) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is None and nullable:
            return None
        try:
            return parse_id(value, "id")
        except InvalidInput as exc:  # a validator must raise ValueError to become a field error
            raise ValueError(exc.message.removeprefix("id ")) from None

    return check


def _container(kind: type, expected: str, nullable: bool) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is None and nullable:
            return None
        decoded = _decode(value) if isinstance(value, str) else value
        if not isinstance(decoded, kind):
            raise ValueError(
                f"expected {expected} (or its JSON-encoded string), got {_kind(decoded)}"
            )
        return decoded

    return check


def _string(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"expected a string, got {_kind(value)}")


_KEPT_KEYS = ("title", "description", "default", "examples")


class _Advertise:
    """Publish exactly ``schema`` for a slot, keeping the field's own description and default.

    (pydantic's ``WithJsonSchema`` would also drop the ``Field(description=...)`` of the slot.)
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema

    def __get_pydantic_json_schema__(self, core: CoreSchema, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        generated = handler(core)
        return {**self.schema, **{k: v for k, v in generated.items() if k in _KEPT_KEYS}}


# --- scalars --------------------------------------------------------------------------------
Integer = Annotated[int, BeforeValidator(_integer(False)), _Advertise({"type": "integer"})]
"""An integer slot: ``6`` or ``"6"``; never ``"1.5"``, ``1.5``, ``true``, arrays or objects."""
Number = Annotated[float, BeforeValidator(_number(False)), _Advertise({"type": "number"})]
"""A number slot: ``0.5``, ``2``, ``"0.5"``; never booleans, ``"NaN"``, arrays or objects."""
Boolean = Annotated[bool, BeforeValidator(_boolean(False)), _Advertise({"type": "boolean"})]
"""A boolean slot: ``true`` or ``"true"``; never ``1``, ``"1"``, ``"yes"``."""
Id = Annotated[int, BeforeValidator(_id(False)), _Advertise(dict(ID_SCHEMA))]
"""A u64 id: advertised as a decimal string, accepted as a JSON number or a decimal string."""
JsonObject = Annotated[
    dict[str, Any], BeforeValidator(_container(dict, "an object", False)), _Advertise({"type": "object"})
]
"""A free-form object slot (metadata, filter); its JSON-encoded string is accepted too."""
JsonScalar = Annotated[Any, _Advertise(dict(SCALAR_SCHEMA))]
"""A value compared type-strictly (recall_where's predicate value): passed through untouched."""

OptInteger = Annotated[int | None, BeforeValidator(_integer(True)), _Advertise({"type": "integer"})]
OptNumber = Annotated[float | None, BeforeValidator(_number(True)), _Advertise({"type": "number"})]
OptBoolean = Annotated[bool | None, BeforeValidator(_boolean(True)), _Advertise({"type": "boolean"})]
OptId = Annotated[int | None, BeforeValidator(_id(True)), _Advertise(dict(ID_SCHEMA))]
OptObject = Annotated[
    dict[str, Any] | None,
    BeforeValidator(_container(dict, "an object", True)),
    _Advertise({"type": "object"}),
]
OptString = Annotated[str | None, BeforeValidator(_string), _Advertise({"type": "string"})]


# --- arrays and nested objects ----------------------------------------------------------------
def _single_type(schema: dict[str, Any]) -> None:
    """Drop the ``null`` branch pydantic adds for ``X | None``: the slot advertises X alone."""
    branches = schema.get("anyOf")
    if branches is None:
        return
    rest = [b for b in branches if b != {"type": "null"}]
    if len(rest) == 1:
        del schema["anyOf"]
        schema.update(rest[0])


_Item = TypeVar("_Item")
_ARRAY = BeforeValidator(_container(list, "an array", False))
_OPT_ARRAY = BeforeValidator(_container(list, "an array", True))
# ``ArrayOf[M]``: an array slot of M; its JSON-encoded string form is accepted too.
ArrayOf = Annotated[list[_Item], _ARRAY]
# ``OptArrayOf[M]``: like ``ArrayOf``, also taking ``null`` as absent; use with :func:`optional`.
OptArrayOf = Annotated[list[_Item] | None, _OPT_ARRAY]


def array_of(item: Any) -> Any:
    """``ArrayOf[item]`` for an item type chosen at run time."""
    return Annotated[list[item], _ARRAY]


def opt_array_of(item: Any) -> Any:
    """``OptArrayOf[item]`` for an item type chosen at run time."""
    return Annotated[list[item] | None, _OPT_ARRAY]


def _none() -> None:
    return None


def optional(description: str) -> FieldInfo:
    """Field info for an optional slot read as ``None`` when omitted.

    The default comes from a factory so the schema carries no ``"default": null``, and the
    ``null`` branch of ``X | None`` is removed: the slot advertises exactly one JSON type.
    """
    # Field() is typed as returning its default's type (for use as a default value); at run time
    # it is the FieldInfo this function hands out.
    return cast(FieldInfo, Field(default_factory=_none, description=description,
                                 json_schema_extra=_single_type))


class WireModel(BaseModel):
    """Base of nested wire objects: unknown keys refused; the object may arrive JSON-encoded."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _decode_json_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            decoded = _decode(value)
            if not isinstance(decoded, dict):
                raise ValueError(f"expected an object (or its JSON-encoded string), got {_kind(decoded)}")
            return decoded
        return value
