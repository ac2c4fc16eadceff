"""Third held-out set of synthetic agent traces for ``agent_memory.py``, in domains no rule or
weight was ever chosen on: a travel agent booking hotels and flights (JSON search results,
rate plans, offers), a bank support agent (customer, accounts, card transactions, disputes,
transfers to an IBAN), a code-review agent (pull request JSON, unified diffs, CI job logs,
review comments), an HR / IT ticketing agent (employees, tickets, account provisioning,
leave requests) and a logistics agent whose tools answer in plain text and CSV (tracking
reports, stock by bin, transfer orders, carrier pickups).

Written and committed before any measurement on it, and never tuned on: it estimates how
key-fact extraction does on conversations the owners keep and we never see.

Shapes an agent really produces: the user states ids and codes in the first message and
the agent reuses them much later; several goals per conversation; later calls reuse values
read from results many turns back (hotel and rate codes, transaction ids, commit shas,
job ids, ticket keys, SKUs and bins); parallel calls; a tool that fails and a corrected
retry; enum-like arguments (``action``, ``reason``, ``cabin``); e-mail addresses where
they are natural; some large results (40 hotels, 120 transactions, a long diff, a CI
log of thousands of lines, a stock CSV). Deterministic per seed; OpenAI chat-completions
dicts like the tau-bench data (the bank conversation opens with a system prompt, kept out
of the budget and out of recall, as tau-bench's is).
"""

from __future__ import annotations

import json
import random
import string
from typing import Any

from agent_traces import Msg, _Trace

NAMES = [("Priya", "Shah"), ("Tomás", "Herrera"), ("Anna", "Kowalski"), ("Kwame", "Mensah"),
         ("Yuki", "Tanaka"), ("Lars", "Eriksen"), ("Chloé", "Dubois"), ("Ravi", "Iyer"),
         ("Zeynep", "Demir"), ("Grace", "O'Neill"), ("Diego", "Ramos"), ("Hana", "Novak")]


def _n(rng: random.Random, digits: int) -> str:
    return str(rng.randint(10 ** (digits - 1), 10**digits - 1))


def _alnum(rng: random.Random, k: int, chars: str = string.ascii_uppercase + string.digits
           ) -> str:
    return "".join(rng.choice(chars) for _ in range(k))


def _person(rng: random.Random, domain: str) -> tuple[str, str]:
    first, last = rng.choice(NAMES)
    return f"{first} {last}", f"{first[0].lower()}.{last.lower().replace(chr(39), '')}@{domain}"


# -- travel agent: hotels and flights, JSON tools -------------------------------------------------


def travel_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 31000))
    rng = t.rng
    name, email = _person(rng, rng.choice(["gmail.com", "outlook.com", "proton.me"]))
    trip = f"TRP-{_alnum(rng, 6)}"
    loyalty = f"{rng.choice(['MB', 'HH', 'IC'])}{_n(rng, 9)}"
    city, iata = rng.choice([("Lisbon", "LIS"), ("Vienna", "VIE"), ("Kraków", "KRK"),
                             ("Copenhagen", "CPH"), ("Valencia", "VLC")])
    home = rng.choice(["AMS", "FRA", "LHR", "ZRH"])
    month, day = rng.randint(3, 10), rng.randint(1, 20)
    check_in, check_out = f"2025-{month:02d}-{day:02d}", f"2025-{month:02d}-{day + 3:02d}"
    t.user(f"Hi, this is {name} ({email}). I'm planning trip {trip} to {city}, "
           f"{check_in} to {check_out}, 2 adults. My hotel loyalty number is {loyalty}. "
           "I need a hotel under 180 EUR a night near the centre and a flight there.")
    brands = ["Aurora", "Central", "Parque", "Riverside", "Atlas", "Grand"]
    hotels = [{"hotel_code": f"{iata}{_n(rng, 4)}", "name": f"Hotel {rng.choice(brands)} {k}",
               "stars": rng.randint(2, 5), "distance_km": round(rng.uniform(0.2, 9), 1),
               "from_price": {"amount": rng.randint(70, 320), "currency": "EUR"},
               "review_score": round(rng.uniform(6, 9.7), 1)}
              for k in range(rng.choice([8, 20, 40]))]
    t.calls(("search_hotels", {"city_code": iata, "check_in": check_in, "check_out": check_out,
                               "adults": 2, "max_price": 180, "currency": "EUR"},
             json.dumps({"hotels": hotels, "total": len(hotels)})))
    fit = sorted([h for h in hotels if h["from_price"]["amount"] <= 180
                  and h["distance_km"] < 3] or hotels, key=lambda h: -h["review_score"])[:3]
    t.say(f"{len(fit)} good options; checking their rooms.")
    rooms: dict[str, list[dict[str, Any]]] = {}
    for h in fit:
        rooms[h["hotel_code"]] = [
            {"room_type": rt, "rate_plan": rp, "rate_key": f"{h['hotel_code']}|{rt}|{rp}|"
             f"{_alnum(rng, 8)}", "nightly": h["from_price"]["amount"] + rng.randint(0, 60),
             "refundable": rp.startswith("FLX"), "board": rng.choice(["RO", "BB"])}
            for rt in rng.sample(["DBL-STD", "DBL-SUP", "TWN-STD", "KNG-DLX"], 2)
            for rp in ("FLX", "NRF")]
    t.calls(*[("get_hotel_rates", {"hotel_code": c, "check_in": check_in,
                                   "check_out": check_out, "adults": 2},
               json.dumps({"hotel_code": c, "rates": r})) for c, r in rooms.items()])
    hotel = fit[0]["hotel_code"]
    pick = next((r for r in rooms[hotel] if r["refundable"]), rooms[hotel][0])
    t.say(f"{fit[0]['name']} has a refundable {pick['room_type']} at {pick['nightly']} EUR.")
    t.user("Book that one, refundable please. Use my loyalty number.")
    args = {"rate_key": pick["rate_key"], "guest_name": name, "guest_email": email,
            "loyalty_number": loyalty, "trip_id": trip}
    if rng.random() < 0.5:
        t.calls(("book_hotel", args, json.dumps({"error": {"code": "RATE_UNAVAILABLE", "message":
                 f"rate {pick['rate_key']} is no longer available; re-quote"}})))
        t.calls(("get_hotel_rates", {"hotel_code": hotel, "check_in": check_in,
                                     "check_out": check_out, "adults": 2},
                 json.dumps({"hotel_code": hotel, "rates": rooms[hotel]})))
        pick = next((r for r in rooms[hotel] if r["refundable"] and r is not pick), pick)
        args = {**args, "rate_key": pick["rate_key"]}
    conf = f"{_alnum(rng, 3)}-{_n(rng, 6)}"
    t.calls(("book_hotel", args, json.dumps({"confirmation": conf, "status": "CONFIRMED",
                                             "hotel_code": hotel, "total": {
                                                 "amount": pick["nightly"] * 3,
                                                 "currency": "EUR"}})))
    t.user(f"Now the flight from {home}, economy, morning if possible.")
    offers = [{"offer_id": f"off_{_alnum(rng, 22, string.ascii_letters + string.digits)}",
               "carrier": rng.choice(["KL", "LH", "TP", "OS", "SK"]),
               "flight": f"{rng.choice(['KL', 'LH', 'TP'])}{rng.randint(100, 1999)}",
               "departs": f"{check_in}T{rng.randint(6, 21):02d}:{rng.choice(['05', '30', '45'])}",
               "cabin": "economy", "total_amount": f"{rng.randint(60, 420)}.00",
               "fare_brand": rng.choice(["Light", "Standard", "Flex"])}
              for _ in range(rng.choice([6, 15, 30]))]
    t.calls(("search_flights", {"origin": home, "destination": iata, "date": check_in,
                                "cabin": "economy", "passengers": 2},
             json.dumps({"offers": offers})))
    offer = min(offers, key=lambda o: (o["departs"][11:] > "12", float(o["total_amount"])))
    t.say(f"Flight {offer['flight']} at {offer['departs'][11:]} for {offer['total_amount']} EUR.")
    t.user("OK, hold it for me and my partner Sam Lee, then send me everything.")
    order = f"ord_{_alnum(rng, 20, string.ascii_letters + string.digits)}"
    t.calls(("create_flight_order", {"offer_id": offer["offer_id"], "type": "hold",
                                     "passengers": [name, "Sam Lee"], "trip_id": trip},
             json.dumps({"order_id": order, "booking_reference": _alnum(rng, 6),
                         "payment_required_by": f"{check_in[:8]}{max(1, day - 2):02d}T23:59"})))
    t.calls(("send_itinerary", {"to": email, "trip_id": trip,
                                "items": [conf, order]},
             json.dumps({"message_id": f"<{_n(rng, 10)}@mailer.travel>", "status": "sent"})))
    return t.messages


# -- bank support: accounts, card transactions, disputes, transfers -------------------------------

BANK_SYSTEM = ("You are the support assistant of a retail bank. Verify the customer before "
               "showing any account data. Disputes need the transaction id and a reason "
               "(fraud, not_received, duplicate, wrong_amount). Never read out full card "
               "numbers. Transfers above 5,000 EUR need a second confirmation.")


def _iban(rng: random.Random) -> str:
    bban = f"{_n(rng, 8)}{_n(rng, 10)}"
    check = 98 - int(bban + "131400") % 97  # DE: D=13 E=14
    return f"DE{check:02d}{bban}"


def bank_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 33000))
    rng = t.rng
    t.messages.append({"role": "system", "content": BANK_SYSTEM})
    name, email = _person(rng, rng.choice(["web.de", "gmx.net", "posteo.de"]))
    customer = f"{_n(rng, 4)}-{_n(rng, 4)}-{_n(rng, 2)}"
    last4 = _n(rng, 4)
    t.user(f"Hello, customer number {customer}. There's a card payment I don't recognise on "
           f"my card ending {last4}, and I also need to pay my landlord.")
    t.say("I can help. Please confirm your date of birth.")
    dob = f"19{rng.randint(60, 99)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    t.user(f"{dob}")
    cust_id = f"cus_{_alnum(rng, 14, string.ascii_lowercase + string.digits)}"
    t.calls(("verify_customer", {"customer_number": customer, "date_of_birth": dob},
             json.dumps({"verified": True, "customer_id": cust_id, "name": name,
                         "email": email, "segment": "retail"})))
    accounts = [{"account_id": f"acc_{_alnum(rng, 12, string.ascii_lowercase + string.digits)}",
                 "type": kind, "iban": _iban(rng), "currency": "EUR",
                 "balance": round(rng.uniform(50, 9000), 2)}
                for kind in rng.sample(["current", "savings", "joint"], rng.randint(2, 3))]
    cards = [{"card_id": f"card_{_alnum(rng, 10, string.ascii_lowercase + string.digits)}",
              "last4": l4, "status": "active", "account_id": accounts[0]["account_id"]}
             for l4 in (last4, _n(rng, 4))]
    t.calls(("list_accounts", {"customer_id": cust_id}, json.dumps({"accounts": accounts})),
            ("list_cards", {"customer_id": cust_id}, json.dumps({"cards": cards})))
    card = cards[0]["card_id"]
    txns = []
    for _ in range(rng.choice([25, 60, 120])):
        d = f"2025-06-{rng.randint(1, 28):02d}"
        txns.append({"transaction_id": f"TX{d.replace('-', '')}{_alnum(rng, 6)}",
                     "booked": d, "merchant": rng.choice(["REWE", "Lidl", "Spotify", "DB Bahn",
                                                          "Amazon EU", "Shell", "Zalando"]),
                     "amount": -round(rng.uniform(2, 180), 2), "currency": "EUR",
                     "status": rng.choice(["booked", "booked", "pending"])})
    odd = {"transaction_id": f"TX20250617{_alnum(rng, 6)}", "booked": "2025-06-17",
           "merchant": f"PAYPAL *{_alnum(rng, 8)}", "amount": -round(rng.uniform(200, 900), 2),
           "currency": "EUR", "status": "booked"}
    txns.insert(rng.randint(0, len(txns)), odd)
    t.calls(("list_card_transactions", {"card_id": card, "from": "2025-06-01",
                                        "to": "2025-06-30"}, json.dumps({"transactions": txns})))
    t.say(f"Is it the {abs(odd['amount'])} EUR payment to {odd['merchant']} on 2025-06-17?")
    t.user("Yes, that's not me. Block the card and dispute it.")
    case = f"DSP-{_n(rng, 7)}"
    t.calls(("freeze_card", {"card_id": card, "reason": "suspected_fraud"},
             json.dumps({"card_id": card, "status": "frozen"})),
            ("open_dispute", {"transaction_id": odd["transaction_id"], "reason": "fraud",
                              "amount": abs(odd["amount"])},
             json.dumps({"case_id": case, "status": "open", "provisional_credit": True})))
    t.user("Please send me a replacement card too.")
    t.calls(("replace_card", {"card_id": card, "delivery": "standard"},
             json.dumps({"new_card_id": f"card_{_alnum(rng, 10, string.ascii_lowercase)}",
                         "last4": _n(rng, 4), "eta_days": 5})))
    landlord = _iban(rng)
    rent = rng.choice([850, 1100, 1450, 2300])
    ref = f"Miete {rng.choice(['Juli', 'August'])} Whg {rng.randint(1, 30)}"
    t.user(f"Now the rent: {rent} EUR to {landlord}, reference '{ref}'. "
           "From my current account.")
    src = accounts[0]["account_id"]
    args = {"from_account_id": src, "to_iban": landlord, "amount": rent, "currency": "EUR",
            "reference": ref}
    if accounts[0]["balance"] < rent:
        t.calls(("create_transfer", args, json.dumps({"error": "insufficient_funds",
                                                      "available": accounts[0]["balance"]})))
        src = accounts[1]["account_id"]
        t.say(f"The current account lacks funds; using your {accounts[1]['type']} account.")
        t.user("Yes, use that one.")
        args = {**args, "from_account_id": src}
    t.calls(("create_transfer", args, json.dumps({
        "transfer_id": f"trf_{_alnum(rng, 16, string.ascii_lowercase + string.digits)}",
        "status": "scheduled", "execution_date": "2025-07-01"})))
    t.user(f"Email me the dispute confirmation for {case}, please.")
    t.calls(("send_secure_message", {"customer_id": cust_id, "to": email,
                                     "template": "dispute_opened", "case_id": case},
             json.dumps({"status": "queued"})))
    return t.messages


# -- code review agent: PR JSON, diffs, CI logs ---------------------------------------------------


def _sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(160):040x}"


def review_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 35000))
    rng = t.rng
    repo = (f"{rng.choice(['acme', 'northwind', 'globex'])}/"
            f"{rng.choice(['payments-svc', 'web-app', 'ingest', 'auth-gateway'])}")
    pr = rng.randint(400, 9800)
    run = rng.randint(10**9, 10**10 - 1)
    author = rng.choice(["mkovacs", "jlee-dev", "sofia-r", "tbaptiste", "hsato"])
    t.user(f"Please review PR #{pr} in {repo}. CI run {run} failed on it; figure out whether "
           "it's the PR or a flaky test, leave comments, and request changes if needed.")
    head, base = _sha(rng), _sha(rng)
    files = [f"src/{rng.choice(['api', 'core', 'db', 'util'])}/{w}.py" for w in
             rng.sample(["handlers", "models", "retry", "limits", "cache", "serializers",
                         "auth", "queue"], rng.randint(3, 6))]
    t.calls(("get_pull_request", {"repo": repo, "number": pr}, json.dumps({
        "number": pr, "title": f"Add {rng.choice(['retry budget', 'rate limits', 'cache TTL'])}",
        "user": {"login": author}, "head": {"ref": f"feat/{pr}-change", "sha": head},
        "base": {"ref": "main", "sha": base}, "state": "open", "mergeable_state": "blocked",
        "changed_files": len(files), "files": [{"filename": f, "additions": rng.randint(1, 90),
                                               "deletions": rng.randint(0, 40)} for f in files]})))
    hunks = []
    target = rng.choice(files)
    bad_line = 0
    for f in files:
        start = rng.randint(10, 300)
        body = []
        for k in range(rng.choice([8, 30, 90])):
            sign = rng.choice([" ", " ", "+", "-"])
            body.append(f"{sign}    x_{k} = call_{rng.randint(0, 99)}(cfg, {rng.randint(0, 9)})")
        if f == target:
            bad_line = start + len(body) // 2
            body.insert(len(body) // 2, "+    timeout = cfg.get('timeout') / 1000")
        hunks.append(f"diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n"
                     f"@@ -{start},{len(body)} +{start},{len(body) + 1} @@\n" + "\n".join(body))
    t.calls(("get_diff", {"repo": repo, "number": pr}, "\n".join(hunks)))
    jobs = [{"id": rng.randint(10**10, 10**11 - 1), "name": n,
             "conclusion": "success"} for n in ("lint", "typecheck", "unit (3.11)",
                                                "unit (3.12)", "integration")]
    failing = rng.choice(jobs[2:])
    failing["conclusion"] = "failure"
    t.calls(("get_workflow_run", {"repo": repo, "run_id": run}, json.dumps({
        "id": run, "head_sha": head, "status": "completed", "conclusion": "failure",
        "jobs": jobs})))
    test = (f"tests/test_{target.rsplit('/', 1)[1][:-3]}.py::"
            f"test_{rng.choice(['timeout', 'defaults', 'none_config'])}")
    lines = [f"2025-08-0{rng.randint(1, 9)}T10:{k // 60 % 60:02d}:{k % 60:02d}.{_n(rng, 7)}Z "
             f"tests/test_{rng.choice(['a', 'b', 'c'])}{k % 50}.py::test_{k} PASSED"
             for k in range(rng.choice([100, 600, 2500]))]
    lines += [f"FAILED {test} - TypeError: unsupported operand type(s) for /: 'NoneType' and "
              f"'int'", f"  File \"{target}\", line {bad_line}, in configure",
              "##[error]Process completed with exit code 1."]
    t.calls(("get_job_log", {"repo": repo, "job_id": failing["id"]}, "\n".join(lines)))
    t.say(f"{test} fails with a TypeError at {target}:{bad_line}; reading the file at the PR "
          "head and on main.")
    t.calls(("get_file", {"repo": repo, "path": target, "ref": head},
             "\n".join(f"{i + 1:>5}  line {i + 1} of {target}" for i in range(bad_line + 20))),
            ("get_file", {"repo": repo, "path": target, "ref": "main"},
             "\n".join(f"{i + 1:>5}  line {i + 1} of {target} on main"
                       for i in range(bad_line + 5))))
    if rng.random() < 0.5:
        t.user("Is it flaky? Re-run the failed job once before commenting.")
        t.calls(("rerun_job", {"repo": repo, "job_id": failing["id"]},
                 json.dumps({"message": "Resource not accessible by integration",
                             "status": 403})))
        t.calls(("rerun_failed_jobs", {"repo": repo, "run_id": run},
                 json.dumps({"status": 201, "new_run_attempt": 2})))
        t.calls(("get_workflow_run", {"repo": repo, "run_id": run, "attempt": 2}, json.dumps({
            "id": run, "run_attempt": 2, "conclusion": "failure", "jobs": [
                {**failing, "id": failing["id"] + rng.randint(1, 999)}]})))
    body = ("`cfg.get('timeout')` is None when the key is unset; dividing raises TypeError "
            f"(see {test}).")
    t.calls(("create_review_comment", {"repo": repo, "number": pr, "commit_id": head,
                                       "path": target, "line": bad_line, "side": "RIGHT",
                                       "body": body},
             json.dumps({"id": rng.randint(10**9, 10**10), "html_url":
                         f"https://github.com/{repo}/pull/{pr}#discussion_r{_n(rng, 10)}"})))
    t.calls(("submit_review", {"repo": repo, "number": pr, "commit_id": head,
                               "event": "REQUEST_CHANGES", "body": "One bug, see the comment."},
             json.dumps({"id": rng.randint(10**9, 10**10), "state": "CHANGES_REQUESTED"})),
            ("add_labels", {"repo": repo, "number": pr, "labels": ["needs-changes"]},
             json.dumps([{"name": "needs-changes"}])))
    t.user(f"Thanks. Also ping {author} and ask for a second reviewer from the platform team.")
    t.calls(("request_reviewers", {"repo": repo, "number": pr,
                                   "team_reviewers": ["platform"]},
             json.dumps({"requested_teams": [{"slug": "platform"}]})),
            ("create_issue_comment", {"repo": repo, "number": pr,
                                      "body": f"@{author} please fix the None timeout at "
                                              f"{target}:{bad_line}."},
             json.dumps({"id": rng.randint(10**9, 10**10)})))
    return t.messages


# -- HR / IT ticketing agent --------------------------------------------------------------------


def hr_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 37000))
    rng = t.rng
    hire, hire_mail = _person(rng, "corp.example")
    manager, manager_mail = _person(rng, "corp.example")
    emp = f"E{_n(rng, 5)}"
    ticket = f"HR-{_n(rng, 4)}"
    start = f"2025-{rng.randint(8, 11):02d}-01"
    team = rng.choice(["backend", "data", "mobile", "sre"])
    t.user(f"New hire {hire}, employee id {emp}, starts {start} on the {team} team under "
           f"{manager_mail}. Onboarding ticket is {ticket}. Set up accounts and equipment, "
           "then close the ticket.")
    t.calls(("get_employee", {"employee_id": emp}, json.dumps({
        "employee_id": emp, "name": hire, "work_email": hire_mail, "manager": manager_mail,
        "department": f"Engineering / {team}", "location": rng.choice(["BER", "LIS", "NYC"]),
        "cost_center": f"CC-{_n(rng, 5)}", "start_date": start, "status": "pre_hire"})),
            ("get_ticket", {"key": ticket}, json.dumps({
                "key": ticket, "summary": f"Onboarding: {hire}", "status": "Open",
                "assignee": None, "checklist": ["accounts", "laptop", "badge", "groups"],
                "transitions": [{"id": "21", "name": "In Progress"}, {"id": "31",
                                                                       "name": "Done"}]})))
    t.calls(("transition_ticket", {"key": ticket, "transition_id": "21"},
             json.dumps({"key": ticket, "status": "In Progress"})))
    systems = ["google_workspace", "slack", "github", rng.choice(["figma", "datadog", "jira"])]
    results = []
    for s in systems:
        if s in ("figma", "datadog") and rng.random() < 0.6:
            results.append(("provision_account", {"employee_id": emp, "system": s,
                                                  "email": hire_mail},
                            json.dumps({"error": f"license pool exhausted for '{s}'",
                                        "code": "NO_SEATS"})))
        else:
            results.append(("provision_account", {"employee_id": emp, "system": s,
                                                  "email": hire_mail},
                            json.dumps({"system": s, "account_id": f"{s[:2]}-{_n(rng, 8)}",
                                        "status": "active"})))
    t.calls(*results)
    groups = [{"group_id": f"grp_{_alnum(rng, 10, string.ascii_lowercase + string.digits)}",
               "name": f"eng-{g}", "members": rng.randint(3, 400)}
              for g in list(dict.fromkeys(["all", team, f"{team}-oncall", "backend", "data",
                                           "mobile", "sre", "security", "frontend",
                                           "platform"]))[: rng.choice([5, 10])]]
    t.calls(("search_groups", {"query": "eng-"}, json.dumps({"groups": groups})))
    mine = [g["group_id"] for g in groups if g["name"] in ("eng-all", f"eng-{team}")]
    t.calls(*[("add_group_member", {"group_id": g, "email": hire_mail},
               json.dumps({"group_id": g, "added": hire_mail})) for g in mine])
    failed = [s for (_, a, r) in results if "error" in r for s in [a["system"]]]
    if failed:
        t.say(f"No seats left for {failed[0]}; opening a purchase request.")
        t.calls(("create_ticket", {"project": "IT", "type": "Purchase Request",
                                   "summary": f"1 seat of {failed[0]} for {emp}",
                                   "linked_to": ticket},
                 json.dumps({"key": f"IT-{_n(rng, 5)}", "status": "Open"})))
    laptop = rng.choice(["MBP14-M3-32GB", "MBP16-M3-36GB", "XPS15-i7-32GB"])
    t.user(f"Laptop should be a {laptop}, shipped to the office before {start}.")
    assets = "\n".join(f"{laptop if k % 3 else rng.choice(['MBA13-M2-16GB', 'T14-i5-16GB'])},"
                       f"AST-{_n(rng, 6)},{rng.choice(['in_stock', 'reserved', 'repair'])},"
                       f"{rng.choice(['BER', 'LIS', 'NYC'])}" for k in range(rng.choice([10, 40])))
    t.calls(("list_assets", {"model": laptop, "state": "in_stock"},
             "model,asset_tag,state,site\n" + assets))
    tag = next((ln.split(",")[1] for ln in assets.splitlines() if ln.startswith(laptop)
                and "in_stock" in ln), assets.splitlines()[0].split(",")[1])
    t.calls(("assign_asset", {"asset_tag": tag, "employee_id": emp, "ship_by": start},
             json.dumps({"asset_tag": tag, "assigned_to": emp, "shipment": f"SHP{_n(rng, 9)}"})))
    if rng.random() < 0.5:
        t.user(f"Also, {manager.split()[0]} asked: book {hire.split()[0]}'s first-week "
               "orientation on the start date.")
        t.calls(("create_calendar_event", {"title": f"Orientation: {hire}", "date": start,
                                           "attendees": [hire_mail, manager_mail]},
                 json.dumps({"event_id": f"evt{_n(rng, 10)}"})))
    t.calls(("add_ticket_comment", {"key": ticket, "body": f"Accounts for {emp} done; laptop "
                                    f"{tag} assigned."}, json.dumps({"id": _n(rng, 6)})),
            ("transition_ticket", {"key": ticket, "transition_id": "31"},
             json.dumps({"key": ticket, "status": "Done"})))
    t.user(f"Last thing: notify {manager_mail} that it's all set.")
    t.calls(("send_email", {"to": [manager_mail], "cc": [hire_mail],
                            "subject": f"{ticket}: onboarding of {hire} complete"},
             json.dumps({"id": f"<{_n(rng, 12)}@corp.example>"})))
    return t.messages


# -- logistics agent: plain-text tracking reports, CSV stock, transfer orders ----------------------


def logistics_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 39000))
    rng = t.rng
    shipment = f"SHP-2025-{_n(rng, 6)}"
    customer = f"CUST-{rng.choice(['DE', 'FR', 'NL', 'PL'])}-{_n(rng, 4)}"
    po = f"45000{_n(rng, 5)}"
    t.user(f"Shipment {shipment} for customer {customer} (PO {po}) is late. Find out where it "
           "is; if it's lost, re-ship the missing lines from another warehouse.")
    tracking = f"1Z{_alnum(rng, 6)}{_n(rng, 10)}"
    events = [f"2025-09-{d:02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}  "
              f"{rng.choice(['Hamburg DE', 'Venlo NL', 'Koeln DE', 'Lyon FR'])}  "
              f"{rng.choice(['Departed facility', 'Arrived at facility', 'In transit'])}"
              for d in range(2, 2 + rng.randint(3, 9))]
    report = "\n".join([f"Shipment:      {shipment}", f"Tracking:      {tracking}",
                        "Carrier:       UPS",
                        f"Service:       {rng.choice(['Standard', 'Express Saver'])}",
                        "Status:        EXCEPTION", "Exception:     Package damaged; contents "
                        "partially missing", f"Last scan:     {events[-1]}", "", "Events:",
                        *events])
    t.calls(("track_shipment", {"shipment_id": shipment}, report))
    lines = [{"line": k + 1, "sku": f"SKU-{_alnum(rng, 3, string.ascii_uppercase)}-{_n(rng, 5)}",
              "qty": rng.randint(1, 40), "status": rng.choice(["delivered", "missing"])}
             for k in range(rng.randint(3, 7))]
    if all(x["status"] != "missing" for x in lines):
        lines[0]["status"] = "missing"
    t.calls(("get_order_lines", {"purchase_order": po, "shipment_id": shipment},
             json.dumps({"purchase_order": po, "customer": customer, "lines": lines})))
    missing = [x for x in lines if x["status"] == "missing"]
    t.say(f"{len(missing)} line(s) missing: " + ", ".join(x["sku"] for x in missing) + ".")
    skus = [x["sku"] for x in missing]
    rows = ["sku,warehouse,bin,on_hand,reserved"]
    stock: dict[str, list[tuple[str, str, int]]] = {}
    for sku in skus:
        for wh in rng.sample(["WH-HAM", "WH-VNL", "WH-LYS", "WH-WAW", "WH-MAD"], 3):
            bin_ = f"{rng.choice('ABCDEF')}{rng.randint(1, 40):02d}-{rng.randint(1, 9)}"
            on_hand = rng.randint(0, 300)
            stock.setdefault(sku, []).append((wh, bin_, on_hand))
            rows.append(f"{sku},{wh},{bin_},{on_hand},{rng.randint(0, 20)}")
    for _ in range(rng.choice([0, 30, 150])):  # other SKUs the query matched
        rows.append(f"SKU-{_alnum(rng, 3, string.ascii_uppercase)}-{_n(rng, 5)},"
                    f"WH-{rng.choice(['HAM', 'VNL', 'LYS'])},{rng.choice('ABCDEF')}"
                    f"{rng.randint(1, 40):02d}-{rng.randint(1, 9)},{rng.randint(0, 300)},0")
    t.calls(("stock_lookup", {"skus": skus, "exclude_warehouse": "WH-HAM"}, "\n".join(rows)))
    t.user("Use whichever warehouse has enough stock, express service.")
    orders = []
    for x in missing:
        wh, bin_, _ = max(stock[x["sku"]], key=lambda s: s[2])
        orders.append(("create_transfer_order", {"sku": x["sku"], "qty": x["qty"],
                                                 "from_warehouse": wh, "from_bin": bin_,
                                                 "ship_to": customer, "service": "express",
                                                 "reference": po},
                       f"TO {_n(rng, 8)} created: {x['qty']} x {x['sku']} from {wh}/{bin_} "
                       f"-> {customer}; pick wave W{_n(rng, 4)}"))
    t.calls(*orders)
    wh = orders[0][1]["from_warehouse"]
    pickup = {"warehouse": wh, "carrier": "UPS", "service": "express",
              "date": f"2025-09-{rng.randint(12, 20)}", "parcels": len(orders)}
    if rng.random() < 0.5:
        t.calls(("book_pickup", pickup, "ERROR 504 carrier gateway timeout after 30000 ms "
                                        f"(request id {_alnum(rng, 12).lower()})"))
        t.say("The carrier API timed out; retrying.")
    pickup_id = f"PU{_n(rng, 9)}"
    t.calls(("book_pickup", pickup, f"Pickup confirmed: {pickup_id}\nWindow: 13:00-17:00\n"
                                    f"Tracking: 1Z{_alnum(rng, 6)}{_n(rng, 10)}"))
    t.calls(("open_carrier_claim", {"tracking": tracking, "shipment_id": shipment,
                                    "reason": "damaged", "lines": [x["line"] for x in missing]},
             f"Claim {rng.choice(['C', 'UPS'])}-{_n(rng, 8)} opened for {tracking}"))
    contact = f"logistics@{customer.lower()}.example.com"
    t.user(f"Let the customer know at {contact}.")
    t.calls(("send_email", {"to": contact, "subject": f"PO {po}: replacement shipment",
                            "pickup": pickup_id, "shipment_id": shipment},
             json.dumps({"status": "sent"})))
    return t.messages


def heldout3_traces(count: int = 15, offset: int = 0) -> list[list[Msg]]:
    """``count`` traces of the third held-out set, cycling travel, bank, code review, HR
    ticketing and logistics."""
    makers = (travel_trace, bank_trace, review_trace, hr_trace, logistics_trace)
    return [makers[i % len(makers)](offset + i) for i in range(count)]
