// The web view of agentrt runs: ask a question and watch the run live, or open a trajectory.
//
//   events (a live NDJSON stream, GET /runs/{id}, or a file) ──► RunView.apply ──► render()
//
// One RunView is built from events only, whatever their source, so a live run and a saved
// trajectory look the same. Everything user-supplied goes into the page as text, never HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) if (c != null) node.append(c);
  return node;
}

const json = (v) => JSON.stringify(v, null, 2);
const secs = (t) => (t == null ? "–" : `${t.toFixed(3)} s`);

// ── The state of one run, from its events ────────────────────────────────────────────────

class RunView {
  constructor() {
    this.runId = null;
    this.header = null;
    this.query = "";
    this.model = null;
    this.strategy = null;
    this.classified = null;
    this.state = "idle";
    this.live = false;
    this.finished = null;
    this.steps = new Map(); // step → {step, start, end, text, calls: [call ids], invalid: [events]}
    this.calls = new Map(); // call id → {id, name, args, dependsOn, step, start, end, status, …}
    this.lanes = []; // lane → {busy, until}: calls take the first lane free at their start
    this.lastT = 0;
    this.lastSeen = performance.now();
    this.pending = []; // the calls an `approval_requested` holds for a person
    this.resumed = null; // a resumed run's `run_resumed`
  }

  step(n) {
    if (!this.steps.has(n)) {
      this.steps.set(n, { step: n, start: null, end: null, text: "", calls: [], invalid: [] });
    }
    return this.steps.get(n);
  }

  call(e) {
    if (!this.calls.has(e.call_id)) {
      // A call can finish without a tool_call event (a trajectory cut short): keep it anyway.
      this.calls.set(e.call_id, {
        id: e.call_id, name: e.name, args: {}, dependsOn: [], step: e.step, queued: e.t,
        start: null, end: null, status: "queued", lane: null,
      });
      this.step(e.step).calls.push(e.call_id);
    }
    return this.calls.get(e.call_id);
  }

  takeLane(c, t) {
    let lane = this.lanes.findIndex((l) => !l.busy && l.until <= t);
    if (lane < 0) {
      lane = this.lanes.length;
      this.lanes.push(null);
    }
    this.lanes[lane] = { busy: true, until: Infinity };
    c.lane = lane;
  }

  freeLane(c) {
    this.lanes[c.lane] = { busy: false, until: c.end };
  }

  apply(e) {
    this.lastT = Math.max(this.lastT, e.t);
    this.lastSeen = performance.now();
    this.runId = this.runId || e.run_id;
    switch (e.type) {
      case "run_started":
        this.query = e.query;
        this.model = e.model;
        this.state = "running";
        break;
      case "classified":
        this.classified = e;
        break;
      case "strategy_selected":
        this.strategy = e;
        break;
      case "turn_started":
        this.step(e.step).start = e.t;
        break;
      case "text_delta":
        this.step(e.step).text += e.text;
        break;
      case "model_response":
        if (e.step != null) this.step(e.step).end = e.t;
        break;
      case "tool_call": {
        const c = this.call(e);
        Object.assign(c, { args: e.arguments, dependsOn: e.depends_on || [], format: e.format });
        break;
      }
      case "tool_call_invalid":
        this.step(e.step).invalid.push(e);
        break;
      case "tool_started": {
        const c = this.call(e);
        c.start = e.t;
        c.status = "running";
        this.takeLane(c, e.t);
        break;
      }
      case "guard":
        if (this.calls.has(e.call_id)) this.calls.get(e.call_id).guard = e.detail;
        break;
      case "tool_finished": {
        const c = this.call(e);
        if (c.lane == null) {
          c.start = e.t; // answered from the cache, or cancelled before it started
          this.takeLane(c, e.t);
        }
        Object.assign(c, {
          end: e.t, status: e.status, output: e.output, error: e.error,
          duration: e.duration, cached: e.cached,
        });
        this.freeLane(c);
        break;
      }
      case "approval_requested":
        this.pending = e.calls;
        break;
      case "run_resumed":
        this.resumed = e;
        break;
      case "run_finished":
        this.finished = e;
        this.state = e.status;
        this.live = false;
        for (const c of this.calls.values()) if (c.end == null && c.start != null) c.end = e.t;
        break;
    }
  }

  // Seconds since the run started, as far as this view knows: the live clock runs on between
  // events so that bars of calls in flight grow.
  now() {
    if (this.finished) return this.finished.t;
    if (this.live) return this.lastT + (performance.now() - this.lastSeen) / 1000;
    return this.lastT;
  }
}

// ── Rendering ────────────────────────────────────────────────────────────────────────────

let view = new RunView();
let selected = null;
let frame = null;

function schedule() {
  if (frame == null) frame = requestAnimationFrame(() => {
    frame = null;
    render();
    if (view.live) schedule(); // keep the clock moving while the run is live
  });
}

function render() {
  renderSummary();
  renderApprovals();
  renderTimeline();
  renderDetails();
  renderTranscript();
  $("cancel").disabled = !(view.live && view.runId);
}

function renderSummary() {
  const box = $("summary");
  box.replaceChildren();
  if (view.state === "idle" && !view.runId) {
    box.append(el("p", { class: "hint" }, "Ask a question, or open a trajectory."));
    return;
  }
  const f = view.finished;
  const facts = [
    view.runId && `run ${view.runId}`,
    view.model && `model ${view.model}`,
    view.strategy && `strategy ${view.strategy.strategy} (${view.strategy.planner})`,
    f && `${f.steps} step${f.steps === 1 ? "" : "s"} · ${f.usage.prompt_tokens + f.usage.completion_tokens} tokens · ${f.timings.total.toFixed(2)} s`,
  ].filter(Boolean);
  box.append(
    el("p", { class: "query" }, el("span", { id: "state", class: `badge ${view.state}` }, view.state), " ", view.query),
    el("p", { class: "meta" }, facts.join(" · ")),
  );
}

// The calls a run holds for approval, each with Approve and Reject (with a reason); once every
// call has a decision, the run is resumed with them (POST /runs/{id}/approvals).
let decisions = {};

function renderApprovals() {
  const box = $("approvals");
  const held = view.state === "needs_approval" && !view.live ? view.pending : [];
  box.hidden = !held.length;
  if (!held.length) {
    box.replaceChildren();
    return;
  }
  if (box.dataset.runId === view.runId && box.childElementCount) return; // keep typed reasons
  box.dataset.runId = view.runId;
  decisions = {};
  const decide = (call, decision, row) => {
    decisions[call.call_id] = decision;
    for (const b of row.querySelectorAll("button, input")) b.disabled = true;
    row.append(el("span", { class: "hint" }, ` ${decision.decision === "approve" ? "approved" : "rejected"}`));
    if (held.every((c) => decisions[c.call_id])) resumeRun(view.runId, decisions);
  };
  box.replaceChildren(
    el("h3", {}, "Waiting for approval"),
    ...held.map((call) => {
      const reason = el("input", { class: "reason", placeholder: "reason (for Reject)" });
      const row = el("div", { class: "pending", "data-call-id": call.call_id },
        el("strong", {}, `${call.tool}${call.node ? ` (plan node ${call.node})` : ""}`), ` ${call.call_id}`,
        el("pre", {}, json(call.arguments)));
      row.append(
        el("button", { type: "button", class: "approve", onclick: () => decide(call, { decision: "approve" }, row) }, "Approve"),
        " ", reason, " ",
        el("button", {
          type: "button", class: "reject",
          onclick: () => decide(call, { decision: "reject", reason: reason.value.trim() || "rejected" }, row),
        }, "Reject"),
      );
      return row;
    }),
  );
}

function renderTimeline() {
  const root = $("timeline");
  const width = Math.max(root.clientWidth || 0, 320);
  const gutter = 64;
  const rowH = 26;
  const barH = 18;
  const lanes = Math.max(view.lanes.length, 1);
  const height = (lanes + 1) * rowH + 26;
  const end = Math.max(view.now(), 0.001);
  const x = (t) => gutter + (Math.max(t, 0) / end) * (width - gutter - 12);
  const rowY = (row) => 4 + row * rowH;
  root.setAttribute("viewBox", `0 0 ${width} ${height}`);
  root.style.height = `${height}px`;
  root.replaceChildren(
    svg("defs", {}, svg("marker", {
      id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto",
    }, svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrow" }))),
  );

  // Rows: the model's turns, then one lane per tool calls that overlapped.
  const labels = ["model", ...Array.from({ length: lanes }, (_, i) => `tools ${i + 1}`)];
  labels.forEach((label, row) => {
    root.append(
      svg("text", { class: "row-label", x: 6, y: rowY(row) + barH - 4 }, label),
      svg("line", { class: "row-line", x1: gutter, x2: width, y1: rowY(row) + rowH - 3, y2: rowY(row) + rowH - 3 }),
    );
  });

  // The time axis.
  const axisY = rowY(lanes + 1) + 4;
  for (let i = 0; i <= 5; i++) {
    const t = (end * i) / 5;
    root.append(svg("g", { class: "tick" },
      svg("line", { x1: x(t), x2: x(t), y1: 4, y2: axisY }),
      // The last label ends at its tick, so that it stays inside the picture.
      svg("text", { x: x(t) + (i === 5 ? -2 : 2), y: axisY + 12, "text-anchor": i === 5 ? "end" : "start" },
        `${t.toFixed(t < 1 ? 2 : 1)} s`),
    ));
  }

  for (const s of view.steps.values()) {
    if (s.start == null) continue;
    const x0 = x(s.start);
    const x1 = x(s.end ?? view.now());
    root.append(svg("g", { class: "turn", "data-step": s.step },
      svg("rect", { x: x0, y: rowY(0), width: Math.max(x1 - x0, 2), height: barH, rx: 3 }),
      x1 - x0 > 40 ? svg("text", { x: x0 + 4, y: rowY(0) + barH - 5 }, `step ${s.step}`) : null,
      svg("title", {}, `step ${s.step}: ${secs(s.start)} → ${secs(s.end)}`),
    ));
  }

  const bars = new Map();
  for (const c of view.calls.values()) {
    if (c.lane == null) continue;
    const endT = c.end ?? view.now();
    const x0 = x(c.start);
    const x1 = Math.max(x(endT), x0 + 3);
    const y = rowY(c.lane + 1);
    bars.set(c.id, { x0, x1, y });
    const classes = ["call", c.status, c.cached ? "cached" : "", selected === c.id ? "selected" : ""];
    root.append(svg("g", {
      class: classes.filter(Boolean).join(" "),
      "data-call-id": c.id, "data-name": c.name, "data-lane": c.lane,
      "data-start": c.start, "data-end": c.end ?? "", "data-status": c.status,
    },
      svg("rect", { x: x0, y, width: x1 - x0, height: barH, rx: 3 }),
      x1 - x0 > 50 ? svg("text", { x: x0 + 4, y: y + barH - 5 }, c.name) : null,
      svg("title", {}, `${c.name} (${c.id}): ${c.status}, ${secs(c.start)} → ${secs(c.end)}`),
    ));
  }

  // DAG edges: from the end of each call a call waits for to the start of the call.
  for (const c of view.calls.values()) {
    const to = bars.get(c.id);
    for (const dep of c.dependsOn || []) {
      const from = bars.get(dep);
      if (!from || !to) continue;
      const [x0, y0, x1, y1] = [from.x1, from.y + barH / 2, to.x0, to.y + barH / 2];
      const bend = Math.max(Math.abs(x1 - x0) / 2, 12);
      root.append(svg("path", {
        class: "edge", "data-from": dep, "data-to": c.id, "marker-end": "url(#arrow)",
        d: `M${x0},${y0} C${x0 + bend},${y0} ${x1 - bend},${y1} ${x1},${y1}`,
      }));
    }
  }
}

function renderDetails() {
  const box = $("details");
  const c = selected && view.calls.get(selected);
  box.hidden = !c;
  if (!c) return;
  const rows = [
    ["call", c.id],
    ["step", String(c.step)],
    ["status", c.status + (c.cached ? " (from the cache)" : "")],
    ["lane", c.lane == null ? "–" : String(c.lane + 1)],
    ["started", secs(c.start)],
    ["ended", secs(c.end)],
    ["duration", c.duration == null ? "–" : secs(c.duration)],
    ["waits for", c.dependsOn.length ? c.dependsOn.join(", ") : "–"],
  ];
  if (c.guard) rows.push(["guard", c.guard]);
  box.replaceChildren(
    el("h3", {}, c.name),
    el("dl", {}, ...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    el("h4", {}, "Arguments"),
    el("pre", { id: "details-args" }, json(c.args)),
    el("h4", {}, c.status === "ok" ? "Result" : "Error"),
    el("pre", { id: "details-result" },
      c.end == null ? "(still running)" : c.status === "ok" ? json(c.output) : c.error || c.status),
  );
}

function select(callId) {
  selected = selected === callId ? null : callId;
  render();
}

function renderTranscript() {
  const box = $("transcript");
  box.replaceChildren();
  if (view.resumed) {
    const r = view.resumed;
    box.append(el("p", { class: "info", id: "resumed" },
      `resumed from ${r.previous}: ${r.replayed_turns} model turns replayed, ${r.reused_results} tool results reused`));
  }
  if (view.classified) {
    const c = view.classified;
    box.append(el("p", { class: "info" },
      `classified as ${c.query_type} (${c.method}${c.reason ? `: ${c.reason}` : ""})`));
  }
  for (const s of view.steps.values()) {
    const chips = s.calls.map((id) => {
      const c = view.calls.get(id);
      return el("button", { type: "button", class: "chip", "data-call-id": id, onclick: () => select(id) },
        `${c.name} ${JSON.stringify(c.args)}`);
    });
    const invalid = s.invalid.map((e) => el("span", { class: "chip invalid", title: e.reason }, `invalid: ${e.reason}`));
    box.append(el("div", { class: "step", "data-step": s.step },
      el("h3", {}, `Step ${s.step}`),
      s.text ? el("div", { class: "text" }, s.text) : null,
      ...chips, ...invalid));
  }
  const f = view.finished;
  if (f && f.answer != null) box.append(el("div", { class: "answer", id: "answer" }, f.answer));
  else if (f && f.status === "needs_approval") box.append(el("p", { class: "info", id: "answer" }, "needs_approval: waiting for a person's decision on the calls above"));
  else if (f) box.append(el("div", { class: "failure", id: "answer" }, `${f.status}: ${f.error || "no answer"}`));
}

// ── Talking to the server ────────────────────────────────────────────────────────────────

function authHeaders() {
  const token = $("token").value.trim();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function failure(res) {
  try {
    const body = await res.json();
    return `${res.status}: ${body.detail ?? JSON.stringify(body)}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}

function show(fresh) {
  view = fresh;
  selected = null;
  render();
}

// Apply each event of an NDJSON response to `into` as it arrives.
async function readEvents(res, into) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim()) into.apply(JSON.parse(line));
    }
    schedule();
  }
}

let abort = null;

async function startRun(query, strategy, session) {
  const body = { query };
  if (strategy) body.strategy = strategy;
  const url = session ? `sessions/${encodeURIComponent(session)}/messages` : "runs";
  await streamRun(url, body, query);
}

// Resume a held run with a person's decisions: the resumed run streams like a new one.
async function resumeRun(runId, given) {
  await streamRun(`runs/${encodeURIComponent(runId)}/approvals`, { decisions: given }, view.query);
}

async function streamRun(url, body, query) {
  showError("");
  const fresh = new RunView();
  fresh.live = true;
  fresh.query = query;
  fresh.state = "running";
  show(fresh);
  abort = new AbortController();
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { ...authHeaders(), "Content-Type": "application/json", Accept: "application/x-ndjson" },
      body: JSON.stringify(body),
      signal: abort.signal,
    });
    if (!res.ok) {
      fresh.live = false;
      fresh.state = "idle";
      showError(await failure(res));
      render();
      return;
    }
    history.replaceState(null, "", `#run=${res.headers.get("X-Run-Id")}`);
    await readEvents(res, fresh);
  } catch (err) {
    if (err.name !== "AbortError") showError(`the stream broke off: ${err.message}`);
  } finally {
    fresh.live = false;
    abort = null;
    schedule();
    loadList();
  }
}

async function cancelRun() {
  if (!view.runId) return;
  const res = await fetch(`runs/${encodeURIComponent(view.runId)}/cancel`, { method: "POST", headers: authHeaders() });
  if (!res.ok && res.status !== 409) showError(await failure(res));
}

async function openRun(runId) {
  showError("");
  const res = await fetch(`runs/${encodeURIComponent(runId)}`, { headers: authHeaders() });
  if (!res.ok) {
    showError(await failure(res));
    return;
  }
  const info = await res.json();
  const fresh = new RunView();
  fresh.header = info.header;
  for (const e of info.events) fresh.apply(e);
  fresh.live = info.state === "running";
  fresh.state = info.state;
  show(fresh);
  history.replaceState(null, "", `#run=${runId}`);
  if (info.state === "running") follow(fresh, runId, info.events.length - 1);
}

// Follow a run in progress from the event after `lastSeq` (a watcher: leaving does not cancel).
async function follow(into, runId, lastSeq) {
  try {
    const headers = { ...authHeaders(), Accept: "application/x-ndjson" };
    if (lastSeq >= 0) headers["Last-Event-ID"] = String(lastSeq);
    const res = await fetch(`runs/${encodeURIComponent(runId)}/events`, { headers });
    if (!res.ok) {
      showError(await failure(res));
      return;
    }
    await readEvents(res, into);
  } finally {
    into.live = false;
    schedule();
  }
}

// A trajectory file (a header line, then events) or a bare NDJSON event stream.
function openText(text, source) {
  showError("");
  const fresh = new RunView();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].trim()) continue;
    let item;
    try {
      item = JSON.parse(lines[i]);
    } catch (err) {
      showError(`${source}:${i + 1}: not JSON (${err.message})`);
      return;
    }
    if (item.type === "header") {
      fresh.header = item;
      fresh.query = item.query;
    } else if (typeof item.type === "string" && typeof item.t === "number") {
      fresh.apply(item);
    } else {
      showError(`${source}:${i + 1}: not an event (no "type" and "t")`);
      return;
    }
  }
  if (!fresh.runId) {
    showError(`${source}: no events in it`);
    return;
  }
  if (!fresh.finished) fresh.state = "unfinished";
  show(fresh);
}

async function loadList() {
  const list = $("trajectories");
  const res = await fetch("trajectories", { headers: authHeaders() });
  if (!res.ok) {
    list.replaceChildren(el("li", { class: "hint" }, await failure(res)));
    return;
  }
  const { files } = await res.json();
  list.replaceChildren(...files.map((f) => el("li", {},
    el("button", { type: "button", "data-run-id": f.run_id, onclick: () => openRun(f.run_id) },
      f.query || f.run_id,
      el("span", { class: "when" }, `${new Date(f.modified).toLocaleString()} · ${f.run_id}`)))));
  if (!files.length) list.append(el("li", { class: "hint" }, "none yet"));
}

// ── Wiring ───────────────────────────────────────────────────────────────────────────────

function takeToken(ev) {
  if (ev) ev.preventDefault();
  localStorage.setItem("agentrt.token", $("token").value.trim());
  loadList();
}

$("token").value = localStorage.getItem("agentrt.token") || "";
$("token").addEventListener("change", () => takeToken());
$("auth").addEventListener("submit", takeToken);
$("ask").addEventListener("submit", (ev) => {
  ev.preventDefault();
  startRun($("query").value, $("strategy").value.trim(), $("session").value.trim());
});
$("cancel").addEventListener("click", cancelRun);
$("refresh").addEventListener("click", loadList);
$("timeline").addEventListener("click", (ev) => {
  const bar = ev.target.closest("g.call");
  if (bar) select(bar.dataset.callId);
});
$("file").addEventListener("change", async () => {
  const file = $("file").files[0];
  if (file) openText(await file.text(), file.name);
});
$("open-paste").addEventListener("click", () => openText($("paste").value, "pasted"));
window.addEventListener("resize", schedule);

loadList();
const linked = /^#run=(.+)$/.exec(location.hash);
if (linked) openRun(decodeURIComponent(linked[1]));
render();
