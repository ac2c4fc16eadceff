"""Where the engine redacts: the :class:`PrivacyGuard` a ``Memory`` holds.

Four points, each a ``Memory`` option (DESIGN.md, issue 5):

=========================  ======================================  ==========================
point                      option                                  default
=========================  ======================================  ==========================
summarizer input           ``redact_summarizer_input``             on for summarizers that
                                                                   may send text anywhere
summary before storing     ``redact_summary``                      on
messages before storing    ``redact_messages``                     off (on for privacy-first)
ledger error / log text    always, via :func:`redact_log_text`     always
=========================  ======================================  ==========================

And one point where values come back: ``restore_context`` shows the stored summary with
its placeholders' values in the context the chat model gets (never in what is stored or
summarized; :mod:`contextfold.privacy.restore_view`). On by default when the messages are
stored unredacted and kept (the chat model reads them anyway): the values are then kept in
the store's vault table next to them, deleted with the session. Off, and refused, with
``redact_messages``; off by default with a store of ``retention="delete"``.

A summarizer says whether it needs redacted input with a ``needs_redaction`` attribute.
Without one, the offline ``ExtractiveSummarizer`` is taken as local and anything else as a
model that may send its input to a provider, so unknown summarizers get redacted input.
Placeholders are scoped by session id, so they stay the same across folds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from ..errors import ConfigError
from ..messages import Message, StoredMessage, TextPart, ToolCall
from ..tokens import TokenCounter, count_message
from .redactor import Redactor
from .restore_view import SummaryRestorer
from .vault import StoreVault, VaultStore

__all__ = ["PrivacyGuard", "needs_redaction", "redact_log_text"]


@cache
def _log_redactor() -> Redactor:
    # Built on first use, so importing contextfold does not load every locale's validators.
    return Redactor()


def redact_log_text(text: str) -> str:
    """``text`` with personal data replaced, for the ledger and logs (no scope is kept)."""
    return _log_redactor().redact(text)


def needs_redaction(summarizer: object) -> bool:
    """True when the summarizer may send its input beyond this process (see module doc)."""
    flag = getattr(summarizer, "needs_redaction", None)
    if isinstance(flag, bool):
        return flag
    from ..summarizers.extractive import ExtractiveSummarizer

    return not isinstance(summarizer, ExtractiveSummarizer)


#: Summary lines remembered as already redacted, over all sessions, before starting over.
_MAX_CLEAN_LINES = 200_000


class PrivacyGuard:
    """Applies a :class:`Redactor` at the points a ``Memory`` was configured for.

    Build with :meth:`configure`. With ``reversible=True`` the mapping is kept in the
    store's vault table (deleted with the session) and :meth:`restore` brings values back;
    with ``restore_context`` it is kept there too, for the context's summary only
    (:meth:`summary_restorer`).
    """

    def __init__(
        self,
        redactor: Redactor,
        *,
        summarizer_input: bool,
        summary: bool,
        messages: bool,
        vault: StoreVault | None = None,
        reversible: bool = False,
        restore_context: bool = False,
    ) -> None:
        self.redactor = redactor
        self.summarizer_input = summarizer_input
        self.summary = summary
        self.messages = messages
        self.vault = vault
        self.reversible = reversible
        self.restore_context = restore_context
        self.restorer: SummaryRestorer | None = None
        self._clean_lines: dict[str, set[str]] = {}
        self._clean_count = 0

    @classmethod
    def configure(
        cls,
        *,
        redactor: Redactor | bool | None,
        summarizer: object,
        store: object,
        redact_summarizer_input: bool | None,
        redact_summary: bool,
        redact_messages: bool,
        reversible: bool,
        locales: Iterable[str] | None = None,
        restore_context: bool | None = None,
    ) -> PrivacyGuard:
        """``redactor``: a :class:`Redactor`, ``None``/``True`` for the default one, or
        ``False`` to switch every optional point off (ledger and log text stay redacted).
        ``locales`` builds the default one for those locales (``["tr"]``); ``None`` means
        :data:`~contextfold.privacy.locales.DEFAULT_LOCALES`. ``restore_context``: see
        :func:`wants_restore` (None: its default)."""
        if redactor is False:
            if (reversible or redact_messages or redact_summarizer_input or locales is not None
                    or restore_context):
                raise ConfigError(
                    "redactor=False switches redaction off; "
                    "drop the redact_*/reversible/restore_context/locales options"
                )
            return cls(_log_redactor(), summarizer_input=False, summary=False, messages=False)
        if isinstance(redactor, Redactor) and locales is not None:
            raise ConfigError(
                "locales configures the default redactor; give it to your own instead: "
                "redactor=Redactor(locales=[...])"
            )
        if redactor is None or redactor is True:
            redactor = Redactor(locales=locales)
        if not isinstance(redactor, Redactor):
            raise ConfigError(
                f"redactor must be a Redactor, True/False or None, got {redactor!r:.80}"
            )
        if redact_summarizer_input is None:
            redact_summarizer_input = needs_redaction(summarizer)
        restore = wants_restore(
            restore_context,
            store=store,
            redacts_summary=redact_summary or redact_summarizer_input,
            redact_messages=redact_messages,
            own_vault=redactor.reversible,
        )
        vault: StoreVault | None = None
        if reversible and redactor.reversible:
            raise ConfigError(
                "reversible=True keeps the mapping in the store; pass a Redactor without a vault"
            )
        if reversible or (restore and not redactor.reversible):
            vault = StoreVault(_vault_store(store))
            redactor = redactor.with_vault(vault)
        return cls(
            redactor,
            summarizer_input=redact_summarizer_input,
            summary=redact_summary,
            messages=redact_messages,
            vault=vault,
            reversible=reversible,
            restore_context=restore,
        )

    @property
    def active(self) -> bool:
        return self.summarizer_input or self.summary or self.messages

    # -- bracketing (reversible mode) -----------------------------------------------------

    async def begin(self, session_id: str) -> None:
        """Before redacting for ``session_id``: read its vault rows (reversible mode)."""
        if self.vault is not None:
            await self.vault.load(session_id)
            self.redactor.reload(session_id)

    async def end(self, session_id: str) -> None:
        """After redacting, before writing what uses new placeholders: save the mapping."""
        if self.vault is not None:
            await self.vault.flush(session_id)

    async def restore(self, session_id: str, text: str) -> str:
        if self.vault is None or not self.reversible:
            raise ConfigError("restore needs Memory(..., reversible=True)")
        await self.vault.load(session_id)
        self.redactor.reload(session_id)
        try:
            return self.redactor.restore(text, session_id)
        finally:
            await self.vault.flush(session_id)

    def summary_restorer(self, counter: TokenCounter, summary_cap: int) -> SummaryRestorer | None:
        """The restorer of the context's summary (None when ``restore_context`` is off);
        made once per guard, dropped per session by :meth:`forget`."""
        if self.restore_context and self.restorer is None:
            self.restorer = SummaryRestorer(self.values, counter, summary_cap)
        return self.restorer

    async def values(self, session_id: str) -> dict[str, str]:
        """``{placeholder: value}`` of ``session_id`` as the vault has it now."""
        if self.vault is not None:
            return await self.vault.read(session_id)
        if self.redactor.reversible:  # the caller's own Redactor(vault=...)
            return self.redactor.mapping(session_id)
        return {}

    def forget(self, session_id: str) -> None:
        self.redactor.forget(session_id)
        if self.restorer is not None:
            self.restorer.forget(session_id)
        self._clean_count -= len(self._clean_lines.pop(session_id, ()))

    # -- what gets redacted ---------------------------------------------------------------

    def text(self, text: str, session_id: str) -> str:
        return self.redactor.redact(text, session_id)

    def summary_text(self, text: str, session_id: str) -> str:
        """Redact a new summary line by line, skipping lines this guard already produced
        as redaction output for the session (redaction is idempotent), so a rolling
        summary costs its new lines, not its whole length, at every fold."""
        if self._clean_count > _MAX_CLEAN_LINES:
            self._clean_lines.clear()
            self._clean_count = 0
        clean = self._clean_lines.setdefault(session_id, set())
        out = []
        for line in text.split("\n"):
            if line not in clean:
                line = self.text(line, session_id)
                if line not in clean:
                    clean.add(line)
                    self._clean_count += 1
            out.append(line)
        return "\n".join(out)

    def message(self, message: Message, session_id: str) -> Message:
        """A copy with text content, text parts and tool-call arguments redacted. Media
        parts, names and metadata are kept as they are."""
        content = message.content
        if isinstance(content, str):
            new_content: str | tuple[Any, ...] = self.text(content, session_id)
            if not message.tool_calls:  # a chat turn (every folded one): no walk to make
                return message if new_content == content else replace(message, content=new_content)
        else:
            new_content = tuple(
                replace(p, text=self.text(p.text, session_id)) if isinstance(p, TextPart) else p
                for p in content
            )
        calls = message.tool_calls
        if calls:
            calls = tuple(replace(c, arguments=self._arguments(c, session_id)) for c in calls)
        if new_content == content and calls == message.tool_calls:
            return message
        return replace(message, content=new_content, tool_calls=calls)

    def stored(self, item: StoredMessage, session_id: str, counter: TokenCounter) -> StoredMessage:
        """A redacted copy of a stored message, its token count redone."""
        redacted = self.message(item.message, session_id)
        if redacted is item.message:
            return item
        return replace(item, message=redacted, tokens=count_message(counter, redacted))

    def _arguments(self, call: ToolCall, session_id: str) -> str:
        """Tool arguments are JSON: string values are redacted inside it, and a number that
        is personal data (a card as a JSON number) becomes a placeholder string, so the
        result is still valid JSON. Non-JSON arguments are redacted as text."""
        try:
            data = json.loads(call.arguments)
        except ValueError:
            return self.text(call.arguments, session_id)
        redacted = self._json(data, session_id)
        return call.arguments if redacted == data else json.dumps(redacted, ensure_ascii=False)

    def _json(self, value: Any, session_id: str) -> Any:
        if isinstance(value, str):
            return self.text(value, session_id)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            as_text = json.dumps(value)
            out = self.text(as_text, session_id)
            return value if out == as_text else out
        if isinstance(value, list):
            return [self._json(v, session_id) for v in value]
        if isinstance(value, Mapping):
            return {k: self._json(v, session_id) for k, v in value.items()}
        return value


def wants_restore(
    restore_context: bool | None,
    *,
    store: object,
    redacts_summary: bool,
    redact_messages: bool,
    own_vault: bool,
) -> bool:
    """Whether the context shows the summary with its placeholders restored.

    ``None`` (the default): yes when the summary is redacted, the messages are stored
    unredacted (the chat model reads them anyway) and kept (not ``retention="delete"``),
    and the values can be kept (the store has a vault, or the Redactor its own). ``True``
    insists (a ``ConfigError`` where it cannot be, and always with ``redact_messages``:
    those sessions stay redacted everywhere); ``False`` never restores."""
    if restore_context is not None and not isinstance(restore_context, bool):
        raise ConfigError(f"restore_context must be True, False or None, got {restore_context!r}")
    can_keep = own_vault or all(
        callable(getattr(store, m, None)) for m in ("vault_get", "vault_put"))
    if restore_context:
        if redact_messages:
            raise ConfigError(
                "redact_messages=True keeps personal data redacted everywhere, the context "
                "too; drop restore_context=True"
            )
        if not can_keep:
            raise ConfigError(
                f"restore_context=True needs a store that keeps a PII vault; "
                f"{type(store).__name__} does not"
            )
        return redacts_summary
    if restore_context is False or redact_messages or not redacts_summary or not can_keep:
        return False
    return getattr(store, "retention", "archive") != "delete"


def _vault_store(store: object) -> VaultStore:
    if not all(callable(getattr(store, m, None)) for m in ("vault_get", "vault_put")):
        raise ConfigError(
            f"reversible=True needs a store that keeps a PII vault; {type(store).__name__} does not"
        )
    return store  # type: ignore[return-value]
