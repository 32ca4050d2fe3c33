"""The tool registry: each tool's definition and its one validator, built once at registration.

A tool module registers a coroutine with ``@tools.tool(annotations=...)``. Registration builds,
once per tool and for every session alike:

- the advertised ``Tool`` (name, title, description, input/output schemas, annotations), made by
  FastMCP's public ``FunctionTool.from_function`` and ``dereference_refs`` so ``tools/list`` stays
  what it always was. That costs ~0.3 s of CPU at every start (FastMCP's import, docstring
  parsing), so the definitions built for the shipped tools are kept in ``definitions.json`` beside
  this module (written by ``python3 -m velesmem.mcp.docs``), each under a fingerprint of
  everything it is built from (name, docstring, annotations, the validator's JSON schema, the
  return type); a tool whose fingerprint differs is built by FastMCP as before, so an edited tool
  is never served a stale definition;
- a pydantic ``TypeAdapter`` over the tool's signature, the wire models (``velesmem.mcp.wire``)
  included, validating arguments in strict mode: the only leniency is the one the wire types add;
- the deprecated argument spellings the tool accepts (``deprecated_alias``).

Nothing is resolved lazily by the first caller: what a session sees is decided here.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

import mcp_types
from pydantic import TypeAdapter

ToolFn = Callable[..., Awaitable[Any]]
DEFINITIONS_FILE = Path(__file__).with_name("definitions.json")


@cache
def shipped_definitions() -> Mapping[str, Any]:
    """The definitions built for the shipped tools: {name: {fingerprint, definition}} ({} when the
    file is absent or unreadable: every tool is then built, as a changed one is)."""
    try:
        data = json.loads(DEFINITIONS_FILE.read_text(encoding="utf-8"))
        return cast(Mapping[str, Any], data["tools"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def fingerprint(fn: ToolFn, description: str | None, annotations: mcp_types.ToolAnnotations | None,
                validator: TypeAdapter[dict[str, Any]]) -> str:
    """A digest of everything a tool's advertised definition is built from."""
    hints = typing.get_type_hints(fn, include_extras=True)
    basis = {"name": fn.__name__, "description": description,
             "annotations": None if annotations is None else annotations.model_dump(mode="json", exclude_none=True),
             "input": validator.json_schema(), "return": repr(hints.get("return"))}
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=repr).encode()).hexdigest()


def build_definition(fn: ToolFn, description: str | None,
                     annotations: mcp_types.ToolAnnotations | None) -> mcp_types.Tool:
    """The advertised ``Tool`` for ``fn``, built by FastMCP (the slow path: imports FastMCP)."""
    from fastmcp.tools import FunctionTool
    from fastmcp.utilities.json_schema import dereference_refs

    described = FunctionTool.from_function(fn, name=fn.__name__, description=description, annotations=annotations)
    # Self-contained schemas ($ref inlined), as FastMCP's server advertises them by default.
    output = described.output_schema
    return described.to_mcp_tool(
        inputSchema=dereference_refs(described.parameters),
        outputSchema=None if output is None else dereference_refs(output))


def _bind_arguments(fn: ToolFn) -> Callable[..., dict[str, Any]]:
    """A function with ``fn``'s signature (annotations resolved) that returns its arguments:
    validating a call through it checks the arguments without running the tool."""
    hints = typing.get_type_hints(fn, include_extras=True)
    hints.pop("return", None)
    signature = inspect.signature(fn)
    parameters = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]

    def arguments(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    arguments.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=dict[str, Any])
    arguments.__annotations__ = {**hints, "return": dict[str, Any]}
    arguments.__name__ = arguments.__qualname__ = fn.__name__
    return arguments


@dataclass(frozen=True)
class RegisteredTool:
    """One tool as served: its coroutine, its validator, its wire definition and its aliases."""

    name: str
    fn: ToolFn
    validator: TypeAdapter[dict[str, Any]]
    definition: mcp_types.Tool
    params: list[str]  # its parameter names, for "unknown parameter" messages
    fingerprint: str = ""  # of what its definition is built from (see shipped_definitions)
    aliases: dict[str, str] = field(default_factory=dict)  # deprecated spelling -> canonical

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's keyword arguments, validated (raises pydantic's ``ValidationError``)."""
        return self.validator.validate_python(arguments, strict=True)


class ToolRegistry:
    """Every tool of the server, in registration order (the order of ``tools/list``). With
    ``shipped`` (the default) a tool whose fingerprint matches its entry in ``definitions.json``
    takes that definition instead of building it."""

    def __init__(self, *, shipped: bool = True) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._shipped = shipped

    def tool(self, *, annotations: mcp_types.ToolAnnotations | None = None) -> Callable[[ToolFn], ToolFn]:
        """Register the decorated coroutine as a tool; its docstring is its description."""

        def register(fn: ToolFn) -> ToolFn:
            self.add(fn, annotations=annotations)
            return fn

        return register

    def add(self, fn: ToolFn, *, annotations: mcp_types.ToolAnnotations | None = None) -> RegisteredTool:
        """Register ``fn`` (a coroutine function with keyword parameters) as a tool."""
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"tool {fn.__name__} must be a coroutine function")
        name = fn.__name__
        if name in self._tools:
            raise ValueError(f"tool {name!r} is registered twice")
        description = inspect.getdoc(fn)
        validator: TypeAdapter[dict[str, Any]] = TypeAdapter(cast(Any, _bind_arguments(fn)))
        digest = fingerprint(fn, description, annotations, validator)
        entry = shipped_definitions().get(name) if self._shipped else None
        if entry is not None and entry["fingerprint"] == digest:
            definition = mcp_types.Tool.model_validate(entry["definition"])
        else:
            definition = build_definition(fn, description, annotations)
        tool = RegisteredTool(
            name=name, fn=fn, validator=validator, definition=definition,
            params=list(definition.input_schema.get("properties", {})), fingerprint=digest)
        self._tools[name] = tool
        return tool

    def deprecated_alias(self, tool: str, alias: str, canonical: str) -> None:
        """Accept ``alias`` as a hidden, deprecated spelling of ``tool``'s ``canonical`` parameter."""
        self._tools[tool].aliases[alias] = canonical

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The advertised input schema of ``name`` (None for an unknown name)."""
        tool = self._tools.get(name)
        return None if tool is None else tool.definition.input_schema

    def definitions(self) -> list[mcp_types.Tool]:
        return [tool.definition for tool in self._tools.values()]

    def names(self) -> list[str]:
        return list(self._tools)

    def definitions_file(self) -> str:
        """``definitions.json``'s text for these tools (each definition under its fingerprint)."""
        tools = {tool.name: {"fingerprint": tool.fingerprint,
                             "definition": tool.definition.model_dump(mode="json", by_alias=True, exclude_none=True)}
                 for tool in self._tools.values()}
        return json.dumps({"generated_by": "python3 -m velesmem.mcp.docs", "tools": tools},
                          indent=1, ensure_ascii=False) + "\n"
