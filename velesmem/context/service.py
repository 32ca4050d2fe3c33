"""The nine compiler tools as one service: compile (and record), transcripts, explain, retrieve,
savings, budgets and working contexts. The MCP layer and the CLI call this; it speaks dicts in
the wire's JSON shape and raises domain errors.
"""

from __future__ import annotations

from typing import Any

from velesmem.context.budgets import suggest_budget as _suggest_budget
from velesmem.context.compiler import Compilation, FusedRecaller, compile_request, stringify_ids
from velesmem.context.ingest import IngestBudget, IngestRoots, read_path
from velesmem.context.model import echo, parse_bool, parse_compile_request, parse_int, parse_str, parse_u64
from velesmem.context.store import EVENT_AT, ContextStore, StoredSource
from velesmem.context.transcript import (FORMATS, segment_transcript, segments_to_fragments,
                                         transcript_warnings)
from velesmem.context.working import check_name, normalize_working
from velesmem.errors import InvalidInput, NotFound
from velesmem.ids import SOURCE_HANDLE_PREFIX
from velesmem.limits import (
    DEFAULT_MIN_SEGMENT_BYTES,
    MAX_FRAGMENT_BYTES,
    MAX_OTHER_SESSIONS,
    MAX_TRANSCRIPT_BYTES,
    SAVINGS_BUCKET_SECONDS,
)


class ContextService:
    """Compiler tools over an optional store (sources, events, working contexts) and memory."""

    def __init__(
        self,
        store: ContextStore | None = None,
        roots: IngestRoots | None = None,
        memory: FusedRecaller | None = None,
    ) -> None:
        self.store = store
        self.roots = roots or IngestRoots()
        self.memory = memory

    # --- compile ----------------------------------------------------------------------------
    def compile(self, request: dict[str, Any], *, record: bool = True) -> Compilation:
        """Compile a wire-shaped request; with ``record`` store its sources and its event."""
        parsed = parse_compile_request(request)
        compilation = compile_request(parsed, roots=self.roots, memory=self.memory)
        if record and self.store is not None:
            self._record(compilation)
        return compilation

    def compile_context(self, request: dict[str, Any]) -> dict[str, Any]:
        """compile_context's result."""
        return self.compile(request).to_dict()

    def _record(self, c: Compilation) -> None:
        store = self.store
        assert store is not None
        policy = c.request.policy
        if policy.store_sources:
            seen: set[int] = set()
            for item in c.items:
                if item.content_hash in seen:
                    continue
                seen.add(item.content_hash)
                media = item.media
                store.put_source(
                    item.content_hash,
                    StoredSource(item.text, media.mime if media else None, media.bytes_b64 if media else None),
                    policy.source_ttl_seconds,
                )
        ins = c.result["insights"]
        store.record_event(
            c.request.project,
            {
                "tokens_in": ins["tokens_in"],
                "tokens_out": ins["tokens_out"],
                "tokens_saved": ins["tokens_saved"],
                "cost_saved_micros_by_currency": dict(ins["cost_saved_micros_by_currency"]),
            },
            policy.event_ttl_seconds,
        )

    # --- transcripts ------------------------------------------------------------------------
    def compile_transcript(self, args: dict[str, Any]) -> dict[str, Any]:
        """Segment a transcript (inline or by path), compile it, and return the audit trail."""
        transcript = args.get("transcript")
        path = args.get("path")
        if (transcript is None) == (path is None):
            raise InvalidInput("exactly one of transcript or path must be set")
        if path is not None:
            text = read_path(
                self.roots, parse_str(path, "path"), IngestBudget(max_bytes=MAX_TRANSCRIPT_BYTES),
                max_file_bytes=MAX_TRANSCRIPT_BYTES,
            )
        else:
            text = parse_str(transcript, "transcript", max_bytes=MAX_TRANSCRIPT_BYTES)
        seg_args = args.get("segmentation") or {}
        if not isinstance(seg_args, dict):
            raise InvalidInput("segmentation must be an object {format?, min_segment_bytes?, cache_system_turn?}")
        unknown = sorted(set(seg_args) - {"format", "min_segment_bytes", "cache_system_turn"})
        if unknown:
            raise InvalidInput(f"segmentation has unknown field(s) {', '.join(unknown)}")
        fmt = seg_args.get("format") or "auto"
        if fmt not in FORMATS:
            raise InvalidInput(f"segmentation.format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        min_bytes = DEFAULT_MIN_SEGMENT_BYTES
        if seg_args.get("min_segment_bytes") is not None:
            min_bytes = parse_int(seg_args["min_segment_bytes"], "segmentation.min_segment_bytes",
                                  lo=0, hi=MAX_FRAGMENT_BYTES)
        cache_system = True
        if seg_args.get("cache_system_turn") is not None:
            cache_system = parse_bool(seg_args["cache_system_turn"], "segmentation.cache_system_turn")
        seg = segment_transcript(text, fmt, min_bytes)
        request = {
            "query": args.get("query"),
            "token_budget": args.get("token_budget"),
            "fragments": segments_to_fragments(seg, cache_system),
        }
        for key in ("project", "target_model", "policy"):
            if args.get(key) is not None:
                request[key] = args[key]
        compilation = self.compile(request)
        ids = {d["fragment_index"]: d["fragment_id"] for d in compilation.result["decisions"]}
        segments = [
            {"index": i, "turn": s.turn, "role": s.role, "kind": s.kind,
             "byte_start": s.byte_start, "byte_end": s.byte_end, "fragment_id": ids[i],
             "fragment_id_str": str(ids[i])}
            for i, s in enumerate(seg.segments)
        ]
        segmentation = {"format_detected": seg.format_detected, "segments": segments,
                        "merged_segments": seg.merged_segments}
        if compilation.request.policy.ids_as_strings:
            segmentation = stringify_ids(segmentation)
        context = compilation.to_dict()
        context["warnings"] = [*context["warnings"], *transcript_warnings(seg, context)]
        return {"context": context, "segmentation": segmentation}

    # --- explain / retrieve / savings / budgets ---------------------------------------------
    def explain(self, request: dict[str, Any], fragment_id: Any, fragment_index: Any = None) -> dict[str, Any]:
        """The decision for one fragment of ``request``, re-compiled with recording off."""
        compilation = self.compile(request, record=False)
        decisions = compilation.result["decisions"]
        found = None
        if fragment_index is not None:
            n = len(compilation.request.fragments)
            idx = parse_int(fragment_index, "fragment_index", lo=0)
            if idx >= n:
                raise InvalidInput(f"fragment_index {idx} is out of range: request has {n} fragment(s)")
            found = next(d for d in decisions if d["fragment_index"] == idx)
        else:
            fid = parse_u64(fragment_id, "fragment_id")
            found = next((d for d in decisions if d["fragment_id"] == fid), None)
            if found is None:
                raise NotFound(f"no fragment with fragment_id {fid} in this request")
        decision: dict[str, Any] = (stringify_ids(found) if compilation.request.policy.ids_as_strings
                                    else found)
        return decision

    def retrieve(self, handle: Any) -> dict[str, Any]:
        """The exact original bytes behind a ``ctx://source/<hash>`` handle."""
        text = parse_str(handle, "handle").strip()
        digits = text.removeprefix(SOURCE_HANDLE_PREFIX)
        if not text.startswith(SOURCE_HANDLE_PREFIX) or not digits.isdigit() or not digits.isascii():
            raise InvalidInput(f"handle must look like ctx://source/<decimal hash>, got {echo(text)}")
        content_hash = parse_u64(digits, "handle hash")
        source = self.store.get_source(content_hash) if self.store is not None else None
        if source is None:
            raise NotFound(f"no stored source for {text} (never compiled here, expired, or forgotten)")
        out: dict[str, Any] = {"handle": text, "content": source.content}
        if source.media_b64 is not None:
            out["media"] = {"mime": source.media_mime, "bytes_b64": source.media_b64}
        return out

    def savings(self, project: Any = None) -> dict[str, Any]:
        """Aggregated compilation events, optionally for one project."""
        if project is not None:
            project = parse_str(project, "project")
        events, truncated = self.store.events(project) if self.store is not None else ([], False)
        cost: dict[str, int] = {}
        for e in events:
            for currency, micros in (e.get("cost_saved_micros_by_currency") or {}).items():
                cost[currency] = cost.get(currency, 0) + int(micros)
        return {
            "events": len(events),
            "tokens_in": sum(int(e.get("tokens_in", 0)) for e in events),
            "tokens_out": sum(int(e.get("tokens_out", 0)) for e in events),
            "tokens_saved": sum(int(e.get("tokens_saved", 0)) for e in events),
            "cost_saved_micros_by_currency": dict(sorted(cost.items())),
            "truncated": truncated,
        }

    def savings_series(self, project: Any = None,
                       bucket_seconds: int = SAVINGS_BUCKET_SECONDS) -> dict[str, Any]:
        """``savings`` over time: the same events summed per ``bucket_seconds`` (a UTC day by
        default), oldest first, only the buckets that hold events; ``truncated`` as there."""
        if project is not None:
            project = parse_str(project, "project")
        step = parse_int(bucket_seconds, "bucket_seconds", lo=1)
        events, truncated = self.store.events(project) if self.store is not None else ([], False)
        buckets: dict[int, dict[str, int]] = {}
        for e in events:
            start = int(float(e.get(EVENT_AT, 0.0)) // step * step)
            b = buckets.setdefault(start, {"events": 0, "tokens_in": 0, "tokens_out": 0,
                                           "tokens_saved": 0})
            b["events"] += 1
            for name in ("tokens_in", "tokens_out", "tokens_saved"):
                b[name] += int(e.get(name, 0))
        return {"bucket_seconds": step, "truncated": truncated,
                "points": [{"start": start, **buckets[start]} for start in sorted(buckets)]}

    @staticmethod
    def suggest_budget(target_model: Any, reserve_tokens: Any = 0) -> dict[str, Any]:
        """The static window table's suggestion for ``target_model``."""
        model = parse_str(target_model, "target_model")
        reserve = parse_int(reserve_tokens if reserve_tokens is not None else 0, "reserve_tokens", lo=0)
        return _suggest_budget(model, reserve)

    # --- working contexts -------------------------------------------------------------------
    def _need_store(self) -> ContextStore:
        if self.store is None:
            raise InvalidInput("working contexts need a store; none is attached")
        return self.store

    def save_working(self, project: Any, session: Any, working: Any) -> dict[str, Any]:
        """Upsert the working context of project + session; returns the backing fact's id."""
        project = check_name(project, "project")
        session = check_name(session, "session")
        normalized = normalize_working(working)
        fid, _ = self._need_store().put_working(project, session, normalized)
        return {"id": fid, "id_str": str(fid)}

    def load_working(self, project: Any, session: Any) -> dict[str, Any]:
        """{found, working, other_sessions}; ids inside working are always decimal strings."""
        project = check_name(project, "project")
        session = check_name(session, "session")
        store = self._need_store()
        working = store.get_working(project, session)
        others = [e.session for e in store.sessions(project) if e.session != session]
        return {
            "found": working is not None,
            "working": working,
            "other_sessions": others[:MAX_OTHER_SESSIONS],
        }

    def list_working(self, project: Any) -> dict[str, Any]:
        """{sessions: [{session, saved_at}]}, most recently saved first."""
        project = check_name(project, "project")
        entries = self._need_store().sessions(project)
        return {"sessions": [{"session": e.session, "saved_at": e.saved_at} for e in entries]}
