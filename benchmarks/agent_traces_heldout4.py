"""Fourth held-out set of synthetic agent traces for ``agent_memory.py``, in domains no rule or
weight was ever chosen on: a clinic scheduling agent (patients, providers, slot search,
referrals, insurance eligibility; reminders by SMS and e-mail), an insurance claims agent
(policies, claims, adjuster notes in plain text, repair estimates, payouts to an IBAN), a
real-estate / property-management agent (listings, viewings, applications, lease drafts,
maintenance work orders; tenants' phones and e-mails) and a school administration agent
(students, guardians, course sections, enrolment, grade reports as CSV, a transcript request).

Written and committed before any measurement on it, and never tuned on: it estimates how
the agent view does on conversations the owners keep and we never see.

Shapes an agent really produces: the user states ids, names and contact details in the
first message and the agent reuses them much later; several goals per conversation; later
calls reuse values read from results many turns back (slot ids, claim numbers, listing ids,
section codes); parallel calls; a tool that fails and a corrected retry; enum-like
arguments (``channel``, ``status``, ``priority``); e-mail addresses and phone numbers where
they are natural (reminders, notices, guardians); some large results (60 appointment slots,
a long adjuster log, 50 listings, a 200-row grade CSV). Deterministic per seed; OpenAI
chat-completions dicts like the tau-bench data (the claims conversation opens with a
system prompt, kept out of the budget and out of recall, as tau-bench's is).
"""

from __future__ import annotations

import json
import random
import string
from typing import Any

from agent_traces import Msg, _Trace

NAMES = [("Amara", "Okafor"), ("Mateo", "Silva"), ("Ingrid", "Larsen"), ("Hiroshi", "Sato"),
         ("Fatima", "Haddad"), ("Owen", "Price"), ("Elif", "Yilmaz"), ("Nadia", "Petrova"),
         ("Samuel", "Adeyemi"), ("Lucía", "Moreno"), ("Jonas", "Becker"), ("Mei", "Chen")]


def _n(rng: random.Random, digits: int) -> str:
    return str(rng.randint(10 ** (digits - 1), 10**digits - 1))


def _alnum(rng: random.Random, k: int, chars: str = string.ascii_uppercase + string.digits
           ) -> str:
    return "".join(rng.choice(chars) for _ in range(k))


def _person(rng: random.Random, domain: str) -> tuple[str, str]:
    first, last = rng.choice(NAMES)
    return f"{first} {last}", f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@{domain}"


def _phone(rng: random.Random) -> str:
    style = rng.randrange(3)
    if style == 0:
        return f"+1 ({rng.randint(201, 989)}) {rng.randint(200, 989)}-{_n(rng, 4)}"
    if style == 1:
        return f"+44 7{_n(rng, 3)} {_n(rng, 6)}"
    return f"({rng.randint(201, 989)}) {rng.randint(200, 989)}-{_n(rng, 4)}"


# -- clinic scheduling: patients, providers, slots, referrals ------------------------------------


def clinic_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 41000))
    rng = t.rng
    name, email = _person(rng, rng.choice(["gmail.com", "icloud.com", "fastmail.com"]))
    phone = _phone(rng)
    dob = f"19{rng.randint(50, 99)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    t.user(f"Hi, I'm {name}, born {dob}. I need a dermatology appointment next week and my "
           f"referral from Dr. Alvarez should be on file. Text me at {phone} or e-mail "
           f"{email} with the details.")
    mrn = f"MRN{_n(rng, 8)}"
    t.calls(("find_patient", {"name": name, "date_of_birth": dob},
             json.dumps({"patients": [{"patient_id": mrn, "name": name, "dob": dob,
                                       "phone": phone, "email": email,
                                       "primary_care": "Dr. R. Alvarez",
                                       "plan_id": f"PLN-{_alnum(rng, 7)}"}]})))
    referral = f"REF-{_n(rng, 6)}"
    t.calls(("list_referrals", {"patient_id": mrn, "status": "active"},
             json.dumps({"referrals": [{"referral_id": referral, "specialty": "dermatology",
                                        "expires": "2025-12-31", "visits_left": 3},
                                       {"referral_id": f"REF-{_n(rng, 6)}",
                                        "specialty": "physiotherapy", "expires": "2025-08-15",
                                        "visits_left": 0}]})))
    providers = [{"provider_id": f"PRV-{_n(rng, 5)}", "name": f"Dr. {rng.choice(NAMES)[1]}",
                  "location": rng.choice(["North Campus", "Riverside", "Main Street"])}
                 for _ in range(3)]
    slots = [{"slot_id": f"SL{_alnum(rng, 8)}", "provider_id": rng.choice(providers)[
              "provider_id"], "start": f"2025-10-{rng.randint(13, 17)}T"
              f"{rng.randint(8, 16):02d}:{rng.choice(['00', '20', '40'])}",
              "minutes": rng.choice([20, 40]), "telehealth": rng.random() < 0.3}
             for _ in range(rng.choice([12, 30, 60]))]
    t.calls(("search_slots", {"specialty": "dermatology", "from": "2025-10-13",
                              "to": "2025-10-17", "referral_id": referral},
             json.dumps({"providers": providers, "slots": slots})))
    morning = sorted([s for s in slots if s["start"][11:13] < "12"] or slots,
                     key=lambda s: s["start"])
    pick = morning[0]
    t.say(f"The earliest morning slot is {pick['start']} ({pick['minutes']} min). Shall I "
          "check your coverage and book it?")
    t.user("Yes please. Check my insurance first.")
    eligibility = {"eligible": True, "copay": rng.choice([20, 35, 50]), "currency": "USD",
                   "auth_required": rng.random() < 0.4,
                   "payer_ref": f"ELG{_n(rng, 10)}"}
    t.calls(("check_eligibility", {"patient_id": mrn, "service": "dermatology_consult",
                                   "date": pick["start"][:10]}, json.dumps(eligibility)))
    args: dict[str, Any] = {"slot_id": pick["slot_id"], "patient_id": mrn,
                            "referral_id": referral, "reason": "skin lesion review"}
    if rng.random() < 0.5:
        t.calls(("book_appointment", args, json.dumps({"error": "SLOT_TAKEN", "message":
                 f"slot {pick['slot_id']} was booked by another patient"})))
        pick = morning[1] if len(morning) > 1 else slots[-1]
        t.say(f"That slot was just taken; the next one is {pick['start']}.")
        t.user("Fine, take it.")
        args = {**args, "slot_id": pick["slot_id"]}
    appt = f"APT-{_n(rng, 7)}"
    t.calls(("book_appointment", args, json.dumps({"appointment_id": appt,
                                                   "status": "booked", "start": pick["start"],
                                                   "provider_id": pick["provider_id"]})))
    t.user("Can you also move my physio follow-up? It's under the old referral, I think it "
           "ran out. Just cancel it if so.")
    physio = f"APT-{_n(rng, 7)}"
    t.calls(("list_appointments", {"patient_id": mrn, "upcoming": True},
             json.dumps({"appointments": [{"appointment_id": appt, "specialty": "dermatology",
                                           "start": pick["start"]},
                                          {"appointment_id": physio,
                                           "specialty": "physiotherapy",
                                           "start": "2025-10-21T15:00"}]})))
    t.calls(("cancel_appointment", {"appointment_id": physio, "reason": "referral_exhausted"},
             json.dumps({"appointment_id": physio, "status": "cancelled"})))
    t.say("Cancelled. Sending your confirmation now.")
    t.calls(("send_sms", {"to": phone, "template": "appointment_confirmed",
                          "appointment_id": appt},
             json.dumps({"sid": f"SM{_alnum(rng, 32, string.hexdigits.lower()[:16])}",
                         "status": "queued"})),
            ("send_email", {"to": email, "subject": f"Your appointment {appt}",
                            "appointment_id": appt, "copay": eligibility["copay"]},
             json.dumps({"status": "sent"})))
    return t.messages


# -- insurance claims: policy, claim, adjuster log, estimate, payout -----------------------------

CLAIMS_SYSTEM = ("You are the claims assistant of a property and auto insurer. Confirm the "
                 "policy holder before discussing a claim. Payouts go only to an IBAN on the "
                 "policy. Claims over 10,000 EUR need an adjuster's approval note.")


def _iban(rng: random.Random) -> str:
    bban = f"{_n(rng, 5)}{_n(rng, 5)}{_n(rng, 11)}{_n(rng, 2)}"
    check = 98 - int(bban + "152700") % 97  # FR: F=15 R=27
    return f"FR{check:02d}{bban}"


def claims_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 43000))
    rng = t.rng
    t.messages.append({"role": "system", "content": CLAIMS_SYSTEM})
    name, email = _person(rng, rng.choice(["orange.fr", "free.fr", "laposte.net"]))
    policy = f"POL-{rng.choice(['AUTO', 'HOME'])}-{_n(rng, 8)}"
    plate = f"{_alnum(rng, 2, string.ascii_uppercase)}-{_n(rng, 3)}-" \
            f"{_alnum(rng, 2, string.ascii_uppercase)}"
    t.user(f"Bonjour, {name} here, policy {policy}. Someone hit my parked car ({plate}) on "
           "Tuesday and I want to file a claim. You can reach me at "
           f"{email}.")
    holder = f"PH{_n(rng, 9)}"
    iban = _iban(rng)
    t.calls(("get_policy", {"policy_number": policy},
             json.dumps({"policy_number": policy, "holder_id": holder, "holder": name,
                         "status": "in_force", "deductible": rng.choice([150, 300, 500]),
                         "vehicles": [{"plate": plate, "vin": f"VF1{_alnum(rng, 14)}"}],
                         "payout_iban": iban, "email": email})))
    t.say("Thanks. What time did it happen, and do you have the other driver's details?")
    other_plate = f"{_alnum(rng, 2, string.ascii_uppercase)}-{_n(rng, 3)}-" \
                  f"{_alnum(rng, 2, string.ascii_uppercase)}"
    t.user(f"Around 14:30 on 2025-09-09, rue Oberkampf. Their plate was {other_plate}, "
           "insurer MAAF. Photos are attached.")
    claim = f"CLM-{_n(rng, 9)}"
    t.calls(("open_claim", {"policy_number": policy, "type": "collision_parked",
                            "occurred_at": "2025-09-09T14:30", "location": "rue Oberkampf, Paris",
                            "third_party_plate": other_plate, "third_party_insurer": "MAAF"},
             json.dumps({"claim_id": claim, "status": "open",
                         "adjuster_id": f"ADJ-{_n(rng, 4)}"})))
    photos = [f"ph_{_alnum(rng, 10, string.ascii_lowercase + string.digits)}" for _ in range(3)]
    t.calls(*[("attach_document", {"claim_id": claim, "document_id": p, "kind": "photo"},
               json.dumps({"attached": p})) for p in photos])
    log_lines = []
    for d in range(rng.choice([10, 40, 120])):
        log_lines.append(f"2025-09-{10 + d % 15:02d} {rng.randint(8, 18):02d}:"
                         f"{rng.randint(0, 59):02d} ADJ note: "
                         + rng.choice(["photos reviewed", "called third-party insurer",
                                       "awaiting garage estimate", "liability 100% third party",
                                       "customer called for status", "rental car requested"]))
    garage = f"GAR-{_n(rng, 5)}"
    estimate = f"EST-{_n(rng, 6)}"
    amount = round(rng.uniform(900, 14000), 2)
    log_lines.insert(rng.randint(0, len(log_lines)),
                     f"2025-09-12 10:05 ADJ note: estimate {estimate} from garage {garage} "
                     f"received, {amount} EUR")
    t.user("Any news on the claim?")
    t.calls(("get_claim_log", {"claim_id": claim}, "\n".join(log_lines)))
    t.say(f"The garage estimate {estimate} came in at {amount} EUR.")
    t.user("Great, can you approve it and pay the garage directly? And book me a rental.")
    approve: dict[str, Any] = {"claim_id": claim, "estimate_id": estimate, "amount": amount,
                               "payee": garage}
    if amount > 10000:
        t.calls(("approve_estimate", approve, json.dumps({"error": "APPROVAL_NOTE_REQUIRED",
                 "message": "amount over 10000 EUR needs adjuster_note"})))
        approve = {**approve, "adjuster_note": "liability 100% third party; photos reviewed"}
    t.calls(("approve_estimate", approve, json.dumps({"approval_id": f"APR-{_n(rng, 6)}",
                                                      "status": "approved"})),
            ("book_rental", {"claim_id": claim, "days": rng.choice([3, 5, 7]),
                             "category": "compact", "pickup": "Paris Gare de Lyon"},
             json.dumps({"rental_id": f"RNT{_alnum(rng, 8)}", "status": "reserved"})))
    t.user("Also, the deductible: please refund it to me once MAAF pays you back.")
    t.calls(("schedule_payout", {"claim_id": claim, "holder_id": holder, "iban": iban,
                                 "kind": "deductible_refund", "condition": "subrogation_paid"},
             json.dumps({"payout_id": f"PAY-{_n(rng, 8)}", "status": "pending_condition"})))
    t.calls(("send_email", {"to": email, "template": "claim_update", "claim_id": claim,
                            "policy_number": policy},
             json.dumps({"status": "sent"})))
    return t.messages


# -- property management: listings, viewings, applications, leases, work orders ------------------


def property_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 45000))
    rng = t.rng
    name, email = _person(rng, rng.choice(["gmail.com", "yahoo.com", "hey.com"]))
    phone = _phone(rng)
    city = rng.choice(["Austin", "Denver", "Portland", "Raleigh"])
    t.user(f"Hi, {name} ({phone}). I'm looking for a 2-bedroom in {city} under $2,400, pets "
           f"allowed, moving in November. My e-mail is {email}.")
    listings = [{"listing_id": f"LST-{_n(rng, 6)}", "address": f"{rng.randint(100, 9999)} "
                 f"{rng.choice(['Oak', 'Maple', 'Cedar', 'Elm', 'Pine'])} "
                 f"{rng.choice(['St', 'Ave', 'Blvd'])} Unit {rng.randint(1, 40)}",
                 "beds": rng.choice([1, 2, 2, 3]), "rent": rng.randint(1500, 3200),
                 "pets": rng.random() < 0.6, "available": f"2025-{rng.choice([10, 11, 12])}-01"}
                for _ in range(rng.choice([10, 25, 50]))]
    t.calls(("search_listings", {"city": city, "beds": 2, "max_rent": 2400, "pets": True,
                                 "available_by": "2025-11-01"},
             json.dumps({"listings": listings, "count": len(listings)})))
    fit = [x for x in listings if x["beds"] == 2 and x["rent"] <= 2400 and x["pets"]] or \
        listings[:2]
    pick = fit[0]
    t.say(f"{len(fit)} match; the best is {pick['address']} at ${pick['rent']}.")
    t.user("Can I see it this Saturday afternoon?")
    agent_id = f"AGT-{_n(rng, 4)}"
    times = [f"2025-10-18T{h}:00" for h in (13, 14, 15, 16)]
    t.calls(("get_viewing_slots", {"listing_id": pick["listing_id"], "date": "2025-10-18"},
             json.dumps({"agent_id": agent_id, "slots": times})))
    viewing = f"VW-{_n(rng, 6)}"
    t.calls(("book_viewing", {"listing_id": pick["listing_id"], "start": times[1],
                              "name": name, "phone": phone, "agent_id": agent_id},
             json.dumps({"viewing_id": viewing, "status": "confirmed"})))
    t.user("Saw it, loved it. I'd like to apply. I have a dog, 20 kg.")
    app = f"APP-{_n(rng, 7)}"
    args: dict[str, Any] = {"listing_id": pick["listing_id"], "applicant_name": name,
                            "applicant_email": email, "pets": [{"type": "dog", "kg": 20}]}
    if rng.random() < 0.5:
        t.calls(("submit_application", args, json.dumps({"error": "missing field",
                 "field": "move_in_date"})))
        args = {**args, "move_in_date": "2025-11-01"}
    t.calls(("submit_application", args, json.dumps({"application_id": app,
                                                     "status": "screening",
                                                     "fee_usd": 45})))
    t.calls(("run_screening", {"application_id": app, "checks": ["credit", "eviction"]},
             json.dumps({"application_id": app, "result": "pass",
                         "report_id": f"SCR{_alnum(rng, 10)}"})))
    lease = f"LSE-{_n(rng, 6)}"
    t.user("Approved? Then please draft the lease starting November 1st, 12 months.")
    deposit = pick["rent"] + 300
    t.calls(("draft_lease", {"application_id": app, "listing_id": pick["listing_id"],
                             "start": "2025-11-01", "months": 12, "rent": pick["rent"],
                             "deposit": deposit, "pet_rent": 35},
             json.dumps({"lease_id": lease, "status": "draft",
                         "sign_url": f"https://sign.example.com/{_alnum(rng, 16).lower()}"})))
    t.calls(("send_for_signature", {"lease_id": lease, "signer_email": email},
             json.dumps({"envelope_id": f"ENV-{_alnum(rng, 12)}", "status": "sent"})))
    t.user("One more thing: the listing said the dishwasher at the unit leaks. Can you get "
           "that fixed before I move in? Call me to arrange access.")
    unit = f"UNIT-{pick['listing_id'][4:]}"
    wo = f"WO-{_n(rng, 6)}"
    t.calls(("create_work_order", {"unit_id": unit, "category": "appliance",
                                   "priority": "normal", "description": "dishwasher leaks",
                                   "contact_phone": phone, "due": "2025-10-31"},
             json.dumps({"work_order_id": wo, "status": "open",
                         "vendor": f"VND-{_n(rng, 4)}"})))
    t.calls(("send_sms", {"to": phone, "template": "work_order_opened", "work_order_id": wo,
                          "lease_id": lease},
             json.dumps({"status": "queued"})))
    return t.messages


# -- school administration: students, guardians, sections, grades, transcripts -------------------


def school_trace(seed: int) -> list[Msg]:
    t = _Trace(random.Random(seed + 47000))
    rng = t.rng
    guardian, email = _person(rng, rng.choice(["gmail.com", "outlook.com", "protonmail.com"]))
    phone = _phone(rng)
    child_first = rng.choice(["Leo", "Maya", "Noah", "Zara", "Ethan", "Ava"])
    student = f"S{_n(rng, 7)}"
    t.user(f"Hello, I'm {guardian}, parent of {child_first} (student {student}). I'd like to "
           "move them from Algebra I to Geometry this term, and I need their grade report "
           f"and an official transcript sent to a new school. Phone {phone}, e-mail {email}.")
    t.calls(("get_student", {"student_id": student},
             json.dumps({"student_id": student, "name": f"{child_first} {guardian.split()[1]}",
                         "grade_level": rng.choice([9, 10]), "homeroom": f"HR-{_n(rng, 3)}",
                         "guardians": [{"name": guardian, "email": email, "phone": phone,
                                        "relationship": "parent"}],
                         "term": "2025-FALL"})))
    sections = [{"section_id": f"{course}-{_n(rng, 3)}", "course": course,
                 "teacher": f"{rng.choice(['Ms.', 'Mr.', 'Dr.'])} {rng.choice(NAMES)[1]}",
                 "period": rng.randint(1, 7), "seats_left": rng.randint(0, 6)}
                for course in ("MATH-GEO", "MATH-GEO", "MATH-GEO", "MATH-ALG1", "MATH-ALG1")]
    t.calls(("list_sections", {"term": "2025-FALL", "courses": ["MATH-GEO", "MATH-ALG1"]},
             json.dumps({"sections": sections})),
            ("get_schedule", {"student_id": student, "term": "2025-FALL"},
             json.dumps({"enrolments": [{"section_id": sections[3]["section_id"],
                                         "period": sections[3]["period"]},
                                        {"section_id": f"ENG-10-{_n(rng, 3)}", "period": 2},
                                        {"section_id": f"BIO-{_n(rng, 3)}", "period": 4}]})))
    geo = [s for s in sections if s["course"] == "MATH-GEO"]
    open_geo = [s for s in geo if s["seats_left"] > 0] or geo
    target = open_geo[0]
    drop = sections[3]["section_id"]
    t.say(f"Geometry section {target['section_id']} (period {target['period']}) has "
          f"{target['seats_left']} seats. Switching now.")
    move = {"student_id": student, "drop_section": drop, "add_section": target["section_id"],
            "term": "2025-FALL", "reason": "placement"}
    if target["seats_left"] == 0 or rng.random() < 0.4:
        t.calls(("change_enrolment", move, json.dumps({"error": "SECTION_FULL",
                 "section_id": target["section_id"]})))
        target = next((s for s in geo if s is not target), target)
        move = {**move, "add_section": target["section_id"]}
        t.say(f"That one filled up; trying {target['section_id']}.")
    t.calls(("change_enrolment", move, json.dumps({"status": "changed",
                                                   "change_id": f"CHG-{_n(rng, 6)}"})))
    t.user("Thanks. Now the grade report, please.")
    rows = ["student_id,section_id,assignment,score,max,date"]
    for _ in range(rng.choice([20, 80, 200])):
        rows.append(f"{student},{rng.choice([drop, 'ENG-10-100', 'BIO-200'])},"
                    f"{rng.choice(['quiz', 'homework', 'lab', 'essay'])}-{rng.randint(1, 30)},"
                    f"{rng.randint(4, 20)},20,2025-09-{rng.randint(2, 30):02d}")
    t.calls(("export_grades", {"student_id": student, "term": "2025-FALL", "format": "csv"},
             "\n".join(rows)))
    t.say("Here is the grade report so far.")
    school = rng.choice(["Lincoln High School", "Westview Academy", "Harbor Prep"])
    registrar = f"registrar@{school.lower().replace(' ', '')}.example.org"
    t.user(f"And the official transcript goes to {school}, {registrar}. Mark it urgent.")
    req = f"TRQ-{_n(rng, 6)}"
    t.calls(("request_transcript", {"student_id": student, "recipient": school,
                                    "recipient_email": registrar, "priority": "urgent",
                                    "consent_by": guardian},
             json.dumps({"request_id": req, "status": "queued", "fee_usd": 10})))
    t.calls(("notify_guardian", {"student_id": student, "email": email, "phone": phone,
                                 "channel": "both", "template": "transcript_requested",
                                 "request_id": req},
             json.dumps({"status": "sent"})))
    return t.messages


def heldout4_traces(count: int = 16, offset: int = 0) -> list[list[Msg]]:
    """``count`` traces of the fourth held-out set, cycling clinic scheduling, insurance
    claims, property management and school administration."""
    makers = (clinic_trace, claims_trace, property_trace, school_trace)
    return [makers[i % len(makers)](offset + i) for i in range(count)]
