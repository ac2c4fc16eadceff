"""The inspector marks the turns recall brought back: in a real browser, a session with
recall on whose newest question is about a fact the summary lost shows a "recalled" row
in its context view, and the caption names the recalled seqs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import chromium, require_playwright

from .live import Served

require_playwright()  # skipped with the reason (a failure under CONTEXTFOLD_REQUIRE_BROWSER)
import playwright.sync_api as playwright_api  # noqa: E402 - only once Playwright is known

from .test_inspector_browser import _login  # noqa: E402

expect = playwright_api.expect
Page = playwright_api.Page

SESSION = "locker-codes"


def _code(room: int) -> str:
    return str(7000 + room * 13)


def _seed_recall_session(served: Served) -> tuple[list[int], int]:
    """A session with recall on: 60 locker codes, small talk that folds them away, then a
    question about one the summary does not quote (the offline summary quotes whole
    sentences, and recall leaves out what it quotes). Returns the recalled seqs the API
    reports and the room asked about (its code was said at seq ``2 * room + 1``)."""
    with served.client() as http:
        assert http.put(f"/v1/sessions/{SESSION}/settings",
                        json={"recall": True, "budget": 600}).status_code == 200
        turns = []
        for i in range(60):
            turns.append({"role": "user", "content": f"The locker code for room {i} is "
                          f"{_code(i)}."})
            turns.append({"role": "assistant", "content": f"Noted the code of room {i}."})
        for i in range(100):
            turns.append({"role": "user" if i % 2 == 0 else "assistant",
                          "content": f"Turn {i}: more about the garden, tomatoes and the weather."})
        for lo in range(0, len(turns), 50):
            r = http.post(f"/v1/sessions/{SESSION}/messages", json={"messages": turns[lo:lo + 50]})
            assert r.status_code == 200, r.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # folds the policy asks for, however they run
            r = http.post(f"/v1/sessions/{SESSION}/fold", json={})
            if r.status_code != 409 and r.json().get("status") == "committed":
                continue
            # 409, or a fold not done here (nothing due, or the server's fold worker holds
            # the session): done once a summary is in, whoever wrote it
            if r.status_code != 409 and http.get(
                    f"/v1/sessions/{SESSION}/summary").json()["summary"] is not None:
                break
            time.sleep(0.2)
        summary = http.get(f"/v1/sessions/{SESSION}/summary").json()["summary"]["text"]
        room = next(i for i in range(10, 60) if _code(i) not in summary)  # two digits
        r = http.post(f"/v1/sessions/{SESSION}/messages", json={"messages": [
            {"role": "user", "content": f"What was the locker code for room {room}?"}]})
        assert r.status_code == 200, r.text
        ctx = http.get(f"/v1/sessions/{SESSION}/inspect/context").json()
    recalled: list[int] = ctx["recalled"]
    kinds = [m["kind"] for m in ctx["messages"]]
    assert kinds.count("recalled") == (1 if recalled else 0)
    return recalled, room


@pytest.fixture
def page(served: Served) -> Iterator[Page]:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.set_default_timeout(15_000)
        try:
            yield pg
        finally:
            browser.close()
        assert errors == [], errors


def test_recalled_turns_are_marked_in_the_context_view(
    page: Page, served: Served, tmp_path: Path
) -> None:
    recalled, room = _seed_recall_session(served)
    seq = 2 * room + 1
    assert seq in recalled  # the room's turn, folded long ago, not quoted by the summary
    _login(page, served)
    page.get_by_role("link", name=SESSION).click()
    rows = page.locator("#now-table tbody tr")
    marked = page.locator("#now-table tbody tr.recalled")
    expect(marked).to_have_count(1)
    expect(marked.locator(".badge")).to_have_text("recalled")
    expect(marked.locator("td.content")).to_contain_text(_code(room))
    expect(page.locator("#now-caption")).to_contain_text("recalled for the newest question")
    expect(page.locator("#now-caption")).to_contain_text(str(seq))
    expect(rows.last).to_contain_text(f"What was the locker code for room {room}?")
    page.screenshot(path=str(tmp_path / "recalled.png"))
