import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ContextFoldClient, ContextFoldError, type Message } from "../src/index.js";
import { serve, type Served } from "./server.js";

let served: Served;
let client: ContextFoldClient;

before(async () => {
  served = await serve();
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
    const model = (step: number): Message => step < 6
      ? { role: "assistant", content: null, tool_calls: [{ id: `call_${step}`, type: "function",
          function: { name: "search_flights", arguments: JSON.stringify({ to: "LIS", day: step }) } }] }
      : { role: "assistant", content: "Rebooked on TP1353, seat 12A." };
    for (let step = 0; step <= 6; step++) {
      const ctx = await client.context(s, { system: "You are a travel agent.", format: "openai" });
      assert.ok(ctx.tokens <= 1500);
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
    const ledger = await client.ledger(s);
    assert.ok(ledger.entries.some((e) => e.outcome === "committed"));
  });
});
