"""Extractors (text → facts, topics, relations, attributes) and the offline identifier finder.

``load(name, settings)`` returns an ``Extractor``: ``outline`` (the directive grammar, no
model), ``ollama`` or ``openai`` (a generative model asked for the same directives). Pure code:
no store, no threads; the extraction jobs and the entity graph are built on top of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from velesmem.config import REMOTE_EXTRACTORS, Settings
from velesmem.errors import Internal, InvalidInput
from velesmem.extract.identifiers import (
    KINDS,
    Identifier,
    find_identifiers,
    hub_worthy,
    identifier_idf,
    too_common,
)
from velesmem.extract.model import Attribute, Extraction, Fact, Relation, canonical_name
from velesmem.extract.outline import OutlineExtractor, parse_outline
from velesmem.extract.prompt import SYSTEM_PROMPT
from velesmem.extract.reply import parse_reply

if TYPE_CHECKING:
    from velesmem.extract.remote import OllamaExtractor, OpenAIExtractor

_REMOTE_EXPORTS = ("OllamaExtractor", "OpenAIExtractor")


def __getattr__(name: str) -> Any:
    """The remote extractors, imported on first use: they bring httpx (~70 ms at every daemon
    start otherwise, for a backend most stores never configure)."""
    if name in _REMOTE_EXPORTS:
        from velesmem.extract import remote

        return getattr(remote, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

AUTOGRAPH_OFF, AUTOGRAPH_IDENTIFIERS, AUTOGRAPH_EXTRACTOR = "off", "identifiers", "extractor"


@runtime_checkable
class Extractor(Protocol):
    """Turns a passage into an Extraction, or raises: InvalidInput (InvalidDirective names the
    line) for text it refuses, ExtractionFailed when a remote model gives nothing usable."""

    name: str

    def extract(self, text: str) -> Extraction:
        """The whole passage's extraction; nothing partial on failure."""
        ...

    def close(self) -> None:
        """Release what the extractor holds (HTTP connections)."""
        ...


def _remote(name: str) -> Callable[[Settings], Extractor]:
    def build(settings: Settings) -> Extractor:
        from velesmem.extract import remote

        cls: type[OllamaExtractor] | type[OpenAIExtractor] = getattr(remote, name)
        return cls(settings.extractor_url, settings.extractor_model,
                   api_key=settings.extractor_api_key, timeout=settings.extractor_timeout)
    return build


BACKENDS: dict[str, Callable[[Settings], Extractor]] = {
    "outline": lambda settings: OutlineExtractor(),
    "ollama": _remote("OllamaExtractor"),
    "openai": _remote("OpenAIExtractor"),
}  # the same names, in the same order, as config.EXTRACTORS (a test keeps them in step)


def load(name: str | None, settings: Settings) -> Extractor:
    """The extractor ``name`` names (None: the configured ``VELESDB_MEMORY_EXTRACTOR``).

    InvalidInput (the caller's choice is wrong; nothing was changed) when ``name`` is unknown or
    names a remote backend that is not the configured one (its URL and model belong to that
    one). Internal (the daemon's configuration), with the fix, when ``name`` is None and nothing
    is configured, or the configured remote backend has no model.
    """
    requested = settings.extractor if name is None else name
    chosen = (requested or "").strip().lower()
    if not chosen:
        raise Internal("no extractor is configured: pass extractor \"outline\" (directives you "
                       "write) or set VELESDB_MEMORY_EXTRACTOR to ollama or openai")
    factory = BACKENDS.get(chosen)
    if factory is None:
        fault = InvalidInput if name is not None else Internal
        raise fault(f"extractor {requested!r} is not an extractor: use one of {', '.join(BACKENDS)}")
    if chosen in REMOTE_EXTRACTORS:
        if settings.extractor != chosen:
            configured = settings.extractor or "unset"
            raise InvalidInput(f"extractor {chosen!r} is not configured (VELESDB_MEMORY_EXTRACTOR="
                           f"{configured}): set VELESDB_MEMORY_EXTRACTOR={chosen} with its _URL "
                           "and _MODEL and restart, or use \"outline\"")
        if not settings.extractor_model.strip():
            raise Internal(f"VELESDB_MEMORY_EXTRACTOR={chosen} needs VELESDB_MEMORY_EXTRACTOR_MODEL"
                           ": set it to a generative model the server has (e.g. qwen3:8b)")
    return factory(settings)


def autograph_mode(settings: Settings) -> str:
    """What builds the graph of every ``remember``: ``off``, ``identifiers`` (offline hubs) or
    ``extractor`` (the configured remote model, plus the identifier hubs).

    Unset, it is ``extractor`` when VELESDB_MEMORY_EXTRACTOR is ollama or openai, else
    ``identifiers``. Internal when ``extractor`` is asked for without a remote extractor.
    """
    mode = settings.autograph
    if mode is None:
        return AUTOGRAPH_EXTRACTOR if settings.extractor in REMOTE_EXTRACTORS \
            else AUTOGRAPH_IDENTIFIERS
    if mode == AUTOGRAPH_EXTRACTOR and settings.extractor not in REMOTE_EXTRACTORS:
        raise Internal("VELESDB_MEMORY_AUTOGRAPH=extractor needs a model: set "
                       "VELESDB_MEMORY_EXTRACTOR to ollama or openai (and _MODEL), or use "
                       "VELESDB_MEMORY_AUTOGRAPH=identifiers")
    return mode


__all__ = [
    "AUTOGRAPH_EXTRACTOR", "AUTOGRAPH_IDENTIFIERS", "AUTOGRAPH_OFF", "Attribute", "BACKENDS",
    "Extraction", "Extractor", "Fact", "Identifier", "KINDS", "OllamaExtractor",
    "OpenAIExtractor", "OutlineExtractor", "Relation", "SYSTEM_PROMPT", "autograph_mode",
    "canonical_name", "find_identifiers", "hub_worthy", "identifier_idf", "load",
    "parse_outline", "parse_reply", "too_common",
]
