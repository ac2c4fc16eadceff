// contextfold inspector: the session chart (context per message against the budget, the
// summary's size, fold markers with their tooltip). Plain JavaScript drawing inline SVG;
// uses the helpers and state of inspector.js (loaded before it).
"use strict";

function drawChart(series) {
  hideTip();
  const W = 900, H = 260, L = 56, R = 12, T = 12, B = 30;
  const pts = series.points;
  const box = $("#chart");
  $("#chart-caption").textContent = pts.length
    ? `Messages ${fmt(series.first_seq)}–${fmt(series.last_seq)}: the context the model ` +
      `received after each message (the summary and the newest live messages that fit the ` +
      `budget), the budget, and each fold. Where more was stored than sent, a dashed line ` +
      `shows everything stored (summary + all live messages), waiting to fold.`
    : "No messages yet.";
  if (!pts.length) { box.replaceChildren(); return; }
  const maxY = Math.max(series.budget || 0, ...pts.map((p) => p.context_tokens || 0),
    ...pts.map((p) => p.stored_tokens || 0), 1) * 1.08;
  const x0 = series.first_seq, x1 = Math.max(series.last_seq, x0 + 1);
  const X = (seq) => L + ((seq - x0) / (x1 - x0)) * (W - L - R);
  const Y = (v) => T + (1 - v / maxY) * (H - T - B);
  let d = "", pen = false;
  for (const p of pts) {
    if (p.context_tokens === null) { pen = false; continue; }
    d += (pen ? "L" : "M") + X(p.seq).toFixed(1) + "," + Y(p.context_tokens).toFixed(1);
    pen = true;
  }
  let stored = "", spen = false, waiting = false;
  for (const p of pts) {
    if (p.stored_tokens === null || p.stored_tokens === undefined) { spen = false; continue; }
    if (p.stored_tokens !== p.context_tokens) waiting = true;
    stored += (spen ? "L" : "M") + X(p.seq).toFixed(1) + "," + Y(p.stored_tokens).toFixed(1);
    spen = true;
  }
  let area = `M${X(pts[0].seq).toFixed(1)},${Y(0)}`;
  for (const p of pts) area += `L${X(p.seq).toFixed(1)},${Y(p.summary_tokens).toFixed(1)}`;
  area += `L${X(pts[pts.length - 1].seq).toFixed(1)},${Y(0)}Z`;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => Math.round(f * maxY / 1.08));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-labelledby": "chart-title chart-caption" },
    ...ticks.map((t) => s("g", {},
      s("line", { class: "axis", x1: L - 4, x2: L, y1: Y(t), y2: Y(t) }),
      s("text", { x: L - 6, y: Y(t) + 4, "text-anchor": "end" }, fmt(t)))),
    s("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }),
    s("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }),
    s("text", { x: L, y: H - 8 }, "message " + fmt(x0)),
    s("text", { x: W - R, y: H - 8, "text-anchor": "end" }, "message " + fmt(series.last_seq)),
    s("path", { class: "sum", d: area }),
    waiting ? s("path", { class: "stored", d: stored }) : null,
    s("path", { class: "ctx", d }),
    series.budget ? s("line", { class: "budget", x1: L, x2: W - R, y1: Y(series.budget),
      y2: Y(series.budget) }) : null,
    series.budget ? s("text", { x: W - R - 4, y: Y(series.budget) - 4, "text-anchor": "end" },
      "budget " + fmt(series.budget)) : null,
  );
  for (const f of series.folds) {
    const g = s("g", { class: "fold", tabindex: "0", role: "button", "data-version": f.version,
      "aria-label": `Fold ${f.version} after message ${f.at_seq}: folded messages ${f.lo}–` +
        `${f.through_seq}; stored before it ${fmt(f.before_tokens)} tokens, context after it ` +
        `${fmt(f.after_tokens)} tokens. Press Enter for its summary diff.` },
      s("line", { class: "hit", x1: X(f.at_seq), x2: X(f.at_seq), y1: T, y2: H - B }),
      s("line", { x1: X(f.at_seq), x2: X(f.at_seq), y1: Y(f.after_tokens), y2: H - B }),
      s("circle", { cx: X(f.at_seq), cy: Y(f.after_tokens), r: 5 }));
    const show = () => showTip(g, f);
    g.addEventListener("mouseenter", show);
    g.addEventListener("focus", show);
    g.addEventListener("mouseleave", hideTip);
    g.addEventListener("blur", hideTip);
    g.addEventListener("click", () => goFold(f.version));
    g.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); goFold(f.version); }
    });
    svg.append(g);
  }
  const legend = h("div", { class: "legend-row" },
    h("span", {}, h("span", { class: "swatch", style: null }), "context the model received"),
    waiting ? h("span", { class: "stored-key" }, "- - stored, waiting to fold (not sent)") : null,
    h("span", {}, "▮ summary tokens"), h("span", {}, "- - budget"), h("span", {}, "● fold"));
  legend.children[0].firstChild.style.background = "var(--accent)";
  box.replaceChildren(svg, legend);
}

function showTip(g, f) {
  const row = state.session.folds.get(f.version);
  const tip = $("#chart-tip");
  const item = (k, v) => [h("dt", {}, k), h("dd", {}, v)];
  tip.replaceChildren(h("strong", {}, `Fold ${f.version}`), h("dl", {},
    item("after message", fmt(f.at_seq)),
    item("folded", `${fmt(f.lo)}–${fmt(f.through_seq)}`),
    item("stored before", fmt(f.before_tokens)),
    item("context after", fmt(f.after_tokens)),
    item("summary tokens", fmt(f.summary_tokens)),
    ...(row ? [
      item("reason", row.reason || "–"),
      item("tokens folded", fmt(row.tokens_folded)),
      item("summarizer in/out", `${fmt(row.input_tokens)} / ${fmt(row.output_tokens)}`),
      item("calls", fmt(row.calls)),
      item("latency", `${fmt(Math.round(row.latency_ms))} ms`),
      item("model", row.model || "–"),
    ] : []).flat()));
  tip.hidden = false;
  const panel = g.closest(".panel").getBoundingClientRect();
  const r = g.getBoundingClientRect();
  tip.style.left = Math.min(r.left - panel.left + 12, panel.width - 330) + "px";
  tip.style.top = (r.top - panel.top + 12) + "px";
}
function hideTip() { $("#chart-tip").hidden = true; }
