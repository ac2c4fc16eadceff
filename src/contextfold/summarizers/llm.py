"""``LLMSummarizer``: a chat model writes the rolling summary.

Everything that can go wrong with a model is handled here, inside ``summarize``, so the
engine only ever sees a valid :class:`SummaryResult` or a ``SummarizationError``:

* **failure ladder** — each call is retried by the one retry layer
  (``contextfold.llm.retry``); then the optional fallback model takes over; then,
  optionally, the offline ``ExtractiveSummarizer``; then ``LLMSummarizationError`` is
  raised with the first model's error as ``__cause__``. Error text never becomes a summary.
* **chunking** — a span larger than the model's input budget is summarized in chunks,
  each folded into the running summary in order, never trimmed. A context-length error
  splits the chunk that caused it; the same request is never sent twice.
* **output checks** — refusal, content filter, truncation, schema-invalid JSON, empty
  text, text over the summary cap: each is a failed call (:class:`SummaryOutputError`).
* **fact check** — when too many names, numbers, dates or ids of the previous summary
  vanished, the call is retried once with the lost facts listed.

Logs name models, counts and error kinds; never message content.
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ..errors import ConfigError, ProviderError, SummarizationError, ValidationError
from ..llm.base import ChatModel, Completion
from ..llm.registry import resolve_model
from ..llm.retry import CallStats, Deadline, RetryPolicy, complete_with_retry
from ..messages import Message, check_text, render_text
from ..tokens import TokenCounter
from .base import SummaryRequest, SummaryResult
from .fact_check import extract_facts, lost_facts
from .prompts import PRESETS, Preset, Prompt, build_prompt

__all__ = [
    "LLMSummarizationError",
    "LLMSummarizer",
    "OutputProblem",
    "SummaryOutput",
    "SummaryOutputError",
]

logger = logging.getLogger("contextfold.summarizers")

OutputProblem = Literal[
    "empty", "refusal", "content_filter", "truncated", "over_cap", "schema_invalid", "invalid_text"
]
#: Fraction of the input budget kept free for tokenizer differences between our
#: counter and the provider's.
_SAFETY_MARGIN = 0.9
_MIN_TRANSCRIPT_BUDGET = 64
#: A message shorter than this is not split further on a context-length error.
_MIN_SPLIT_CHARS = 200


class SummaryOutput(BaseModel):
    """The structured reply asked of providers that enforce a JSON schema."""

    model_config = ConfigDict(extra="forbid")

    summary: str

    @field_validator("summary")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("summary must not be empty")
        return value.strip()


class SummaryOutputError(SummarizationError):
    """A model replied, but the reply is not a usable summary (``problem`` says why)."""

    def __init__(self, message: str, *, problem: OutputProblem, model: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.model = model


class LLMSummarizationError(SummarizationError):
    """Every rung of the failure ladder failed. ``__cause__`` is the first model's error;
    ``attempts`` lists ``model: error`` for each rung; the usage fields say what the
    failed calls cost (so the ledger can record it)."""

    def __init__(
        self, message: str, *, attempts: Sequence[str], model: str, calls: int,
        input_tokens: int, output_tokens: int,
    ) -> None:
        super().__init__(message)
        self.attempts = tuple(attempts)
        self.model = model
        self.calls = calls
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens


@dataclass(frozen=True)
class _Job:
    """What one fold asks of one model: shared by its chunks and calls."""

    model: ChatModel
    request: SummaryRequest
    deadline: Deadline
    stats: CallStats
    structured: bool
    task_context: str
    character: str | None


class LLMSummarizer:
    """Writes the rolling summary with a chat model.

    ``model``: a ``provider:model`` string (``openai:gpt-4o-mini``, ``ollama:llama3.2``,
    ``openai-compatible:MODEL@URL`` ...) or a :class:`~contextfold.llm.ChatModel`.
    ``preset``: ``conversation``, ``agent`` or ``character``; ``template``: custom Jinja2
    source (extending a preset) instead. ``task_context`` (agent) and ``character``
    (character) may also come per fold in ``request.metadata``.
    ``fallback_model`` is tried when the model fails; ``extractive_fallback=True`` then
    falls back to the offline ``ExtractiveSummarizer``. ``deadline`` (seconds) bounds
    everything one fold does. ``context_window`` overrides the model's input budget.
    ``structured``: ask for JSON ``{"summary": ...}`` (default: when the model supports it).
    """

    #: Sends the transcript to a provider: personal data is redacted first by default.
    needs_redaction = True

    def __init__(
        self,
        model: str | ChatModel,
        *,
        preset: Preset = "conversation",
        template: str | None = None,
        fallback_model: str | ChatModel | None = None,
        extractive_fallback: bool = False,
        temperature: float = 0.1,
        max_output_tokens: int = 1024,
        word_limit: int = 500,
        task_context: str = "",
        character: str | None = None,
        structured: bool | None = None,
        retry: RetryPolicy | None = None,
        deadline: float | None = 120.0,
        context_window: int | None = None,
        fact_check: bool = True,
        fact_loss_tolerance: float = 0.25,
        model_options: dict[str, Any] | None = None,
    ) -> None:
        if template is None and preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; use one of {list(PRESETS)} or template=")
        if not 0 <= temperature <= 2:
            raise ConfigError(f"temperature must be within [0, 2], got {temperature!r}")
        if max_output_tokens < 16:
            raise ConfigError(f"max_output_tokens must be >= 16, got {max_output_tokens!r}")
        if word_limit < 1:
            raise ConfigError(f"word_limit must be >= 1, got {word_limit!r}")
        if not 0 <= fact_loss_tolerance <= 1:
            raise ConfigError(
                f"fact_loss_tolerance must be within [0, 1], got {fact_loss_tolerance!r}"
            )
        if deadline is not None and not deadline > 0:
            raise ConfigError(f"deadline must be > 0 seconds or None, got {deadline!r}")
        if context_window is not None and context_window <= max_output_tokens:
            raise ConfigError(
                f"context_window {context_window!r} must exceed "
                f"max_output_tokens {max_output_tokens!r}"
            )
        options = model_options or {}
        self.model = resolve_model(model, **options)
        self.fallback_model = (
            resolve_model(fallback_model, **options) if fallback_model is not None else None
        )
        self.preset: Preset = preset
        self.template = template
        self.extractive_fallback = extractive_fallback
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.word_limit = word_limit
        self.task_context = task_context
        self.character = character
        self.structured = structured
        self.retry = retry or RetryPolicy()
        self.deadline = deadline
        self.context_window = context_window
        self.fact_check = fact_check
        self.fact_loss_tolerance = fact_loss_tolerance

    @property
    def name(self) -> str:
        return self.model.name

    def __repr__(self) -> str:
        return f"LLMSummarizer({self.model.name!r}, preset={self.preset!r})"

    # -- the failure ladder ---------------------------------------------------------------

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        deadline = Deadline(self.deadline)
        stats = CallStats()
        failures: list[tuple[str, Exception]] = []
        models = [self.model] + ([self.fallback_model] if self.fallback_model else [])
        for model in models:
            if deadline.expired:
                break
            try:
                text = await self._summarize_with(model, request, deadline, stats)
            except (ProviderError, SummaryOutputError) as exc:
                failures.append((model.name, exc))
                logger.warning(
                    "summarizer %s failed for session %s: %s%s",
                    model.name, request.session_id, type(exc).__name__, _detail(exc),
                )
                continue
            return SummaryResult(
                text=text,
                input_tokens=stats.usage.input_tokens,
                output_tokens=stats.usage.output_tokens,
                model=model.name,
                calls=stats.calls,
            )
        if self.extractive_fallback:
            from .extractive import ExtractiveSummarizer

            extractive = ExtractiveSummarizer()
            try:
                result = await extractive.summarize(request)
            except Exception as exc:
                failures.append((extractive.name, exc))
            else:
                logger.warning(
                    "session %s folded by the extractive fallback after %d model failure(s)",
                    request.session_id, len(failures),
                )
                return replace(
                    result,
                    input_tokens=result.input_tokens + stats.usage.input_tokens,
                    output_tokens=result.output_tokens + stats.usage.output_tokens,
                    calls=result.calls + stats.calls,
                    model=result.model or extractive.name,
                )
        attempts = [f"{name}: {type(exc).__name__}{_detail(exc)}" for name, exc in failures]
        if not failures:
            attempts = ["deadline passed before any model could be called"]
        error = LLMSummarizationError(
            f"summarization failed for session {request.session_id!r}: " + "; ".join(attempts),
            attempts=attempts, model=self.model.name, calls=stats.calls,
            input_tokens=stats.usage.input_tokens, output_tokens=stats.usage.output_tokens,
        )
        if failures:
            raise error from failures[0][1]
        raise error

    # -- one model: chunks, splits -----------------------------------------------------------

    async def _summarize_with(
        self, model: ChatModel, request: SummaryRequest, deadline: Deadline, stats: CallStats
    ) -> str:
        structured = self.structured
        job = _Job(
            model=model,
            request=request,
            deadline=deadline,
            stats=stats,
            structured=model.supports_structured_output if structured is None else structured,
            task_context=str(request.metadata.get("task_context", self.task_context) or ""),
            character=request.metadata.get("character", self.character),
        )
        budget = self._transcript_budget(job)
        turns = [m.message for m in request.messages]
        queue = deque(chunk_turns(turns, budget, request.counter))
        if len(queue) > 1:
            logger.info(
                "session %s: span of %d messages summarized in %d chunks with %s",
                request.session_id, len(turns), len(queue), model.name,
            )
        summary = request.previous
        while queue:
            chunk = queue.popleft()
            try:
                summary = await self._fold_chunk(job, summary, chunk)
            except ProviderError as exc:
                if exc.kind != "context_length":
                    raise
                halves = split_chunk(chunk)
                if halves is None:
                    raise
                logger.info(
                    "%s: context length exceeded by a chunk of %d message(s); splitting it",
                    model.name, len(chunk),
                )
                queue.extendleft(reversed(halves))
        return summary

    def _transcript_budget(self, job: _Job) -> int | None:
        """Tokens the transcript of one call may take, or None (no known limit)."""
        window = self.context_window or job.model.context_window
        if window is None:
            return None
        counter = job.request.counter
        frame = self._prompt(job, job.request.previous, []).text
        running = max(counter.count(job.request.previous), job.request.max_tokens)
        room = window - self.max_output_tokens - counter.count(frame) - running
        budget = int(room * _SAFETY_MARGIN)
        if budget < _MIN_TRANSCRIPT_BUDGET:
            raise ConfigError(
                f"{job.model.name}: a context window of {window} tokens leaves {budget} for the "
                f"transcript after the prompt, the summary cap ({job.request.max_tokens}) and "
                f"max_output_tokens ({self.max_output_tokens}); raise context_window or lower them"
            )
        return budget

    def _prompt(
        self, job: _Job, previous: str, chunk: Sequence[Message], lost: Sequence[str] = ()
    ) -> Prompt:
        word_limit = min(self.word_limit, max(1, int(job.request.max_tokens * 0.6)))
        return build_prompt(
            chunk,
            job.task_context,
            preset=self.preset,
            previous=previous,
            word_limit=word_limit,
            character=job.character,
            structured=job.structured,
            nonce=secrets.token_hex(8),
            template=self.template,
            lost_facts=lost,
        )

    # -- one chunk: call, check, fact check -----------------------------------------------------

    async def _fold_chunk(self, job: _Job, previous: str, chunk: Sequence[Message]) -> str:
        text = await self._call(job, self._prompt(job, previous, chunk))
        if not (self.fact_check and previous):
            return text
        facts = extract_facts(previous)
        lost = lost_facts(previous, text)
        if not facts or len(lost) / len(facts) <= self.fact_loss_tolerance:
            return text
        logger.info(
            "%s dropped %d of %d facts of the previous summary; retrying once with them listed",
            job.model.name, len(lost), len(facts),
        )
        try:
            retried = await self._call(job, self._prompt(job, previous, chunk, lost))
        except (ProviderError, SummaryOutputError) as exc:
            logger.info(
                "fact-check retry failed (%s); keeping the first summary", type(exc).__name__
            )
            return text
        return retried if len(lost_facts(previous, retried)) <= len(lost) else text

    async def _call(self, job: _Job, prompt: Prompt) -> str:
        completion = await complete_with_retry(
            job.model,
            prompt.messages(),
            max_tokens=self.max_output_tokens,
            temperature=self.temperature,
            response_format=SummaryOutput if job.structured else None,
            policy=self.retry,
            deadline=job.deadline,
            stats=job.stats,
        )
        return check_output(completion, job.request, job.model.name, structured=job.structured)


def check_output(
    completion: Completion, request: SummaryRequest, model: str, *, structured: bool
) -> str:
    """The summary text of a completion, or ``SummaryOutputError`` saying what is wrong.
    Messages name the problem, never the reply's content."""

    def fail(problem: OutputProblem, detail: str) -> SummaryOutputError:
        return SummaryOutputError(f"{model}: {detail}", problem=problem, model=model)

    if completion.finish_reason == "refusal":
        raise fail("refusal", "the model refused to summarize")
    if completion.finish_reason == "content_filter":
        raise fail("content_filter", "the provider's content filter stopped the reply")
    if completion.finish_reason == "length":
        raise fail("truncated", "the reply was cut off at max_output_tokens")
    if not completion.text.strip():
        raise fail("empty", "the reply is empty")
    if structured:
        if completion.parsed is None or not isinstance(completion.parsed, SummaryOutput):
            raise fail("schema_invalid", completion.parse_error or "no structured reply")
        text = completion.parsed.summary
    else:
        text = completion.text.strip()
    if not text:
        raise fail("empty", "the reply is empty")
    try:
        check_text(text, "summary")
    except ValidationError as exc:
        raise fail("invalid_text", str(exc)) from exc
    tokens = request.counter.count(text)
    if tokens > request.max_tokens:
        raise fail("over_cap", f"summary has {tokens} tokens, over the cap of {request.max_tokens}")
    return text


# -- chunking (pure) --------------------------------------------------------------------------


def chunk_turns(
    turns: Sequence[Message], budget: int | None, counter: TokenCounter
) -> list[list[Message]]:
    """Consecutive chunks whose rendered text fits ``budget`` tokens, in order; a single
    message over the budget is cut into pieces (text split at whitespace), never trimmed."""
    if budget is None:
        return [list(turns)] if turns else [[]]
    chunks: list[list[Message]] = []
    current: list[Message] = []
    used = 0
    for message in turns:
        cost = counter.count(render_text(message)) + 8
        pieces = [message] if cost <= budget else _cut_message(message, budget, counter)
        for piece in pieces:
            cost = counter.count(render_text(piece)) + 8
            if current and used + cost > budget:
                chunks.append(current)
                current, used = [], 0
            current.append(piece)
            used += cost
    if current or not chunks:
        chunks.append(current)
    return chunks


def _cut_message(message: Message, budget: int, counter: TokenCounter) -> list[Message]:
    return [_piece_of(message, piece) for piece in _cut_text(render_text(message), budget, counter)]


def _cut_text(text: str, budget: int, counter: TokenCounter) -> list[str]:
    if counter.count(text) + 8 <= budget:
        return [text]
    halves = _halve(text)
    if halves is None:
        return [text]
    return _cut_text(halves[0], budget, counter) + _cut_text(halves[1], budget, counter)


def split_chunk(chunk: Sequence[Message]) -> list[list[Message]] | None:
    """Two halves of a chunk the model rejected as too long; a one-message chunk is split
    inside its text. None when it cannot get smaller."""
    if len(chunk) > 1:
        middle = len(chunk) // 2
        return [list(chunk[:middle]), list(chunk[middle:])]
    if not chunk or len(render_text(chunk[0])) < _MIN_SPLIT_CHARS:
        return None  # the message is not what makes the request too long
    halves = _halve(render_text(chunk[0]))
    if halves is None:
        return None
    return [[_piece_of(chunk[0], halves[0])], [_piece_of(chunk[0], halves[1])]]


def _halve(text: str) -> tuple[str, str] | None:
    if len(text) < 2:
        return None
    middle = len(text) // 2
    cut = text.rfind("\n", 0, middle)
    if cut <= len(text) // 4:
        cut = text.rfind(" ", 0, middle)
    if cut <= len(text) // 4:
        cut = middle
    return text[:cut], text[cut:]


def _piece_of(message: Message, text: str) -> Message:
    """A part of a message's rendered text, keeping its role, name and timestamp."""
    return replace(message, content=text, tool_calls=(), metadata={}, id=None)


def _detail(exc: Exception) -> str:
    if isinstance(exc, ProviderError):
        status = f", HTTP {exc.status}" if exc.status else ""
        return f" ({exc.kind}{status})"
    if isinstance(exc, SummaryOutputError):
        return f" ({exc.problem})"
    return ""
