"""Agent memory settings from a YAML file: context-limit and idle-time folding.

::

    # agent.yaml — every key is optional
    context_limit_tokens: 8000        # fold when the provider reports more input tokens
    timeout_summarize_seconds: 1800   # idle this long: fold everything
    timeout_clear_seconds: 3600       # then idle this much longer: clear the session
    model: null                       # summarizer model ("openai:gpt-4o-mini"); null: offline
    keep_tool_results: 3              # observation masking: newest results shown verbatim;
                                      # older ones as stand-ins (null: masking off)

Missing keys take the defaults; an unknown key or a value of the wrong type is a
``ConfigError`` naming the file, the key and what was expected. PyYAML is a core
dependency (small, pure Python); :meth:`AgentSettings.from_mapping` does not need it.

The settings become one policy, ``any_of(ReportedUsage(limit), Idle(fold, clear))``, and
observation masking (:class:`~contextfold.masking.Masking`), used
the same way in-process (:class:`~contextfold.idle.IdleScheduler`) and out of process
(a :class:`~contextfold.worker.Worker` built with :meth:`AgentSettings.options`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from .errors import ConfigError
from .masking import Masking
from .policy import Idle, Policy, ReportedUsage, any_of
from .summarizers.base import Summarizer

__all__ = ["AgentSettings"]

_NUMBER_KEYS = ("context_limit_tokens", "timeout_summarize_seconds", "timeout_clear_seconds")


@dataclass(frozen=True)
class AgentSettings:
    """An agent session's folding settings (see the module docstring for the file)."""

    context_limit_tokens: int = 8000
    timeout_summarize_seconds: float = 1800
    timeout_clear_seconds: float = 3600
    model: str | None = None
    keep_tool_results: int | None = 3

    def __post_init__(self) -> None:
        self._check("settings")

    def _check(self, source: str) -> None:
        limit = self.context_limit_tokens
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"{source}: context_limit_tokens must be a positive integer, "
                              f"got {limit!r}")
        for key in _NUMBER_KEYS[1:]:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{source}: {key} must be a positive number of seconds, "
                                  f"got {value!r}")
        keep = self.keep_tool_results
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
            raise ConfigError(f"{source}: keep_tool_results must be an integer >= 0 or null, "
                              f"got {keep!r}")
        if self.model is not None and (not isinstance(self.model, str) or ":" not in self.model):
            raise ConfigError(f"{source}: model must be a 'provider:model' string or null, "
                              f"got {self.model!r}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, *, source: str = "settings"
                     ) -> AgentSettings:
        """Settings from a mapping (a parsed YAML document); None or empty: defaults."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a mapping of settings, "
                              f"got {type(data).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise ConfigError(f"{source}: unknown setting(s) {', '.join(map(repr, unknown))}; "
                              f"known settings: {', '.join(known)}")
        settings = cls.__new__(cls)
        for name in known:
            default = getattr(cls, name)
            object.__setattr__(settings, name, data.get(name, default))
        settings._check(source)
        return settings

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AgentSettings:
        """Settings from a YAML file."""
        try:
            import yaml
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError(
                'reading YAML settings needs PyYAML (a dependency of contextfold): '
                'pip install "pyyaml>=6"') from exc
        source = os.fspath(path)
        try:
            with open(source, encoding="utf-8") as fh:
                data = yaml.safe_load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read settings file {source!r}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
        return cls.from_mapping(data, source=source)

    def policy(self) -> Policy:
        """``any_of(ReportedUsage(context_limit_tokens), Idle(summarize, clear))``."""
        return any_of(
            ReportedUsage(self.context_limit_tokens),
            Idle(self.timeout_summarize_seconds, self.timeout_clear_seconds),
        )

    def summarizer(self, model: Any = None) -> Summarizer:
        """The ``agent`` preset with ``model`` (default: the settings' model), or the
        offline ``ExtractiveSummarizer`` when there is none."""
        chosen = model if model is not None else self.model
        if chosen is None:
            from .summarizers.extractive import ExtractiveSummarizer

            return ExtractiveSummarizer()
        from .summarizers.llm import LLMSummarizer

        return LLMSummarizer(chosen, preset="agent")

    def masking(self) -> Masking | None:
        """Observation masking keeping the newest ``keep_tool_results`` results verbatim
        (None when the setting is null)."""
        keep = self.keep_tool_results
        return None if keep is None else Masking(keep=keep)

    def options(self, model: Any = None) -> dict[str, Any]:
        """Keyword arguments for ``Memory``/``AsyncMemory``: the policy, the summarizer
        and observation masking."""
        return {"policy": self.policy(), "summarizer": self.summarizer(model),
                "masking": self.masking()}
