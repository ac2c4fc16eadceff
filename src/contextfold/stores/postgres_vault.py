"""The PII vault on PostgreSQL: a session's placeholders and the values they stand for
(kept only when the session's redaction is reversible). One function per store method,
run on a connection the store's ``_tx`` gives it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["vault_get", "vault_put"]

VAULT_SELECT = "SELECT placeholder, value FROM pii_vault WHERE session_id = %s"
#: A placeholder keeps the first value written for it (concurrent writers agree).
VAULT_INSERT = (
    "INSERT INTO pii_vault (session_id, placeholder, value) VALUES (%s, %s, %s) "
    "ON CONFLICT DO NOTHING"
)


async def vault_get(conn: Any, session_id: str) -> dict[str, str]:
    cur = await conn.execute(VAULT_SELECT, (session_id,))
    return {p: v for p, v in await cur.fetchall()}


async def vault_put(conn: Any, session_id: str, entries: Mapping[str, str]) -> None:
    async with conn.cursor() as cur:
        await cur.executemany(VAULT_INSERT, [(session_id, p, v) for p, v in entries.items()])
