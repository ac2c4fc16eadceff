"""A message without a timestamp in a batch that has them takes its neighbour's (the one
before it, else the first after it); a batch without any is stamped with the time of the
append. The HTTP guide's append example stamps only the user turn."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from contextfold import Memory, Message
from contextfold.messages import stamp_batch
from contextfold.testing import FakeClock

T0 = datetime(2026, 5, 2, 9, 14, tzinfo=timezone.utc)
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


@given(st.lists(st.none() | st.integers(0, 10_000), min_size=1, max_size=12))
def test_untimed_messages_take_a_neighbours_time(offsets: list[int | None]) -> None:
    batch = [Message(role="user", content=f"m{i}",
                     timestamp=None if o is None else T0 + timedelta(minutes=o))
             for i, o in enumerate(offsets)]
    out = stamp_batch(batch, NOW)
    assert [m.text for m in out] == [m.text for m in batch]
    given_times = [m.timestamp for m in batch if m.timestamp is not None]
    for i, (before, after) in enumerate(zip(batch, out, strict=True)):
        assert after.timestamp is not None
        if before.timestamp is not None:
            assert after.timestamp == before.timestamp
        elif not given_times:
            assert after.timestamp == NOW
        else:
            earlier = [m.timestamp for m in batch[:i] if m.timestamp is not None]
            assert after.timestamp == (earlier[-1] if earlier else given_times[0])


def test_the_guides_append_keeps_the_turn_together() -> None:
    clock = FakeClock(NOW)
    with Memory("memory://", clock=clock.now) as memory:
        memory.add("conv-42",
                   {"id": "6f1c-u", "role": "user",
                    "content": "Move my dentist appointment to Friday 3pm",
                    "timestamp": "2026-05-02T09:14:00Z"},
                   {"id": "6f1c-a", "role": "assistant",
                    "content": "Done: dentist moved to Friday 15:00."})
        memory.add("conv-42", {"role": "user", "content": "thanks"})
        stamps = [m.message.timestamp for m in memory.messages("conv-42")]
    assert stamps == [T0, T0, NOW]
