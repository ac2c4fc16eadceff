"""Operations: ``/healthz`` (the process answers), ``/readyz`` (the store answers),
``/metrics`` (Prometheus text). No key needed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from starlette.concurrency import run_in_threadpool

from ...errors import ContextFoldError
from ..deps import PROBLEM_RESPONSES, get_state
from ..problems import ProblemError
from ..schemas import Status
from ..tenancy import ServerState

router = APIRouter(tags=["operations"])
State = Annotated[ServerState, Depends(get_state)]


@router.get("/healthz", response_model=Status, summary="The process is up")
async def healthz() -> Status:
    return Status(status="ok")


@router.get(
    "/readyz",
    response_model=Status,
    responses={503: PROBLEM_RESPONSES[503]},
    summary="The store and the key catalog answer",
)
async def readyz(state: State) -> Status:
    try:
        await state.memory(state.config.defaults).stats("readyz/probe")
        await state.catalog.ping()
    except ContextFoldError as exc:
        raise ProblemError(
            503,
            "storage_unavailable",
            "the store is unreachable",
            headers={"Retry-After": "1"},
        ) from exc
    return Status(status="ready")


@router.get(
    "/metrics",
    response_class=Response,
    summary="Prometheus metrics",
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics(state: State) -> Response:
    # In a thread: rendering (and, with several workers, reading every process's files)
    # must not hold the event loop, whatever the size.
    body, content_type = await run_in_threadpool(state.metrics.render)
    return Response(body, media_type=content_type)
