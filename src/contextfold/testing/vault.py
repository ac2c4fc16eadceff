"""Conformance tests for the PII vault ability (part of :class:`StoreConformance`).

What reversible redaction relies on: a placeholder keeps its first value forever, sessions
do not see each other's rows, and deleting (or idle-clearing) a session deletes its rows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from ..messages import Message
from ..stores.base import PreparedMessage, Retention, Store

__all__ = ["VaultConformance"]

T = TypeVar("T")
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


class VaultConformance:
    """``vault_get``/``vault_put`` and their deletion with the session, as tests."""

    if TYPE_CHECKING:

        def _run(
            self, body: Callable[[Store], Awaitable[T]], retention: Retention = "archive"
        ) -> T: ...

    def test_vault_keeps_first_values_per_session_and_goes_with_delete(self) -> None:
        async def body(store: Any) -> None:
            assert await store.vault_get("s") == {}
            await store.vault_put("s", {"<EMAIL_1>": "a@example.com", "<PHONE_1>": "+1 415"})
            await store.vault_put("s", {"<EMAIL_1>": "other@example.com", "<EMAIL_2>": "b@x.io"})
            await store.vault_put("s", {})
            await store.vault_put("t", {"<EMAIL_1>": "t@example.com"})
            assert await store.vault_get("s") == {
                "<EMAIL_1>": "a@example.com",
                "<PHONE_1>": "+1 415",
                "<EMAIL_2>": "b@x.io",
            }
            await store.append("s", [PreparedMessage(Message(role="user", content="x"), 1)], T0)
            assert await store.delete("s")
            assert await store.vault_get("s") == {}
            assert await store.vault_get("t") == {"<EMAIL_1>": "t@example.com"}

        self._run(body)
