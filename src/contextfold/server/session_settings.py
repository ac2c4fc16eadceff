"""Per-session folding settings: the policy numbers and the summarizer preset.

A session's settings are the server defaults (the config file's ``defaults``) overlaid with
what ``PUT /v1/sessions/{id}/settings`` stored for it. They become the options of the
:class:`~contextfold.engine.AsyncMemory` that serves the session:

* ``policy: token_budget`` — ``TokenBudget(budget, target, keep_last, summary_max_tokens)``:
  fold when the context exceeds ``budget``.
* ``policy: message_count`` — ``MessageCount(max_messages, fold=fold_messages, keep_last,
  min_tokens)``: the rolling-summary recipe (e.g. fold when more than 30 messages and the
  oldest 20 exceed 15,000 tokens, keep 10). ``budget`` still bounds the context view.
* ``context_limit_tokens`` adds ``ReportedUsage(limit)`` (``any_of``): fold when the
  provider-reported input tokens (``POST …/usage``) exceed it.
* ``preset`` (``conversation``/``agent``/``character``), ``task_context`` and ``character``
  shape the summaries of an LLM summarizer (the server's ``model``). The offline extractive
  summarizer has no presets; they are stored and apply once a model is configured.
* ``recall`` — recall (:class:`~contextfold.recall.Recall`, its defaults): the context
  brings back folded turns that match the newest user message (or the ``query`` of
  ``…/context``) in a labelled block within a share of the budget.
* ``masking`` — observation masking (:class:`~contextfold.masking.Masking`): an object of
  its options turns it on (``true``: the defaults), ``null`` or ``false`` turns it off, and
  left out it follows the preset: on for ``agent`` (as the library's agent settings), off
  otherwise. The effective settings always show it resolved (an object, or null).

Validation is pydantic's (types, ranges: 422 ``validation_error`` with per-field errors) and
then the policy's own checks (how the numbers relate: 422 ``config_error``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ..masking import Masking
from ..policy import MessageCount, Policy, ReportedUsage, TokenBudget, any_of

__all__ = ["MaskingSettings", "SessionSettings", "SettingsPatch"]

ToolName = Annotated[str, Field(min_length=1, max_length=256)]


class MaskingSettings(BaseModel):
    """Observation masking: tool results older than the newest `keep` are shown in the
    context as stand-ins (tool name, key facts, stored seq); the store keeps them whole."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keep: int = Field(
        default=3, ge=0, le=10_000,
        description="The newest tool results shown verbatim; older ones become stand-ins",
    )
    exclude_tools: tuple[ToolName, ...] = Field(
        default=(), max_length=1000, description="Tool names whose results are never masked"
    )
    keep_call_args: bool = Field(
        default=True,
        description="Keep a masked call's arguments; false shows them as {} and puts the "
        "key arguments in the stand-in",
    )
    trigger_tokens: int | None = Field(
        default=None, ge=0, le=100_000_000,
        description="Mask only while the live messages hold more tokens than this (0: "
        "always); null: only when the context would not fit its budget whole",
    )
    fact_chars: int | None = Field(
        default=None, ge=40, le=100_000,
        description="Room for a stand-in's key facts, in characters (null: the library's "
        "default)",
    )

    @field_validator("exclude_tools")
    @classmethod
    def _one_order(cls, tools: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(tools)))  # equal settings compare (and cache) equal

    def masking(self) -> Masking:
        """The library's :class:`~contextfold.masking.Masking` of these options."""
        extra = {} if self.fact_chars is None else {"fact_chars": self.fact_chars}
        return Masking(keep=self.keep, exclude_tools=frozenset(self.exclude_tools),
                       keep_call_args=self.keep_call_args,
                       trigger_tokens=self.trigger_tokens, **extra)


def _switch(value: Any) -> Any:
    """``true``: masking with the defaults; ``false``: off (as null)."""
    if value is True:
        return {}
    if value is False or value is None:
        return None
    if not isinstance(value, (dict, MaskingSettings)):
        raise ValueError("masking must be an object of masking options, true, false or null")
    return value


#: Masking's options, or null; ``true``/``false`` are accepted for the defaults/off.
MaskingOption = Annotated[MaskingSettings | None, BeforeValidator(_switch)]



def _also_a_switch(schema: dict[str, Any]) -> None:
    """The documented input shape also takes ``true``/``false`` (see :func:`_switch`)."""
    schema["anyOf"] = [*schema.get("anyOf", ()), {"type": "boolean"}]


_MASKING_DESCRIPTION = (
    "Observation masking: its options turn it on (true: the defaults), null or false turns "
    "it off; left out: on for preset agent, off otherwise"
)


class SettingsPatch(BaseModel):
    """What a client may set; every field optional (unset: the server default)."""

    model_config = ConfigDict(extra="forbid")

    policy: Literal["token_budget", "message_count"] | None = Field(
        default=None, description="What triggers a fold"
    )
    budget: int | None = Field(
        default=None,
        ge=64,
        le=2_000_000,
        description="Context token budget; token_budget folds when the context exceeds it",
    )
    target: int | None = Field(
        default=None, ge=32, le=2_000_000, description="token_budget: fold down to this many"
    )
    keep_last: int | None = Field(
        default=None, ge=0, le=10_000, description="Messages always kept verbatim"
    )
    max_messages: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="message_count: fold when more live messages than this",
    )
    fold_messages: int | None = Field(
        default=None, ge=1, le=1_000_000, description="message_count: how many oldest to fold"
    )
    min_tokens: int | None = Field(
        default=None,
        ge=0,
        le=100_000_000,
        description="message_count: and only when those candidates hold more tokens than this",
    )
    context_limit_tokens: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description="Also fold when the provider-reported input tokens exceed this",
    )
    summary_max_tokens: int | None = Field(
        default=None, ge=64, le=100_000, description="Cap on the summary's tokens"
    )
    preset: Literal["conversation", "agent", "character"] | None = Field(
        default=None,
        description="Summary style of an LLM summarizer; agent also turns masking on "
        "unless masking is set",
    )
    task_context: str | None = Field(
        default=None, max_length=4000, description="agent preset: the task the agent works on"
    )
    character: str | None = Field(
        default=None, max_length=200, description="character preset: whose memory this is"
    )
    masking: MaskingOption = Field(
        default=None, description=_MASKING_DESCRIPTION, json_schema_extra=_also_a_switch
    )
    recall: bool | None = Field(
        default=None,
        description="Recall: the context brings back folded turns matching the newest user "
        "message (or the context request's query) in a labelled block",
    )

    def stored(self) -> dict[str, Any]:
        """The fields the client set (an explicit ``masking: null`` included: it turns
        masking off, which leaving it out does not)."""
        data = self.model_dump(exclude_none=True)
        if "masking" in self.model_fields_set:
            data["masking"] = data.get("masking")
        return data


class SessionSettings(BaseModel):
    """Effective settings of a session (defaults filled in)."""

    # every field is in every answer (a client's generated types need not guess)
    model_config = ConfigDict(
        extra="forbid", frozen=True, json_schema_serialization_defaults_required=True
    )

    policy: Literal["token_budget", "message_count"] = "token_budget"
    budget: int = Field(default=4000, ge=64, le=2_000_000)
    target: int | None = Field(default=None, ge=32, le=2_000_000)
    keep_last: int = Field(default=2, ge=0, le=10_000)
    max_messages: int = Field(default=30, ge=1, le=1_000_000)
    fold_messages: int | None = Field(default=20, ge=1, le=1_000_000)
    min_tokens: int | None = Field(default=None, ge=0, le=100_000_000)
    context_limit_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    summary_max_tokens: int | None = Field(default=None, ge=64, le=100_000)
    preset: Literal["conversation", "agent", "character"] = "conversation"
    task_context: str = Field(default="", max_length=4000)
    character: str | None = Field(default=None, max_length=200)
    masking: MaskingOption = Field(
        default=None, description="Observation masking's options (null: off)"
    )
    recall: bool = Field(default=False, description="Recall of folded turns (see the patch)")

    @model_validator(mode="after")
    def _preset_masks(self) -> SessionSettings:
        """Masking left out follows the preset (on for ``agent``), and follows it again
        when an overlay changes the preset (``masking`` then stays out of the fields set)."""
        if "masking" not in self.model_fields_set:
            object.__setattr__(self, "masking", MaskingSettings() if self.preset == "agent"
                               else None)  # frozen: set once, while validating
        return self

    def overlay(self, patch: SettingsPatch) -> SessionSettings:
        """These settings with the patch's set fields replacing them."""
        data = self.model_dump()
        if "masking" not in self.model_fields_set:  # it followed the preset: it still does
            del data["masking"]
        data.update(patch.stored())
        return SessionSettings.model_validate(data)

    def policy_object(self) -> Policy:
        """The fold policy (raises ``ConfigError`` when the numbers do not fit together)."""
        base: Policy
        if self.policy == "token_budget":
            base = TokenBudget(
                self.budget,
                target=self.target,
                keep_last=self.keep_last,
                summary_max_tokens=self.summary_max_tokens,
            )
        else:
            base = MessageCount(
                self.max_messages,
                fold=self.fold_messages,
                keep_last=self.keep_last,
                min_tokens=self.min_tokens,
            )
        if self.context_limit_tokens is not None:
            return any_of(base, ReportedUsage(self.context_limit_tokens))
        return base

    def memory_options(self, model: str | None) -> dict[str, Any]:
        """Keyword arguments for ``AsyncMemory`` (policy, summarizer, summary cap,
        masking, recall)."""
        options: dict[str, Any] = {
            "policy": self.policy_object(),
            "masking": self.masking.masking() if self.masking is not None else None,
            "recall": self.recall,
        }
        if self.summary_max_tokens is not None:
            options["summary_max_tokens"] = self.summary_max_tokens
        elif self.policy == "message_count":
            options["summary_max_tokens"] = min(1024 + 64, max(128, self.budget // 2))
        if model is not None:
            from ..summarizers.llm import LLMSummarizer

            options["summarizer"] = LLMSummarizer(
                model,
                preset=self.preset,
                task_context=self.task_context,
                character=self.character,
            )
        return options
