// Mnemon control-plane page. Plain browser JS, no build step, no external URLs.
// Every request is relative to the page (served at /mnemon/), so `api/...` is /mnemon/api/...
"use strict";

const $ = (id) => document.getElementById(id);
const state = { status: null, space: null, tab: "recall", contentOffset: 0, task: null };
const PAGE_SIZE = 20;

// --- DOM and network helpers ------------------------------------------------------------

// Build elements with textContent only: stored memories are untrusted text, never HTML.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "testid") node.dataset.testid = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "testid") node.setAttribute("data-testid", value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

function fill(id, ...children) {
  const node = $(id);
  node.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

// One fetch wrapper: JSON in and out, the bearer token when set, and the API's
// {"error", "message"} body turned into an ApiError so callers cannot ignore it.
// Every change (POST, PATCH, DELETE) is sent as JSON, bodiless ones too: the server refuses
// any other content type (a cross-site page can send text/plain or a form without asking).
async function api(path, options = {}) {
  const headers = { Accept: "application/json" };
  const init = { method: options.method || "GET", headers };
  if (init.method !== "GET" && init.method !== "HEAD") {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body === undefined ? {} : options.body);
  }
  const token = sessionStorage.getItem("mnemon-token");
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(`api/${path}`, init);
  } catch (err) {
    throw new ApiError("network", `could not reach the server (${err.message})`, 0);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    if (data && data.error) throw new ApiError(data.error, data.message || "", response.status);
    throw new ApiError(`http-${response.status}`, text.slice(0, 300) || response.statusText, response.status);
  }
  return data;
}

// Errors stay until dismissed; receipts and notes fade after a while.
function notify(text, kind = "info", code = "") {
  const box = el("div", { class: `msg ${kind}`, role: kind === "error" ? "alert" : "status", testid: `message-${kind}` },
    code ? el("strong", {}, `${code}: `) : null,
    el("span", {}, text),
    el("button", { type: "button", class: "close", title: "Dismiss", onclick: () => box.remove() }, "×"));
  $("messages").append(box);
  if (kind !== "error") setTimeout(() => box.remove(), 8000);
}

function showError(err) {
  if (err instanceof ApiError) notify(err.message, "error", `${err.code} (${err.status || "no response"})`);
  else notify(String(err && err.message ? err.message : err), "error", "page");
}

// Run an async UI action; any failure is shown, never swallowed.
function guard(fn) {
  return async (event) => {
    if (event && event.preventDefault) event.preventDefault();
    try {
      await fn(event);
    } catch (err) {
      showError(err);
    }
  };
}

window.addEventListener("unhandledrejection", (event) => showError(event.reason));

function receipt(result) {
  if (result && result.message) notify(result.message, result.status === "committed" ? "info" : "warning");
}

// A button that needs a second click: removing memory should not be one slip away.
function confirmButton(label, action) {
  const button = el("button", { type: "button", class: "danger" }, label);
  let armed = false;
  button.addEventListener("click", guard(async () => {
    if (!armed) {
      armed = true;
      button.textContent = `Confirm ${label.toLowerCase()}`;
      setTimeout(() => { armed = false; button.textContent = label; }, 4000);
      return;
    }
    await action();
  }));
  return button;
}

function usageBar(used, limit, testid) {
  const pct = limit ? Math.min(100, (100 * used) / limit) : 0;
  return el("div", { class: "usage", testid },
    el("div", { class: `bar${pct > 90 ? " full" : ""}` }, el("span", { style: `width:${pct.toFixed(1)}%` })),
    el("small", { class: "muted" }, `${used.toLocaleString()} / ${limit.toLocaleString()} bytes (${pct.toFixed(0)}%)`));
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const shortId = (id) => (id ? String(id).slice(0, 8) : "");
const when = (value) => {
  if (value === null || value === undefined) return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  return isNaN(date) ? String(value) : date.toLocaleString();
};

// --- Status ------------------------------------------------------------------------------

async function loadStatus() {
  const s = await api("status");
  state.status = s;
  applyAuthority(s);
  const card = (title, rows) => el("div", { class: "card", testid: `status-${title.toLowerCase().replace(/\s+/g, "-")}` },
    el("h3", {}, title),
    el("dl", {}, rows.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
  const rt = s.runtime;
  const docs = s.documents;
  const spaces = s.spaces;
  renderHealth(s.health);
  fill("status-summary",
    card("Host", [
      ["version", s.version || "?"],
      ["strategy", s.strategy],
      ["write_enabled", el("span", { testid: "status-write-enabled", class: s.write_enabled ? "ok" : "warn" }, String(s.write_enabled))],
      ["remote_access", el("span", { testid: "status-remote-access" }, String(s.remote_access))],
      ["root", s.root],
      ["database", s.database_url],
    ]),
    card("Runtime", [
      ["USER", usageBar(rt.user.used, rt.user.limit, "status-usage-user")],
      ["MEMORY", usageBar(rt.memory.used, rt.memory.limit, "status-usage-memory")],
      ["entries", `${rt.user_entries} user, ${rt.memory_entries} memory`],
      ["archived locally", rt.locally_archived],
      ["revision", shortId(rt.revision)],
    ]),
    card("Documents", [
      ["active", el("span", { testid: "status-documents-active" }, docs.active)],
      ["archived", docs.archived],
      ["active bytes", usageBar(docs.active_bytes.used, docs.active_bytes.limit, "status-usage-documents")],
    ]),
    card("Memory Spaces", spaces ? [
      ["spaces", el("span", { testid: "status-spaces-total" }, spaces.total)],
      ["active", spaces.active],
      ["providers", spaces.providers.join(", ")],
      ["provider disabled", spaces.provider_disabled],
    ] : [["spaces", "not configured"]]));
}

// A degraded memory step (a failed write, a database that went away) is shown, never hidden:
// the agent kept working without it. Older servers send no health at all.
function renderHealth(health) {
  if (!health) {
    fill("status-health");
    return;
  }
  const problems = health.problems || [];
  if (!health.degraded) {
    fill("status-health", el("p", { class: "ok", testid: "status-healthy" }, "Memory is healthy."));
    return;
  }
  fill("status-health", el("div", { class: "msg warning degraded", role: "alert", testid: "status-degraded" },
    el("span", {},
      el("strong", {}, "Memory is degraded: "),
      `${plural(problems.length, "problem")} since the server started; the agent went on without the failed memory steps.`,
      el("ul", { testid: "status-problems" }, problems.map((p) => el("li", { testid: "status-problem" },
        el("code", {}, p.step || "?"), " ", el("strong", {}, p.code || ""), ": ", p.message || "",
        p.at ? el("small", { class: "muted" }, ` (${when(p.at)})`) : null))))));
}

// Show the token field only where the server accepts remote writes with a token.
function applyAuthority(s) {
  $("token-box").hidden = s.remote_access !== "trusted-host";
  document.body.classList.toggle("read-only", !s.write_enabled);
}

// --- Runtime Memory ----------------------------------------------------------------------

async function loadRuntime() {
  const data = await api("runtime");
  $("runtime-revision").textContent = `revision ${shortId(data.revision)}`;
  for (const target of ["user", "memory"]) renderTier(target, data[target]);
}

function renderTier(target, tier) {
  const list = el("ul", { class: "list", id: `runtime-${target}-list`, testid: `runtime-${target}-list` },
    tier.entries.length ? tier.entries.map((entry) => runtimeEntry(target, entry))
      : el("li", { class: "muted empty" }, "No entries."));
  fill(`runtime-${target}`,
    el("h3", {}, target.toUpperCase(), el("small", { class: "muted" }, ` ${tier.entries.length} ${tier.entries.length === 1 ? "entry" : "entries"}`)),
    usageBar(tier.used, tier.limit, `usage-${target}`),
    list,
    archivedEntries(target, tier.archived || []));
}

// Entries capacity maintenance moved to runtime/archived/ (read-only here; the model can still
// search them). Text only, like every stored value on this page.
function archivedEntries(target, archived) {
  if (!archived.length) return null;
  return el("details", { class: "archived", testid: `runtime-${target}-archived` },
    el("summary", {}, `Archived (runtime/archived/${target}.jsonl) `,
      el("small", { class: "muted" }, `${archived.length} ${archived.length === 1 ? "entry" : "entries"}`)),
    el("ul", { class: "list", testid: `runtime-${target}-archived-list` },
      archived.map((entry) => el("li", { testid: "runtime-archived-entry" },
        el("span", { class: `badge ${entry.importance}` }, entry.importance),
        el("span", { class: "content", testid: "runtime-archived-content" }, entry.content),
        el("small", { class: "muted" }, entry.archived_at ? `archived ${entry.archived_at.slice(0, 19)}` : "")))));
}

function runtimeEntry(target, entry) {
  const item = el("li", { testid: "runtime-entry", "data-index": entry.index });
  const show = () => item.replaceChildren(
    el("span", { class: `badge ${entry.importance}` }, entry.importance),
    el("span", { class: "content", testid: "runtime-entry-content" }, entry.content),
    el("span", { class: "actions" },
      el("button", { type: "button", testid: "runtime-edit", onclick: edit }, "Edit"),
      confirmButton("Remove", async () => {
        receipt(await api("runtime", { method: "POST", body: { action: "remove", target, old_text: entry.content } }));
        await loadRuntime();
      })));
  // Editing is a replace of the exact stored text, which the API matches first.
  function edit() {
    const box = el("textarea", { rows: 2, testid: "runtime-edit-content" });
    box.value = entry.content;
    const importance = el("select", { testid: "runtime-edit-importance" },
      ["normal", "critical", "low"].map((v) => el("option", { value: v, selected: v === entry.importance }, v)));
    item.replaceChildren(box, el("span", { class: "actions" }, importance,
      el("button", { type: "button", testid: "runtime-save", onclick: guard(async () => {
        receipt(await api("runtime", { method: "POST", body: {
          action: "replace", target, old_text: entry.content, content: box.value, importance: importance.value } }));
        await loadRuntime();
      }) }, "Save"),
      el("button", { type: "button", onclick: show }, "Cancel")));
    box.focus();
  }
  show();
  return item;
}

async function addRuntime() {
  const content = $("runtime-add-content");
  // Sent as typed (even empty): the API is the one place that validates input.
  receipt(await api("runtime", { method: "POST", body: {
    action: "add", target: $("runtime-add-target").value, content: content.value,
    importance: $("runtime-add-importance").value } }));
  content.value = "";
  await loadRuntime();
}

// --- Documents ---------------------------------------------------------------------------

async function loadDocuments() {
  const { documents } = await api("documents?status=all");
  for (const status of ["active", "archived"]) {
    const rows = documents.filter((d) => d.status === status);
    fill(`doc-${status}`, rows.length ? rows.map(docItem) : el("li", { class: "muted empty" }, `No ${status} documents.`));
  }
}

function docItem(doc) {
  return el("li", { testid: "doc-item" },
    el("button", { type: "button", class: "link", testid: "doc-open", onclick: guard(() => openDocument(doc.id)) }, doc.title),
    el("small", { class: "muted" }, ` ${doc.description || ""} · ${doc.size_bytes} bytes · updated ${when(doc.updated_at)}`));
}

async function openDocument(id) {
  const { record, content } = await api(`documents/${encodeURIComponent(id)}`);
  const reader = fill("doc-reader",
    el("h3", { testid: "doc-reader-title" }, record.title),
    el("p", { class: "muted" }, `${record.status} · revision ${record.revision} · ${record.relative_path}`),
    record.description ? el("p", {}, record.description) : null,
    record.archive_summary ? el("p", { class: "muted" }, `Archive summary: ${record.archive_summary}`) : null,
    el("pre", { testid: "doc-reader-content" }, content),
    record.status === "active" ? confirmButton("Archive", async () => {
      receipt(await api(`documents/${encodeURIComponent(id)}/archive`, { method: "POST" }));
      await loadDocuments();
      await openDocument(id);
    }) : null);
  reader.hidden = false;
}

async function createDocument() {
  const body = { title: $("doc-title").value, content: $("doc-content").value };
  if ($("doc-description").value) body.description = $("doc-description").value;
  const result = await api("documents", { method: "POST", body });
  receipt(result);
  for (const id of ["doc-title", "doc-description", "doc-content"]) $(id).value = "";
  await loadDocuments();
  if (result && result.document) await openDocument(result.document.id);
}

async function searchDocuments() {
  const q = $("doc-search-q").value;
  const result = await api(`documents/search?q=${encodeURIComponent(q)}&include_archived=true&limit=4`);
  const hits = [...result.results, ...(result.suggestions || [])];
  fill("doc-search-results",
    el("p", { class: "muted" }, result.hint || `${result.total} match(es)`),
    el("ul", { class: "list" }, hits.map((hit) => el("li", {},
      el("button", { type: "button", class: "link", onclick: guard(() => openDocument(hit.id)) }, hit.title),
      el("small", { class: "muted" }, ` ${hit.kind} · ${hit.status} · score ${hit.score}`)))));
}

// --- Memory Spaces -----------------------------------------------------------------------

async function loadSpaces(spaceId) {
  const data = await api("spaces");
  $("spaces-count").textContent = `${data.active_count} active of ${data.total}`;
  fill("spaces-list", data.spaces.length ? data.spaces.map((space) => el("tr", { testid: "space-row", "data-space-id": space.id },
    el("td", {}, el("a", { href: `#/spaces/${encodeURIComponent(space.id)}`, testid: "space-open" }, space.name)),
    el("td", {}, el("code", {}, space.id)),
    el("td", {}, space.provider_id, space.provider_registered ? "" : " (disabled)"),
    el("td", {}, el("span", { class: `badge ${space.active ? "ok" : "off"}`, testid: "space-active" }, space.active ? "active" : "inactive")),
    el("td", {}, el("button", { type: "button", testid: "space-toggle", onclick: guard(async () => {
      receipt(await api(`spaces/${encodeURIComponent(space.id)}/active`, { method: "POST", body: { active: !space.active } }));
      await loadSpaces(state.space && state.space.id);
    }) }, space.active ? "Deactivate" : "Activate"))))
    : el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No Memory Spaces yet.")));
  const chosen = data.spaces.find((s) => s.id === spaceId);
  if (chosen && (!state.space || state.space.id !== chosen.id)) {
    // Another space: its pages and recall output start fresh.
    state.contentOffset = 0;
    fill("recall-output");
  }
  state.space = chosen || null;
  $("space-panel").hidden = !chosen;
  if (chosen) {
    $("space-title").textContent = `${chosen.name} — ${chosen.description || chosen.provider_id}`;
    await showTab(state.tab);
  }
}

async function createSpace() {
  const body = { name: $("space-name").value };
  if ($("space-description").value) body.description = $("space-description").value;
  const result = await api("spaces", { method: "POST", body });
  receipt(result);
  $("space-name").value = "";
  $("space-description").value = "";
  if (result && result.space) location.hash = `#/spaces/${encodeURIComponent(result.space.id)}`;
  else await loadSpaces();
}

const spacePath = (suffix) => `spaces/${encodeURIComponent(state.space.id)}/${suffix}`;

async function showTab(tab) {
  if (tab !== state.tab) state.contentOffset = 0;
  state.tab = tab;
  for (const node of document.querySelectorAll("#space-panel .tab")) node.hidden = node.dataset.tab !== tab;
  for (const node of document.querySelectorAll("#space-tabs button")) node.classList.toggle("on", node.dataset.tab === tab);
  if (tab === "content") await loadContent();
  else if (tab === "entities") await loadEntities();
  else if (tab === "graph") await loadGraph();
}

async function runRecall() {
  const query = $("recall-query").value;
  const mode = document.querySelector("input[name=recall-mode]:checked").value;
  const spaceIds = [state.space.id];
  fill("recall-output", el("p", { class: "muted" }, "Recalling…"));
  try {
    if (mode === "agent") {
      const result = await api("query", { method: "POST", body: { question: query, space_ids: spaceIds } });
      fill("recall-output",
        el("h4", {}, "Answer"),
        el("pre", { class: "answer", testid: "agent-answer" }, result.answer),
        el("h4", {}, `Citations (${result.citations.length})`),
        el("ul", { class: "list", testid: "agent-citations" }, result.citations.map((c) =>
          el("li", { testid: "agent-citation" }, el("code", {}, `${c.memory_body_id}/${c.id}`)))));
    } else {
      const result = await api("recall", { method: "POST", body: { query, space_ids: spaceIds, limit: 10 } });
      const notes = result.sources.filter((s) => s.hint).map((s) => `${s.name}: ${s.hint}`);
      if (result.hint) notes.unshift(result.hint);
      fill("recall-output",
        el("p", { class: "muted" }, `${plural(result.results.length, "result")} · policy ${result.policy_id}${result.fallback_from ? ` (fallback from ${result.fallback_from})` : ""}`),
        notes.map((n) => el("p", { class: "hint" }, n)),
        el("ul", { class: "list", testid: "recall-results" }, result.results.map((row) => el("li", { testid: "recall-result" },
          el("span", { class: `badge ${row.relevance_tier || "unknown"}` }, row.relevance_tier || "unscored"),
          el("span", { class: "content" }, row.content),
          el("small", { class: "muted" }, ` ${row.space_name || row.space_id} · ${row.score == null ? "" : `score ${Number(row.score).toFixed(3)}`}`)))));
    }
  } catch (err) {
    fill("recall-output");
    throw err;
  }
}

async function loadContent() {
  const offset = state.contentOffset;
  const { items } = await api(`${spacePath("content")}?limit=${PAGE_SIZE}&offset=${offset}`);
  fill("content-list", items.length ? items.map((row) => el("li", { testid: "content-item" },
    el("span", { class: "badge" }, row.category),
    el("span", { class: "content" }, row.content),
    row.entities.length ? el("small", { class: "muted" }, ` [${row.entities.join(", ")}]`) : null,
    el("span", { class: "actions" }, confirmButton("Forget", async () => {
      receipt(await api(spacePath(`memories/${encodeURIComponent(row.id)}`), { method: "DELETE" }));
      await loadContent();
    }))))
    : el("li", { class: "muted empty" }, offset ? "No more memories." : "This space is empty."));
  $("content-page").textContent = `items ${offset + 1}–${offset + items.length}`;
  $("content-prev").disabled = offset === 0;
  $("content-next").disabled = items.length < PAGE_SIZE;
}

async function loadEntities() {
  const { entities } = await api(spacePath("entities?limit=100"));
  fill("entity-list", entities.length ? entities.map((entity) =>
    el("button", { type: "button", class: "chip", testid: "entity", onclick: guard(() => recallEntity(entity.name)) },
      entity.name, el("small", {}, ` ${entity.count}`)))
    : el("p", { class: "muted" }, "No entities recorded in this space."));
}

// Entity recall is an ordinary direct recall with the entity as the query.
async function recallEntity(name) {
  $("recall-query").value = name;
  document.querySelector("input[name=recall-mode][value=direct]").checked = true;
  await showTab("recall");
  await runRecall();
}

async function remember() {
  const entities = $("remember-entities").value.split(",").map((s) => s.trim()).filter(Boolean);
  const body = { content: $("remember-content").value };
  if (entities.length) body.entities = entities;
  receipt(await api(spacePath("memories"), { method: "POST", body }));
  $("remember-content").value = "";
  $("remember-entities").value = "";
}

// --- Graph (SVG, small force layout) -----------------------------------------------------

// Start on a circle (deterministic), then relax with a few hundred steps of
// repulsion between all nodes and springs along edges. Good enough for 200 nodes.
function layout(nodes, edges, width, height) {
  const n = nodes.length;
  const cx = width / 2;
  const cy = height / 2;
  const radius = Math.min(width, height) * 0.38;
  const pos = nodes.map((_, i) => ({
    x: cx + radius * Math.cos((2 * Math.PI * i) / Math.max(n, 1)),
    y: cy + radius * Math.sin((2 * Math.PI * i) / Math.max(n, 1)),
  }));
  const index = new Map(nodes.map((node, i) => [node.id, i]));
  const links = edges.map((e) => [index.get(e.source), index.get(e.target)]).filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
  const ideal = Math.max(40, radius / Math.sqrt(Math.max(n, 1)));
  for (let step = 0; step < 300; step++) {
    const cool = 1 - step / 300;
    const force = pos.map(() => ({ x: 0, y: 0 }));
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const dx = pos[i].x - pos[j].x || 0.01;
        const dy = pos[i].y - pos[j].y || 0.01;
        const d2 = dx * dx + dy * dy;
        const push = (ideal * ideal) / d2;
        force[i].x += dx * push; force[i].y += dy * push;
        force[j].x -= dx * push; force[j].y -= dy * push;
      }
    }
    for (const [a, b] of links) {
      const dx = pos[b].x - pos[a].x;
      const dy = pos[b].y - pos[a].y;
      const d = Math.sqrt(dx * dx + dy * dy) || 0.01;
      const pull = (d - ideal) / d / 2;
      force[a].x += dx * pull; force[a].y += dy * pull;
      force[b].x -= dx * pull; force[b].y -= dy * pull;
    }
    for (let i = 0; i < n; i++) {
      // A weak pull to the centre keeps unlinked nodes on screen.
      force[i].x += (cx - pos[i].x) * 0.02;
      force[i].y += (cy - pos[i].y) * 0.02;
      const len = Math.hypot(force[i].x, force[i].y) || 1;
      const move = Math.min(len, 10 * cool + 0.5);
      pos[i].x = Math.min(width - 20, Math.max(20, pos[i].x + (force[i].x / len) * move));
      pos[i].y = Math.min(height - 20, Math.max(20, pos[i].y + (force[i].y / len) * move));
    }
  }
  return { pos, index };
}

async function loadGraph() {
  const graph = await api(spacePath("graph?limit=200"));
  const width = 960;
  const height = 420;
  if (!graph.nodes.length) {
    fill("graph-view", el("p", { class: "muted" }, "No memories to draw."));
    return;
  }
  const { pos, index } = layout(graph.nodes, graph.edges, width, height);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "graph", role: "img", testid: "graph-svg",
    "aria-label": `${graph.nodes.length} memories, ${graph.edges.length} links` });
  for (const edge of graph.edges) {
    const a = pos[index.get(edge.source)];
    const b = pos[index.get(edge.target)];
    if (!a || !b) continue;
    chart.append(svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: `edge ${edge.type}`, testid: "graph-edge",
      "stroke-width": 1 + 2 * (edge.weight ?? 0.5) }, svg("title", {}, `${edge.type} ${edge.weight ?? ""}`)));
  }
  graph.nodes.forEach((node, i) => {
    const label = node.label.length > 32 ? `${node.label.slice(0, 31)}…` : node.label;
    // Labels point towards the middle so the ones near the right edge are not cut off.
    const right = pos[i].x > width * 0.6;
    chart.append(svg("g", { class: `node ${node.category || ""}`, testid: "graph-node", transform: `translate(${pos[i].x},${pos[i].y})` },
      svg("title", {}, `${node.label}${node.entities.length ? `\n[${node.entities.join(", ")}]` : ""}`),
      svg("circle", { r: 7 }),
      svg("text", { x: right ? -10 : 10, y: 4, "text-anchor": right ? "end" : "start" }, label)));
  });
  const types = [...new Set(graph.edges.map((e) => e.type))];
  fill("graph-view", chart,
    el("p", { class: "muted legend" }, `${plural(graph.nodes.length, "node")}, ${plural(graph.edges.length, "edge")}`,
      types.map((t) => el("span", { class: `key ${t}` }, t))));
}

// --- Mnemos ------------------------------------------------------------------------------

async function loadMnemos(taskId) {
  const { tasks } = await api("mnemos/tasks");
  fill("tasks-list", tasks.length ? tasks.map((task) => {
    const f = task.last_fatigue;
    return el("tr", { testid: "task-row", "data-task-id": task.task_id },
      el("td", {}, el("a", { href: `#/mnemos/${encodeURIComponent(task.task_id)}`, testid: "task-open" }, task.task_id)),
      el("td", {}, `${task.nodes.active} active / ${task.nodes.total}`),
      el("td", {}, task.checkpoints),
      el("td", {}, f ? el("span", { class: `badge ${f.state}` }, `${f.state} ${f.composite.toFixed(2)}`) : "–"));
  }) : el("tr", {}, el("td", { colspan: 4, class: "muted" }, "No Mnemos tasks yet.")));
  state.task = tasks.some((t) => t.task_id === taskId) ? taskId : null;
  $("task-panel").hidden = !state.task;
  if (!state.task) return;
  $("task-title").textContent = `Task ${state.task}`;
  $("resume-text").hidden = true;
  const base = `mnemos/tasks/${encodeURIComponent(state.task)}`;
  const [fatigue, nodes, checkpoints] = await Promise.all([
    api(`${base}/fatigue?limit=50`), api(`${base}/nodes?limit=100`), api(`${base}/checkpoints`)]);
  drawFatigue(fatigue);
  fill("task-nodes", nodes.nodes.length ? nodes.nodes.map((node) => el("li", { testid: "task-node" },
    el("span", { class: "badge" }, node.type),
    el("span", { class: "content" }, node.status === "compressed" && node.summary ? node.summary : node.content),
    el("small", { class: "muted" }, ` ${node.status} · weight ${Number(node.weight).toFixed(2)} · ${node.access_count} uses`)))
    : el("li", { class: "muted empty" }, "No nodes."));
  fill("task-checkpoints", checkpoints.checkpoints.length ? checkpoints.checkpoints.map((cp) => el("li", { testid: "task-checkpoint" },
    el("code", {}, shortId(cp.id)),
    ` ${when(cp.created_at)} · ${cp.source}`,
    cp.fatigue_state ? el("span", { class: `badge ${cp.fatigue_state}` }, cp.fatigue_state) : null,
    cp.emergency ? el("span", { class: "badge EMERGENCY" }, "emergency") : null))
    : el("li", { class: "muted empty" }, "No checkpoints."));
}

const BANDS = [[0, 0.4, "FLOW"], [0.4, 0.6, "COMPRESS"], [0.6, 0.75, "PRE_SLEEP"], [0.75, 0.9, "REM"], [0.9, 1, "EMERGENCY"]];

// Composite fatigue over time (history is newest first), over the five state bands.
function drawFatigue({ current, history }) {
  const readings = [...history].reverse();
  const width = 960;
  const height = 240;
  const pad = { l: 80, r: 16, t: 10, b: 28 };
  const w = width - pad.l - pad.r;
  const h = height - pad.t - pad.b;
  const y = (v) => pad.t + h * (1 - Math.min(1, Math.max(0, v)));
  const x = (i) => pad.l + (readings.length > 1 ? (w * i) / (readings.length - 1) : w / 2);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "fatigue", role: "img", testid: "fatigue-svg",
    "aria-label": `${readings.length} fatigue readings` });
  for (const [lo, hi, name] of BANDS) {
    chart.append(svg("rect", { x: pad.l, y: y(hi), width: w, height: y(lo) - y(hi), class: `band ${name}` }));
    chart.append(svg("text", { x: pad.l - 6, y: (y(lo) + y(hi)) / 2 + 4, class: "axis", "text-anchor": "end" }, name));
  }
  if (readings.length) {
    const points = readings.map((r, i) => `${x(i)},${y(r.composite)}`).join(" ");
    chart.append(svg("polyline", { points, class: "line", testid: "fatigue-line" }));
    readings.forEach((r, i) => chart.append(svg("circle", { cx: x(i), cy: y(r.composite), r: 4, class: `dot ${r.state}`, testid: "fatigue-point" },
      svg("title", {}, `${when(r.computed_at)}: ${r.composite.toFixed(3)} ${r.state} (tokens ${r.token_utilization}, scatter ${r.scope_scatter}, re-read ${r.reread_ratio}, errors ${r.error_density})`))));
    chart.append(svg("text", { x: pad.l, y: height - 8, class: "axis" }, when(readings[0].computed_at)));
    chart.append(svg("text", { x: width - pad.r, y: height - 8, class: "axis", "text-anchor": "end" }, when(readings[readings.length - 1].computed_at)));
  } else {
    chart.append(svg("text", { x: pad.l + w / 2, y: pad.t + h / 2, class: "axis", "text-anchor": "middle" }, "No readings logged yet"));
  }
  fill("fatigue-chart", chart,
    current ? el("p", { testid: "fatigue-current" }, "Now: ", el("span", { class: `badge ${current.state}` }, current.state),
      ` composite ${current.composite.toFixed(3)} · tokens ${current.token_utilization} · scatter ${current.scope_scatter} · re-read ${current.reread_ratio} · errors ${current.error_density}`) : null);
}

async function showResume() {
  const result = await api(`mnemos/tasks/${encodeURIComponent(state.task)}/resume`, { method: "POST" });
  const box = $("resume-text");
  box.textContent = result.resume;
  box.hidden = false;
}

// --- Routing -----------------------------------------------------------------------------

const PAGES = {
  status: () => loadStatus(),
  runtime: () => loadRuntime(),
  documents: () => loadDocuments(),
  spaces: (arg) => loadSpaces(arg),
  mnemos: (arg) => loadMnemos(arg),
};

// Routes look like #/page or #/page/<id> (a space or a task).
async function route() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  const page = PAGES[name] ? name : "status";
  const arg = rest.length ? decodeURIComponent(rest.join("/")) : undefined;
  for (const section of document.querySelectorAll(".page")) section.hidden = section.id !== `page-${page}`;
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("on", link.dataset.page === page);
  document.body.dataset.page = page;
  document.body.dataset.loaded = "";
  try {
    await PAGES[page](arg);
  } catch (err) {
    showError(err);
  } finally {
    // Tests and scripts wait for this marker instead of sleeping.
    document.body.dataset.loaded = page;
  }
}

function wire() {
  $("runtime-add").addEventListener("submit", guard(addRuntime));
  $("doc-create").addEventListener("submit", guard(createDocument));
  $("doc-search").addEventListener("submit", guard(searchDocuments));
  $("space-create").addEventListener("submit", guard(createSpace));
  $("recall-form").addEventListener("submit", guard(runRecall));
  $("remember-form").addEventListener("submit", guard(remember));
  $("resume-button").addEventListener("click", guard(showResume));
  for (const button of document.querySelectorAll("#space-tabs button")) {
    button.addEventListener("click", guard(() => showTab(button.dataset.tab)));
  }
  $("content-prev").addEventListener("click", guard(() => { state.contentOffset = Math.max(0, state.contentOffset - PAGE_SIZE); return loadContent(); }));
  $("content-next").addEventListener("click", guard(() => { state.contentOffset += PAGE_SIZE; return loadContent(); }));
  const token = $("token");
  token.value = sessionStorage.getItem("mnemon-token") || "";
  token.addEventListener("change", () => {
    if (token.value) sessionStorage.setItem("mnemon-token", token.value);
    else sessionStorage.removeItem("mnemon-token");
  });
  window.addEventListener("hashchange", route);
}

wire();
// Status also drives the read-only marker and the token field, so fetch it once up front.
(location.hash.startsWith("#/status") || !location.hash ? Promise.resolve() : loadStatus().catch(showError)).then(route);
