"""The bundled demo conversation: ``demo_conversation()`` and its ``planted_facts()``."""

from .conversation import demo_conversation, planted_facts

__all__ = ["demo_conversation", "planted_facts"]
