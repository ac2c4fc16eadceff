import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  ContextFoldClient, ContextFoldError, STAND_IN_PREFIX, storedSeqOf, type ContextResponse,
  type Message,
} from "../src/index.js";
import { serve, type Served } from "./server.js";

let served: Served;
let client: ContextFoldClient;

before(async () => {
  served = await serve({ fold: "inline" });  // the append's answer carries its fold
  client = new ContextFoldClient({ baseUrl: served.url, apiKey: served.key("ts") });
});

after(async () => {
  await served.stop();
});

const id = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;

describe("the typed client against a live contextfold serve", () => {
  test("append is atomic and idempotent by id", async () => {
    const s = id("chat");
    const batch: Message[] = [
      { role: "user", content: "I fly to Lisbon on 3 May", id: "m1" },
      { role: "assistant", content: "Noted: Lisbon, 3 May.", id: "m2" },
    ];
    const first = await client.append(s, batch);
    assert.deepEqual(first.appended.map((a) => a.seq), [1, 2]);
    const again = await client.append(s, batch);
    assert.equal(again.appended.length, 0);
    assert.equal(again.duplicates.length, 2);
    assert.equal(again.stats.last_seq, 2);
  });

  test("context with a query recalls a folded turn", async () => {
    const s = id("recall");
    await client.putSettings(s, { budget: 400 });
    const code = (room: number) => String(7000 + room * 13);
    const turns: Message[] = [];
    for (let room = 10; room < 34; room++) {  // two-digit rooms: one-digit terms are not searched
      turns.push({ role: "user", content: `The locker code for room ${room} is ${code(room)}.` });
      turns.push({ role: "assistant", content: `Noted the code of room ${room}.` });
    }
    for (let i = 0; i < 12; i++) {
      turns.push({ role: "user", content: `I read chapter ${i} of the Dune book today.` });
      turns.push({ role: "assistant", content: `Nice, tell me more about chapter ${i}.` });
    }
    await client.append(s, turns);
    await client.fold(s, true);
    // a room whose code the summary does not quote: only recall can bring it back
    const summary = (await client.summary(s)).summary?.text ?? "";
    const room = [...Array(24).keys()].map((r) => r + 10).filter((r) => !summary.includes(code(r)))[0];
    assert.ok(room !== undefined, `the summary quoted every planted code: ${summary}`);
    const plain = await client.context(s);
    assert.deepEqual(plain.recalled, []);
    const ctx = await client.context(s, { query: `locker code for room ${room}` });
    assert.ok(ctx.recalled.length > 0);
    assert.ok(ctx.tokens <= (ctx.budget ?? 0));
    assert.ok(ctx.messages.some((m) => String(m.content).includes(code(room))));
  });

  test("context, summary, messages, ledger, fold, usage, settings, delete", async () => {
    const s = id("all");
    await client.putSettings(s, { budget: 2000, keep_last: 2 });
    const turns: Message[] = [];
    for (let i = 0; i < 20; i++) {
      turns.push({ role: "user", content: `question ${i} ${"lorem ipsum ".repeat(40)}`, id: `u${i}` });
      turns.push({ role: "assistant", content: `answer ${i} ${"dolor sit ".repeat(40)}`, id: `a${i}` });
    }
    const appended = await client.append(s, turns);
    assert.equal(appended.fold?.status, "committed");
    for (const format of ["openai", "anthropic", "gemini"] as const) {
      const ctx = await client.context(s, { system: "Be brief.", format });
      assert.ok(ctx.tokens <= (ctx.budget ?? 0));
      assert.ok(ctx.summary !== null);
    }
    const summary = await client.summary(s);
    assert.ok(summary.summary && summary.summary.through_seq > 0);
    const page = await client.messages(s, { limit: 5 });
    assert.equal(page.messages.length, 5);
    assert.equal(page.next_after_seq, 5);
    const forced = await client.fold(s, true);
    assert.equal(forced.status, "committed");
    const ledger = await client.ledger(s);
    assert.ok(ledger.entries.length >= 2);
    const usage = await client.recordUsage(s, 123);
    assert.equal(usage.input_tokens, 123);
    assert.equal((await client.getSettings(s)).budget, 2000);
    assert.ok((await client.usage()).folds >= 2);
    const listed: string[] = [];
    for await (const info of client.allSessions(1)) listed.push(info.session_id);
    assert.ok(listed.includes(s));
    await client.deleteSession(s);
    await assert.rejects(client.summary(s), (e: unknown) =>
      e instanceof ContextFoldError && e.status === 404 && e.code === "not_found");
  });

  test("errors are typed problems", async () => {
    const bad = new ContextFoldClient({ baseUrl: served.url, apiKey: "nope" });
    await assert.rejects(bad.listSessions(), (e: unknown) =>
      e instanceof ContextFoldError && e.status === 401 && e.code === "unauthorized");
    await assert.rejects(
      client.append(id("bad"), [{ role: "tool", content: "orphan", tool_call_id: "c1" }]),
      (e: unknown) => e instanceof ContextFoldError && e.status === 422
        && e.code === "validation_error");
    await assert.rejects(client.putSettings(id("bad"), { budget: 1000, target: 5000 }),
      (e: unknown) => e instanceof ContextFoldError && e.code === "config_error");
  });

  test("search finds stored messages, best first, and only the tenant's own", async () => {
    const s = id("search");
    await client.append(s, [
      { role: "user", content: "I booked the ferry to Bodrum for the 14th" },
      { role: "assistant", content: "Your ferry is confirmed." },
      { role: "user", content: "My cat is called Pamuk" },
    ]);
    const found = await client.search(s, "When is the ferry to Bodrum?");
    assert.deepEqual(found.terms, ["ferry", "bodrum"]);
    assert.deepEqual(found.hits.map((h) => h.seq), [1, 2]);
    assert.equal(found.hits[0]!.matched, 2);
    assert.ok(found.hits[0]!.snippet.includes("Bodrum"));
    assert.equal(found.hits[0]!.role, "user");
    assert.equal((await client.search(s, "pamuk", { limit: 1, folded: false })).hits[0]!.seq, 3);
    assert.deepEqual((await client.search(s, "pamuk", { folded: true })).hits, []);
    await assert.rejects(client.search(s, "ferry", { limit: 0 }), (e: unknown) =>
      e instanceof ContextFoldError && e.status === 422 && e.code === "validation_error");
    const other = new ContextFoldClient({ baseUrl: served.url, apiKey: served.key("other") });
    await assert.rejects(other.search(s, "ferry"), (e: unknown) =>
      e instanceof ContextFoldError && e.status === 404);
  });

  test("another tenant's session is a 404", async () => {
    const s = id("private");
    await client.append(s, [{ role: "user", content: "secret" }]);
    const other = new ContextFoldClient({ baseUrl: served.url, apiKey: served.key("other") });
    await assert.rejects(other.context(s), (e: unknown) =>
      e instanceof ContextFoldError && e.status === 404);
  });

  test("the README's agent loop: tool turns, agent preset, context each step", async () => {
    const s = id("agent");
    await client.putSettings(s, {
      preset: "agent",
      task_context: "Rebook the customer's cancelled flight to Lisbon",
      budget: 1500,
      keep_last: 4,
    });
    await client.append(s, [{ role: "user", content: "My flight TP1351 was cancelled, rebook me." }]);
    // a stand-in for the model: one tool call per step, then a final answer
    const model = (step: number): Message => step < 12
      ? { role: "assistant", content: null, tool_calls: [{ id: `call_${step}`, type: "function",
          function: { name: "search_flights", arguments: JSON.stringify({ to: "LIS", day: step }) } }] }
      : { role: "assistant", content: "Rebooked on TP1353, seat 12A." };
    let masked = 0;
    for (let step = 0; step <= 12; step++) {
      const ctx = await client.context(s, { system: "You are a travel agent.", format: "openai" });
      assert.ok(ctx.tokens <= 1500);
      masked = Math.max(masked, ctx.masked);
      const reply = model(step);
      const turn: Message[] = [{ ...reply, id: `assistant-${step}` }];
      for (const call of reply.tool_calls ?? []) {
        turn.push({ role: "tool", tool_call_id: call.id, id: `tool-${step}`,
                    content: JSON.stringify({ flights: Array.from({ length: 15 }, (_, i) =>
                      ({ number: `TP${1300 + i}`, seats: i, status: "open" })) }) });
      }
      await client.append(s, turn);
    }
    const last = await client.context(s, { format: "anthropic" });
    assert.ok(last.tokens <= 1500);
    // the agent preset shows older results as stand-ins first, and folds when that is not
    // enough
    assert.ok(masked > 0);
    const ledger = await client.ledger(s);
    assert.ok(ledger.entries.some((e) => e.outcome === "committed"));
  });

  test("an agent loop with observation masking: stand-ins, an elided result, the seqs", async () => {
    const s = id("masked");
    const settings = await client.putSettings(s, { preset: "agent", budget: 2000, keep_last: 2 });
    assert.deepEqual(settings.masking, { keep: 3, exclude_tools: [], keep_call_args: true,
                                         trigger_tokens: null, fact_chars: null });
    await client.append(s, [{ role: "user", content: "Rebook every reservation of mia_li_3668." }]);
    const paired = (ctx: ContextResponse) => {
      let open = new Set<string>();
      for (const m of ctx.messages as Message[]) {
        if (m.role === "tool") {
          assert.ok(open.delete(m.tool_call_id!), "a result without its call");
          continue;
        }
        assert.equal(open.size, 0, "a call without its result");
        open = new Set((m.tool_calls ?? []).map((c) => c.id));
      }
      assert.equal(open.size, 0);
    };
    const standIns = new Map<string, string>();
    let ctx: ContextResponse | undefined;
    for (let step = 0; step < 8; step++) {
      ctx = await client.context(s, { system: "You are a travel agent." });
      assert.ok(ctx.tokens <= 2000);
      paired(ctx);
      for (const m of ctx.messages as Message[]) {
        if (m.role !== "tool" || typeof m.content !== "string") continue;
        if (!m.content.startsWith(STAND_IN_PREFIX)) continue;
        const before = standIns.get(m.tool_call_id!);
        assert.ok(before === undefined || before === m.content, "a stand-in changed");
        standIns.set(m.tool_call_id!, m.content);
      }
      const call = `call_${step}`;
      await client.append(s, [
        { role: "assistant", content: null, id: `a-${step}`, tool_calls: [{ id: call,
          type: "function", function: { name: "get_reservation",
                                        arguments: JSON.stringify({ id: `R${step}` }) } }] },
        { role: "tool", tool_call_id: call, id: `t-${step}`, content: JSON.stringify({
          reservation_id: `R${step}`, status: "confirmed", flights: Array.from({ length: 12 },
            (_, j) => ({ number: `HX${100 + j}`, date: "2024-05-20", seat: `${j}A` })) }) },
      ]);
    }
    ctx = await client.context(s, { system: "You are a travel agent." });
    paired(ctx);
    assert.ok(ctx.masked > 0 && ctx.elided.length === 0);
    const masked = (ctx.messages as Message[]).filter((m) =>
      typeof m.content === "string" && m.content.startsWith(STAND_IN_PREFIX));
    assert.equal(masked.length, ctx.masked);
    // a stand-in names the seq of the whole result, which the store keeps
    const seq = storedSeqOf(masked[0]!);
    assert.ok(seq !== null);
    const whole = await client.storedMessage(s, seq);
    assert.ok(whole && String(whole.message.content).startsWith('{"reservation_id"'));
    assert.equal(storedSeqOf({ content: "a plain result" }), null);

    // a result too big for the budget is cut, head + tail, and named in `elided`
    const log = Array.from({ length: 3000 }, (_, i) => `line ${i}: status ok`).join("\n");
    const appended = await client.append(s, [
      { role: "assistant", content: null, tool_calls: [{ id: "big", type: "function",
        function: { name: "read_log", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "big", content: log },
    ]);
    const bigSeq = appended.appended[1]!.seq;
    ctx = await client.context(s, { format: "anthropic" });
    assert.ok(ctx.tokens <= 2000 && ctx.truncated);
    assert.deepEqual(ctx.elided, [bigSeq]);
    ctx = await client.context(s);
    const cut = (ctx.messages as Message[]).find((m) => m.tool_call_id === "big")!;
    assert.equal(storedSeqOf(cut), bigSeq);
    assert.equal((await client.storedMessage(s, bigSeq))?.message.content, log);
  });

  test("masking off, and invalid masking settings are a 422 that changes nothing", async () => {
    const s = id("unmasked");
    const off = await client.putSettings(s, { preset: "agent", budget: 2000, masking: false });
    assert.equal(off.masking, null);
    await client.append(s, [{ role: "user", content: "Look up the reservations." }]);
    for (let step = 0; step < 8; step++) {
      await client.append(s, [
        { role: "assistant", content: null, tool_calls: [{ id: `c${step}`, type: "function",
          function: { name: "get_reservation", arguments: "{}" } }] },
        { role: "tool", tool_call_id: `c${step}`, content: JSON.stringify({
          flights: Array.from({ length: 12 }, (_, j) => ({ number: `HX${j}`, seat: `${j}A` })) }) },
      ]);
      const ctx = await client.context(s);
      assert.equal(ctx.masked, 0);
      assert.ok((ctx.messages as Message[]).every((m) =>
        !(typeof m.content === "string" && m.content.startsWith(STAND_IN_PREFIX))));
    }
    const set = await client.putSettings(s, { preset: "agent", masking: { keep: 1 } });
    assert.equal(set.masking?.keep, 1);
    for (const masking of [{ keep: -1 }, { fact_chars: 3 }, { exclude_tools: [""] }]) {
      await assert.rejects(client.putSettings(s, { preset: "agent", masking }), (e: unknown) =>
        e instanceof ContextFoldError && e.status === 422 && e.code === "validation_error"
        && (e.problem?.detail ?? "").startsWith("masking."));
      assert.deepEqual(await client.getSettings(s), set);
    }
  });
});
