// contextfold inspector. Plain JavaScript, no dependencies, no network beyond this
// server's /v1 API (the same API every client uses). The API key is kept in
// sessionStorage for this browser tab only.
"use strict";

const KEY_STORE = "contextfold.key";
const PAGE = 50;
const TIMELINE_PAGE = 100;
const SERIES_WINDOW = 1000;

const state = {
  dev: false,
  flash: null,     // a status message to show once the next view has loaded
  list: { cursor: null, stack: [], q: "", sort: "activity", rows: [] },
  session: null,   // { id, info, seriesBefore, folds: Map(version -> row), ... }
};

// -- small DOM helpers ---------------------------------------------------------------

const $ = (sel) => document.querySelector(sel);
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) el.setAttribute(k, v);
  }
  for (const c of children.flat()) if (c) el.append(c instanceof Node ? c : document.createTextNode(c));
  return el;
}
const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
const when = (t) => (t ? new Date(t).toLocaleString() : "–");
function setStatus(text, kind) {
  const el = $("#status");
  el.hidden = !text;
  el.textContent = text || "";
  el.className = "banner" + (kind ? " " + kind : "");
}

// -- the API ---------------------------------------------------------------------------

function key() { return sessionStorage.getItem(KEY_STORE) || ""; }

class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.code = problem && problem.code;
  }
}

async function api(path, options = {}) {
  const headers = { Accept: "application/json", ...(options.headers || {}) };
  if (key()) headers.Authorization = "Bearer " + key();
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: options.method || "GET",
    headers,
    body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
  });
  if (res.status === 204) return null;
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    if (res.status === 401) showKeyNeeded();
    throw new ApiError(res.status, body);
  }
  return body;
}
const enc = encodeURIComponent;

function showKeyNeeded() {
  setStatus(state.dev ? "That key was not accepted." :
    "Enter an API key of your tenant (contextfold keys create --tenant NAME) to see its sessions.",
    "error");
  $("#key-input").focus();
}

function fail(err) {
  if (err instanceof ApiError && err.status === 401) return;
  setStatus(err instanceof ApiError ? `${err.message} (${err.code || err.status})` : String(err),
    "error");
}

// -- sessions list ---------------------------------------------------------------------

async function loadList(cursor) {
  const l = state.list;
  const params = new URLSearchParams({ limit: String(PAGE), sort: l.sort });
  if (l.q) params.set("q", l.q);
  if (cursor) params.set("cursor", cursor);
  const page = await api("/v1/inspect/sessions?" + params);
  l.cursor = page.next_cursor;
  l.rows = page.sessions;
  $("#list-count").textContent = `${fmt(page.total)} session${page.total === 1 ? "" : "s"}` +
    (l.q ? ` matching “${l.q}”` : "") + ` · page ${l.stack.length + 1}`;
  renderRows();
  $("#next-page").disabled = !page.next_cursor;
  $("#first-page").disabled = l.stack.length === 0;
  setStatus(state.flash || "");  // a message left by the action that led here, else clear
  state.flash = null;
}

function waitingNote(r) {
  return r.waiting_messages ? h("span", { class: "waiting" }, `+ ${fmt(r.waiting_messages)} ` +
    `live message${r.waiting_messages === 1 ? "" : "s"} waiting to fold (stored, not sent; ` +
    `${fmt(r.stored_tokens)} tokens stored)`) : null;
}

function budgetBar(tokens, budget) {
  if (!budget) return h("span", { class: "bar-label" }, fmt(tokens));
  const pct = Math.min(100, (100 * tokens) / budget);
  const bar = h("div", { class: "bar" + (tokens > budget ? " over" : ""), role: "img",
    "aria-label": `${fmt(tokens)} of ${fmt(budget)} tokens (${Math.round(100 * tokens / budget)}%)` },
    h("span"));
  bar.firstChild.style.width = pct + "%";
  return h("div", {}, bar, h("span", { class: "bar-label" }, `${fmt(tokens)} / ${fmt(budget)}`));
}

function renderRows() {
  const body = $("#sessions-table tbody");
  body.replaceChildren(...state.list.rows.map((r) => h("tr", {},
    h("td", {}, h("a", { href: "#/s/" + enc(r.session_id) }, r.session_id)),
    h("td", { class: "num" }, `${fmt(r.messages)} (${fmt(r.live)} / ${fmt(r.folded)})`),
    h("td", { class: "num" }, fmt(r.folds)),
    h("td", { class: "num" + (r.failed_folds ? " outcome-failed" : "") }, fmt(r.failed_folds)),
    h("td", {}, budgetBar(r.context_tokens, r.budget), waitingNote(r)),
    h("td", { class: "num" }, fmt(r.summarizer_tokens)),
    h("td", {}, when(r.last_activity)),
  )));
  if (!state.list.rows.length) {
    body.append(h("tr", {}, h("td", { colspan: "7", class: "muted" }, "No sessions.")));
  }
}

function sortPage(th) {
  const k = th.dataset.key;
  const dir = th.getAttribute("aria-sort") === "descending" ? 1 : -1;
  for (const other of th.parentNode.children) other.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
  state.list.rows.sort((a, b) => (a[k] > b[k] ? dir : a[k] < b[k] ? -dir : 0));
  renderRows();
}

// -- one session -------------------------------------------------------------------------

async function openSession(id, foldVersion) {
  if (!state.session || state.session.id !== id) {
    clearSession();
    const sess = { id, folds: new Map(), foldsBefore: null, timelineAfter: 0, seriesBefore: null };
    state.session = sess;
    $("#session-title").textContent = "Session " + id;
    try {
      await loadSessionInfo();
    } catch (err) {
      if (state.session === sess) state.session = null;  // nothing of it is shown; retry later
      throw err;
    }
    $("#session-actions").hidden = false;
    await Promise.all([loadFolds(), loadNow(), loadTimeline(), loadSeries(null)]);
  }
  if (foldVersion) await showFold(Number(foldVersion));
}

// Everything a session view shows, emptied before another session (or none) is shown, so
// nothing of the previous one stays on the page while the next loads or when it is missing.
function clearSession() {
  hideTip();
  $("#session-actions").hidden = true;
  $("#session-stats").replaceChildren();
  $("#session-notes").hidden = true;
  $("#chart").replaceChildren();
  $("#chart-caption").textContent = "";
  $("#chart-earlier").disabled = true;
  $("#chart-latest").disabled = true;
  $("#folds-table tbody").replaceChildren();
  $("#more-folds").hidden = true;
  $("#fold-detail").hidden = true;
  $("#now-caption").textContent = "";
  $("#now-table tbody").replaceChildren();
  $("#timeline").replaceChildren();
  $("#timeline-caption").textContent = "";
  $("#more-timeline").hidden = true;
}

// A loader's answer is drawn only if its session is still the one shown.
function current(sess) { return state.session === sess; }

const base = () => "/v1/sessions/" + enc(state.session.id);

async function loadSessionInfo() {
  const sess = state.session;
  const info = await api(base() + "/inspect");
  if (!current(sess)) return;
  sess.info = info;
  const stat = (label, value) => h("div", {}, h("dt", {}, label), h("dd", {}, value));
  $("#session-stats").replaceChildren(
    stat("Messages", fmt(info.messages)),
    stat("Live / folded", `${fmt(info.live)} / ${fmt(info.folded)}`),
    stat("Folds", fmt(info.folds)),
    stat("Failed folds", fmt(info.failed_folds)),
    stat("Context sent / budget", `${fmt(info.context_tokens)} / ${fmt(info.budget)}`),
    stat("Stored live, waiting to fold", info.waiting_messages
      ? `${fmt(info.waiting_messages)} messages (${fmt(info.stored_tokens)} tokens stored)`
      : "none"),
    stat("Summary tokens", fmt(info.summary_tokens)),
    stat("Summarizer tokens", fmt(info.summarizer_tokens)),
    stat("Last activity", when(info.last_activity)),
    stat("Retention", `${info.retention}${info.summary_history ? ", summary history kept" : ""}`),
  );
  const notes = [];
  if (info.retention === "delete") {
    notes.push("Delete retention: folded messages were removed from the store for privacy, so " +
      "the timeline starts at the first live message and past turns' context sizes are shown " +
      "only at folds.");
  }
  if (!info.summary_history) {
    notes.push("Summary history is off for this store, so older summaries were not kept: a " +
      "fold shows its numbers and the current summary, but no before/after diff.");
  }
  $("#session-notes").hidden = !notes.length;
  $("#session-notes").textContent = notes.join(" ");
}

// -- the chart ---------------------------------------------------------------------------

async function loadSeries(before) {
  const params = new URLSearchParams({ limit: String(SERIES_WINDOW) });
  if (before) params.set("before_seq", String(before));
  const sess = state.session;
  const series = await api(base() + "/inspect/series?" + params);
  if (!current(sess)) return;
  sess.series = series;
  $("#chart-earlier").disabled = !series.next_before_seq;
  $("#chart-latest").disabled = !before;
  drawChart(series);
}

// drawChart, showTip and hideTip: inspector-chart.js

// -- folds -------------------------------------------------------------------------------

async function loadFolds() {
  const params = new URLSearchParams({ limit: "50" });
  const sess = state.session;
  if (sess.foldsBefore) params.set("before_id", String(sess.foldsBefore));
  const page = await api(base() + "/inspect/folds?" + params);
  if (!current(sess)) return;
  sess.foldsBefore = page.next_before_id;
  $("#more-folds").hidden = !page.next_before_id;
  const body = $("#folds-table tbody");
  for (const f of page.folds) {
    if (f.version) sess.folds.set(f.version, f);
    body.append(h("tr", {},
      h("td", {}, f.version ? String(f.version) : "–"),
      h("td", { class: "outcome-" + f.outcome }, f.outcome),
      h("td", {}, f.hi ? `${fmt(f.lo)}–${fmt(f.hi)} (${fmt(f.messages_folded)})` : "–"),
      h("td", { class: "num" }, fmt(f.tokens_folded)),
      h("td", { class: "num" }, fmt(f.summary_tokens)),
      h("td", { class: "num" }, `${fmt(f.input_tokens)} / ${fmt(f.output_tokens)}`),
      h("td", { class: "num" }, `${fmt(Math.round(f.latency_ms))} ms`),
      h("td", {}, f.model || "–"),
      h("td", {}, f.version
        ? h("button", { type: "button", class: "diff-button", onclick: () => goFold(f.version),
            "aria-label": `Show the summary diff of fold ${f.version}` }, "Summary diff")
        : f.error || f.error_class
          ? h("span", { class: "error-text" }, f.error || f.error_class)
          : "–"),
    ));
  }
  if (!body.children.length) {
    body.append(h("tr", {}, h("td", { colspan: "9", class: "muted" }, "No folds yet.")));
  }
}

function goFold(version) {
  location.hash = "#/s/" + enc(state.session.id) + "/fold/" + version;
}

async function showFold(version) {
  const d = await api(base() + "/inspect/folds/" + version);
  const box = $("#fold-detail");
  box.hidden = false;
  $("#fold-title").textContent = `Fold ${d.version}: messages ${fmt(d.lo)}–${fmt(d.through_seq)}`;
  const row = d.ledger;
  const stat = (label, value) => h("div", {}, h("dt", {}, label), h("dd", {}, value));
  $("#fold-meta").replaceChildren(
    stat("Ran after message", fmt(d.at_seq)),
    stat("Summary tokens", `${fmt(d.before_tokens)} → ${fmt(d.summary_tokens)}`),
    stat("Summarizer in / out", row ? `${fmt(row.input_tokens)} / ${fmt(row.output_tokens)}` : "–"),
    stat("Calls", row ? fmt(row.calls) : "–"),
    stat("Latency", row ? `${fmt(Math.round(row.latency_ms))} ms` : "–"),
    stat("Model", (row && row.model) || "–"),
    stat("Reason", (row && row.reason) || "–"),
    stat("When", when(d.created_at)),
  );
  const warn = $("#fold-warnings");
  if (d.lost_facts === null) {
    warn.replaceChildren(h("p", { class: "note" },
      "The summary before this fold was not kept (summary history is off), so no diff or fact " +
      "check can be shown." + (d.after !== null ? " The summary after it is the current one:" : "")));
  } else if (d.lost_facts.length) {
    warn.replaceChildren(h("div", { class: "warnings", role: "alert" },
      h("strong", {}, `Fact check: ${d.lost_facts.length} fact${d.lost_facts.length === 1 ? "" : "s"} ` +
        "of the previous summary are gone"),
      h("ul", {}, d.lost_facts.map((f) => h("li", {}, f)))));
  } else {
    warn.replaceChildren(h("p", { class: "warnings none" },
      "Fact check: no names, numbers, dates or ids of the previous summary were lost."));
  }
  const diff = $("#fold-diff");
  if (d.diff) {
    diff.replaceChildren(...d.diff.map((op) => op.op === "insert" ? h("ins", {}, op.text)
      : op.op === "delete" ? h("del", {}, op.text) : document.createTextNode(op.text)));
  } else {
    diff.replaceChildren(document.createTextNode(d.after || "(not kept)"));
  }
  box.focus();
  box.scrollIntoView({ block: "start" });
}

// -- what the model sees now ---------------------------------------------------------------

function textOf(msg) {
  const c = msg.content;
  let text = typeof c === "string" ? c : Array.isArray(c)
    ? c.map((p) => p.text || (p.type ? `[${p.type}]` : "")).join(" ") : "";
  if (msg.tool_calls) {
    text += msg.tool_calls.map((t) => `\n→ ${t.function.name}(${typeof t.function.arguments ===
      "string" ? t.function.arguments : JSON.stringify(t.function.arguments)})`).join("");
  }
  return text;
}

// A message's text, whole up to ``limit`` characters; a longer one shows its head, says
// it is cut and how long it is, and a button shows all of it.
function fullText(text, limit) {
  const box = h("div", { class: "text" });
  if (text.length <= limit) { box.textContent = text; return box; }
  const show = h("button", { type: "button", class: "show-all",
    "aria-label": `Show all ${fmt(text.length)} characters` }, `Show all`);
  box.append(text.slice(0, limit), h("span", { class: "cut-note" },
    ` … (cut: ${fmt(text.length)} characters) `), show);
  show.addEventListener("click", () => { box.replaceChildren(text); });
  return box;
}

async function loadNow() {
  const sess = state.session;
  const ctx = await api(base() + "/inspect/context");
  if (!current(sess)) return;
  $("#now-caption").textContent = `${fmt(ctx.tokens)} tokens of a ${fmt(ctx.budget)} budget, ` +
    `${ctx.messages.length} messages` + (ctx.omitted ? `; ${fmt(ctx.omitted)} older live ` +
    "messages left out of this view to stay within the budget (still stored)" : "") +
    (ctx.masked ? `; ${fmt(ctx.masked)} older tool results shown as stand-ins (masking)` : "") +
    (ctx.elided.length ? `; ${fmt(ctx.elided.length)} shown cut, head + tail (whole in the ` +
      "store)" : "") +
    (ctx.bridged ? "; a one-line user turn bridges the start" : "") +
    (ctx.recalled && ctx.recalled.length ? `; ${fmt(ctx.recalled.length)} folded messages ` +
      `recalled for the newest question (seqs ${ctx.recalled.join(", ")})` : "") + ".";
  $("#now-table tbody").replaceChildren(...ctx.messages.map((m, i) => h("tr",
    m.kind === "recalled" ? { class: "recalled" } : {},
    h("td", { class: "num" }, String(i + 1)),
    h("td", {}, m.kind === "recalled" ? h("span", { class: "badge" }, "recalled") : m.kind),
    h("td", {}, m.message.role + (m.message.name ? ` (${m.message.name})` : "")),
    h("td", { class: "num" }, fmt(m.tokens)),
    h("td", { class: "content" }, fullText(textOf(m.message), 2000)),
  )));
}

// -- timeline ------------------------------------------------------------------------------

async function loadTimeline() {
  const sess = state.session;
  const page = await api(base() + `/inspect/timeline?after_seq=${sess.timelineAfter}` +
    `&limit=${TIMELINE_PAGE}`);
  if (!current(sess)) return;
  if (sess.timelineAfter === 0) {
    $("#timeline-caption").textContent = page.deleted_before
      ? `${fmt(page.deleted_before)} folded messages were deleted (delete retention); ` +
        "the timeline starts after them."
      : "Every stored message, oldest first; folded ones are marked with their fold.";
    sess.openGroup = null;
  }
  const list = $("#timeline");
  for (const m of page.messages) {
    const msg = m.message;
    const item = h("li", { class: "msg" + (m.folded ? " folded" : ""), "data-seq": m.seq },
      h("div", { class: "meta" },
        h("span", { class: "role" }, msg.role + (msg.name ? ` (${msg.name})` : "")),
        h("span", {}, "#" + m.seq),
        h("span", {}, fmt(m.tokens) + " tokens"),
        m.fold_version ? h("a", { class: "badge", href: "#/s/" + enc(sess.id) + "/fold/" +
          m.fold_version }, `folded by fold ${m.fold_version}`) : null,
        m.folded && !m.fold_version ? h("span", { class: "badge" }, "folded") : null),
      h("div", { class: "content" }, fullText(textOf(msg), 4000)));
    if (msg.role === "assistant" && msg.tool_calls && msg.tool_calls.length) {
      const group = h("li", { class: "tool-group" },
        h("div", { class: "group-title" }, `Tool calls: ${msg.tool_calls.map((t) =>
          t.function.name).join(", ")}`), h("ol", { class: "timeline" }, item));
      group.dataset.calls = msg.tool_calls.map((t) => t.id).join(" ");
      sess.openGroup = group;
      list.append(group);
    } else if (msg.role === "tool" && sess.openGroup &&
               sess.openGroup.dataset.calls.split(" ").includes(msg.tool_call_id)) {
      sess.openGroup.querySelector("ol").append(item);
    } else {
      sess.openGroup = null;
      list.append(item);
    }
  }
  sess.timelineAfter = page.next_after_seq || sess.timelineAfter;
  $("#more-timeline").hidden = !page.next_after_seq;
}

// -- actions -------------------------------------------------------------------------------

async function foldNow() {
  const button = $("#fold-now");
  button.disabled = true;
  try {
    const result = await api(base() + "/fold", { method: "POST", body: { force: true } });
    const r = result || { status: "skipped" };
    setStatus(r.status === "committed"
      ? `Folded messages ${r.lo}–${r.hi} (${r.messages_folded}) into summary version ${r.summary.version}.`
      : r.status === "failed" ? `The fold failed: ${r.error_class}. Nothing changed.`
      : `Nothing to fold (${r.status}${r.reason ? ": " + r.reason : ""}).`,
      r.status === "failed" ? "error" : "");
    const id = state.session.id;
    state.session = null;
    await openSession(id);
  } catch (err) { fail(err); } finally { button.disabled = false; }
}

function deleteSession() {
  const dialog = $("#confirm-dialog");
  $("#confirm-text").textContent = `Session “${state.session.id}” will be deleted with all its ` +
    "messages, summaries and fold history. This cannot be undone.";
  dialog.returnValue = "";
  dialog.showModal();
  $("#confirm-cancel").focus();
  dialog.addEventListener("close", async () => {
    if (dialog.returnValue !== "ok") { $("#delete-session").focus(); return; }
    try {
      await api(base(), { method: "DELETE" });
      state.flash = `Deleted session “${state.session.id}”.`;
      state.session = null;
      location.hash = "#/";
    } catch (err) { fail(err); }
  }, { once: true });
}

// -- routing and start -----------------------------------------------------------------

async function route() {
  const m = location.hash.match(/^#\/s\/([^/]+)(?:\/fold\/(\d+))?$/);
  $("#list-view").hidden = !!m;
  $("#session-view").hidden = !m;
  if (!key() && !state.dev) { showKeyNeeded(); return; }
  try {
    if (m) {
      await openSession(decodeURIComponent(m[1]), m[2]);
      if (!m[2]) $("#session-title").focus();
    } else {
      state.session = null;
      clearSession();
      const l = state.list;
      l.stack = [];
      await loadList(null);
    }
  } catch (err) { fail(err); }
}

async function start() {
  try {
    const cfg = await (await fetch("/ui/config.json")).json();
    state.dev = !!cfg.dev;
    if (state.dev) {
      const b = $("#dev-banner");
      b.hidden = false;
      b.textContent = `Dev mode (contextfold serve --dev, 127.0.0.1 only): no API key needed; ` +
        `without one you see the “${cfg.dev_tenant}” tenant. Never expose this server.`;
    }
  } catch (e) { /* the page still works with a key */ }
  $("#session-title").setAttribute("tabindex", "-1");
  $("#forget-key").hidden = !key();
  $("#key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const value = $("#key-input").value.trim();
    if (value) sessionStorage.setItem(KEY_STORE, value);
    $("#key-input").value = "";
    $("#forget-key").hidden = !key();
    setStatus(value ? "Key saved for this browser tab." : "");
    state.session = null;
    route();
  });
  $("#forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY_STORE);
    $("#forget-key").hidden = true;
    location.hash = "#/";
    route();
  });
  $("#list-controls").addEventListener("submit", (e) => {
    e.preventDefault();
    state.list.q = $("#filter").value.trim();
    state.list.sort = $("#sort").value;
    state.list.stack = [];
    loadList(null).catch(fail);
  });
  $("#next-page").addEventListener("click", () => {
    state.list.stack.push(state.list.cursor);
    loadList(state.list.cursor).catch(fail);
  });
  $("#first-page").addEventListener("click", () => {
    state.list.stack = [];
    loadList(null).catch(fail);
  });
  for (const th of document.querySelectorAll("#sessions-table th[data-key]")) {
    th.tabIndex = 0;
    th.addEventListener("click", () => sortPage(th));
    th.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortPage(th); }
    });
  }
  $("#chart-earlier").addEventListener("click", () =>
    loadSeries(state.session.series.next_before_seq).catch(fail));
  $("#chart-latest").addEventListener("click", () => loadSeries(null).catch(fail));
  $("#more-folds").addEventListener("click", () => loadFolds().catch(fail));
  $("#more-timeline").addEventListener("click", () => loadTimeline().catch(fail));
  $("#fold-now").addEventListener("click", foldNow);
  $("#delete-session").addEventListener("click", deleteSession);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") hideTip();
  });
  window.addEventListener("hashchange", route);
  await route();
}

document.addEventListener("DOMContentLoaded", start);
