"""Second held-out set of synthetic agent traces for ``agent_memory.py``, in domains no rule
or weight was ever chosen on: a retail order-support agent (JSON tools: users, orders with
items and fulfilments, product variants, exchanges, returns, cancellations, address and
payment changes), a calendar/email assistant (JSON mail search, threads, free slots, rooms,
events) and a cloud/devops agent (structured tools whose output is plain CLI text: pod
tables, ``describe`` dumps, logs, rollout history, terraform plans).

Written and committed before any measurement on it, and never tuned on: it estimates how
key-fact extraction does on conversations the owners keep and we never see.

Shapes an agent really produces: several user goals per conversation; later calls reuse ids
and values from tool results and user messages many turns back (order ids from a user
profile, item ids from an order, payment method ids, event ids, pod names, revisions); some
parallel calls; a tool that fails and a corrected retry; some large results (a product's
variant table, a week of events, a 60-pod table, long logs). Deterministic per seed; OpenAI
chat-completions dicts like the tau-bench data (a retail conversation opens with a system
prompt, kept out of the budget and out of recall, as tau-bench's is).
"""

from __future__ import annotations

import json
import random
from typing import Any

from agent_traces import Msg, _Trace

FIRST = ["Yusuf", "Mei", "Olivia", "Ivan", "Amara", "Lucas", "Sofia", "Noah", "Chen", "Fatima",
         "Mateo", "Aisha", "Ethan", "Harper", "Omar", "Lena"]
LAST = ["Rossi", "Kim", "Garcia", "Nguyen", "Silva", "Khan", "Moreau", "Novak", "Ito", "Patel",
        "Schmidt", "Lopez", "Brown", "Sato", "Haddad", "Berg"]
CITIES = [("Austin", "TX", "787"), ("Denver", "CO", "802"), ("Seattle", "WA", "981"),
          ("Columbus", "OH", "432"), ("Phoenix", "AZ", "850"), ("Charlotte", "NC", "282"),
          ("Portland", "OR", "972"), ("San Diego", "CA", "921")]
STREETS = ["Maple Drive", "Elm Street", "Hillcrest Avenue", "River Road", "Cedar Lane",
           "Sunset Boulevard", "Lakeview Court", "Oak Street"]
PRODUCTS: dict[str, dict[str, list[str]]] = {
    "T-Shirt": {"color": ["black", "white", "navy", "red"], "size": ["S", "M", "L", "XL"],
                "material": ["cotton", "polyester"], "style": ["crew neck", "v-neck"]},
    "Mechanical Keyboard": {"switch type": ["linear", "tactile", "clicky"],
                            "backlight": ["none", "white", "RGB"],
                            "size": ["full size", "80%", "60%"]},
    "Water Bottle": {"capacity": ["500ml", "750ml", "1000ml"],
                     "material": ["stainless steel", "glass", "plastic"],
                     "color": ["blue", "green", "black"]},
    "Hiking Boots": {"size": ["8", "9", "10", "11", "12"], "material": ["leather", "synthetic"],
                     "waterproof": ["yes", "no"]},
    "Desk Lamp": {"color": ["white", "black", "silver"], "brightness": ["low", "medium", "high"],
                  "power source": ["USB", "AC adapter", "battery"]},
    "Wireless Earbuds": {"color": ["black", "white", "blue"],
                         "battery life": ["4 hours", "6 hours", "8 hours"],
                         "water resistance": ["IPX4", "IPX7", "not resistant"]},
    "Backpack": {"color": ["black", "grey", "green", "navy"], "size": ["small", "medium", "large"],
                 "material": ["nylon", "polyester", "leather"], "compartment": ["laptop", "camera",
                                                                            "hydration"]},
}
RETAIL_SYSTEM = (
    "# Retail agent policy\nThe current time is 2024-05-15 15:00:00 EST. Authenticate the user "
    "by email, or by name and zip code, before anything else. Pending orders can be cancelled "
    "(reason 'no longer needed' or 'ordered by mistake'), or have their address, payment "
    "method or items modified once. Delivered orders can be returned or exchanged once, for "
    "items of the same product. List the details and get an explicit 'yes' before any action "
    "that changes the database. A refund goes to the original payment method or a gift card.")


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(10 ** (n - 1), 10**n - 1))


# -- retail order support -----------------------------------------------------------------------


class _Shop:
    """One customer's world: profile, payment methods, orders, and the catalogue's variants."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.first, self.last = rng.choice(FIRST), rng.choice(LAST)
        self.user_id = f"{self.first.lower()}_{self.last.lower()}_{_digits(rng, 4)}"
        self.email = f"{self.first.lower()}.{self.last.lower()}{rng.randint(1, 9999)}@example.com"
        city, state, zip3 = rng.choice(CITIES)
        self.address = {"address1": f"{rng.randint(10, 9999)} {rng.choice(STREETS)}",
                        "address2": f"Suite {rng.randint(100, 999)}", "city": city,
                        "country": "USA", "state": state, "zip": zip3 + _digits(rng, 2)}
        self.payments: dict[str, dict[str, Any]] = {}
        for source in rng.sample(["credit_card", "gift_card", "paypal"], rng.randint(2, 3)):
            pid = f"{source}_{_digits(rng, 7)}"
            info: dict[str, Any] = {"source": source, "id": pid}
            if source == "credit_card":
                info |= {"brand": rng.choice(["visa", "mastercard"]), "last_four": _digits(rng, 4)}
            elif source == "gift_card":
                info["balance"] = rng.randint(0, 300)
            self.payments[pid] = info
        self.catalogue: dict[str, dict[str, Any]] = {}
        for name in rng.sample(sorted(PRODUCTS), 5):
            opts = PRODUCTS[name]
            variants = {}
            for _ in range(rng.randint(8, 40)):
                item = _digits(rng, 10)
                variants[item] = {"item_id": item,
                                  "options": {k: rng.choice(v) for k, v in opts.items()},
                                  "available": rng.random() < 0.7,
                                  "price": round(rng.uniform(15, 600), 2)}
            self.catalogue[name] = {"name": name, "product_id": _digits(rng, 10),
                                    "variants": variants}
        self.orders: dict[str, dict[str, Any]] = {}
        for _ in range(rng.randint(2, 5)):
            self._order()

    def _order(self) -> None:
        rng = self.rng
        oid = f"#W{_digits(rng, 7)}"
        status = rng.choice(["pending", "delivered", "delivered", "processed"])
        items = []
        for name in rng.sample(sorted(self.catalogue), rng.randint(1, 4)):
            product = self.catalogue[name]
            variant = rng.choice(list(product["variants"].values()))
            items.append({"name": name, "product_id": product["product_id"],
                          "item_id": variant["item_id"], "price": variant["price"],
                          "options": variant["options"]})
        pay = rng.choice(list(self.payments))
        total = round(sum(i["price"] for i in items), 2)
        self.orders[oid] = {
            "order_id": oid, "user_id": self.user_id, "address": self.address, "items": items,
            "fulfillments": [] if status == "pending" else [
                {"tracking_id": [_digits(rng, 12)], "item_ids": [i["item_id"] for i in items]}],
            "status": status,
            "payment_history": [{"transaction_type": "payment", "amount": total,
                                 "payment_method_id": pay}]}

    def profile(self) -> str:
        return json.dumps({"user_id": self.user_id,
                           "name": {"first_name": self.first, "last_name": self.last},
                           "address": self.address, "email": self.email,
                           "payment_methods": self.payments, "orders": list(self.orders)})


def retail_trace(seed: int) -> list[Msg]:
    """A customer with 2-3 requests about their orders, one conversation."""
    t = _Trace(random.Random(seed + 21000))
    rng = t.rng
    shop = _Shop(rng)
    t.messages.append({"role": "system", "content": RETAIL_SYSTEM})
    kinds = rng.sample(["exchange", "return", "cancel", "address", "payment", "modify"],
                       rng.randint(2, 3))
    t.user(f"Hi, I need some help with my orders — I want to {_wish(kinds[0])}.")
    t.say("Happy to help. First, could you give me your email, or your name and zip code?")
    if rng.random() < 0.5:
        t.user(f"Sure, it's {shop.email}.")
        t.calls(("find_user_id_by_email", {"email": shop.email}, shop.user_id))
    else:
        t.user(f"{shop.first} {shop.last}, zip {shop.address['zip']}.")
        t.calls(("find_user_id_by_name_zip", {"first_name": shop.first, "last_name": shop.last,
                                              "zip": shop.address["zip"]}, shop.user_id))
    t.calls(("get_user_details", {"user_id": shop.user_id}, shop.profile()))
    t.say(f"Thanks, {shop.first}. I see {len(shop.orders)} orders on your account. "
          "Which one is it about?")
    t.user("I don't remember the order number, can you look through them?")
    orders = list(shop.orders)
    details = [("get_order_details", {"order_id": o}, json.dumps(shop.orders[o])) for o in orders]
    if rng.random() < 0.5:
        t.calls(*details)
    else:
        for d in details:
            t.calls(d)
    for n, kind in enumerate(kinds):
        if n:
            t.user(f"One more thing: I'd also like to {_wish(kind)}.")
        _retail_task(t, shop, kind)
    t.user("That's everything, thanks!")
    t.say("You're welcome — have a great day!")
    return t.messages


def _wish(kind: str) -> str:
    return {"exchange": "exchange an item I received", "return": "return something",
            "cancel": "cancel an order", "address": "change the shipping address of an order",
            "payment": "pay for an order with a different method",
            "modify": "change an item in an order that hasn't shipped"}[kind]


def _retail_task(t: _Trace, shop: _Shop, kind: str) -> None:
    rng = t.rng
    want = "pending" if kind in ("cancel", "address", "payment", "modify") else "delivered"
    fits = [o for o in shop.orders.values() if o["status"] == want] or list(shop.orders.values())
    order = rng.choice(fits)
    oid = order["order_id"]
    item = rng.choice(order["items"])
    paid_with = order["payment_history"][0]["payment_method_id"]
    t.user(f"It's the order with the {item['name'].lower()} in it.")
    if kind in ("exchange", "modify"):
        product = shop.catalogue[item["name"]]
        key, values = rng.choice(list(PRODUCTS[item["name"]].items()))
        new_value = rng.choice([v for v in values if v != item["options"][key]])
        t.user(f"I want the same {item['name'].lower()} but with {key} {new_value}.")
        t.calls(("get_product_details", {"product_id": product["product_id"]},
                 json.dumps(product)))
        choices = [v for v in product["variants"].values()
                   if v["options"][key] == new_value and v["item_id"] != item["item_id"]]
        new = rng.choice(choices) if choices else rng.choice(list(product["variants"].values()))
        diff = round(new["price"] - item["price"], 2)
        t.calls(("calculate", {"expression": f"{new['price']} - {item['price']}"}, str(diff)))
        pm = rng.choice(list(shop.payments))
        t.say(f"Item {new['item_id']} ({', '.join(new['options'].values())}) is available for "
              f"{new['price']}; the difference is {diff}. Which payment method should settle it?")
        t.user(f"Use my {shop.payments[pm]['source'].replace('_', ' ')}. Yes, go ahead.")
        name = ("exchange_delivered_order_items" if kind == "exchange"
                else "modify_pending_order_items")
        args = {"order_id": oid, "item_ids": [item["item_id"]], "new_item_ids": [new["item_id"]],
                "payment_method_id": pm}
        if order["status"] != want:  # the order is not in the state the action needs
            t.calls((name, args, f"Error: non-{want} order cannot be "
                                 f"{'exchanged' if kind == 'exchange' else 'modified'}"))
            t.say(f"Order {oid} is {order['status']}, so that isn't possible; let me check.")
            return
        if rng.random() < 0.25:  # a payment method that cannot cover the difference
            bad = f"gift_card_{_digits(rng, 7)}"
            t.calls((name, {**args, "payment_method_id": bad},
                     "Error: payment method not found"))
            t.say("That failed: the payment method was wrong. Retrying with yours.")
        change = "exchange" if kind == "exchange" else "modified"
        done = {**order, "status": f"{want} (item {change} requested)",
                "exchange_items": [item["item_id"]],
                "exchange_new_items": [new["item_id"]], "exchange_payment_method_id": pm,
                "exchange_price_difference": diff}
        t.calls((name, args, json.dumps(done)))
    elif kind == "return":
        items = [i["item_id"] for i in order["items"] if rng.random() < 0.6] or [item["item_id"]]
        total = round(sum(i["price"] for i in order["items"] if i["item_id"] in items), 2)
        t.say(f"I can return {len(items)} item(s) from {oid} for a refund of {total} to "
              f"{paid_with}. Shall I proceed?")
        t.user("Yes please.")
        t.calls(("return_delivered_order_items", {"order_id": oid, "item_ids": items,
                                                  "payment_method_id": paid_with},
                 json.dumps({**order, "status": "return requested", "return_items": items,
                             "return_payment_method_id": paid_with})))
    elif kind == "cancel":
        t.say(f"To cancel {oid}: is the reason 'no longer needed' or 'ordered by mistake'?")
        t.user("No longer needed. Yes, cancel it.")
        t.calls(("cancel_pending_order", {"order_id": oid, "reason": "no longer needed"},
                 json.dumps({**order, "status": "cancelled", "cancel_reason": "no longer needed",
                             "payment_history": order["payment_history"] + [
                                 {"transaction_type": "refund",
                                  "amount": order["payment_history"][0]["amount"],
                                  "payment_method_id": paid_with}]})))
    elif kind == "address":
        city, state, zip3 = rng.choice(CITIES)
        new = {"address1": f"{rng.randint(10, 9999)} {rng.choice(STREETS)}",
               "address2": f"Apt {rng.randint(1, 99)}", "city": city, "state": state,
               "country": "USA", "zip": zip3 + _digits(rng, 2)}
        t.user(f"The new address is {new['address1']}, {new['address2']}, {city}, {state} "
               f"{new['zip']}.")
        t.say("Confirm: change the shipping address of that order to the one you gave? (yes/no)")
        t.user("Yes.")
        t.calls(("modify_pending_order_address", {"order_id": oid, **new},
                 json.dumps({**order, "address": new})))
        if rng.random() < 0.5:
            t.user("Please make that my default address too.")
            t.calls(("modify_user_address", {"user_id": shop.user_id, **new},
                     json.dumps({"user_id": shop.user_id, "address": new})))
    else:  # payment
        others = [p for p in shop.payments if p != paid_with] or [paid_with]
        pm = rng.choice(others)
        t.user(f"Switch it to the {shop.payments[pm]['source'].replace('_', ' ')}, please. Yes.")
        t.calls(("modify_pending_order_payment", {"order_id": oid, "payment_method_id": pm},
                 json.dumps({**order, "payment_history": order["payment_history"] + [
                     {"transaction_type": "payment", "amount": order["payment_history"][0][
                         "amount"], "payment_method_id": pm}]})))
    t.say("Done — the change is recorded.")


# -- calendar / email assistant ----------------------------------------------------------------


def calendar_trace(seed: int) -> list[Msg]:
    """An assistant handling 2-4 scheduling requests for one person in one session."""
    t = _Trace(random.Random(seed + 23000))
    rng = t.rng
    me = f"{rng.choice(FIRST).lower()}.{rng.choice(LAST).lower()}@acme.io"
    people = {f"{f} {la}": f"{f.lower()}.{la.lower()}@{rng.choice(['acme.io', 'partner.com'])}"
              for f, la in zip(rng.sample(FIRST, 6), rng.sample(LAST, 6), strict=True)}
    tz = rng.choice(["Europe/Berlin", "America/New_York", "Asia/Tokyo"])
    week = rng.randint(1, 40)
    day0 = f"2025-{(week * 7) // 30 + 1:02d}-{(week * 7) % 28 + 1:02d}"
    t.user(f"Morning! I'm {me}, timezone {tz}. A few things for this week (from {day0}).")
    steps = [_cal_meeting, _cal_move, _cal_decline, _cal_contact]
    for step in [steps[0], *rng.sample(steps[1:], rng.randint(1, 3))]:
        step(t, me, people, tz, day0)
    t.user("Thanks, that's all.")
    return t.messages


def _when(day0: str, d: int, h: int, m: int = 0) -> str:
    y, mo, da = (int(x) for x in day0.split("-"))
    return f"{y}-{mo:02d}-{max(1, min(da + d, 28)):02d}T{h:02d}:{m:02d}:00"


def _cal_meeting(t: _Trace, me: str, people: dict[str, str], tz: str, day0: str) -> None:
    rng = t.rng
    boss = rng.choice(list(people))
    topic = rng.choice(["budget review", "Q3 roadmap", "vendor contract", "hiring plan"])
    t.user(f"Find {boss}'s thread about the {topic} and set up a 45-minute meeting with "
           "everyone on it, Tuesday to Thursday afternoon. Book a room in building BER-4.")
    hits = []
    for _ in range(rng.choice([6, 15, 30])):
        sender = rng.choice(list(people.values()))
        hits.append({"id": f"msg_{rng.getrandbits(48):012x}", "thread_id":
                     f"thr_{rng.getrandbits(40):010x}", "from": sender,
                     "subject": rng.choice(["Re: ", "Fwd: ", ""]) + rng.choice(
                         [topic, "lunch", "offsite", "status update", "invoice"]).title(),
                     "date": _when(day0, -rng.randint(1, 20), rng.randint(7, 19)),
                     "snippet": "Hi all, following up on " * rng.randint(1, 4) + topic})
    thread = {"id": f"msg_{rng.getrandbits(48):012x}", "thread_id":
              f"thr_{rng.getrandbits(40):010x}", "from": people[boss],
              "subject": f"{topic.title()} — next steps", "date": _when(day0, -2, 9, 30),
              "snippet": f"Can we meet this week about the {topic}?"}
    hits.insert(rng.randint(0, len(hits)), thread)
    t.calls(("search_email", {"query": f"from:{people[boss]} {topic}", "max_results": 50},
             json.dumps({"messages": hits, "result_size_estimate": len(hits)})))
    invited = rng.sample([p for p in people.values() if p != people[boss]], rng.randint(2, 4))
    body = ("Hi team,\n\n" + f"Following up on the {topic}. " * rng.choice([3, 20, 80])
            + "\nPlease find time this week.\n\nBest")
    t.calls(("get_thread", {"thread_id": thread["thread_id"]}, json.dumps({
        "thread_id": thread["thread_id"], "subject": thread["subject"], "messages": [
            {"id": thread["id"], "from": people[boss], "to": [me, *invited],
             "cc": [], "date": thread["date"], "body": body}]})))
    attendees = [me, people[boss], *invited]
    slots = [{"start": _when(day0, d, h, m), "end": _when(day0, d, h + (m + 45) // 60,
                                                           (m + 45) % 60)}
             for d in (1, 2, 3) for h in (13, 14, 15, 16) for m in (0, 30) if rng.random() < 0.3]
    slots = slots or [{"start": _when(day0, 2, 15), "end": _when(day0, 2, 15, 45)}]
    t.calls(("find_free_slots", {"attendees": attendees, "duration_minutes": 45,
                                 "window_start": _when(day0, 1, 12),
                                 "window_end": _when(day0, 3, 18), "timezone": tz},
             json.dumps({"timezone": tz, "slots": slots})))
    rooms = "\n".join(f"BER-4-{rng.randint(1, 6)}{rng.randint(10, 40):02d}  capacity "
                      f"{rng.choice([4, 6, 8, 12])}  {rng.choice(['free', 'busy'])}"
                      for _ in range(rng.randint(5, 14)))
    t.calls(("list_rooms", {"building": "BER-4", "start": slots[0]["start"],
                            "end": slots[0]["end"]}, "ROOM        CAPACITY  STATE\n" + rooms))
    lines = rooms.splitlines()
    room = rng.choice(lines).split()[0]
    t.say(f"{slots[0]['start']} works for everyone. Booking {room}.")
    args = {"title": thread["subject"].replace(" — next steps", ""), "start": slots[0]["start"],
            "end": slots[0]["end"], "timezone": tz, "attendees": attendees, "room": room}
    if rng.random() < 0.4:
        t.calls(("create_event", args, json.dumps({"error": {"code": 409, "message":
                 f"Room {room} is already booked from {slots[0]['start']}"}})))
        room = rng.choice(lines).split()[0]
        args = {**args, "room": room}
        t.say(f"That room is taken; trying {room}.")
    event = f"evt_{rng.getrandbits(64):016x}"
    t.calls(("create_event", args, json.dumps({"event_id": event, "status": "confirmed",
                                               "html_link": f"https://cal.acme.io/e/{event}"})))
    t.user(f"Great. Reply on {boss}'s thread with the time.")
    t.calls(("send_email", {"thread_id": thread["thread_id"], "to": [people[boss], *invited],
                            "subject": f"Re: {thread['subject']}",
                            "body": f"Booked {slots[0]['start']} in {room}."},
             json.dumps({"id": f"msg_{rng.getrandbits(48):012x}", "label_ids": ["SENT"]})))


def _events(t: _Trace, me: str, people: dict[str, str], tz: str, day0: str
            ) -> list[dict[str, Any]]:
    rng = t.rng
    evs = []
    for d in range(5):
        for _ in range(rng.randint(2, 7)):
            h = rng.randint(8, 17)
            who = rng.choice(list(people))
            evs.append({"event_id": f"evt_{rng.getrandbits(64):016x}",
                        "title": rng.choice([f"1:1 {who.split()[0]}", "Standup", "Design review",
                                             f"Sync with {who}", "Interview", "All hands"]),
                        "start": _when(day0, d, h), "end": _when(day0, d, h, 30),
                        "organizer": rng.choice([me, people[who]]), "attendees": [me, people[who]],
                        "response": rng.choice(["accepted", "needsAction", "tentative"])})
    t.calls(("list_events", {"calendar_id": "primary", "time_min": _when(day0, 0, 0),
                             "time_max": _when(day0, 5, 0), "timezone": tz},
             json.dumps({"items": evs, "timezone": tz})))
    return evs


def _cal_move(t: _Trace, me: str, people: dict[str, str], tz: str, day0: str) -> None:
    rng = t.rng
    t.user("Move my first 1:1 of the week to the same time two days later.")
    evs = _events(t, me, people, tz, day0)
    pick = next((e for e in evs if e["title"].startswith("1:1")), rng.choice(evs))
    start = pick["start"][:8] + f"{min(int(pick['start'][8:10]) + 2, 28):02d}" + pick["start"][10:]
    end = start[:11] + pick["end"][11:]
    t.say(f"Moving '{pick['title']}' ({pick['event_id']}) to {start}.")
    t.calls(("update_event", {"event_id": pick["event_id"], "start": start, "end": end,
                              "notify_attendees": True},
             json.dumps({"event_id": pick["event_id"], "status": "confirmed", "start": start,
                         "updated": _when(day0, 0, 8)})))


def _cal_decline(t: _Trace, me: str, people: dict[str, str], tz: str, day0: str) -> None:
    t.user("Decline anything I haven't answered yet on Friday, with a note that I'm out.")
    evs = _events(t, me, people, tz, day0)
    friday = [e for e in evs if e["start"].startswith(_when(day0, 4, 0)[:10])
              and e["response"] == "needsAction"] or evs[-1:]
    t.calls(*[("respond_to_event", {"event_id": e["event_id"], "response": "declined",
                                    "comment": "Out of office on Friday."},
               json.dumps({"event_id": e["event_id"], "response": "declined"}))
              for e in friday[:3]])


def _cal_contact(t: _Trace, me: str, people: dict[str, str], tz: str, day0: str) -> None:
    rng = t.rng
    who = rng.choice(list(people))
    t.user(f"What's {who.split()[0]}'s phone number? Then text them that I'm running late.")
    phone = f"+1 {rng.randint(200, 989)} {rng.randint(200, 989)} {_digits(rng, 4)}"
    t.calls(("lookup_contact", {"query": who.split()[0]}, json.dumps({"contacts": [
        {"name": who, "email": people[who], "phone": phone, "title": "Director"},
        {"name": f"{who.split()[0]} {rng.choice(LAST)}", "email": f"x{_digits(rng, 3)}@acme.io",
         "phone": f"+1 555 {rng.randint(200, 989)} {_digits(rng, 4)}"}]})))
    t.say(f"{who}: {phone}. Sending the text.")
    t.calls(("send_sms", {"to": phone, "body": "Running about 10 minutes late, sorry!"},
             json.dumps({"sid": f"SM{rng.getrandbits(64):016x}", "status": "queued"})))


# -- cloud / devops agent with plain-text CLI output ---------------------------------------------


def devops_trace(seed: int) -> list[Msg]:
    """A platform agent working 2-3 tickets in one session against a Kubernetes cluster
    and terraform: pod tables, describe dumps, logs, rollouts, plans (all plain text)."""
    t = _Trace(random.Random(seed + 25000))
    rng = t.rng
    cluster = f"prod-{rng.choice(['eu-west-1', 'us-east-2', 'ap-south-1'])}"
    for _ in range(rng.randint(2, 3)):
        rng.choice([_dev_rollout, _dev_rollout, _dev_terraform])(t, cluster)
    return t.messages


def _pod(rng: random.Random, app: str) -> str:
    return (f"{app}-{rng.getrandbits(36):09x}-"
            + "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5)))


def _dev_rollout(t: _Trace, cluster: str) -> None:
    rng = t.rng
    ns = rng.choice(["payments", "ledger", "catalog", "identity"])
    app = f"{ns}-{rng.choice(['api', 'worker', 'gateway'])}"
    version = f"v{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
    change = f"CHG{_digits(rng, 7)}"
    t.user(f"The {app} deploy of {version} on {cluster} is unhealthy (namespace {ns}). Find "
           f"out why and fix or roll back; keep change {change} updated.")
    pods = [(_pod(rng, app), "0/1", "CrashLoopBackOff" if rng.random() < 0.5 else "Running")
            for _ in range(rng.randint(3, 8))]
    others = [(_pod(rng, f"{ns}-{rng.choice(['cron', 'db-proxy', 'metrics'])}"), "1/1", "Running")
              for _ in range(rng.choice([4, 20, 55]))]
    if all(s != "CrashLoopBackOff" for _, _, s in pods):
        pods[0] = (pods[0][0], "0/1", "CrashLoopBackOff")
    rows = [f"{n:<48}{r:<8}{s:<18}{rng.randint(0, 40):<10}{rng.randint(1, 90)}m"
            for n, r, s in pods + others]
    rng.shuffle(rows)
    t.calls(("kubectl_get", {"cluster": cluster, "namespace": ns, "resource": "pods"},
             f"{'NAME':<48}{'READY':<8}{'STATUS':<18}{'RESTARTS':<10}AGE\n" + "\n".join(rows)))
    bad = next(n for n, _, s in pods if s == "CrashLoopBackOff")
    node = f"ip-10-{rng.randint(0, 9)}-{rng.randint(0, 255)}-{rng.randint(1, 254)}.internal"
    image = f"registry.acme.io/{ns}/{app}:{version}"
    oom = rng.random() < 0.5
    describe = "\n".join([
        f"Name:         {bad}", f"Namespace:    {ns}", f"Node:         {node}",
        f"Labels:       app={app}", f"              pod-template-hash={bad.split('-')[-2]}",
        "Status:       Running", f"IP:           10.{rng.randint(0, 255)}.{rng.randint(0, 255)}"
        f".{rng.randint(1, 254)}", "Containers:", "  api:",
        f"    Image:          {image}", f"    Port:           {rng.choice([8080, 9000, 3000])}/TCP",
        "    State:          Waiting", "      Reason:       CrashLoopBackOff",
        "    Last State:     Terminated",
        f"      Reason:       {'OOMKilled' if oom else 'Error'}",
        f"      Exit Code:    {137 if oom else 1}",
        f"    Restart Count:  {rng.randint(5, 60)}",
        f"    Limits:\n      memory:  {rng.choice([256, 512, 1024])}Mi",
        "Events:", *(f"  Warning  BackOff  {rng.randint(1, 50)}m  kubelet  Back-off restarting "
                     f"failed container api in pod {bad}" for _ in range(rng.randint(2, 12)))])
    logs = "\n".join(f"2025-07-0{rng.randint(1, 9)}T1{rng.randint(0, 9)}:{rng.randint(10, 59)}"
                     f":00Z INFO request handled in {rng.randint(2, 300)}ms"
                     for _ in range(rng.choice([20, 200, 800])))
    dsn = f"{ns}-db-primary.{ns}.svc:{rng.choice([5432, 3306])}"
    logs += (f"\n2025-07-09T12:00:00Z FATAL config: missing env {ns.upper()}_DB_PASSWORD; "
             f"cannot connect to {dsn}") if not oom else "\nKilled"
    t.calls(("kubectl_describe", {"cluster": cluster, "namespace": ns, "kind": "pod",
                                  "name": bad}, describe),
            ("kubectl_logs", {"cluster": cluster, "namespace": ns, "pod": bad, "container": "api",
                              "previous": True, "tail": 500}, logs))
    t.say(f"{bad} on {node} is {'OOMKilled' if oom else 'failing at start-up'}.")
    revs = rng.randint(20, 60)
    hist = "REVISION  CHANGE-CAUSE\n" + "\n".join(
        f"{r:<10}deploy {app}:v{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        for r in range(revs - rng.randint(4, 12), revs)) + f"\n{revs:<10}deploy {app}:{version}"
    t.calls(("kubectl_rollout", {"cluster": cluster, "namespace": ns, "action": "history",
                                 "deployment": app}, hist))
    prev = revs - 1
    if rng.random() < 0.5:
        t.user("Don't roll back if a config change fixes it.")
        if oom:
            mem = rng.choice(["1Gi", "2Gi"])
            t.calls(("kubectl_patch", {"cluster": cluster, "namespace": ns,
                                       "deployment": app, "container": "api",
                                       "memory_limit": mem},
                     f"deployment.apps/{app} patched"))
        else:
            t.calls(("kubectl_set_env", {"cluster": cluster, "namespace": ns, "deployment": app,
                                         "from_secret": f"{ns}-db-credentials"},
                     f"error: secrets \"{ns}-db-credentials\" not found in namespace {ns}"))
            t.say("The secret is missing, so I'll roll back instead.")
            _rollback(t, cluster, ns, app, prev)
    else:
        _rollback(t, cluster, ns, app, prev)
    t.calls(("update_change", {"change_id": change, "state": "implemented",
                               "note": f"{app} {version} on {cluster}: see pod {bad}"},
             f"Change {change} updated: state=implemented (by platform-agent)"))
    t.say(f"{app} is healthy again; {change} updated.")


def _rollback(t: _Trace, cluster: str, ns: str, app: str, revision: int) -> None:
    rng = t.rng
    args = {"cluster": cluster, "namespace": ns, "action": "undo", "deployment": app,
            "to_revision": revision}
    if rng.random() < 0.4:
        t.calls(("kubectl_rollout", args,
                 f"error: deployment \"{app}\" is paused; resume it before rolling back"))
        t.calls(("kubectl_rollout", {"cluster": cluster, "namespace": ns, "action": "resume",
                                     "deployment": app},
                 f"deployment.apps/{app} resumed"))
    t.calls(("kubectl_rollout", args, f"deployment.apps/{app} rolled back to revision {revision}"))
    t.calls(("kubectl_rollout", {"cluster": cluster, "namespace": ns, "action": "status",
                                 "deployment": app},
             f"deployment \"{app}\" successfully rolled out"))


def _dev_terraform(t: _Trace, cluster: str) -> None:
    rng = t.rng
    ws = f"{cluster}-{rng.choice(['data', 'network', 'core'])}"
    db = f"aws_db_instance.{rng.choice(['orders', 'ledger', 'search'])}_primary"
    t.user(f"Upsize the primary database in workspace {ws} one class up and apply it, but "
           "only if the plan touches nothing else.")
    resources = [f"aws_security_group_rule.ingress_{_digits(rng, 3)}" for _ in range(
        rng.choice([0, 0, 2]))]
    lines = [f"Terraform will perform the following actions ({ws}):", ""]
    lines += [f"  # {db} will be updated in-place", f"  ~ resource \"aws_db_instance\" "
              f"\"{db.split('.')[1]}\" {{",
              f"        id             = \"db-{rng.getrandbits(80):020X}\"",
              "      ~ instance_class = \"db.r6g.large\" -> \"db.r6g.xlarge\"",
              *(f"        tag_{k}          = \"{rng.getrandbits(32):08x}\"" for k in range(
                  rng.choice([3, 40, 150]))), "    }"]
    for r in resources:
        lines += [f"  # {r} must be replaced", f"-/+ resource \"{r.split('.')[0]}\" "
                  f"\"{r.split('.')[1]}\" {{", f"      ~ cidr_blocks = [\"10.0.0.0/16\"] -> "
                  f"[\"10.{rng.randint(1, 9)}.0.0/16\"]", "    }"]
    plan_file = f"plans/{ws}-{_digits(rng, 6)}.tfplan"
    lines += ["", f"Plan: 0 to add, 1 to change, {len(resources)} to destroy.",
              f"Saved the plan to: {plan_file}"]
    t.calls(("terraform", {"workspace": ws, "command": "plan", "target": None},
             "\n".join(lines)))
    if resources:
        t.say(f"The plan also replaces {', '.join(resources)}; re-planning with -target.")
        t.calls(("terraform", {"workspace": ws, "command": "plan", "target": db},
                 f"Plan: 0 to add, 1 to change, 0 to destroy.\nSaved the plan to: {plan_file}"))
    t.user("OK, apply.")
    t.calls(("terraform", {"workspace": ws, "command": "apply", "plan_file": plan_file},
             f"{db}: Modifying... [id=db-{rng.getrandbits(40):010x}]\n{db}: Still modifying... "
             f"[{rng.randint(5, 30)}m0s elapsed]\nApply complete! Resources: 0 added, 1 changed, "
             "0 destroyed."))


def heldout2_traces(count: int = 12, offset: int = 0) -> list[list[Msg]]:
    """``count`` traces of the second held-out set, cycling retail, calendar and devops."""
    makers = (retail_trace, calendar_trace, devops_trace)
    return [makers[i % 3](offset + i) for i in range(count)]
