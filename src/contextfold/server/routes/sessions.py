"""``/v1``: the library's operations on a tenant's sessions."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import datetime, timezone
from typing import Annotated, Any, get_args

import orjson
from fastapi import APIRouter, Body, Depends, Query, Request, Response
from pydantic import BaseModel
from pydantic import ValidationError as ShapeError

from ...engine import AsyncMemory
from ...errors import ValidationError
from ...outcomes import FoldOutcome, Usage
from ..cursors import CURSOR_PATTERN, decode_cursor, encode_cursor
from ..deps import (
    PROBLEM_RESPONSES,
    SessionId,
    current_tenant,
    get_state,
    tenant_session,
    writable_session,
)
from ..formats import ContextFormat, render
from ..guards import charge_messages
from ..keys import Tenant
from ..lean_routes import LeanRoute, lean_twin
from ..memories import ledger_totals
from ..problems import ProblemError
from ..schemas import (
    Appended,
    AppendRequest,
    AppendResponse,
    ContextRequest,
    ContextResponse,
    FoldRequest,
    FoldResult,
    LedgerResponse,
    LedgerRow,
    MessageIn,
    MessagesPage,
    SessionInfo,
    SessionsPage,
    StatsOut,
    StoredMessageOut,
    SummaryOut,
    SummaryResponse,
    UsageRequest,
    UsageResponse,
    UsageTotals,
)
from ..session_settings import SessionSettings, SettingsPatch
from ..tenancy import SESSION_ID_PATTERN, ScopedSession, ServerState, scoped_id

router = APIRouter(
    prefix="/v1", tags=["sessions"], responses=PROBLEM_RESPONSES, route_class=LeanRoute
)

State = Annotated[ServerState, Depends(get_state)]
Existing = Annotated[ScopedSession, Depends(tenant_session)]
Writable = Annotated[ScopedSession, Depends(writable_session)]
CurrentTenant = Annotated[Tenant, Depends(current_tenant)]

_SESSION_ID = re.compile(SESSION_ID_PATTERN)


@router.post(
    "/sessions/{session_id}/messages",
    response_model=AppendResponse,
    summary="Append messages (one atomic batch, idempotent by message id)",
)
async def append_messages(
    session_id: SessionId, body: AppendRequest, request: Request
) -> Response:
    return await _append(request, session_id, [m.to_library() for m in body.messages])


async def _append(request: Request, session_id: str, raw: list[dict[str, Any]]) -> Response:
    """``append_messages`` of ``raw``: the body's messages as ``AppendRequest`` validated
    and dumped them."""
    # the session is resolved here, not by a Depends(writable_session): FastAPI solves a
    # sub-dependency's parameters anew on every request (a tenth of the server's CPU on
    # the per-turn path); the OpenAPI document is the same
    scoped = await writable_session(request, session_id)
    state: ServerState = request.app.state.contextfold
    limit = state.config.limits.max_messages_per_request
    if len(raw) > limit:
        raise ProblemError(
            413,
            "too_many_messages",
            f"{len(raw)} messages in one request; the limit is {limit}",
        )
    await charge_messages(state, scoped.tenant.key_id, len(raw))
    memory = scoped.memory
    try:
        result = await memory.add(scoped.store_id, *raw)
    except ValidationError as exc:
        raise _which_message(memory, raw, exc) from exc
    await state.touch(scoped)
    state.metrics.fold(result.fold)
    fresh = len(raw) - result.duplicates
    state.metrics.messages.inc(fresh)
    first_fresh = max(result.seqs) - fresh + 1 if fresh else None
    appended: list[Appended] = []
    duplicates: list[Appended] = []
    seen: set[int] = set()
    for index, (message, seq) in enumerate(zip(raw, result.seqs, strict=True)):
        item = Appended.model_construct(index=index, seq=seq, id=message.get("id"))
        if first_fresh is not None and seq >= first_fresh and seq not in seen:
            appended.append(item)
        else:
            duplicates.append(item)
        seen.add(seq)
    stats = result.stats
    if stats is None or result.fold is not None:  # an inline fold changed it since
        stats = await memory.stats(scoped.store_id)
    assert stats is not None
    return _json(AppendResponse.model_construct(
        session_id=scoped.session_id,
        appended=appended,
        duplicates=duplicates,
        fold=FoldResult.of(result.fold),
        stats=StatsOut.of(stats),
    ))


@lean_twin(append_messages)
async def _lean_append(request: Request) -> Response | None:
    """The declared parameters' work for a JSON body that validates (see
    :mod:`..lean_routes`): the same ``json.loads`` FastAPI uses, then
    :func:`plain_messages` or ``AppendRequest``."""
    session_id = request.path_params["session_id"]
    content_type = request.headers.get("content-type", "")
    if (
        not _SESSION_ID.fullmatch(session_id)
        or content_type.partition(";")[0].strip().lower() != "application/json"
    ):
        return None
    try:
        body = json.loads(await request.body())
        raw = plain_messages(body)
        if raw is None:
            raw = [m.to_library() for m in AppendRequest.model_validate(body).messages]
    except (ValueError, ShapeError):  # (JSONDecodeError, UnicodeDecodeError: ValueErrors)
        return None
    return await _append(request, session_id, raw)


_PLAIN_KEYS = frozenset(("role", "content", "name", "id"))
_ROLES = frozenset(get_args(MessageIn.model_fields["role"].annotation))


def plain_messages(body: object) -> list[dict[str, Any]] | None:
    """The messages of an append body whose every message is a plain turn — a role, text
    content, optionally a name and an id of 1-512 characters, nothing else — exactly as
    ``AppendRequest`` validates and dumps them (the same dicts); None for any other body,
    which ``AppendRequest`` itself then validates. Most turns look like this, and the
    model's validation and dump were a fifth of an append's route work."""
    if type(body) is not dict or len(body) != 1:
        return None
    messages = body.get("messages")
    if type(messages) is not list or not messages:
        return None
    for message in messages:
        if type(message) is not dict or not message.keys() <= _PLAIN_KEYS:
            return None
        role, content = message.get("role"), message.get("content")
        if type(role) is not str or role not in _ROLES or type(content) is not str:
            return None
        if "name" in message and type(message["name"]) is not str:
            return None
        if "id" in message and (type(message["id"]) is not str
                                or not 1 <= len(message["id"]) <= 512):
            return None
    return messages


def _json(model: BaseModel) -> Response:
    """The response of a model the route built from trusted values (``model_construct``):
    serialized once, not validated again by the framework — by orjson, which writes the
    bytes pydantic writes for these shapes in a tenth of the time for a context (a test
    holds the two equal), and by pydantic for anything orjson refuses."""
    try:
        body = orjson.dumps(model, default=_fields, option=orjson.OPT_UTC_Z)
    except orjson.JSONEncodeError:
        body = model.model_dump_json().encode()
    return Response(body, media_type="application/json")


def _fields(value: object) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.__dict__
    raise TypeError(type(value).__name__)


def _which_message(
    memory: AsyncMemory, raw: list[dict[str, object]], exc: ValidationError
) -> ProblemError:
    """The 422 for a rejected batch, naming the first invalid message when one is invalid
    on its own (else the batch's order broke a rule, e.g. a tool result without its call)."""
    for index, message in enumerate(raw):
        try:
            memory.prepare([message])
        except ValidationError as one:
            return ProblemError(422, "validation_error", f"messages[{index}]: {one}")
    return ProblemError(422, "validation_error", str(exc))


@router.get(
    "/sessions/{session_id}/context",
    response_model=ContextResponse,
    summary="The bounded context to send to the model",
)
async def get_context(
    session_id: SessionId,
    request: Request,
    system: Annotated[
        str | None,
        Query(max_length=1000, description="System prompt (longer ones: POST …/context)"),
    ] = None,
    format: Annotated[ContextFormat, Query(description="Provider message shape")] = "openai",
    max_tokens: Annotated[
        int | None, Query(ge=64, le=2_000_000, description="Budget (default: the session's)")
    ] = None,
    query: Annotated[
        str | None,
        Query(min_length=1, max_length=1000,
              description="Recall folded turns matching this text (longer: POST …/context)"),
    ] = None,
) -> Response:
    return await _context(
        await tenant_session(request, session_id),  # as in append_messages: no Depends
        ContextRequest.model_construct(
            system=system, format=format, max_tokens=max_tokens, query=query
        ),
    )


@lean_twin(get_context)
async def _lean_context(request: Request) -> Response | None:
    """A context read without a query string (see :mod:`..lean_routes`)."""
    session_id = request.path_params["session_id"]
    if request.scope.get("query_string") or not _SESSION_ID.fullmatch(session_id):
        return None
    return await get_context(session_id, request)


@router.post(
    "/sessions/{session_id}/context",
    response_model=ContextResponse,
    summary="The bounded context, with the system prompt in the body (any length)",
)
async def post_context(scoped: Existing, body: ContextRequest) -> Response:
    return await _context(scoped, body)


async def _context(scoped: ScopedSession, request: ContextRequest) -> Response:
    context = await scoped.memory.context(
        scoped.store_id,
        system=request.system,
        max_tokens=request.max_tokens or scoped.settings.budget,
        query=request.query,
    )
    system_text, messages = render(context.messages, request.format)
    return _json(ContextResponse.model_construct(
        session_id=scoped.session_id,
        format=request.format,
        system=system_text,
        messages=messages,
        tokens=context.tokens,
        budget=context.budget,
        trimmed=context.omitted > 0 or context.truncated,
        omitted=context.omitted,
        omitted_seqs=context.omitted_seqs,
        truncated=context.truncated,
        elided=list(context.elided),
        masked=context.masked,
        bridged=context.bridged,
        recalled=list(context.recalled),
        summary=SummaryOut.of(context.summary),
    ))


@router.get(
    "/sessions/{session_id}/summary",
    response_model=SummaryResponse,
    summary="The rolling summary (null before the first fold)",
)
async def get_summary(scoped: Existing) -> SummaryResponse:
    summary = await scoped.memory.summary(scoped.store_id)
    return SummaryResponse(session_id=scoped.session_id, summary=SummaryOut.of(summary))


@router.get(
    "/sessions/{session_id}/messages",
    response_model=MessagesPage,
    summary="Stored messages, oldest first, paginated by seq",
)
async def list_messages(
    scoped: Existing,
    after_seq: Annotated[int, Query(ge=0, le=2**62, description="Start after this seq")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    include_folded: Annotated[bool, Query(description="Include folded messages")] = True,
) -> MessagesPage:
    await scoped.memory.stats(scoped.store_id)  # sets the store up on first use
    rows = await scoped.memory.store.messages(
        scoped.store_id, include_folded=include_folded, after_seq=after_seq, limit=limit + 1
    )
    more = len(rows) > limit
    rows = rows[:limit]
    return MessagesPage(
        session_id=scoped.session_id,
        messages=[StoredMessageOut.of(m) for m in rows],
        next_after_seq=rows[-1].seq if more and rows else None,
    )


@router.get(
    "/sessions/{session_id}/ledger",
    response_model=LedgerResponse,
    summary="Fold attempts, newest first",
)
async def get_ledger(
    scoped: Existing, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> LedgerResponse:
    rows = await scoped.memory.ledger(scoped.store_id, limit=limit)
    return LedgerResponse(session_id=scoped.session_id, entries=[LedgerRow.of(r) for r in rows])


@router.post(
    "/sessions/{session_id}/fold",
    response_model=FoldResult,
    responses={
        409: PROBLEM_RESPONSES[422]
        | {
            "description": "The session changed under the fold, or a fold of it is "
            "already running (fold_conflict)"
        }
    },
    summary="Fold now if the policy says so (force: all but the newest keep_last)",
)
async def fold_session(
    scoped: Existing, state: State, body: Annotated[FoldRequest | None, Body()] = None
) -> FoldResult:
    outcome = await scoped.memory.fold(scoped.store_id, force=bool(body and body.force))
    state.metrics.fold(outcome)
    _raise_on_conflict(outcome)
    result = FoldResult.of(outcome)
    assert result is not None
    return result


def _raise_on_conflict(outcome: FoldOutcome | None) -> None:
    if outcome is None:
        return
    if outcome.status == "conflict" or (
        outcome.status == "skipped" and "already running" in outcome.reason
    ):
        raise ProblemError(
            409,
            "fold_conflict",
            "the session changed under the fold or a fold of it is already running; "
            "nothing was written, retry",
        )


@router.post(
    "/sessions/{session_id}/usage",
    response_model=UsageResponse,
    summary="Record the provider-reported input tokens of the last model call",
)
async def record_usage(body: UsageRequest, scoped: Existing, state: State) -> UsageResponse:
    outcome = await scoped.memory.record_usage(scoped.store_id, body.input_tokens)
    state.metrics.fold(outcome)
    return UsageResponse(
        session_id=scoped.session_id,
        input_tokens=body.input_tokens,
        fold=FoldResult.of(outcome),
    )


@router.delete(
    "/sessions/{session_id}",
    status_code=204,
    response_class=Response,
    summary="Delete the session: messages, summary, ledger, settings",
)
async def delete_session(scoped: Existing, state: State) -> Response:
    if not await state.delete(scoped):
        raise ProblemError(404, "not_found", f"no session {scoped.session_id!r}")
    return Response(status_code=204)


@router.get(
    "/sessions/{session_id}/settings",
    response_model=SessionSettings,
    summary="The session's effective settings",
)
async def get_settings(scoped: Existing) -> SessionSettings:
    return scoped.settings


@router.put(
    "/sessions/{session_id}/settings",
    response_model=SessionSettings,
    summary="Set the session's policy, summarizer preset and masking (unset fields: defaults)",
)
async def put_settings(body: SettingsPatch, scoped: Writable, state: State) -> SessionSettings:
    effective = state.config.defaults.overlay(body)
    state.memory(effective)  # builds the policy: ConfigError (422) if the numbers clash
    patch = body.stored()
    await state.put_settings(scoped, json.dumps(patch) if patch else None)
    return effective


@router.get(
    "/sessions",
    response_model=SessionsPage,
    summary="The tenant's sessions, most recently active first",
)
async def list_sessions(
    tenant: CurrentTenant,
    state: State,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[
        str | None,
        Query(pattern=CURSOR_PATTERN, description="next_cursor of the previous page"),
    ] = None,
) -> SessionsPage:
    rows = await state.catalog.sessions(tenant.name, limit=limit + 1, before=_decode(cursor))
    more = len(rows) > limit
    rows = rows[:limit]
    stats = await state.stats_many(tenant, [r.session_id for r in rows])
    sessions = [
        SessionInfo(
            session_id=r.session_id,
            created_at=_utc(r.created_at),
            last_activity=_utc(r.last_activity),
            stats=StatsOut.of(s) if s is not None else None,
            custom_settings=r.settings is not None,
        )
        for r, s in zip(rows, stats, strict=True)
    ]
    next_cursor = _encode(rows[-1].last_activity, rows[-1].session_id) if more and rows else None
    return SessionsPage(sessions=sessions, next_cursor=next_cursor)


@router.get("/usage", response_model=UsageTotals, summary="Summarizer usage of the tenant")
async def tenant_usage(tenant: CurrentTenant, state: State) -> UsageTotals:
    # The database adds up this tenant's ledger rows only (an index range on the tenant's
    # session ids), so the cost does not grow with other tenants' data.
    memory = state.memory(state.config.defaults)
    await memory.stats(scoped_id(tenant.name, "-"))  # sets the store up on first use
    totals = await ledger_totals(memory.store, prefix=scoped_id(tenant.name, ""))
    return UsageTotals(**dataclasses.asdict(Usage.from_totals(totals)))


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def _encode(last_activity: float, session_id: str) -> str:
    return encode_cursor([last_activity, session_id])


def _decode(cursor: str | None) -> tuple[float, str] | None:
    if cursor is None:
        return None
    last_activity, session_id = decode_cursor(cursor, ("time", "session_id"))
    return last_activity, session_id
