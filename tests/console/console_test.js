// The web console in a real browser: Debian's Chromium, headless, driven
// by puppeteer-core, against a real server. It checks what a user sees:
// the token gate, the models a test made, a chart that gains points while
// a Train stream runs, the p-value CompareModels answers, the aliases, the
// server's limits, a 2-D model's decision boundary, and a model's drift
// events as they come.
//
//   node tests/console/console_test.js
//
// Environment: HALFSPACE_SERVER_BINARY, CHROMIUM (the browser),
// NODE_PATH (puppeteer-core, @grpc/grpc-js, @grpc/proto-loader),
// HALFSPACE_PROTO_DIR; with HALFSPACE_CONSOLE_SCREENSHOT, a screenshot of
// the console is written there.
"use strict";

const assert = require("node:assert/strict");
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { after, before, test } = require("node:test");

const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const puppeteer = require("puppeteer-core");

const ADMIN = "admin-token-0123456789";
const READER = "reader-token-0123456789";

let server;
let browser;

// A server on a Unix socket for gRPC and a loopback port for HTTP.
async function startServer(dir) {
  fs.writeFileSync(path.join(dir, "tokens"),
                   `${ADMIN} admin:*\n${READER} predict:*\n`);
  const log = path.join(dir, "server.log");
  const socket = path.join(dir, "halfspace.sock");
  const child = spawn(process.env.HALFSPACE_SERVER_BINARY, [
    "--listen=unix:" + socket, "--data_dir=" + path.join(dir, "data"),
    "--http_listen=127.0.0.1:0", "--tokens_file=" + path.join(dir, "tokens"),
    "--max_models=50", "--log_level=info",
  ], { stdio: ["ignore", fs.openSync(log, "w"), fs.openSync(log, "a")] });
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const found = /JSON over HTTP on \S+ \(port (\d+)\)/.exec(
        fs.readFileSync(log, "utf8"));
    if (found) {
      return { child, socket, url: `http://127.0.0.1:${found[1]}` };
    }
    await sleep(50);
  }
  child.kill();
  throw new Error("the server did not say its HTTP port: " +
                  fs.readFileSync(log, "utf8"));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A call of the JSON API with the admin's token.
async function api(method, route, body) {
  const response = await fetch(server.url + route, {
    method,
    headers: { "Authorization": "Bearer " + ADMIN,
               "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${route}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

async function createModel(name, dimension, algorithm) {
  await api("POST", "/v1/models",
            { model: name, dimension, algorithm: algorithm ||
              { perceptron: {} } });
}

// Two Gaussian clouds, +1 around (1, 1) and -1 around (-1, -1), from a
// fixed seed.
function examples(count, seed) {
  let s = seed;
  const uniform = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s + 1) / 2147483649;
  };
  const normal = () => Math.sqrt(-2 * Math.log(uniform())) *
                       Math.cos(2 * Math.PI * uniform());
  const out = [];
  for (let i = 0; i < count; i++) {
    const label = i % 2 ? 1 : -1;
    out.push({ features: { dense: [label + normal(), label + normal()] },
               label });
  }
  return out;
}

async function newPage() {
  const page = await browser.newPage();
  page.on("pageerror", (e) => { throw e; });
  return page;
}

// The console, past its gate with the reader's token.
async function openConsole(hash) {
  const page = await newPage();
  await page.goto(server.url + "/console/" + (hash || ""));
  await page.waitForSelector("#token-form", { visible: true });
  await page.type("#token", READER);
  await page.click("#token-form button");
  await page.waitForSelector("#console", { visible: true });
  return page;
}

before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "console-"));
  server = await startServer(dir);
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // As root the browser's sandbox cannot start; the pages are ours.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) server.child.kill("SIGTERM");
});

test("without a token the page says so and shows nothing else",
     async () => {
  await createModel("secret-model", 2);
  const page = await newPage();
  await page.goto(server.url + "/console/");
  await page.waitForSelector("#gate", { visible: true });
  const seen = await page.evaluate(() => ({
    gate: document.querySelector("#gate h2").textContent,
    hidden: document.querySelector("#console").hidden,
    text: document.body.innerText,
  }));
  assert.match(seen.gate, /asks for a token/);
  assert.equal(seen.hidden, true);
  assert.doesNotMatch(seen.text, /secret-model/);

  await page.type("#token", "wrong-token-0123456789");
  await page.click("#token-form button");
  await page.waitForFunction(() => /refused/.test(
      document.querySelector("#gate-reason").textContent));
  assert.equal(await page.$eval("#console", (e) => e.hidden), true);
  assert.doesNotMatch(await page.evaluate(() => document.body.innerText),
                      /secret-model/);
  await page.close();
});

test("lists the models, their aliases and the server's limits", async () => {
  await createModel("listed-a", 3);
  await createModel("listed-b", 5, { sgd: { loss: "LOSS_LOG" } });
  await api("POST", "/v1/models",
            { model: "listed-drift", dimension: 2,
              algorithm: { perceptron: {} }, drift: { ddm: {} } });
  await api("PUT", "/v1/aliases/prod", { model: "listed-a" });
  const page = await openConsole();
  await page.waitForSelector('#models tr[data-model="listed-b"]');
  const rows = await page.$$eval("#models tbody tr",
                                 (r) => r.map((e) => e.dataset.model));
  for (const name of ["listed-a", "listed-b", "secret-model"]) {
    assert.ok(rows.includes(name), `${name} in ${rows}`);
  }
  const b = await page.$eval('#models tr[data-model="listed-b"]',
                             (r) => r.innerText);
  assert.match(b, /sgd/);
  // A drift detector's findings, and a dash for a model without one.
  await page.waitForSelector('#models tr[data-model="listed-drift"]');
  assert.deepStrictEqual(
      await page.$eval('#models tr[data-model="listed-drift"] td.drift',
                       (td) => [td.dataset.state, td.textContent]),
      ["stable", "stable: 0 drifts, 0 warnings"]);
  assert.strictEqual(
      await page.$eval('#models tr[data-model="listed-b"] td.drift',
                       (td) => td.textContent), "–");
  await page.waitForSelector('#aliases tr[data-alias="prod"]');
  assert.match(await page.$eval('#aliases tr[data-alias="prod"]',
                                (r) => r.innerText), /listed-a/);
  assert.match(await page.$eval("#server-facts", (e) => e.innerText),
               /--max_models\s+50/);
  await page.close();
});

test("the comparison shows the p-value CompareModels returns", async () => {
  await createModel("champion", 2, { perceptron: {} });
  await createModel("challenger", 2, {
    passive_aggressive: { variant: "VARIANT_PA_I", aggressiveness: 0.01 } });
  const lines = examples(400, 11).map((e) =>
      JSON.stringify({ models: ["champion", "challenger"], examples: [e] }))
      .join("\n");
  const response = await fetch(server.url + "/v1/models:train", {
    method: "POST",
    headers: { "Authorization": "Bearer " + ADMIN,
               "Content-Type": "application/x-ndjson" },
    body: lines,
  });
  assert.equal(response.status, 200, await response.text());
  const expected = await api("POST", "/v1/models:compare",
                             { models: ["champion", "challenger"] });
  const test = expected.models[1].versusFirst;
  assert.ok(Number(test.examples) === 400, JSON.stringify(test));

  const page = await openConsole("#compare=champion,challenger");
  await page.waitForSelector('#comparison tr[data-model="challenger"]');
  const shown = await page.$eval(
      '#comparison tr[data-model="challenger"] td.p-value',
      (td) => ({ value: td.dataset.value, text: td.textContent }));
  assert.equal(Number(shown.value), test.pValue);
  assert.equal(shown.text, test.pValue.toPrecision(4));
  const row = await page.$eval('#comparison tr[data-model="challenger"]',
                               (r) => r.innerText);
  assert.match(row, new RegExp(`\\b${test.onlyFirstWrong}\\b`));
  assert.match(row, new RegExp(`\\b${test.onlyThisWrong}\\b`));
  await page.close();
});

test("a model's chart gains points while a Train stream runs", async () => {
  await createModel("streaming", 2);
  const page = await openConsole(
      "#model=streaming&compare=champion,challenger");
  await page.waitForFunction(() =>
      document.querySelector("#detail-name").textContent === "streaming");
  const points = () => page.$eval("#accuracy-chart",
                                  (e) => Number(e.dataset.points));
  assert.equal(await points(), 0);

  const definition = protoLoader.loadSync("halfspace/v1/halfspace.proto", {
    includeDirs: [process.env.HALFSPACE_PROTO_DIR],
    keepCase: true, longs: String, defaults: false,
  });
  const v1 = grpc.loadPackageDefinition(definition).halfspace.v1;
  const client = new v1.HalfspaceService("unix:" + server.socket,
                                         grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", "Bearer " + ADMIN);
  const stream = client.Train(metadata);
  const done = new Promise((resolve, reject) => {
    stream.on("data", () => {});
    stream.on("error", reject);
    stream.on("end", resolve);
  });
  // Six batches, 1.5 s apart, on one open stream: the page polls each
  // second, so it sees the model grow between them.
  const seen = [];
  const batches = 6;
  for (let i = 0; i < batches; i++) {
    stream.write({ model: "streaming", examples: examples(50, 7 + i) });
    await sleep(1500);
    seen.push(await points());
  }
  stream.end();
  await done;
  client.close();
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i] > seen[i - 1], `points grow: ${seen}`);
  }
  // The decision boundary: the examples kept, and the line f(x) = 0.
  await page.waitForFunction(() =>
      Number(document.querySelector("#boundary").dataset.examples) === 200);
  assert.equal(await page.$$eval("#boundary circle", (c) => c.length), 200);
  assert.equal(await page.$$eval("#boundary line", (l) => l.length), 1);
  const text = await page.$eval('#models tr[data-model="streaming"]',
                                (r) => r.innerText);
  assert.match(text, new RegExp(`\\b${batches * 50}\\b`));
  if (process.env.HALFSPACE_CONSOLE_SCREENSHOT) {  // the README's
    await page.setViewport({ width: 1200, height: 900 });
    await page.screenshot({ path: process.env.HALFSPACE_CONSOLE_SCREENSHOT,
                            fullPage: true });
  }
  await page.close();
});

// A concept reversed after 2000 examples, as the README's reversal.csv, for
// the NDJSON route: one training request a line.
function reversal(model) {
  const lines = [];
  for (let i = 0; i < 4000; i++) {
    const x = Math.sin(i * 1.3), z = Math.cos(i * 0.7);
    const y = (x - 0.5 * z > 0 ? 1 : -1) * (i < 2000 ? 1 : -1);
    lines.push(JSON.stringify({ model, examples: [
      { features: { dense: [x, z] }, label: y }] }));
  }
  return lines.join("\n");
}

test("a model's drift events come to the page as they happen", async () => {
  await api("POST", "/v1/models",
            { model: "eventful", dimension: 2,
              algorithm: { perceptron: {} }, drift: { ddm: {} } });
  const page = await openConsole("#model=eventful");
  await page.waitForFunction(() =>
      document.querySelector("#events").dataset.watching === "eventful");
  assert.equal(await page.$eval("#events", (e) => e.dataset.events), "0");

  const response = await fetch(server.url + "/v1/models:train", {
    method: "POST",
    headers: { "Authorization": "Bearer " + ADMIN,
               "Content-Type": "application/x-ndjson" },
    body: reversal("eventful"),
  });
  assert.equal(response.status, 200, await response.text());
  const drift = (await api("GET", "/v1/models/eventful")).model.stats.drift;
  const count = Number(drift.warnings) + Number(drift.drifts);
  assert.ok(Number(drift.drifts) >= 1, JSON.stringify(drift));
  // Each event the model counted, newest first, where it says they were.
  const shown = async (p) => {
    await p.waitForFunction((n) =>
        Number(document.querySelector("#events").dataset.events) === n,
        {}, count);
    return p.$$eval("#events li", (items) => items.map(
        (li) => [li.dataset.kind, Number(li.dataset.position),
                 li.textContent]));
  };
  const live = await shown(page);
  const kinds = live.map(([kind]) => kind);
  assert.equal(kinds.filter((k) => k === "KIND_DRIFT").length,
               Number(drift.drifts));
  assert.equal(kinds.filter((k) => k === "KIND_WARNING").length,
               Number(drift.warnings));
  const positions = live.map(([, position]) => position);
  assert.deepStrictEqual(positions,
                         [...positions].sort((a, b) => b - a));
  assert.equal(live.find(([k]) => k === "KIND_DRIFT")[1],
               Number(drift.lastDriftAt));
  assert.equal(live.find(([k]) => k === "KIND_WARNING")[1],
               Number(drift.lastWarningAt));
  assert.match(live.find(([k]) => k === "KIND_DRIFT")[2],
               new RegExp(`^drift at ${drift.lastDriftAt}, `));
  // A page opened later shows the same, from the events the server kept.
  const later = await openConsole("#model=eventful");
  assert.deepStrictEqual(await shown(later), live);
  await later.close();
  // Another model chosen: its own events (none), the first one's gone.
  await createModel("quiet", 2);
  await page.waitForSelector('#models tr[data-model="quiet"]');
  await page.click('#models tr[data-model="quiet"]');
  await page.waitForFunction(() =>
      document.querySelector("#events").dataset.watching === "quiet");
  assert.equal(await page.$eval("#events", (e) => e.dataset.events), "0");
  assert.match(await page.$eval("#events-note", (e) => e.textContent),
               /no drift detector/);
  await page.close();
});

test("the console's files are the server's own, read with GET", async () => {
  for (const file of ["", "index.html", "console.js", "console.css"]) {
    const response = await fetch(server.url + "/console/" + file);
    assert.equal(response.status, 200, file);
    assert.match(response.headers.get("content-security-policy"),
                 /default-src 'self'/);
  }
  const missing = await fetch(server.url + "/console/nothing.js");
  assert.equal(missing.status, 404);
  const post = await fetch(server.url + "/console/", { method: "POST" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get("allow"), "GET");
  const root = await fetch(server.url + "/", { redirect: "manual" });
  assert.equal(root.status, 302);
  assert.equal(root.headers.get("location"), "/console/");
});
