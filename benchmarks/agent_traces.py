"""Synthetic agent traces for ``agent_memory.py``: a coding agent (long test logs, file dumps,
grep output, edits that sometimes fail, parallel reads) and a search agent (JSON search
results, page dumps, parallel fetches, a forbidden page, a booking made from ids found
earlier). Deterministic per seed; OpenAI chat-completions dicts, like the tau-bench data.

Every later call's arguments reuse values that appeared earlier (paths from a traceback,
line numbers, document and hotel ids, prices, dates), so call-argument recall measures
whether the memory kept what the next call needs.
"""

from __future__ import annotations

import json
import random
from typing import Any

Msg = dict[str, Any]


class _Trace:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.messages: list[Msg] = []
        self.n = 0

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def calls(self, *calls: tuple[str, dict[str, Any], str]) -> None:
        """One assistant turn with these (name, args, result) calls, results in random order."""
        ids = []
        for _ in calls:
            self.n += 1
            ids.append(f"call_{self.n:04d}")
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, (name, args, _) in zip(ids, calls, strict=True)]})
        order = list(zip(ids, calls, strict=True))
        self.rng.shuffle(order)
        for cid, (name, _, result) in order:
            self.messages.append({"role": "tool", "tool_call_id": cid, "name": name,
                                  "content": result})


def _log(rng: random.Random, lines: int, failure: str | None) -> str:
    out = [f"============ test session starts: {lines} items ============"]
    for i in range(lines):
        out.append(f"tests/unit/test_part{i % 40}.py::test_case_{i} PASSED"
                   f"{' ' * rng.randint(1, 4)}[{100 * i // max(1, lines)}%]")
    if failure:
        out += failure.splitlines()
    took = rng.uniform(2, 90)
    out.append(f"==== {1 if failure else 0} failed, {lines} passed in {took:.2f}s ====")
    return "\n".join(out)


def _code(rng: random.Random, path: str, lines: int, anchor: int) -> str:
    out = [f"# {path}", "from __future__ import annotations", ""]
    for i in range(lines):
        if i == anchor:
            out.append(f"    limit = cfg['max_tokens']  # line {i + 4}")
        elif i % 12 == 0:
            out.append(f"def handler_{i}(cfg: dict[str, int]) -> int:")
        else:
            out.append(f"    value_{i} = compute(cfg, {rng.randint(0, 999)})  # step {i}")
    return "\n".join(out)


def coding_trace(seed: int) -> list[Msg]:
    rng = random.Random(seed)
    t = _Trace(rng)
    branch = f"fix-{rng.randint(100, 999)}"
    t.user(f"CI fails on branch {branch}. Make it green without changing the public API; "
           "Python 3.10 must keep working.")
    for k in range(rng.randint(3, 5)):
        mod = f"src/pkg/mod_{seed}_{k}.py"
        line = rng.randint(40, 400)
        key = f"key_{seed}_{k}"
        trace = (f"FAILED tests/unit/test_mod_{k}.py::test_limits - KeyError: '{key}'\n"
                 f'  File "{mod}", line {line}, in load\n'
                 f"    limit = cfg['{key}']\nKeyError: '{key}'")
        t.calls(("run_tests", {"path": "tests/", "branch": branch},
                 _log(rng, rng.choice([150, 400, 1200, 2500]), trace)))
        t.say(f"A KeyError for {key} in {mod} at line {line}. Reading the file.")
        t.calls(("read_file", {"path": mod}, _code(rng, mod, rng.choice([120, 300, 700]),
                                                   min(line, 100))))
        if rng.random() < 0.5:  # parallel reads of the callers
            callers = [f"src/pkg/caller_{seed}_{k}_{j}.py" for j in range(3)]
            t.calls(*[("read_file", {"path": c}, _code(rng, c, rng.choice([40, 160]), 5))
                      for c in callers])
        hits = "\n".join(f"src/pkg/x{j}.py:{rng.randint(1, 500)}: cfg['{key}']"
                         for j in range(rng.randint(2, 30)))
        t.calls(("grep", {"pattern": key, "path": "src/"}, hits))
        if rng.random() < 0.4:  # a failing tool, then a retry
            job = f"J-{rng.randint(10000, 99999)}"
            t.calls(("edit_file", {"path": mod, "line": line, "insert": f"'{key}': 4096"},
                     f"Error: patch does not apply at {mod}:{line} (job {job}): "
                     "file changed on disk"))
            t.say(f"The edit failed (job {job}); re-reading {mod} before retrying.")
            t.calls(("read_file", {"path": mod, "start": line - 5, "end": line + 5},
                     _code(rng, mod, 10, 5)))
        t.calls(("edit_file", {"path": mod, "line": line, "insert": f"'{key}': 4096"},
                 json.dumps({"status": "ok", "path": mod, "line": line, "sha": f"{seed:x}{k}a9f"})))
        if rng.random() < 0.5:
            t.user(f"Status? Remember: nothing on {branch} may change the public API.")
            t.say(f"Fixed {key} in {mod}; running the suite again.")
    t.calls(("run_tests", {"path": "tests/", "branch": branch}, _log(rng, 300, None)))
    t.say(f"All tests pass on {branch}.")
    return t.messages


def search_trace(seed: int) -> list[Msg]:
    rng = random.Random(seed + 1000)
    t = _Trace(rng)
    city = rng.choice(["Lisbon", "Porto", "Seville", "Lyon", "Turin"])
    date = f"2025-{rng.randint(3, 11):02d}-{rng.randint(1, 28):02d}"
    cap = rng.choice([120, 150, 200])
    t.user(f"Find the cheapest hotel in {city} for the night of {date}, at most {cap} EUR; "
           "no hostels. Then book it for me (user id u_{seed:05d}).".replace("{seed:05d}",
                                                                          f"{seed:05d}"))
    found: list[dict[str, Any]] = []
    for q in range(rng.randint(2, 4)):
        results = [{"id": f"doc_{seed}_{q}_{r}", "url": f"https://example.org/{city.lower()}/{q}/{r}",
                    "title": f"{city} hotel guide part {r}", "score": round(rng.random(), 3),
                    "snippet": "hotel rooms near the centre " * rng.randint(3, 12)}
                   for r in range(10)]
        t.calls(("web_search", {"query": f"{city} hotels {date} page {q}", "limit": 10},
                 json.dumps({"results": results, "total": 10 * (q + 5)})))
        picks = rng.sample(results, 3)
        pages = []
        for p in picks:
            hotel = {"hotel_id": f"H-{rng.randint(1000, 9999)}", "price": rng.randint(60, 260),
                     "kind": rng.choice(["hotel", "hotel", "hostel"])}
            found.append(hotel)
            text = (f"{p['title']}\n" + "Rooms, breakfast, transport and reviews. " * rng.choice(
                [40, 200, 900]) + f"\nListing {hotel['hotel_id']}: {hotel['kind']}, "
                f"{hotel['price']} EUR per night on {date}.")
            if rng.random() < 0.15:
                text = json.dumps({"error": "403 forbidden", "doc_id": p["id"]})
            pages.append(("fetch_page", {"doc_id": p["id"]}, text))
        if rng.random() < 0.5:
            t.calls(*pages)
        else:
            for page in pages:
                t.calls(page)
        t.say(f"Checked {len(pages)} pages for {city}.")
    ok = [h for h in found if h["kind"] == "hotel" and h["price"] <= cap] or found
    best = min(ok, key=lambda h: h["price"])
    t.say(f"The cheapest hotel is {best['hotel_id']} at {best['price']} EUR.")
    t.user("Yes, book it.")
    t.calls(("book_hotel", {"hotel_id": best["hotel_id"], "date": date, "price": best["price"],
                            "user_id": f"u_{seed:05d}"},
             json.dumps({"booking_id": f"B-{seed}{best['hotel_id'][2:]}", "status": "confirmed",
                         "amount": best["price"], "currency": "EUR"})))
    t.say("Booked.")
    return t.messages


def synthetic_traces(count: int = 12, offset: int = 0) -> list[list[Msg]]:
    """``count`` traces, alternating coding and search agents."""
    return [coding_trace(offset + i) if i % 2 == 0 else search_trace(offset + i)
            for i in range(count)]
