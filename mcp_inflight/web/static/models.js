// The models page: walk a declared model (lease, rounds, resume, tasks, subscriptions). It asks
// /api/models/view for each step and /api/models/explore for the verdicts, and keeps its own
// state in the URL (model, design, bounds, path of moves, position), so a link reopens a step.
"use strict";

let models = null;     // /api/models: name -> model
let defaultModel = null;
let view = null;       // the last /api/models/view answer
let query = {};        // model, design, bounds by name, path, at, trace
let explored = null;   // the last finished /api/models/explore answer, for configKey(query)
let exploredFor = null;
let pollTimer = null;
let goSerial = 0;

const TOKEN = (document.querySelector('meta[name="explore-token"]') || {}).content || "";

function boundNames(model) {
  const m = models[model];
  return [...m.bounds.map((b) => b.name), ...m.hazards.map((h) => h.bound)];
}

function configKeys(q) { return ["model", "design", ...boundNames(q.model)]; }
function configKey(q) { return configKeys(q).map((k) => `${k}=${q[k] || ""}`).join("&"); }

function queryString(q, keys) {
  const parts = [];
  for (const k of keys || [...configKeys(q), "path", "at", "trace"]) {
    if (q[k] !== undefined && q[k] !== null && q[k] !== "") parts.push(`${k}=${encodeURIComponent(q[k])}`);
  }
  return "?" + parts.join("&");
}

function readLocation() {
  const p = new URLSearchParams(location.search);
  let model = p.get("model") || defaultModel || Object.keys(models)[0];
  if (!models[model]) model = Object.keys(models)[0];
  const q = { model, design: p.get("design") || models[model].designs[0].name };
  for (const b of boundNames(model)) q[b] = p.get(b) || "";
  q.path = p.get("path") || "";
  q.at = p.get("at");
  q.trace = p.get("trace") || "";
  return q;
}

async function getJSON(url) {
  const r = await fetch(url, { headers: { "X-Explore-Token": TOKEN } });
  const body = await r.json();
  if (!r.ok) { const e = new Error(body.error || r.statusText); e.body = body; throw e; }
  return body;
}

// --- navigation -------------------------------------------------------------------------

async function go(q, push = true) {
  const serial = ++goSerial;
  let v;
  try {
    v = await getJSON("/api/models/view" + queryString(q));
  } catch (e) {
    if (serial === goSerial) showError(e.message);
    return;
  }
  if (serial !== goSerial) return;
  query = q;
  view = v;
  const url = "/models" + queryString(q);
  if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
  $("error").hidden = true;
  render();
  loadExplored();
}

function showError(msg) {
  $("error").textContent = msg;
  $("error").hidden = false;
}

function tokens() { return view.path.map((s) => s.token); }

function goAt(at) {
  if (at < 0 || at > view.path.length || at === view.at) return;
  go({ ...query, at: String(at) });
}

function take(token) {
  const here = tokens().slice(0, view.at);
  const ahead = tokens();
  // taking the move the path takes next keeps the rest of the path
  if (ahead[view.at] === token) { goAt(view.at + 1); return; }
  go({ ...query, path: [...here, token].join("-"), at: "", trace: "" });
}

// --- rendering --------------------------------------------------------------------------

function changeText(ch) {
  const parts = Object.entries(ch).map(([k, [a, b]]) => `${k}: ${a} → ${b}`);
  return parts.length ? parts.join(", ") : "changes nothing";
}

function outputText(out) {
  const parts = Object.entries(out).map(([k, v]) => `${k} = ${JSON.stringify(v)}`);
  return parts.length ? "output: " + parts.join(", ") : null;
}

function render() {
  const v = view;
  const m = models[query.model];
  $("position").textContent = `step ${v.at} of ${v.path.length}`;
  const last = v.at > 0 ? v.path[v.at - 1] : null;
  const story = $("story");
  story.textContent = last ? `${v.at}. ${v.story}` : v.story;
  story.className = last && last.breaks.length ? "bad" : "";
  $("following").textContent = query.trace ? `following the trace of ${query.trace}` : "";
  const d = m.designs.find((x) => x.name === query.design);
  $("design-doc").textContent = `${v.config.label}: ${d.safe ? "the safe design" : "a mutant"}` +
    (d.doc ? ` (${d.doc})` : "") +
    m.hazards.filter((h) => String(query[h.bound]) === "1")
      .map((h) => `. Hazard ${h.name} enabled: ${h.doc}. Remedy: ${h.remedy}`).join("");
  $("first").disabled = $("back").disabled = v.at === 0;
  $("forward").disabled = $("last").disabled = v.at === v.path.length;
  $("link").value = location.href;
  renderConfig();
  renderEnabled(v);
  renderPath(v);
  renderState(v);
  renderProperties(v);
  markTrace();
}

function renderConfig() {
  const sel = $("model");
  if (!sel.options.length) {
    for (const name of Object.keys(models)) sel.append(el("option", { value: name }, name));
  }
  sel.value = query.model;
  const m = models[query.model];
  const ds = $("design");
  ds.replaceChildren(...m.designs.map((d) => el("option", { value: d.name, title: d.doc },
    `${d.name} (${d.safe ? "safe" : "mutant"})`)));
  ds.value = query.design;
  const box = $("bounds");
  box.replaceChildren();
  const values = view.config.bounds;
  for (const b of m.bounds) {
    box.append(el("label", { title: b.help }, b.name + " ",
      el("input", { id: "bound-" + b.name, name: b.name, type: "number", min: 1, max: b.max, size: 2,
        value: values[b.name], onchange: onConfig })));
  }
  for (const h of m.hazards) {
    box.append(el("label", { title: `hazard ${h.name}: ${h.doc}` }, h.bound + " ",
      el("input", { id: "bound-" + h.bound, name: h.bound, type: "checkbox",
        checked: String(query[h.bound]) === "1", onchange: onConfig })));
  }
}

function onConfig(ev) {
  const model = $("model").value;
  const q = { model, path: "", at: "", trace: "" };
  if (ev && ev.target.id === "model") {
    q.design = models[model].designs[0].name;
  } else {
    q.design = $("design").value;
    for (const b of models[model].bounds) q[b.name] = $("bound-" + b.name).value;
    for (const h of models[model].hazards) q[h.bound] = $("bound-" + h.bound).checked ? "1" : "";
  }
  go(q);
}

function renderEnabled(v) {
  const ol = $("enabled");
  ol.replaceChildren();
  $("enabled-count").textContent = `(${v.enabled.length})`;
  if (!v.enabled.length) ol.append(el("li", { class: "muted" }, "none: no move is enabled here (a deadlock)"));
  v.enabled.forEach((s, n) => {
    const b = el("button", {
      type: "button", class: [s.next ? "next" : "", s.breaks.length ? "bad" : ""].join(" ").trim() || null,
      "data-token": s.token, title: `${s.token} (${s.side})`, onclick: () => take(s.token),
    },
    el("span", { class: "key" }, n < 9 ? String(n + 1) : ""),
    s.story,
    s.next ? el("span", { class: "tag" }, "next on the path") : null,
    el("span", { class: "ch" }, changeText(s.changes)),
    outputText(s.output) ? el("span", { class: "out" }, outputText(s.output)) : null,
    s.breaks.length ? el("span", { class: "warn" }, "breaks " + s.breaks.join(", ")) : null);
    ol.append(el("li", {}, b));
  });
}

function renderPath(v) {
  const ol = $("path");
  ol.replaceChildren(el("li", { class: v.at === 0 ? "current" : null, "data-step": 0, onclick: () => goAt(0) },
    el("span", { class: "n" }, "0."), el("span", { class: "text" }, "initial state")));
  v.path.forEach((s, n) => {
    const cls = [n + 1 === v.at ? "current" : "", n + 1 > v.at ? "ahead" : "", s.breaks.length ? "bad" : ""];
    ol.append(el("li", { class: cls.join(" ").trim() || null, "data-step": n + 1, onclick: () => goAt(n + 1) },
      el("span", { class: "n" }, `${n + 1}.`), el("span", { class: "text" }, s.story),
      el("span", { class: "ch" }, changeText(s.changes)),
      outputText(s.output) ? el("span", { class: "out" }, outputText(s.output)) : null,
      s.breaks.length ? el("span", { class: "warn" }, "breaks " + s.breaks.join(", ")) : null));
  });
}

function renderState(v) {
  const t = $("state");
  t.replaceChildren();
  const byVar = new Map();
  for (const f of v.state) {
    if (!byVar.has(f.var)) byVar.set(f.var, []);
    byVar.get(f.var).push(f);
  }
  for (const [name, fields] of byVar) {
    const ghost = fields[0].ghost;
    t.append(el("tr", { class: ghost ? "ghost" : null, "data-var": name, "data-role": fields[0].role },
      el("th", {}, name, ghost ? el("span", { class: "ghost-tag" }, "ghost") : null),
      fields.map((f) => el("td", { class: "slot" + (f.changed ? " changed" : ""), "data-field": f.name },
        f.name !== name ? el("span", { class: "k" }, f.name.slice(name.length)) : null, f.value))));
  }
}

function statusClass(s) { return "st-" + s.replace(/[^a-z]+/g, "-"); }

function renderProperties(v) {
  const t = $("properties");
  t.replaceChildren(el("tr", {}, el("th", {}, "property"), el("th", {}, "kind"),
    el("th", {}, "here"), el("th", {}, "explored")));
  const verdicts = explored && explored.status === "done" ? explored.properties : {};
  for (const p of v.properties) {
    const ex = verdicts[p.name];
    t.append(el("tr", { class: p.status === "fails" ? "fails" : null,
      "data-property": p.name, "data-status": p.status, title: p.doc },
    el("td", { class: "name" }, p.name),
    el("td", { class: "kindcol" }, p.kind),
    el("td", { class: "status " + statusClass(p.status) }, p.status),
    el("td", { class: ex ? "status " + statusClass(ex.verdict) : "muted" }, ex ? ex.verdict : "…")));
  }
}

// --- the exploration: verdicts, traces, coverage -------------------------------------------

async function loadExplored() {
  const key = configKey(query);
  if (exploredFor === key && explored && explored.status !== "queued" && explored.status !== "exploring") return;
  if (exploredFor !== key) {
    exploredFor = key;
    explored = null;
    $("verdict-list").replaceChildren();
    $("coverage").replaceChildren();
  }
  clearTimeout(pollTimer);
  let r;
  try {
    r = await getJSON("/api/models/explore" + queryString(query, configKeys(query)));
  } catch (e) {
    $("explore-status").textContent = e.message;
    return;
  }
  if (exploredFor !== key) return;
  if (r.status === "queued" || r.status === "exploring") {
    $("explore-status").textContent = r.status === "queued" ? `queued (${r.ahead} ahead)` : `exploring… ${r.seconds} s`;
    pollTimer = setTimeout(loadExplored, 300);
    return;
  }
  explored = r;
  renderExplored();
  renderProperties(view);
}

// loopFrom: a liveness failure's lasso, whose steps after loopFrom repeat forever
function traceLink(label, kind, path, name, len, loopFrom) {
  const loop = loopFrom === undefined ? "" : `, steps ${loopFrom + 1}-${len} repeat forever`;
  const a = el("a", { href: "#", "data-trace": name, "data-what": kind },
    el("span", { class: "kind " + kind }, kind), el("span", { class: "tname" }, label),
    el("span", { class: "len" }, ` (${len} steps${loop})`));
  a.addEventListener("click", (ev) => {
    ev.preventDefault();
    go({ ...query, path: path.join("-"), at: "0", trace: name });
  });
  return el("li", {}, a);
}

function renderExplored() {
  const r = explored;
  const status = $("explore-status");
  if (r.status === "error") { status.textContent = "the exploration failed: " + r.error; return; }
  status.textContent = `${r.states.toLocaleString()} states, ${r.transitions.toLocaleString()} transitions, ` +
    `depth ${r.depth}, ${r.seconds} s` + (r.complete ? "" : " — incomplete: " + r.errors.join("; ")) +
    (r.ok ? " — every property holds, every witness reached" : "");
  const ul = $("verdict-list");
  ul.replaceChildren();
  for (const [name, p] of Object.entries(r.properties)) {
    const bad = p.verdict === "fails";
    if (p.path) {
      const kind = bad ? (p.kind === "hazard" ? "hazard" : "counterexample") : "witness";
      ul.append(traceLink(name, kind, p.path, name, p.path.length, p.loop_from));
    } else {
      ul.append(el("li", { class: "plain", "data-property": name },
        el("span", { class: "kind " + (bad ? "counterexample" : "clean") }, `${p.kind}: ${p.verdict}`),
        el("span", { class: "tname" }, name)));
    }
  }
  // a state with no move enabled: a run ends there (a model may end every run so)
  if (r.deadlock_path) ul.append(traceLink("a state where no move is enabled", "end", r.deadlock_path, "deadlock", r.deadlock_path.length));
  const cov = $("coverage");
  cov.replaceChildren(el("tr", {}, el("th", {}, "action"), el("th", {}, "times")));
  for (const [a, n] of Object.entries(r.coverage)) {
    cov.append(el("tr", { class: n === 0 ? "dead" : null, "data-action": a },
      el("td", {}, a + (n === 0 ? " (dead)" : "")), el("td", {}, n.toLocaleString())));
  }
  markTrace();
}

function markTrace() {
  for (const a of document.querySelectorAll("#verdict-list a")) {
    a.classList.toggle("current", a.dataset.trace === query.trace);
  }
}

// --- keys and start -----------------------------------------------------------------------

function onKey(ev) {
  if (!view || ev.target.closest("input, select, textarea") || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key;
  if (/^[1-9]$/.test(k)) {
    const s = view.enabled[Number(k) - 1];
    if (s) { take(s.token); ev.preventDefault(); }
  } else if (k === "ArrowLeft" || k === "Backspace") { goAt(view.at - 1); ev.preventDefault(); }
  else if (k === "ArrowRight") { goAt(view.at + 1); ev.preventDefault(); }
  else if (k === "Home") { goAt(0); ev.preventDefault(); }
  else if (k === "End") { goAt(view.path.length); ev.preventDefault(); }
}

async function main() {
  try {
    const r = await getJSON("/api/models");
    models = Object.fromEntries(r.models.map((m) => [m.name, m]));
    defaultModel = r.default;
  } catch (e) {
    showError(e.message);
    return;
  }
  $("model").addEventListener("change", onConfig);
  $("design").addEventListener("change", onConfig);
  $("first").addEventListener("click", () => goAt(0));
  $("back").addEventListener("click", () => goAt(view.at - 1));
  $("forward").addEventListener("click", () => goAt(view.at + 1));
  $("last").addEventListener("click", () => goAt(view.path.length));
  $("start-initial").addEventListener("click", (ev) => {
    ev.preventDefault();
    go({ ...query, path: "", at: "", trace: "" });
  });
  $("copy").addEventListener("click", async () => {
    $("link").select();
    try { await navigator.clipboard.writeText($("link").value); } catch (e) { /* selected */ }
  });
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", () => go(readLocation(), false));
  go(readLocation(), false);
}

main();
