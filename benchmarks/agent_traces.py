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


# -- held-out shapes: written before any tuning and never used to choose a rule or a weight --


def incident_trace(seed: int) -> list[Msg]:
    """An on-call agent working through 3-5 pages in one session: alert JSON, parallel host
    checks, log tails with a stack trace in another language's format, a restart that
    fails and is retried, a ticket update."""
    t = _Trace(random.Random(seed + 7000))
    for _ in range(t.rng.randint(3, 5)):
        _incident(t)
    return t.messages


def _incident(t: _Trace) -> None:
    rng = t.rng
    svc = rng.choice(["checkout", "search", "billing", "auth"])
    alert = f"ALRT-{rng.randint(100000, 999999)}"
    t.user(f"Page {alert}: {svc} p99 latency is up since 03:10 UTC. Find the bad host, "
           f"restart it and update ticket INC{rng.randint(1000, 9999)}.")
    ticket = t.messages[-1]["content"].split("ticket ")[1].rstrip(".")
    hosts = [f"{svc}-{rng.choice('abc')}{rng.randint(10, 99)}.prod.internal" for _ in range(4)]
    t.calls(("get_alert", {"alert_id": alert}, json.dumps({
        "alert": {"id": alert, "service": svc, "severity": "P2", "opened": "2025-06-03T03:12:00Z",
                  "hosts": hosts, "metric": {"name": "latency_p99_ms", "value":
                                             rng.randint(900, 4000), "threshold": 500}}})))
    bad = rng.choice(hosts)
    checks = []
    for h in hosts:
        load = rng.uniform(5, 30) if h == bad else rng.uniform(0.2, 2.0)
        checks.append(("host_status", {"host": h}, json.dumps({
            "host": h, "load1": round(load, 2), "mem_used_pct": rng.randint(30, 97),
            "uptime_s": rng.randint(3600, 9_000_000), "state": "degraded" if h == bad else "ok"})))
    t.calls(*checks)
    t.say(f"{bad} is degraded; reading its logs.")
    frames = "\n".join(
        f"    at com.example.{svc}.Handler{j}.run(Handler{j}.java:{rng.randint(20, 900)})"
        for j in range(rng.randint(4, 12)))
    pid = rng.randint(1000, 65000)
    n = rng.choice([50, 300, 900])
    tail = "\n".join(f"2025-06-03T03:{10 + 49 * k // n:02d}:{rng.randint(0, 59):02d}Z INFO "
                     f"req={rng.randint(10**6, 10**7)} ok {rng.randint(5, 90)}ms"
                     for k in range(n))
    t.calls(("tail_logs", {"host": bad, "lines": 2000}, tail + (
        f"\n2025-06-03T03:10:44Z ERROR pid={pid} java.lang.OutOfMemoryError: Java heap space\n"
        f"{frames}\n2025-06-03T03:10:45Z WARN gc pause 2400ms")))
    if rng.random() < 0.6:
        t.calls(("restart", {"host": bad, "pid": pid}, json.dumps(
            {"ok": False, "error": f"host {bad} is draining; retry after drain job "
                                   f"DR-{rng.randint(100, 999)} completes"})))
        t.say("The restart was refused while the host drains; waiting and retrying.")
    t.calls(("restart", {"host": bad, "pid": pid}, json.dumps(
        {"ok": True, "new_pid": rng.randint(1000, 65000), "took_s": rng.randint(5, 60)})))
    t.calls(("update_ticket", {"ticket": ticket, "alert_id": alert, "host": bad,
                               "status": "mitigated"},
             json.dumps({"ticket": ticket, "status": "mitigated", "version": rng.randint(2, 9)})))
    t.say(f"Restarted {bad}; {ticket} is mitigated.")


def data_trace(seed: int) -> list[Msg]:
    """A data agent answering 2-4 requests in one session: schema listing, query results as
    text tables and CSV, a query that fails on a bad column, a join that reuses ids read
    from earlier results, an export."""
    t = _Trace(random.Random(seed + 9000))
    for _ in range(t.rng.randint(2, 4)):
        _data_request(t)
    return t.messages


def _data_request(t: _Trace) -> None:
    rng = t.rng
    region = rng.choice(["EMEA", "APAC", "LATAM", "NA"])
    quarter = rng.choice(["2024Q3", "2024Q4", "2025Q1"])
    t.user(f"Which {region} customers churned in {quarter}? Export their open invoices to "
           "the finance bucket.")
    tables = ["customers", "subscriptions", "invoices", "events", "regions"]
    t.calls(("list_tables", {"schema": "analytics"}, "\n".join(
        f"{name}\t{rng.randint(10**3, 10**7)} rows\t"
        f"updated 2025-0{rng.randint(1, 6)}-1{rng.randint(0, 9)}" for name in tables)))
    t.calls(("run_sql", {"query": f"SELECT id, name FROM customers WHERE churn_q = '{quarter}'"},
             f"ERROR: column \"churn_q\" does not exist\nLINE 1: SELECT id, name FROM customers "
             f"WHERE churn_q = '{quarter}'\nHINT: Perhaps you meant \"churned_quarter\"."))
    rows = [(f"C{rng.randint(10000, 99999)}", f"Customer {rng.randint(1, 999)}",
             rng.randint(100, 90000)) for _ in range(rng.randint(6, 40))]
    header = "| customer_id | name | arr_usd |\n|---|---|---|\n"
    t.calls(("run_sql", {"query": f"SELECT id, name, arr FROM customers WHERE churned_quarter = "
                                  f"'{quarter}' AND region = '{region}'"},
             header + "\n".join(f"| {c} | {n} | {a} |" for c, n, a in rows)
             + f"\n({len(rows)} rows)"))
    picked = rng.sample(rows, min(3, len(rows)))
    t.say(f"{len(rows)} churned; the largest are " + ", ".join(c for c, _, _ in picked) + ".")
    invoices = []
    for c, _, _ in picked:
        for _ in range(rng.randint(1, 4)):
            invoices.append((f"INV-{rng.randint(10**5, 10**6)}", c, rng.randint(50, 9000)))
    csv = "invoice_id,customer_id,amount_usd,status\n" + "\n".join(
        f"{i},{c},{a},open" for i, c, a in invoices)
    t.calls(("run_sql", {"query": "SELECT * FROM invoices WHERE status='open' AND customer_id IN ("
                                  + ",".join(f"'{c}'" for c, _, _ in picked) + ")"}, csv))
    t.user("Only export those over 1000 USD.")
    big = [i for i, _, a in invoices if a > 1000] or [invoices[0][0]]
    t.calls(("export", {"invoice_ids": big, "bucket": "s3://finance-exports/churn",
                        "region": region},
             json.dumps({"export_id": f"EXP-{rng.randint(1000, 9999)}", "files": 1,
                         "rows": len(big), "status": "done"})))
    t.say("Exported.")


def heldout_traces(count: int = 8, offset: int = 0) -> list[list[Msg]]:
    """``count`` traces of shapes no rule was tuned on, alternating an on-call agent and
    a data agent."""
    return [incident_trace(offset + i) if i % 2 == 0 else data_trace(offset + i)
            for i in range(count)]
