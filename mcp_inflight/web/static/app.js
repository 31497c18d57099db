// The explorer page: it asks /api/view for everything it shows and keeps its own state in the
// URL (configuration, path of moves, position), so a copied link reopens the same step.
"use strict";

const CONFIG_KEYS = ["design", "revision", "transport", "ids", "requests"];

let meta = null;       // /api/meta
let view = null;       // the last /api/view answer
let query = {};        // the page's state: config keys, path, at, trace
let lastStatus = null; // property statuses of the view shown before this one (same config)
let tracesFor = null;  // the configuration key whose trace list is shown
let pollTimer = null;
let recorded = [];     // /api/recorded: the recorded runtime traces opened so far

function configKey(q) { return CONFIG_KEYS.map((k) => q[k]).join("|"); }

function queryString(q) {
  // path tokens use only letters, digits, '_', '.' and '-': nothing needs escaping
  const parts = [];
  for (const k of [...CONFIG_KEYS, "path", "at", "trace"]) {
    if (q[k] !== undefined && q[k] !== null && q[k] !== "") parts.push(`${k}=${encodeURIComponent(q[k])}`);
  }
  return "?" + parts.join("&");
}

function readLocation() {
  const p = new URLSearchParams(location.search);
  const q = {};
  for (const k of CONFIG_KEYS) q[k] = p.get(k) || String(meta.defaults[k]);
  q.path = p.get("path") || "";
  q.at = p.get("at");
  q.trace = p.get("trace") || "";
  return q;
}

// the server's token for what changes its state (it is in the page it served)
const TOKEN = (document.querySelector('meta[name="explore-token"]') || {}).content || "";

async function getJSON(url) {
  const r = await fetch(url, { headers: { "X-Explore-Token": TOKEN } });
  const body = await r.json();
  if (!r.ok) { const e = new Error(body.error || r.statusText); e.body = body; throw e; }
  return body;
}

// --- navigation -------------------------------------------------------------------------

let goSerial = 0;        // only the answer to the latest request is shown

async function go(q, push = true) {
  const serial = ++goSerial;
  let v;
  try {
    v = await getJSON("/api/view" + queryString(q));
  } catch (e) {
    if (serial === goSerial) showError(e.message, q);
    return;
  }
  if (serial !== goSerial) return;
  const sameConfig = view && configKey(q) === configKey(query);
  lastStatus = sameConfig && view ? Object.fromEntries(view.properties.map((p) => [p.name, p.status])) : null;
  query = q;
  view = v;
  query.at = String(v.at);
  const url = location.pathname + queryString(query);
  if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
  $("error").hidden = true;
  render();
  if (tracesFor !== configKey(query)) loadTraces();
  else markCurrentTrace();
}

function showError(msg, q) {
  const e = $("error");
  e.hidden = false;
  e.textContent = msg + " ";
  const fresh = { ...q, path: "", at: "0", trace: "" };
  e.append(el("a", { href: queryString(fresh), onclick: (ev) => { ev.preventDefault(); go(fresh); } },
    "open this configuration at its initial state"));
}

function tokens() { return view.path.map((s) => s.token); }

function goAt(at) {
  if (at < 0 || at > view.path.length) return;
  go({ ...query, at: String(at) });
}

function take(token) {
  const here = tokens().slice(0, view.at);
  const ahead = tokens()[view.at];
  if (ahead === token) { goAt(view.at + 1); return; }   // the next step of the path: keep the path
  go({ ...query, path: [...here, token].join("-"), at: String(here.length + 1), trace: "" });
}

// --- rendering ----------------------------------------------------------------------------

function render() {
  const v = view;
  $("link").value = location.href;
  for (const k of CONFIG_KEYS) $(k).value = query[k];
  $("position").textContent = `step ${v.at} of ${v.path.length}`;
  $("back").disabled = $("first").disabled = v.at === 0;
  $("forward").disabled = $("last").disabled = v.at === v.path.length;
  const story = $("story");
  const here = v.at > 0 ? v.path[v.at - 1] : null;
  story.textContent = (v.at > 0 ? `${v.at}. ` : "") + v.story;
  story.className = here && (here.breaks.length || /<--/.test(here.story)) ? "bad" : "";
  renderFollowing();
  const k = v.config.knobs;
  $("knobs").textContent = `${v.config.label}, ${v.config.ids} ids, ${v.config.requests} request instances. ` +
    `Design ${k.name}: claim ${k.claim}; removals guarded by identity: ${k.guarded.length ? k.guarded.join(", ") : "none"}; ` +
    `guarded writes: ${k.guard_write ? "yes" : "no"}; cancel by connection: ${k.cancel_by_connection ? "yes" : "no"}; ` +
    `id freed on: ${k.free_on.replace("_", " ")}.`;
  renderEnabled(v);
  renderPath(v);
  renderState(v.state, v.lifecycle);
  renderLifecycle(v.lifecycle);
  renderProperties(v);
  renderDiagram(v);
}

function followedRun() {
  // the recorded trace's run the path came from, if it did (matched by its label and path)
  if (!query.trace.startsWith("recorded ")) return null;
  for (const rec of recorded) {
    for (const run of rec.runs) {
      if (recordedLabel(rec, run) === query.trace && run.path.join("-") === query.path) return { rec, run };
    }
  }
  return null;
}

function renderFollowing() {
  const f = $("following");
  f.replaceChildren();
  f.className = "muted";
  if (!query.trace) return;
  const fr = followedRun();
  if (!query.trace.startsWith("recorded ")) {
    f.textContent = `following the explorer's trace: ${query.trace}`;
  } else if (!fr) {
    f.textContent = `following the ${query.trace} (open the trace file again to see what the check said of it)`;
  } else {
    const { rec, run } = fr;
    f.append(`following the recorded trace ${rec.name} (${rec.observed} observed steps) as a run of ${run.design}: `,
      el("span", { class: run.clean ? "good" : "bad" }, runVerdict(run)),
      run.inferred.length ? ". Steps marked “inferred” are server-internal moves the wire did not show." : "");
  }
}

function changeText(ch) {
  const parts = Object.entries(ch).map(([k, [a, b]]) => `${k}: ${a} → ${b}`);
  return parts.length ? parts.join(", ") : "changes nothing";
}

function renderEnabled(v) {
  const ol = $("enabled");
  ol.replaceChildren();
  $("enabled-count").textContent = `(${v.enabled.length})`;
  if (!v.enabled.length) ol.append(el("li", { class: "muted" }, "none: no action is enabled here"));
  v.enabled.forEach((s, n) => {
    const bad = s.breaks.length > 0 || /<--/.test(s.story);
    const b = el("button", {
      type: "button", class: [s.next ? "next" : "", bad ? "bad" : ""].join(" ").trim() || null,
      "data-token": s.token, title: s.token, onclick: () => take(s.token),
    },
    el("span", { class: "key" }, n < 9 ? String(n + 1) : ""),
    s.story,
    s.next ? el("span", { class: "tag" }, "next on the path") : null,
    el("span", { class: "ch" }, changeText(s.changes)),
    s.breaks.length ? el("span", { class: "warn" }, "breaks " + s.breaks.join(", ")) : null);
    ol.append(el("li", {}, b));
  });
}

function renderPath(v) {
  const fr = followedRun();
  const inferred = new Set(fr ? fr.run.inferred : []);
  const ol = $("path");
  ol.replaceChildren();
  ol.append(el("li", { class: v.at === 0 ? "current" : null, onclick: () => goAt(0) },
    el("span", { class: "n" }, "0."), el("span", { class: "text" }, "initial state")));
  v.path.forEach((s, n) => {
    const bad = s.breaks.length > 0 || /<--/.test(s.story);
    const cls = [n + 1 === v.at ? "current" : "", n + 1 > v.at ? "ahead" : "", bad ? "bad" : ""];
    ol.append(el("li", { class: cls.join(" ").trim() || null, "data-step": n + 1, onclick: () => goAt(n + 1) },
      el("span", { class: "n" }, `${n + 1}.`), el("span", { class: "text" }, s.story),
      inferred.has(n + 1) ? el("span", { class: "tag inferred", title: "not on the wire: inferred by the check" }, "inferred") : null,
      el("span", { class: "ch" }, changeText(s.changes)),
      s.breaks.length ? el("span", { class: "warn" }, "breaks " + s.breaks.join(", ")) : null));
  });
}

function cell(c, f) {
  const td = el("td", { class: c.before !== null ? "changed" : null, title: f.doc }, c.value);
  if (c.before !== null) td.append(el("span", { class: "was" }, `was ${c.before}`));
  return td;
}

function fieldHead(f) {
  const tags = [f.ghost ? "ghost" : "", f.wire ? "wire" : ""].filter(Boolean).join(", ");
  return el("th", { class: "field", title: f.doc }, f.field, tags ? el("small", {}, ` (${tags})`) : null);
}

function renderState(st, lifecycle) {
  const unsent = new Set(lifecycle.filter((r) => r.life === "unsent").map((r) => r.instance));
  const instCell = (c, r) => {
    const td = cell(c, r);
    if (unsent.has(c.key)) td.classList.add("unsent");
    return td;
  };
  const box = $("state");
  box.replaceChildren();
  const byKey = (k) => st.rows.filter((r) => r.key === k);
  const inst = el("table", { id: "state-inst" },
    el("tr", {}, el("th", {}, "per request"), st.instances.map((x) => el("th", {
      class: unsent.has(x) ? "unsent" : null, title: unsent.has(x) ? "not sent yet: its values are the defaults" : null }, x))),
    byKey("inst").map((r) => el("tr", { "data-field": r.field }, fieldHead(r), r.cells.map((c) => instCell(c, r)))));
  const ids = el("table", { id: "state-id" },
    el("tr", {}, el("th", {}, "per id"), st.ids.map((x) => el("th", {}, x))),
    byKey("id").map((r) => el("tr", { "data-field": r.field }, fieldHead(r), r.cells.map((c) => cell(c, r)))));
  const scal = byKey(null);
  box.append(inst, ids);
  if (scal.length) {
    box.append(el("table", { id: "state-scalar" },
      scal.map((r) => el("tr", { "data-field": r.field }, fieldHead(r), cell(r.cells[0], r)))));
  }
}

function renderLifecycle(rows) {
  const t = $("lifecycle");
  t.replaceChildren(el("tr", {}, el("th", {}, "request"), el("th", {}, "sender, id"),
    el("th", {}, "state"), el("th", {}, "states along the path")));
  for (const r of rows) {
    t.append(el("tr", { "data-instance": r.instance },
      el("td", {}, r.instance),
      el("td", {}, r.sender ? `${r.sender}, id ${r.id}` : "–"),
      el("td", { class: `life life-${r.life}` }, r.life),
      el("td", { class: "hist" }, r.history.join(" → "))));
  }
}

function statusClass(s) { return "st-" + s.replace(/[^a-z]+/g, "-"); }

function renderProperties(v) {
  const t = $("properties");
  const stepNo = v.at;
  t.replaceChildren(el("tr", {}, el("th", {}, "property"), el("th", {}, "kind"),
    el("th", {}, "status"), el("th", {}, "why")));
  for (const p of v.properties) {
    const changed = lastStatus && lastStatus[p.name] !== undefined && lastStatus[p.name] !== p.status;
    const detail = el("div", { class: "detail" });
    if (p.scope === "step" && p.status === "fails") detail.append(el("div", { class: "muted" }, `judged on step ${stepNo}, the transition that led here`));
    if (p.where || p.reads) {
      const lead = p.kind === "witness" ? "reached" : "fails";
      if (p.where && p.where.length) detail.append(el("div", {}, `${lead} for ${p.where.join(", ")}`));
      if (p.reads && p.reads.length) detail.append(el("div", {}, p.reads.join("; ")));
      if (p.outputs && p.outputs.length) {
        detail.append(el("div", {}, "output: " + p.outputs.map((o) =>
          `${o.kind} → ${o.stream === "-" ? "no stream" : o.stream + "'s stream"} (${o.out ? "written" : "dropped"})`).join("; ")));
      }
    }
    t.append(el("tr", { class: [p.status === "fails" ? "fails" : "", changed ? "changed" : ""].join(" ").trim() || null,
      "data-property": p.name, "data-status": p.status, title: p.doc },
    el("td", { class: "name" }, p.name),
    el("td", { class: "kindcol" }, `${p.kind}, ${p.scope}`),
    el("td", { class: "status " + statusClass(p.status) }, p.status),
    el("td", {}, detail)));
  }
}

// --- the sequence diagram (SVG) -------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, v);
  for (const c of kids) if (c) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function renderDiagram(v) {
  const box = $("diagram");
  box.replaceChildren();
  const { lanes, arrows } = v.diagram;
  const LANE = 175, LEFT = 40, TOP = 56, ROW = 40, NOTE = 330;
  const x = {};
  lanes.forEach((l, n) => { x[l.key] = LEFT + LANE / 2 + n * LANE; });
  const width = LEFT + lanes.length * LANE + NOTE;
  const height = TOP + Math.max(arrows.length, 1) * ROW + 20;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": "sequence diagram of the path" });
  const defs = svg("defs");
  for (const [id, colour] of [["head", "#333"], ["head-red", "#c62828"]]) {
    // sized in the drawing's units: a red (thicker) arrow keeps the same head
    defs.append(svg("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 10, markerHeight: 10, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: colour })));
    defs.append(svg("marker", { id: id + "-bar", viewBox: "0 0 10 10", refX: 5, refY: 5, markerWidth: 11, markerHeight: 11, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
      svg("path", { d: "M5,0 L5,10", stroke: colour, "stroke-width": 2.5 })));
  }
  root.append(defs);
  for (const l of lanes) {
    root.append(svg("rect", { x: x[l.key] - LANE / 2 + 8, y: 8, width: LANE - 16, height: 28, rx: 6, fill: "#eef2f7", stroke: "#b8c2cc" }));
    root.append(svg("text", { x: x[l.key], y: 27, "text-anchor": "middle", "font-size": 12, "font-weight": 600 }, l.title));
    root.append(svg("line", { x1: x[l.key], y1: 36, x2: x[l.key], y2: height - 8, stroke: "#b8c2cc", "stroke-dasharray": "4 4" }));
  }
  root.append(svg("text", { x: LEFT + lanes.length * LANE + 10, y: 27, "font-size": 12, fill: "#5f6b76" }, "registries"));
  arrows.forEach((a, n) => {
    const step = v.path[n];
    const red = a.marked !== null || step.breaks.length > 0;
    const colour = red ? "#c62828" : "#333";
    const y = TOP + n * ROW + 28;
    const cls = ["row", a.step === v.at ? "current" : "", a.step > v.at ? "ahead" : "", red ? "bad" : ""].join(" ");
    const g = svg("g", { class: cls, "data-step": a.step, "data-marked": a.marked || "" });
    g.addEventListener("click", () => goAt(a.step));
    g.append(svg("rect", { class: "band", x: 0, y: y - 26, width, height: ROW, fill: "transparent" }));
    g.append(svg("text", { x: 8, y: y + 4, "font-size": 11, fill: "#5f6b76" }, `${a.step}.`));
    const label = a.text + (a.marked ? `  ${a.marked}` : "");
    if (a.src === a.dst) {
      // a step inside the server: a box on the lane, its text to the left of it
      const cx = x[a.src];
      g.append(svg("rect", { x: cx - 9, y: y - 11, width: 18, height: 20, rx: 4,
        fill: red ? "#ffe0e0" : "#fafbfc", stroke: colour, "stroke-width": red ? 2 : 1,
        "stroke-dasharray": a.kind === "lost" ? "3 3" : null }));
      g.append(svg("text", { x: cx - 16, y: y + 4, "text-anchor": "end", "font-size": 11, fill: colour,
        "font-weight": red ? 600 : null }, label));
    } else {
      const x1 = x[a.src], x2 = x[a.dst];
      const head = a.kind === "lost" ? "-bar" : "";
      g.append(svg("line", { x1, y1: y, x2, y2: y, stroke: colour, "stroke-width": red ? 2.5 : 1.3,
        "stroke-dasharray": a.kind === "async" ? "6 4" : null,
        "marker-end": `url(#${red ? "head-red" : "head"}${head})` }));
      const mid = (x1 + x2) / 2;
      const t = svg("text", { x: mid, y: y - 6, "text-anchor": "middle", "font-size": 11, fill: colour,
        "font-weight": red ? 600 : null }, label);
      g.append(t);
    }
    const notes = [a.registry, step.breaks.length ? "breaks " + step.breaks.join(", ") : ""].filter(Boolean);
    notes.forEach((note, k) => {
      g.append(svg("text", { x: LEFT + lanes.length * LANE + 10, y: y - 4 + k * 13, "font-size": 10.5,
        fill: k === 1 || (k === 0 && !a.registry) ? "#c62828" : "#39434c" }, note));
    });
    g.append(svg("title", {}, step.story));
    root.append(g);
  });
  if (!arrows.length) root.append(svg("text", { x: LEFT, y: TOP + 20, "font-size": 12, fill: "#5f6b76" }, "no step yet: take an action"));
  box.append(root);
}

// --- the list of traces ---------------------------------------------------------------------

async function loadTraces() {
  clearTimeout(pollTimer);
  const key = configKey(query);
  if (tracesFor !== key) {     // another configuration: forget the old list at once
    $("trace-list").replaceChildren();
    $("explore-status").textContent = "";
  }
  tracesFor = key;
  const q = Object.fromEntries(CONFIG_KEYS.map((k) => [k, query[k]]));
  let t;
  try {
    t = await getJSON("/api/traces" + queryString(q));
  } catch (e) {
    $("explore-status").textContent = "exploration failed: " + e.message;
    return;
  }
  if (tracesFor !== key) return;
  const list = $("trace-list");
  if (t.status === "queued" || t.status === "exploring") {
    $("explore-status").textContent = t.status === "exploring"
      ? `exploring ${t.config.label} for its traces… ${t.seconds}s` : `waiting to explore ${t.config.label}…`;
    list.replaceChildren();
    pollTimer = setTimeout(() => { if (tracesFor === key) loadTraces(); }, 1000);
    return;
  }
  if (t.status === "error") { $("explore-status").textContent = "exploration failed: " + t.error; return; }
  $("explore-status").textContent = `${t.states.toLocaleString()} states explored in ${t.seconds}s` +
    (t.complete ? "" : " (cut short: the list may miss some)") + (t.traces.length ? "" : "; no trace to show");
  list.replaceChildren();
  const order = { counterexample: 0, hazard: 1, deadlock: 2, witness: 3 };
  const sorted = [...t.traces].sort((a, b) => order[a.what] - order[b.what]);
  for (const tr of sorted) {
    const q2 = { ...q, path: tr.path.join("-"), at: "0", trace: `${tr.what} ${tr.name}` };
    list.append(el("li", {}, el("a", {
      href: queryString(q2), "data-trace": tr.name, "data-what": tr.what, "data-label": q2.trace, title: tr.last,
      onclick: (ev) => { ev.preventDefault(); go(q2); },
    }, el("span", { class: `kind ${tr.what}` }, tr.what), el("span", { class: "tname" }, tr.name), " ",
      el("span", { class: "len" }, `${tr.length} steps`))));
  }
  markCurrentTrace();
}

function markCurrentTrace() {
  for (const a of document.querySelectorAll("#starts a")) {
    const label = a.dataset.label || "";
    a.classList.toggle("current", a.id === "start-initial" ? !query.path : label === query.trace && !!label);
  }
}

// --- recorded runtime traces ----------------------------------------------------------------

function recordedLabel(rec, run) { return `recorded ${rec.name} on ${run.design}`; }

function runQuery(rec, run) {
  return { design: run.design, revision: run.revision, transport: run.transport, ids: String(run.ids),
    requests: String(run.requests), path: run.path.join("-"), at: "0", trace: recordedLabel(rec, run) };
}

function runVerdict(run) {
  if (run.clean) return "clean: every step is a move of the design and every invariant holds";
  if (run.unexplained) return `no move of ${run.design} explains ${run.unexplained} (events counted from 0); the path stops before it`;
  return `breaks ${run.broken.invariant} at step ${run.broken.step}`;
}

function renderRecorded() {
  const list = $("recorded-list");
  list.replaceChildren();
  for (const rec of recorded) {
    const runs = el("ul", {});
    rec.runs.forEach((run, n) => {
      const q = runQuery(rec, run);
      runs.append(el("li", {}, el("a", {
        href: queryString(q), "data-label": q.trace, "data-recorded": rec.name, "data-design": run.design,
        title: runVerdict(run), onclick: (ev) => { ev.preventDefault(); go(q); },
      }, el("span", { class: `kind ${run.clean ? "clean" : "counterexample"}` },
        n === 0 ? `checked on ${run.design}: ${run.clean ? "clean" : run.unexplained ? "not explained" : "breaks " + run.broken.invariant}`
          : `a run of ${run.design}: breaks ${run.broken ? run.broken.invariant : "nothing"}`),
      el("span", { class: "len" }, `${run.length} steps`))));
    });
    list.append(el("li", { class: "recorded" }, el("div", { class: "tname" }, rec.name),
      el("div", { class: "len" }, `${rec.observed} observed steps from ${rec.events} events`), runs));
  }
  markCurrentTrace();
}

async function loadRecorded() {
  try {
    recorded = (await getJSON("/api/recorded")).traces;
  } catch (e) {
    $("recorded-status").textContent = "could not list the recorded traces: " + e.message;
    return;
  }
  renderRecorded();
}

async function openTraceFile(file) {
  const status = $("recorded-status");
  status.className = "muted small";
  status.textContent = `checking ${file.name}…`;
  let rec;
  try {
    const r = await fetch("/api/recorded?name=" + encodeURIComponent(file.name), { method: "POST", body: await file.text(), headers: { "X-Explore-Token": TOKEN } });
    rec = await r.json();
    if (!r.ok) throw new Error(rec.error || r.statusText);
  } catch (e) {
    status.className = "error small";
    status.textContent = e.message;
    return;
  }
  status.textContent = `opened ${rec.name}`;
  await loadRecorded();
  // a trace atomic does not explain opens on the first design that does: its red step shows where
  const run = !rec.clean && rec.runs.length > 1 ? rec.runs[1] : rec.runs[0];
  go(runQuery(rec, run));
}

// --- set-up -------------------------------------------------------------------------------

function onKey(ev) {
  if (ev.target.closest && ev.target.closest("input, select, textarea")) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey || !view) return;
  const buttons = [...document.querySelectorAll("#enabled button")];
  if (/^[1-9]$/.test(ev.key)) {
    const b = buttons[Number(ev.key) - 1];
    if (b) { ev.preventDefault(); b.click(); }
  } else if (ev.key === "ArrowLeft" || ev.key === "Backspace") {
    ev.preventDefault(); goAt(view.at - 1);
  } else if (ev.key === "ArrowRight") {
    ev.preventDefault(); goAt(view.at + 1);
  } else if (ev.key === "Home") {
    ev.preventDefault(); goAt(0);
  } else if (ev.key === "End") {
    ev.preventDefault(); goAt(view.path.length);
  } else if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    if (!buttons.length) return;
    ev.preventDefault();
    const i = buttons.indexOf(document.activeElement);
    const j = ev.key === "ArrowDown" ? (i + 1) % buttons.length : (i <= 0 ? buttons.length - 1 : i - 1);
    buttons[j].focus();
  }
}

async function main() {
  meta = await getJSON("/api/meta");
  const fill = (id, names) => $(id).replaceChildren(...names.map((n) => el("option", { value: n }, n)));
  fill("design", meta.designs.map((d) => d.name));
  fill("revision", meta.revisions);
  fill("transport", meta.transports);
  $("ids").max = meta.max.ids;
  $("requests").max = meta.max.requests;
  $("config").addEventListener("change", () => {
    const q = { path: "", at: "0", trace: "" };
    for (const k of CONFIG_KEYS) q[k] = $(k).value;
    go(q);
  });
  $("config").addEventListener("submit", (ev) => ev.preventDefault());
  $("first").addEventListener("click", () => goAt(0));
  $("back").addEventListener("click", () => goAt(view.at - 1));
  $("forward").addEventListener("click", () => goAt(view.at + 1));
  $("last").addEventListener("click", () => goAt(view.path.length));
  $("start-initial").addEventListener("click", (ev) => { ev.preventDefault(); go({ ...query, path: "", at: "0", trace: "" }); });
  $("copy").addEventListener("click", async () => {
    const link = $("link");
    link.select();
    try { await navigator.clipboard.writeText(link.value); $("copy").textContent = "Copied"; }
    catch (e) { document.execCommand("copy"); $("copy").textContent = "Copied"; }
    setTimeout(() => { $("copy").textContent = "Copy link"; }, 1500);
  });
  $("trace-file").addEventListener("change", (ev) => {
    const f = ev.target.files[0];
    ev.target.value = "";
    if (f) openTraceFile(f);
  });
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", () => go(readLocation(), false));
  await loadRecorded();
  await go(readLocation(), false);
}

main();
