"""The deterministic context compiler: pack an agent's context under a token budget, losing nothing silently."""

from velesmem.context.compiler import Compilation, compile_request
from velesmem.context.estimator import HeuristicEstimator, estimate_tokens
from velesmem.context.ingest import IngestRoots
from velesmem.context.model import CompileRequest, parse_compile_request
from velesmem.context.service import ContextService
from velesmem.context.store import ContextStore, InMemoryContextStore, MemoryContextStore

__all__ = [
    "Compilation",
    "CompileRequest",
    "ContextService",
    "ContextStore",
    "HeuristicEstimator",
    "InMemoryContextStore",
    "IngestRoots",
    "MemoryContextStore",
    "compile_request",
    "estimate_tokens",
    "parse_compile_request",
]
