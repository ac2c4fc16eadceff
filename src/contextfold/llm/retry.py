"""The one retry layer for chat-model calls.

Provider SDKs are constructed with their own retries off (``max_retries=0``, Gemini's
retry options unset), so a request is retried here and only here: total attempts are
``1 + max_retries``, never multiplied by an SDK's count.

Retried: connection errors, timeouts, HTTP 408/409/429/5xx and Anthropic's 529, with
exponential backoff and jitter, honouring ``retry-after``/``retry-after-ms``. Not
retried: quota or spend-cap errors, auth, other 4xx, and context-length errors (the
summarizer splits its input instead of resending). A :class:`Deadline` shared by every
call of one fold bounds attempts and sleeps alike: a wait that would overrun it is not
started.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from ..errors import ConfigError, ProviderError
from ..messages import Message
from .base import ChatModel, Completion, Usage

__all__ = [
    "RETRYABLE_KINDS",
    "CallStats",
    "Deadline",
    "RetryPolicy",
    "complete_with_retry",
    "is_retryable",
]

logger = logging.getLogger("contextfold.llm")

RETRYABLE_KINDS = frozenset(
    {"rate_limit", "timeout", "conflict", "server", "overloaded", "connection"}
)


def is_retryable(exc: ProviderError) -> bool:
    """Whether sending the same request again may succeed."""
    return exc.kind in RETRYABLE_KINDS


@dataclass(frozen=True)
class RetryPolicy:
    """How one request is retried. ``max_retries`` is the number of *extra* attempts;
    ``attempt_timeout`` bounds each attempt, the fold's :class:`Deadline` bounds all."""

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5
    attempt_timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if not (0 <= self.initial_delay <= self.max_delay):
            raise ConfigError(
                "need 0 <= initial_delay <= max_delay, "
                f"got {self.initial_delay!r}, {self.max_delay!r}"
            )
        if self.multiplier < 1:
            raise ConfigError(f"multiplier must be >= 1, got {self.multiplier!r}")
        if not 0 <= self.jitter <= 1:
            raise ConfigError(f"jitter must be within [0, 1], got {self.jitter!r}")
        if not self.attempt_timeout > 0:
            raise ConfigError(f"attempt_timeout must be > 0, got {self.attempt_timeout!r}")

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """Delay before retry number ``retry`` (1-based): exponential, capped, and
        shortened by up to ``jitter`` of itself so many clients do not retry in step."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        return base * (1.0 - self.jitter * (rng or random).random())


class Deadline:
    """A point in (monotonic) time after which no call is started and no wait begins."""

    def __init__(
        self, seconds: float | None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if seconds is not None and not seconds > 0:
            raise ConfigError(f"deadline must be > 0 seconds or None, got {seconds!r}")
        self._clock = clock
        self._at = None if seconds is None else clock() + seconds

    def remaining(self) -> float | None:
        return None if self._at is None else max(0.0, self._at - self._clock())

    @property
    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0


@dataclass
class CallStats:
    """What calls cost, summed across retries, chunks and models of one fold."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)

    def add(self, completion: Completion) -> None:
        self.usage = self.usage + completion.usage


async def complete_with_retry(
    model: ChatModel,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    temperature: float,
    response_format: type[BaseModel] | None,
    policy: RetryPolicy,
    deadline: Deadline,
    stats: CallStats | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> Completion:
    """Call ``model.complete`` with retries; raise the last ``ProviderError`` when the
    error is not retryable, the retries are used up, or the deadline would be overrun."""
    stats = stats if stats is not None else CallStats()
    retry = 0
    while True:
        left = deadline.remaining()
        if left is not None and left <= 0:
            raise ProviderError(
                f"{model.name}: the fold's deadline passed before the call could start",
                kind="timeout",
                provider=model.name,
            )
        timeout = policy.attempt_timeout if left is None else min(policy.attempt_timeout, left)
        stats.calls += 1
        try:
            completion = await asyncio.wait_for(
                model.complete(
                    messages,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    response_format=response_format,
                    timeout=timeout,
                ),
                timeout,
            )
        except asyncio.TimeoutError as exc:
            error = ProviderError(
                f"{model.name}: no reply within {timeout:.3g}s", kind="timeout", provider=model.name
            )
            error.__cause__ = exc
        except ProviderError as exc:
            error = exc
        else:
            stats.add(completion)
            return completion
        if not is_retryable(error) or retry >= policy.max_retries:
            raise error
        retry += 1
        delay = error.retry_after if error.retry_after is not None else policy.backoff(retry)
        left = deadline.remaining()
        if left is not None and delay >= left:
            logger.info(
                "%s call failed (%s); not retrying: waiting %.2fs would pass the deadline",
                model.name,
                error.kind,
                delay,
            )
            raise error
        logger.info(
            "%s call failed (%s%s); retry %d/%d in %.2fs",
            model.name,
            error.kind,
            f", HTTP {error.status}" if error.status else "",
            retry,
            policy.max_retries,
            delay,
        )
        await sleep(delay)
