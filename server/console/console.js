// The halfspace web console: a read-only view of one server's models,
// drawn from its JSON-over-HTTP API (the same calls, tokens and limits as
// any client). It only reads: GET routes, and CompareModels, which changes
// nothing. Charts are plain SVG, drawn here: a few hundred lines do what
// the console needs, with nothing to fetch from elsewhere, and a test can
// count what they show.
"use strict";

const POLL_MS = 1000;            // statistics and aliases
const MODELS_MS = 5000;          // the models' specs
const HISTORY = 600;             // points a chart keeps per model
const TOKEN_KEY = "halfspace-token";
const SVG = "http://www.w3.org/2000/svg";

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  models: new Map(),      // name -> Model, from ListModels
  usage: new Map(),       // name -> ModelUsage, from GetStats
  history: new Map(),     // name -> [{n, windowAccuracy, ...}]
  aliases: [],
  selected: null,
  champion: null,
  challengers: new Set(),
  modelsAt: 0,
  timer: null,
};

const $ = (id) => document.getElementById(id);

// --- calls -------------------------------------------------------------

class CallError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function call(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = {};
  try { json = text ? JSON.parse(text) : {}; } catch (e) { json = {}; }
  if (!response.ok) {
    throw new CallError(response.status,
                        json.message || `${response.status} ${text}`);
  }
  return json;
}

// protobuf's JSON mapping writes 64-bit integers as strings and leaves out
// fields at their defaults.
const int = (v) => (v === undefined ? 0 : Number(v));
const num = (v) => (v === undefined ? 0 : Number(v));

// --- the token gate ----------------------------------------------------

function showGate(reason) {
  clearInterval(state.timer);
  state.timer = null;
  $("console").hidden = true;
  // Nothing of the server stays on the page without a token.
  for (const id of ["models", "aliases", "comparison", "refusals"]) {
    $(id).querySelector("tbody").replaceChildren();
  }
  $("server-facts").replaceChildren();
  $("detail-facts").replaceChildren();
  watchEvents(null);
  state.models.clear();
  state.usage.clear();
  state.history.clear();
  $("gate").hidden = false;
  $("gate-reason").textContent = reason;
  $("forget").hidden = !state.token;
  setStatus(state.token ? "the token was refused" : "a token is needed",
            true);
}

function setStatus(text, error) {
  $("status").textContent = text;
  $("status").classList.toggle("error", !!error);
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.token = $("token").value.trim();
  $("token").value = "";
  sessionStorage.setItem(TOKEN_KEY, state.token);
  start();
});

$("forget").addEventListener("click", () => {
  state.token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  showGate("Enter a token to see the models.");
});

// --- polling -----------------------------------------------------------

async function start() {
  try {
    await refresh(true);
  } catch (e) {
    return failed(e);
  }
  $("gate").hidden = true;
  $("console").hidden = false;
  $("forget").hidden = !state.token;
  if (state.timer === null) state.timer = setInterval(tick, POLL_MS);
}

let ticking = false;
async function tick() {
  if (ticking) return;  // a slow server: skip a beat rather than pile up
  ticking = true;
  try {
    await refresh(false);
  } catch (e) {
    failed(e);
  } finally {
    ticking = false;
  }
}

function failed(e) {
  if (e instanceof CallError && e.status === 401) {
    return showGate(state.token
        ? "The server refused this token: " + e.message
        : "This server shows its models only to callers with a token.");
  }
  if (e instanceof CallError && e.status === 403) {
    return showGate("This token may not read the server's models: " +
                    e.message);
  }
  setStatus("cannot reach the server: " + e.message, true);
}

async function refresh(all) {
  const [stats, aliases] = await Promise.all([
    call("GET", "/v1/stats"), call("GET", "/v1/aliases")]);
  const names = (stats.models || []).map((m) => m.name);
  const known = names.every((n) => state.models.has(n)) &&
                names.length === state.models.size;
  if (all || !known || Date.now() - state.modelsAt > MODELS_MS) {
    await loadModels();
  }
  state.aliases = aliases.aliases || [];
  state.usage = new Map((stats.models || []).map((m) => [m.name, m]));
  for (const [name, usage] of state.usage) record(name, usage.stats || {});
  for (const name of state.history.keys()) {
    if (!state.usage.has(name)) state.history.delete(name);
  }
  if (state.selected === null || !state.models.has(state.selected)) {
    state.selected = fromHash("model") || names[0] || null;
  }
  drawServer(stats);
  drawModels();
  drawAliases();
  await Promise.all([drawDetail(), drawComparison()]);
  setStatus(`updated ${new Date().toLocaleTimeString()}`);
}

async function loadModels() {
  const models = new Map();
  let token = "";
  do {
    const page = await call("GET", "/v1/models?pageSize=1000" +
        (token ? "&pageToken=" + encodeURIComponent(token) : ""));
    for (const m of page.models || []) models.set(m.name, m);
    token = page.nextPageToken || "";
  } while (token);
  state.models = models;
  state.modelsAt = Date.now();
}

// A point of a model's progress, when it has learned since the last one.
function record(name, s) {
  let points = state.history.get(name);
  const n = int(s.examplesSeen);
  if (points === undefined || (points.length && points.at(-1).n > n)) {
    points = [];  // new, or made anew under the same name
    state.history.set(name, points);
  }
  if (n === 0 || (points.length && points.at(-1).n === n)) return;
  points.push({
    n,
    windowAccuracy: num(s.windowAccuracy),
    decayedAccuracy: num(s.decayedAccuracy),
    windowLoss: s.windowLoss === undefined ? null : num(s.windowLoss),
    decayedLoss: num(s.decayedLoss),
  });
  if (points.length > HISTORY) points.shift();
}

function fromHash(key) {
  const params = new URLSearchParams(location.hash.slice(1));
  return params.get(key);
}

// --- formatting --------------------------------------------------------

const percent = (x) => (x > 0 && x < 1e-4 ? "<0.01" : (100 * x).toFixed(2)) +
    "%";
const fixed = (x) => (Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3)
    ? x.toExponential(3) : x.toFixed(4));

function bytes(b) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : b) + " " + units[i];
}

// "passive_aggressive (PA_I)": the algorithm as the proto names it, and
// its variant or loss.
function algorithmOf(model) {
  const a = model.algorithm || {};
  const key = Object.keys(a)[0] || "";
  const name = key.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
  const kind = a[key] && (a[key].variant || a[key].loss);
  return kind ? `${name} (${kind.replace(/^(VARIANT|LOSS)_/, "")})` : name;
}

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  row.append(td);
  return td;
}

function facts(dl, pairs) {
  dl.replaceChildren();
  for (const [term, value] of pairs) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    dl.append(dt, dd);
  }
}

// --- the server and its models ----------------------------------------

function drawServer(stats) {
  const used = int(stats.modelMemoryBytes);
  const limit = int(stats.modelMemoryLimitBytes);
  const pairs = [
    ["Models", String(state.usage.size)],
    ["Model memory", limit ? `${bytes(used)} of ${bytes(limit)} ` +
        `(${percent(used / limit)})` : bytes(used)],
    ["Open Train and Evaluate streams", String(int(stats.openStreams))],
    ["Log syncs", `${int(stats.logSyncs)} in ` +
        `${num(stats.logSyncSeconds).toFixed(3)} s`],
  ];
  for (const { limit, value } of stats.limits || []) {
    const v = int(value);
    pairs.push([`--${limit}`, limit.endsWith("_bytes") ? bytes(v)
        : limit === "pending_ttl" ? `${v} s` : String(v)]);
  }
  facts($("server-facts"), pairs);
  const refusals = (stats.refusals || []).filter((r) => int(r.count) > 0);
  const body = $("refusals").querySelector("tbody");
  body.replaceChildren();
  for (const r of refusals) {
    const row = body.insertRow();
    cell(row, "--" + r.limit);
    cell(row, String(int(r.count)));
  }
  $("refusals").hidden = refusals.length === 0;
}

function drawModels() {
  const body = $("models").querySelector("tbody");
  body.replaceChildren();
  $("no-models").hidden = state.models.size > 0;
  for (const [name, model] of state.models) {
    const usage = state.usage.get(name) || {};
    const s = usage.stats || model.stats || {};
    const row = body.insertRow();
    row.dataset.model = name;
    row.classList.toggle("selected", name === state.selected);
    row.addEventListener("click", () => select(name));
    cell(row, name);
    if (model.unavailableReason) {
      const td = cell(row, "unavailable: " + model.unavailableReason,
                      "error");
      td.colSpan = 11;
      continue;
    }
    cell(row, algorithmOf(model) + (model.oneVsRest ? ", one-vs-rest" : ""));
    cell(row, String(int(model.dimension)) +
         (model.hashBits ? ` + 2^${model.hashBits}` : ""));
    cell(row, String(int(s.examplesSeen)), "examples");
    cell(row, String(int(s.updates)));
    cell(row, percent(num(s.progressiveAccuracy)), "accuracy");
    cell(row, int(s.windowExamples)
        ? `${percent(num(s.windowAccuracy))} of ${int(s.windowExamples)}`
        : "–");
    cell(row, fixed(num(s.decayedLoss)));
    const drift = cell(row, driftText(s.drift), "drift");
    if (s.drift) drift.dataset.state = driftState(s.drift);
    cell(row, `${int(s.pendingWaiting)} waiting`, "pending");
    cell(row, bytes(int(usage.memoryBytes)));
    cell(row, (model.aliases || []).join(", "));
  }
}

// A drift detector's state lately: "stable", "warning" or "drift".
function driftState(d) {
  return (d.state || "SIGNAL_STABLE").replace("SIGNAL_", "").toLowerCase();
}

// "drift: 1 (last at 2031), 3 warnings", or "–" for a model without a
// detector.
function driftText(d) {
  if (!d) return "–";
  const drifts = int(d.drifts), warnings = int(d.warnings);
  let text = `${driftState(d)}: ${drifts} drift${drifts === 1 ? "" : "s"}`;
  if (drifts) text += ` (last at ${int(d.lastDriftAt)})`;
  return text + `, ${warnings} warning${warnings === 1 ? "" : "s"}`;
}

function drawAliases() {
  const body = $("aliases").querySelector("tbody");
  body.replaceChildren();
  $("no-aliases").hidden = state.aliases.length > 0;
  for (const a of state.aliases) {
    const row = body.insertRow();
    row.dataset.alias = a.alias;
    cell(row, a.alias);
    cell(row, a.model);
  }
}

function select(name) {
  state.selected = name;
  const params = new URLSearchParams(location.hash.slice(1));
  params.set("model", name);
  history.replaceState(null, "", "#" + params.toString());
  drawModels();
  drawDetail().catch(failed);
}

// --- one model ----------------------------------------------------------

async function drawDetail() {
  const name = state.selected;
  const model = name === null ? undefined : state.models.get(name);
  $("detail").hidden = model === undefined;
  watchEvents(model === undefined ? null : name);
  if (model === undefined) return;
  $("detail-name").textContent = name;
  $("detail-unavailable").hidden = !model.unavailableReason;
  $("detail-unavailable").textContent = model.unavailableReason || "";
  const points = state.history.get(name) || [];
  lineChart($("accuracy-chart"), points,
            [["windowAccuracy", "window"], ["decayedAccuracy", "decayed"]],
            [0, 1]);
  lineChart($("loss-chart"), points,
            [["windowLoss", "window"], ["decayedLoss", "decayed"]], null);
  const s = (state.usage.get(name) || {}).stats || {};
  facts($("detail-facts"), [
    ["Examples seen", String(int(s.examplesSeen))],
    ["Mistakes", String(int(s.mistakes))],
    ["Average loss", fixed(num(s.averageLoss))],
    ["‖w‖", fixed(num(s.weightNorm))],
    ["b", fixed(num(s.bias))],
    ["Window", `${int(model.progressWindow)} examples`],
    ["Decayed accuracy", percent(num(s.decayedAccuracy))],
    ["Delayed labels waiting", String(int(s.pendingWaiting))],
    ["Remembered, joined, expired",
     `${int(s.pendingRemembered)}, ${int(s.pendingJoined)}, ` +
     `${int(s.pendingExpired)}`],
    ["Their memory", bytes(int(s.pendingBytes))],
    ["Drift", driftText(s.drift)],
  ]);
  await drawBoundary(name, model);
}

// --- a model's events ----------------------------------------------------

// The chosen model's events as WatchModel streams them (JSON a line): the
// ones the server keeps first, then each as it comes, shown newest first.
// A watch that ends (a restart, a replaced model) is taken up again from
// the last position seen; events seen twice are shown once.
const KEPT_EVENTS = 256;
const RETRY_MS = 2000;
const EVENT_KINDS = {
  KIND_WARNING: "warning",
  KIND_DRIFT: "drift",
  KIND_CHALLENGER_STARTED: "challenger started",
  KIND_SWITCHED: "switched",
  KIND_CHALLENGER_DROPPED: "challenger dropped",
  KIND_ROLLED_BACK: "rolled back",
};
const watching = { name: null, controller: null, seen: new Set(), last: 0 };

function watchEvents(name) {
  if (watching.name === name) return;
  if (watching.controller) watching.controller.abort();
  Object.assign(watching,
                { name, controller: null, seen: new Set(), last: 0 });
  const list = $("events");
  list.replaceChildren();
  list.dataset.events = "0";
  delete list.dataset.watching;
  $("events-note").textContent = "";
  if (name !== null) readEvents(name);
}

async function readEvents(name) {
  const controller = new AbortController();
  watching.controller = controller;
  const headers = { "Accept": "application/x-ndjson" };
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  let ended = "the watch ended";
  try {
    const response = await fetch(
        "/v1/models/" + encodeURIComponent(name) + ":watch?from_position=" +
        watching.last, { headers, cache: "no-store",
                         signal: controller.signal });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let end; (end = buffer.indexOf("\n")) >= 0;) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        if (!line) continue;
        const message = JSON.parse(line);
        if (message.result) showWatched(message.result);
        if (message.error) ended = message.error.message || ended;
        if (message.message) ended = message.message;  // refused at once
      }
    }
  } catch (e) {
    if (controller.signal.aborted) return;
    ended = e.message;
  }
  if (watching.controller !== controller) return;
  $("events-note").textContent = `(${ended}; watching again.)`;
  setTimeout(() => {
    if (watching.controller === controller) readEvents(name);
  }, RETRY_MS);
}

// One response of the watch: the first (the drift state), or an event.
function showWatched(result) {
  const list = $("events");
  if (result.event === undefined) {
    list.dataset.watching = result.model || "";
    $("events-note").textContent = !result.drift
        ? "(It has no drift detector.)"
        : result.complete === false ? "(Earlier events are not kept.)" : "";
    return;
  }
  const e = result.event;
  const position = int(e.position);
  const key = `${e.kind}@${position}`;
  if (watching.seen.has(key)) return;
  watching.seen.add(key);
  watching.last = Math.max(watching.last, position);
  const item = document.createElement("li");
  item.dataset.kind = e.kind;
  item.dataset.position = String(position);
  let text = `${EVENT_KINDS[e.kind] || e.kind} at ${position}`;
  if (e.pValue !== undefined) {
    text += ` (p = ${Number(e.pValue).toPrecision(4)})`;
  }
  if (e.time) text += `, ${new Date(e.time).toLocaleTimeString()}`;
  item.textContent = text;
  list.prepend(item);
  while (list.children.length > KEPT_EVENTS) list.lastChild.remove();
  list.dataset.events = String(list.children.length);
  if (watching.seen.size > 4 * KEPT_EVENTS) {  // those still shown
    watching.seen = new Set([...list.children].map(
        (li) => `${li.dataset.kind}@${li.dataset.position}`));
  }
}

// A line chart of `series` ([field, class]) over the examples seen.
function lineChart(svg, points, series, range) {
  const W = 480, H = 220, L = 46, R = 10, T = 10, B = 26;
  svg.replaceChildren();
  let lo = Infinity, hi = -Infinity;
  for (const p of points) {
    for (const [field] of series) {
      if (p[field] === null) continue;
      lo = Math.min(lo, p[field]);
      hi = Math.max(hi, p[field]);
    }
  }
  if (range) [lo, hi] = range;
  if (!(hi > lo)) { lo = Math.min(lo, 0) || 0; hi = lo + 1; }
  const n0 = points.length ? points[0].n : 0;
  const n1 = points.length ? points.at(-1).n : 1;
  const x = (n) => L + (W - L - R) * (n1 > n0 ? (n - n0) / (n1 - n0) : 1);
  const y = (v) => H - B - (H - T - B) * (v - lo) / (hi - lo);
  line(svg, L, H - B, W - R, H - B, "axis");
  line(svg, L, T, L, H - B, "axis");
  text(svg, L - 4, y(hi) + 4, fixed(hi), "end");
  text(svg, L - 4, y(lo) + 4, fixed(lo), "end");
  text(svg, L, H - 8, String(n0), "start");
  text(svg, W - R, H - 8, String(n1) + " examples", "end");
  let drawn = 0;
  for (const [field, className] of series) {
    const xy = points.filter((p) => p[field] !== null)
        .map((p) => `${x(p.n).toFixed(1)},${y(p[field]).toFixed(1)}`);
    if (!xy.length) continue;
    const poly = document.createElementNS(SVG, "polyline");
    poly.setAttribute("points", xy.join(" "));
    poly.setAttribute("class", className);
    // The latest point marked, so that a first one shows too.
    const [cx, cy] = xy.at(-1).split(",");
    const dot = document.createElementNS(SVG, "circle");
    Object.entries({ cx, cy, r: 2.5, class: className + " last" })
        .forEach(([k, v]) => dot.setAttribute(k, v));
    svg.append(poly, dot);
    drawn = Math.max(drawn, xy.length);
  }
  svg.dataset.points = String(drawn);
}

function line(svg, x1, y1, x2, y2, className) {
  const l = document.createElementNS(SVG, "line");
  for (const [k, v] of Object.entries({ x1, y1, x2, y2 })) {
    l.setAttribute(k, v);
  }
  l.setAttribute("class", className);
  svg.append(l);
}

function text(svg, x, y, content, anchor) {
  const t = document.createElementNS(SVG, "text");
  t.setAttribute("x", x);
  t.setAttribute("y", y);
  t.setAttribute("text-anchor", anchor);
  t.textContent = content;
  svg.append(t);
}

// A two-dimensional model's recent examples, and for a binary model with
// features as given (not standardized), the line w·x + b = 0.
async function drawBoundary(name, model) {
  const figure = $("boundary-figure");
  const flat = int(model.dimension) === 2 && !model.hashBits &&
               !(model.interactions || []).length;
  figure.hidden = !flat;
  if (!flat) return;
  const path = "/v1/models/" + encodeURIComponent(name);
  const [recent, weights] = await Promise.all([
    call("GET", path + "/recentExamples"),
    model.multiclass || model.standardize
        ? Promise.resolve(null) : call("GET", path + "/weights")]);
  const examples = recent.examples || [];
  const svg = $("boundary");
  svg.replaceChildren();
  const S = 300, P = 12;
  let box = [Infinity, -Infinity, Infinity, -Infinity];
  for (const e of examples) {
    const [a, b] = [num(e.features[0]), num(e.features[1])];
    box = [Math.min(box[0], a), Math.max(box[1], a),
           Math.min(box[2], b), Math.max(box[3], b)];
  }
  if (!examples.length) box = [-1, 1, -1, 1];
  for (const i of [0, 2]) {  // a margin, and room for a flat cloud
    const pad = Math.max((box[i + 1] - box[i]) * 0.08, 1e-9);
    box[i] -= pad;
    box[i + 1] += pad;
  }
  const px = (a) => P + (S - 2 * P) * (a - box[0]) / (box[1] - box[0]);
  const py = (b) => S - P - (S - 2 * P) * (b - box[2]) / (box[3] - box[2]);
  const classes = model.classes || [];
  for (const e of examples) {
    const c = document.createElementNS(SVG, "circle");
    c.setAttribute("cx", px(num(e.features[0])).toFixed(1));
    c.setAttribute("cy", py(num(e.features[1])).toFixed(1));
    c.setAttribute("r", 3);
    const positive = model.multiclass
        ? classes.indexOf(e.classLabel) % 2 === 0 : num(e.label) > 0;
    c.setAttribute("class", (positive ? "positive" : "negative") +
                   (e.mistake ? " wrong" : ""));
    svg.append(c);
  }
  svg.dataset.examples = String(examples.length);
  if (weights === null) return;
  const [w1, w2] = [num((weights.weights || [])[0]),
                    num((weights.weights || [])[1])];
  const segment = boundarySegment(w1, w2, num(weights.bias), box);
  if (segment) {
    line(svg, px(segment[0]), py(segment[1]), px(segment[2]),
         py(segment[3]), "line");
  }
}

// Where w1·a + w2·b + bias = 0 crosses the box [a0, a1] × [b0, b1]: the
// segment's two ends, or null.
function boundarySegment(w1, w2, bias, [a0, a1, b0, b1]) {
  const ends = [];
  if (w2 !== 0) {
    for (const a of [a0, a1]) {
      const b = -(w1 * a + bias) / w2;
      if (b >= b0 && b <= b1) ends.push([a, b]);
    }
  }
  if (w1 !== 0) {
    for (const b of [b0, b1]) {
      const a = -(w2 * b + bias) / w1;
      if (a >= a0 && a <= a1) ends.push([a, b]);
    }
  }
  if (ends.length < 2) return null;
  return [...ends[0], ...ends.at(-1)];
}

// --- champion and challengers -----------------------------------------

function drawChoices() {
  const names = [...state.models.keys()];
  if (state.champion === null || !state.models.has(state.champion)) {
    const wanted = (fromHash("compare") || "").split(",").filter(Boolean);
    if (wanted.length) {
      state.champion = wanted[0];
      state.challengers = new Set(wanted.slice(1));
    } else {
      // The model an alias serves, else the first.
      const served = state.aliases.find((a) => state.models.has(a.model));
      state.champion = served ? served.model : names[0] || null;
    }
  }
  const select = $("champion");
  if ([...select.options].map((o) => o.value).join() !== names.join()) {
    select.replaceChildren(...names.map((n) => new Option(n, n)));
  }
  select.value = state.champion || "";
  const set = $("challengers");
  const boxes = names.filter((n) => n !== state.champion);
  const shown = [...set.querySelectorAll("input")].map((i) => i.value);
  if (shown.join() !== boxes.join()) {
    set.querySelectorAll("label").forEach((l) => l.remove());
    for (const n of boxes) {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = n;
      box.addEventListener("change", () => {
        if (box.checked) state.challengers.add(n);
        else state.challengers.delete(n);
        drawComparison().catch(failed);
      });
      label.append(box, " " + n);
      set.append(label);
    }
  }
  for (const box of set.querySelectorAll("input")) {
    box.checked = state.challengers.has(box.value);
  }
}

$("champion").addEventListener("change", () => {
  state.champion = $("champion").value;
  state.challengers.delete(state.champion);
  drawComparison().catch(failed);
});

async function drawComparison() {
  drawChoices();
  const models = [state.champion,
                  ...[...state.challengers].filter(
                      (n) => n !== state.champion && state.models.has(n))]
      .slice(0, 16);
  const table = $("comparison");
  const error = $("compare-error");
  if (state.champion === null || models.length < 2) {
    table.hidden = true;
    error.hidden = true;
    return;
  }
  let result;
  try {
    result = await call("POST", "/v1/models:compare", { models });
  } catch (e) {
    if (e instanceof CallError && (e.status === 401 || e.status === 403)) {
      throw e;
    }
    error.textContent = e.message;
    error.hidden = false;
    table.hidden = true;
    return;
  }
  error.hidden = true;
  const body = table.querySelector("tbody");
  body.replaceChildren();
  for (const m of result.models || []) {
    const s = m.stats || {};
    const t = m.versusFirst;
    const row = body.insertRow();
    row.dataset.model = m.model;
    cell(row, m.model + (t ? "" : " (champion)"));
    cell(row, percent(num(s.progressiveAccuracy)));
    cell(row, percent(num(s.windowAccuracy)));
    if (!t) {
      for (let i = 0; i < 6; i++) cell(row, "");
      continue;
    }
    cell(row, String(int(t.examples)));
    cell(row, String(int(t.onlyFirstWrong)));
    cell(row, String(int(t.onlyThisWrong)));
    cell(row, percent(num(t.accuracyDifference)));
    const p = t.pValue === undefined ? 0 : Number(t.pValue);
    const td = cell(row, p.toPrecision(4), "p-value");
    td.dataset.value = String(p);
    cell(row, t.significant ? "yes" : "no",
         t.significant ? "significant" : "");
  }
  table.hidden = false;
}

start();
