"""The inspector page in a real browser: Debian's chromium driven by Playwright (never
``playwright install``: the browser is the system's, found on PATH or in
``CONTEXTFOLD_CHROMIUM``), against a real ``contextfold serve`` over seeded sessions.

Screenshots go to this test module's tmp folder (printed at the end); with
``CONTEXTFOLD_SCREENSHOTS=DIR`` the session view is also saved as ``DIR/inspector-session.png``
(how ``docs/inspector-session.png`` is made).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import chromium, require_playwright

from .live import Served, start_server, stop

require_playwright()
import playwright.sync_api as playwright_api  # noqa: E402 - only once Playwright is known

expect = playwright_api.expect
Page = playwright_api.Page


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def page(browser: object) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.set_default_timeout(15_000)
    yield pg
    context.close()
    assert errors == [], errors  # no uncaught script error on any view


def _login(page: Page, served: Served) -> None:
    page.goto(served.base + "/ui/")
    expect(page.locator("#status")).to_contain_text("Enter an API key")
    page.get_by_label("API key").fill(served.seeded.key)
    page.get_by_role("button", name="Use key").click()
    expect(page.locator("#sessions-table tbody tr a").first).to_be_visible()


def _stat(page: Page, label: str) -> object:
    return page.locator("#session-stats dt", has_text=re.compile(f"^{label}$")).locator(
        "xpath=following-sibling::dd")


def _chart_ys(page: Page, selector: str) -> list[float]:
    return page.evaluate("""(sel) => {
      const el = document.querySelector(sel);
      if (!el) return [];
      return [...el.getAttribute("d").matchAll(/[ML][\\d.]+,([\\d.]+)/g)].map((m) => Number(m[1]));
    }""", selector)


def test_numbers_are_what_the_model_received(page: Page, served: Served) -> None:
    """flaky-fold's folds fail, so it stores more than its 700-token budget: the list, the
    stats and the chart's context line show what the model received (never over the
    budget), and what waits to fold is shown apart, labelled. (Runs before the test that
    folds this session.)"""
    _login(page, served)
    row = page.locator("#sessions-table tbody tr", has_text="flaky-fold")
    expect(row.locator(".bar")).not_to_have_class(re.compile(r"\bover\b"))
    expect(row).to_contain_text("waiting to fold")
    page.get_by_role("link", name="flaky-fold").click()
    sent = _stat(page, "Context sent / budget")
    expect(sent).to_have_text(re.compile(r"^[\d,]+ / 700$"))
    assert int(sent.inner_text().split(" / ")[0].replace(",", "")) <= 700  # type: ignore[attr-defined]
    expect(_stat(page, "Stored live, waiting to fold")).to_contain_text("messages")
    expect(page.locator("#chart .ctx")).to_be_visible()
    budget_y = float(page.locator("#chart .budget").get_attribute("y1") or "nan")
    context_ys = _chart_ys(page, "#chart .ctx")
    stored_ys = _chart_ys(page, "#chart .stored")
    assert context_ys and all(y >= budget_y - 0.5 for y in context_ys)  # never above the line
    assert stored_ys and min(stored_ys) < budget_y  # stored went over it, drawn apart
    expect(page.locator("#chart")).to_contain_text("stored, waiting to fold (not sent)")


def test_list_session_fold_diff_and_fold_now(page: Page, served: Served, shots: Path) -> None:
    _login(page, served)
    rows = page.locator("#sessions-table tbody tr")
    expect(rows).to_have_count(6)
    flaky = rows.filter(has_text="flaky-fold")
    expect(flaky.locator("td").nth(3)).not_to_have_text("0")  # failed folds
    expect(flaky.get_by_role("img")).to_have_attribute("aria-label", re.compile(r"of 700 tokens"))
    page.screenshot(path=str(shots / "list.png"))

    page.get_by_label("Filter by session id").fill("short")
    page.get_by_label("Order").select_option("id")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("short-0")
    page.get_by_label("Filter by session id").fill("")
    page.get_by_role("button", name="Apply").click()
    expect(rows).to_have_count(6)

    # list -> session
    page.get_by_role("link", name="long-chat").click()
    expect(page.get_by_role("heading", name="Session long-chat")).to_be_visible()
    expect(page.locator("#session-stats")).to_contain_text("archive, summary history kept")
    markers = page.locator("#chart .fold")
    expect(markers.first).to_be_visible()
    n_folds = markers.count()
    assert n_folds >= 5
    expect(page.locator("#chart .budget")).to_have_count(1)
    markers.nth(2).hover()
    tip = page.locator("#chart-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("Fold 3")
    expect(tip).to_contain_text("fake-llm-1")  # its ledger row
    expect(page.locator("#timeline .badge").first).to_contain_text("folded by fold 1")
    now = page.locator("#now-table tbody tr")
    expect(now.first.locator("td").nth(1)).to_have_text("summary")
    page.screenshot(path=str(shots / "session.png"))
    if os.environ.get("CONTEXTFOLD_SCREENSHOTS"):
        out = Path(os.environ["CONTEXTFOLD_SCREENSHOTS"])
        out.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out / "inspector-session.png"))

    # session -> fold diff, by keyboard: focus a fold marker, press Enter
    markers.nth(2).focus()
    page.keyboard.press("Enter")
    detail = page.locator("#fold-detail")
    expect(detail).to_be_visible()
    expect(detail.get_by_role("heading", level=3)).to_contain_text("Fold 3")
    expect(detail.locator("#fold-diff ins").first).to_be_visible()
    expect(detail.locator("#fold-diff del").first).to_be_visible()
    expect(detail.get_by_role("alert")).to_contain_text("Fact check")
    expect(detail).to_contain_text("fake-llm-1")
    detail.screenshot(path=str(shots / "fold-diff.png"))
    # the folds table's buttons open a diff too
    page.get_by_role("button", name=f"Show the summary diff of fold {n_folds}").click()
    expect(detail.get_by_role("heading", level=3)).to_contain_text(f"Fold {n_folds}")

    # a failed fold's redacted error, then fold now
    page.get_by_role("link", name="← All sessions").click()
    page.get_by_role("link", name="flaky-fold").click()
    failed = page.locator("#folds-table tbody tr", has_text="failed")
    expect(failed.first).to_contain_text("SummarizationError: provider returned 503 for <EMAIL_1>")
    expect(page.locator("#folds-table")).not_to_contain_text("example.com")
    before = failed.count()
    page.get_by_role("button", name="Fold now").click()
    expect(page.locator("#status")).to_contain_text("into summary version 1")
    expect(page.locator("#folds-table tbody tr", has_text="committed")).to_have_count(1)
    expect(page.locator("#folds-table tbody tr", has_text="failed")).to_have_count(before)
    expect(_stat(page, "Folds")).to_have_text("1")
    page.screenshot(path=str(shots / "fold-now.png"))
    print(f"screenshots in {shots}")


def test_agent_timeline_groups_tool_calls(page: Page, served: Served, shots: Path) -> None:
    _login(page, served)
    page.get_by_role("link", name="agent-run").click()
    groups = page.locator("#timeline .tool-group")
    expect(groups.first).to_be_visible()
    first = groups.first
    expect(first.locator(".group-title")).to_have_text("Tool calls: get_flight")
    expect(first.locator("li.msg")).to_have_count(2)  # the call and its result
    expect(first.locator("li.msg").nth(1)).to_contain_text('"status": "cancelled"')
    page.screenshot(path=str(shots / "agent.png"), full_page=True)


def test_delete_asks_first(page: Page, served: Served) -> None:
    _login(page, served)
    rows = page.locator("#sessions-table tbody tr")
    count = rows.count()
    page.get_by_role("link", name="short-2").click()
    delete = page.get_by_role("button", name="Delete session…")
    delete.click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("short-2")
    expect(page.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Enter")  # the focused Cancel: nothing happens
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("heading", name="Session short-2")).to_be_visible()
    delete.click()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.locator("#status")).to_contain_text("Deleted session “short-2”")
    expect(rows).to_have_count(count - 1)
    expect(page.get_by_role("link", name="short-2")).to_have_count(0)


def test_basic_accessibility(page: Page, served: Served) -> None:
    _login(page, served)
    page.get_by_role("link", name="long-chat").click()
    expect(page.locator("#chart .fold").first).to_be_visible()
    problems = page.evaluate("""() => {
      const out = [];
      const name = (el) => (el.getAttribute("aria-label") || el.textContent || "").trim();
      for (const el of document.querySelectorAll("input, select, textarea")) {
        if (!el.labels.length && !el.getAttribute("aria-label")) out.push("unlabelled " + el.id);
      }
      for (const el of document.querySelectorAll("button, a[href]")) {
        if (!name(el)) out.push("nameless " + el.outerHTML.slice(0, 60));
      }
      for (const el of document.querySelectorAll("[role=img]")) {
        if (!el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby"))
          out.push("image without text alternative");
      }
      for (const th of document.querySelectorAll("th")) {
        if (th.getAttribute("scope") !== "col") out.push("th without scope");
      }
      for (const t of document.querySelectorAll("table")) {
        if (!t.querySelector("caption")) out.push("table without caption " + t.id);
      }
      const levels = [...document.querySelectorAll("h1, h2, h3, h4")].filter(
        (h) => h.offsetParent !== null).map((h) => Number(h.tagName[1]));
      levels.forEach((l, i) => { if (i && l > levels[i - 1] + 1) out.push("heading skips " + l); });
      if (!document.documentElement.lang) out.push("no lang");
      return out;
    }""")
    assert problems == []
    # keyboard: the skip link comes first and moves focus to the content
    page.goto(served.base + "/ui/#/")  # the list view moves no focus while it loads
    expect(page.locator("#sessions-table tbody tr a").first).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="contextfold inspector")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_label("API key")).to_be_focused()
    page.get_by_role("link", name="long-chat").click()
    # every fold marker is reachable with Tab and named for screen readers
    marker = page.locator("#chart .fold").first
    expect(marker).to_have_attribute("tabindex", "0")
    expect(marker).to_have_attribute("aria-label", re.compile(r"^Fold 1 after message \d+"))
    # sortable column headers work from the keyboard
    page.get_by_role("link", name="← All sessions").click()
    header = page.locator("#sessions-table th", has_text="Folds").first
    header.focus()
    page.keyboard.press("Enter")
    expect(header).to_have_attribute("aria-sort", re.compile("ascending|descending"))


def test_dev_mode_says_so_on_the_page(page: Page, served: Served) -> None:
    base, proc = start_server(served.seeded.db, dev=True)
    try:
        page.goto(base + "/ui/")
        banner = page.locator("#dev-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("no API key needed")
        expect(page.locator("#sessions-table tbody")).to_contain_text("No sessions.")
    finally:
        stop(proc)


def test_a_missing_session_shows_nothing_of_the_previous_one(page: Page, served: Served) -> None:
    _login(page, served)
    page.get_by_role("link", name="long-chat").click()
    expect(_stat(page, "Folds")).not_to_have_text("0")
    expect(page.locator("#chart .fold").first).to_be_visible()
    page.goto(served.base + "/ui/#/s/no-such-session")
    expect(page.locator("#status")).to_contain_text("no session 'no-such-session'")
    expect(page.get_by_role("heading", name="Session no-such-session")).to_be_visible()
    expect(page.locator("#session-stats")).to_be_empty()
    expect(page.locator("#chart svg")).to_have_count(0)
    expect(page.locator("#now-table tbody tr")).to_have_count(0)
    expect(page.locator("#folds-table tbody tr")).to_have_count(0)
    expect(page.locator("#timeline li")).to_have_count(0)
    expect(page.get_by_role("button", name="Fold now")).to_be_hidden()
    expect(page.get_by_role("button", name="Earlier messages")).to_be_disabled()
    # and back to a real session: all of it is shown again
    page.goto(served.base + "/ui/#/s/long-chat")
    expect(page.locator("#chart .fold").first).to_be_visible()
    expect(page.get_by_role("button", name="Fold now")).to_be_visible()


def test_fold_tooltip_does_not_follow_to_another_session(page: Page, served: Served) -> None:
    _login(page, served)
    page.get_by_role("link", name="long-chat").click()
    page.locator("#chart .fold").nth(1).hover()
    expect(page.locator("#chart-tip")).to_be_visible()
    page.goto(served.base + "/ui/#/s/agent-run")  # leave by the address, the mouse still on it
    expect(page.get_by_role("heading", name="Session agent-run")).to_be_visible()
    expect(page.locator("#chart-tip")).to_be_hidden()


def test_the_exact_context_is_shown_whole(page: Page, served: Served) -> None:
    """A message longer than the preview is never cut silently: the cell says it is cut and
    how long it is, and a button shows the whole text."""
    long_text = "Start of a long note. " + "word " * 1200 + "THE END."
    with served.client() as c:
        res = c.post("/v1/sessions/long-note/messages", json={"messages": [
            {"role": "user", "content": long_text, "id": "long-1"}]})
        assert res.status_code == 200, res.text
    _login(page, served)
    page.get_by_role("link", name="long-note").click()
    cell = page.locator("#now-table tbody tr", has_text="Start of a long note").locator(
        "td.content")
    expect(cell).to_contain_text(f"cut: {len(long_text):,} characters")
    expect(cell).not_to_contain_text("THE END.")
    cell.get_by_role("button", name=re.compile("Show all")).click()
    expect(cell).to_contain_text("THE END.")
    assert long_text in cell.inner_text().replace("\n", " ")


def test_pagers_are_disabled_at_their_ends(page: Page, served: Served) -> None:
    with served.client() as c:
        for batch in range(3):  # 1,010 messages: more than one chart window of 1,000
            res = c.post("/v1/sessions/many/messages", json={"messages": [
                {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i}",
                 "id": f"m{i}"} for i in range(batch * 400, min(1010, (batch + 1) * 400))]})
            assert res.status_code == 200, res.text
    _login(page, served)
    expect(page.get_by_role("button", name="First page")).to_be_disabled()
    expect(page.get_by_role("button", name="Next page")).to_be_disabled()  # one page only
    earlier = page.get_by_role("button", name="Earlier messages")
    latest = page.get_by_role("button", name="Latest messages")
    page.get_by_role("link", name="many").click()
    expect(page.locator("#chart-caption")).to_contain_text("Messages 11–1,010")
    expect(earlier).to_be_enabled()
    expect(latest).to_be_disabled()
    earlier.click()
    expect(page.locator("#chart-caption")).to_contain_text("Messages 1–10")
    expect(earlier).to_be_disabled()
    expect(latest).to_be_enabled()
    # another session that fits one window: nothing earlier, and this is the latest
    page.get_by_role("link", name="← All sessions").click()
    page.get_by_role("link", name="long-chat").click()
    expect(page.locator("#chart .fold").first).to_be_visible()
    expect(earlier).to_be_disabled()
    expect(latest).to_be_disabled()
    # and they look it: the page's button colours hid the browser's disabled grey
    expect(earlier).to_have_css("opacity", "0.5")
    expect(latest).to_have_css("cursor", "not-allowed")
    expect(page.get_by_role("button", name="Fold now")).to_have_css("opacity", "1")


@pytest.mark.parametrize("width", [360, 600])
def test_narrow_layout_does_not_overflow(browser: object, served: Served, width: int) -> None:
    context = browser.new_context(viewport={"width": width, "height": 800})  # type: ignore[attr-defined]
    try:
        pg = context.new_page()
        _login(pg, served)
        for view in ("list", "session"):
            if view == "session":
                pg.get_by_role("link", name="long-chat").click()
                expect(pg.locator("#chart .fold").first).to_be_visible()
                expect(pg.locator("#timeline li").first).to_be_visible()
            scroll = pg.evaluate("document.documentElement.scrollWidth")
            assert scroll <= width, f"{view} view is {scroll}px wide in a {width}px viewport"
    finally:
        context.close()


def test_api_docs_render_offline(page: Page, served: Served) -> None:
    """/docs draws Swagger UI from files this server serves: with every request to another
    host blocked, the page still lists the API, under the same strict CSP as /ui/."""
    elsewhere: list[str] = []

    def only_here(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        if url.startswith(served.base + "/") or url.startswith("data:"):
            route.continue_()  # type: ignore[attr-defined]
        else:
            elsewhere.append(url)
            route.abort()  # type: ignore[attr-defined]

    page.route("**/*", only_here)
    page.add_init_script("""window.__csp = [];
      document.addEventListener("securitypolicyviolation",
        (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));""")
    res = page.goto(served.base + "/docs")
    assert res is not None and res.status == 200
    assert "script-src 'self'" in (res.headers.get("content-security-policy") or "")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("contextfold")
    expect(page.get_by_text("/v1/sessions/{session_id}/messages").first).to_be_visible()
    assert elsewhere == []
    assert page.evaluate("window.__csp") == []
