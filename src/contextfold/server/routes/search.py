"""``GET /v1/sessions/{id}/search``: full-text search over a session's stored messages, for
apps that offer "search my history". The session is the tenant's own (another tenant's is
a 404, as on every route), and only what the store holds is searched: redacted text where
the session redacts, nothing a ``delete`` retention fold removed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from ...search_terms import search_terms
from ...stores.search import SearchHit
from ..deps import PROBLEM_RESPONSES, tenant_session
from ..problems import ProblemError
from ..tenancy import ScopedSession

__all__ = ["SearchHitOut", "SearchResponse", "router"]

router = APIRouter(prefix="/v1", tags=["sessions"], responses=PROBLEM_RESPONSES)

Existing = Annotated[ScopedSession, Depends(tenant_session)]


class SearchHitOut(BaseModel):
    seq: int
    role: str
    timestamp: datetime | None = Field(description="When the message was written")
    snippet: str = Field(description="Plain text around the first match (about 200 chars)")
    score: float = Field(
        description="The database's relevance, higher is better; ranks this list only"
    )
    folded: bool = Field(description="Folded into the summary (not in the live context)")
    matched: int = Field(description="How many of the query's terms the message contains")

    @classmethod
    def of(cls, hit: SearchHit) -> SearchHitOut:
        return cls(seq=hit.seq, role=hit.role, timestamp=hit.timestamp, snippet=hit.snippet,
                   score=hit.score, folded=hit.folded, matched=hit.matched)


class SearchResponse(BaseModel):
    session_id: str
    terms: list[str] = Field(description="The words searched for (any of them matches)")
    hits: list[SearchHitOut] = Field(description="Best first")


@router.get(
    "/sessions/{session_id}/search",
    response_model=SearchResponse,
    summary="Search the session's stored messages (full text, best first)",
)
async def search_session(
    scoped: Existing,
    q: Annotated[str, Query(min_length=1, max_length=1000, description="What to look for")],
    limit: Annotated[int, Query(ge=1, le=100, description="Most hits")] = 20,
    folded: Annotated[
        bool | None, Query(description="Only folded (true) or only live (false) messages")
    ] = None,
) -> SearchResponse:
    if "\x00" in q:
        raise ProblemError(422, "validation_error", "q must not contain NUL characters")
    terms = search_terms(q)
    hits = await scoped.memory.search(scoped.store_id, terms, limit=limit, folded=folded)
    return SearchResponse(
        session_id=scoped.session_id, terms=terms, hits=[SearchHitOut.of(h) for h in hits]
    )
