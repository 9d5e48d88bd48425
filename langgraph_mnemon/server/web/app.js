// Mnemon control-plane page. Plain browser JS, no build step, no external URLs.
// Every request is relative to the page (served at /mnemon/), so `api/...` is /mnemon/api/...
"use strict";

const $ = (id) => document.getElementById(id);
const state = { status: null, runtime: null, space: null, tab: "recall", contentOffset: 0, task: null, providers: {}, newFields: null };
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

const SCOPE_HEADERS = [["mnemon-user", "X-Mnemon-User"], ["mnemon-project", "X-Mnemon-Project"]];

class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

const md = (text) => window.MnemonMarkdown.render(text);

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
  // The scope picked on the page (percent-encoded: ids may be any UTF-8 text).
  for (const [key, header] of SCOPE_HEADERS) {
    const value = sessionStorage.getItem(key);
    if (value) headers[header] = encodeURIComponent(value);
  }
  let response;
  try {
    response = await fetch(`api/${path}`, init);
  } catch (err) {
    throw new ApiError("network", `could not reach the server (${err.message})`, 0);
  }
  if (response.status === 403 && sessionStorage.getItem("mnemon-user") && !options.retried) {
    // This server does not let the page pick a user (authentication is on): drop the pick.
    const refused = await response.clone().json().catch(() => null);
    if (refused && refused.error === "scope-mismatch") {
      sessionStorage.removeItem("mnemon-user");
      $("scope-user").value = "";
      return api(path, { ...options, retried: true });
    }
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
    // A receipt that did not commit (409 rejected, 502 failed) says why in its message.
    if (data && data.status && data.message) throw new ApiError(data.status, data.message, response.status);
    throw new ApiError(`http-${response.status}`, text.slice(0, 300) || response.statusText, response.status);
  }
  return data;
}

// One banner at a time: a new message replaces the one shown, so nothing piles up and an
// error goes away with the next success. Errors stay until then (or until the user moves to
// another page); receipts and notes also fade after a while.
function notify(text, kind = "info", code = "") {
  const box = el("div", { class: `msg ${kind}`, role: kind === "error" ? "alert" : "status", testid: `message-${kind}` },
    code ? el("strong", {}, `${code}: `) : null,
    el("span", {}, text),
    el("button", { type: "button", class: "close", title: "Dismiss", onclick: () => box.remove() }, "×"));
  $("messages").replaceChildren(box);
  if (kind !== "error") setTimeout(() => box.remove(), 8000);
}

function clearErrors() {
  for (const box of $("messages").querySelectorAll(".msg.error")) box.remove();
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

// ``says`` may phrase a committed receipt for people (the names they gave, not ids).
function receipt(result, says) {
  if (!result || !result.message) return;
  const committed = result.status === "committed";
  notify(committed && says ? says(result) : result.message, committed ? "info" : "warning");
}

// Every change goes through here: show its receipt, then re-fetch what it may have changed,
// whether it committed or not (the server is the truth, not what the page thought).
async function mutate(call, refresh, says) {
  try {
    const result = await call();
    receipt(result, says);
    return result;
  } finally {
    if (refresh) await refresh().catch(showError);
  }
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

// Widths go through the CSSOM, not a style attribute: a strict Content-Security-Policy allows it.
function fillBar(pct) {
  const bar = el("span", {});
  bar.style.width = `${pct.toFixed(1)}%`;
  return bar;
}

function usageBar(used, limit, testid) {
  const pct = limit ? Math.min(100, (100 * used) / limit) : 0;
  return el("div", { class: "usage", testid },
    el("div", { class: `bar${pct > 90 ? " full" : ""}` }, fillBar(pct)),
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
    scopeCard(s.scope),
    card("Host", [
      ["version", s.version || "?"],
      ["strategy", s.strategy],
      ["write_enabled", el("span", { testid: "status-write-enabled", class: s.write_enabled ? "ok" : "warn" }, String(s.write_enabled))],
      ["remote_access", el("span", { testid: "status-remote-access" }, String(s.remote_access))],
      // Where data lives is shown to an admin only (the server sends null to anyone else).
      ...(s.root ? [["root", el("span", { testid: "status-root" }, s.root)]] : []),
      ...(s.database_url ? [["database", s.database_url]] : []),
    ]),
    card("Runtime", rt ? [
      ["USER", usageBar(rt.user.used, rt.user.limit, "status-usage-user")],
      ["MEMORY", usageBar(rt.memory.used, rt.memory.limit, "status-usage-memory")],
      ["entries", `${rt.user_entries} user, ${rt.memory_entries} memory`],
      ["archived locally", rt.locally_archived],
      ["revision", shortId(rt.revision)],
    ] : [["state", "unavailable (see Health)"]]),
    card("Documents", docs ? [
      ["active", el("span", { testid: "status-documents-active" }, docs.active)],
      ["archived", docs.archived],
      ["active bytes", usageBar(docs.active_bytes.used, docs.active_bytes.limit, "status-usage-documents")],
    ] : [["state", "unavailable (see Health)"]]),
    card("Memory Spaces", [
      ...(spaces ? [
        ["spaces", el("span", { testid: "status-spaces-total" }, spaces.total)],
        ["active", spaces.active],
        ["providers", spaces.providers.join(", ")],
        ["provider disabled", spaces.provider_disabled],
      ] : [["spaces", "not configured"]]),
      ...chromaRow(s)]),
    learningCard(s.learning));
}

// The scope's learning at a glance; the Learning page lists every pass.
function learningCard(learning) {
  if (learning === undefined) return null; // an older server
  return el("div", { class: "card learning", testid: "status-learning" },
    el("h3", {}, el("a", { href: "#/learning" }, "Learning")),
    el("dl", {}, (learning ? [
      ["passes", el("span", { testid: "status-learning-passes" }, `${learning.passes}`)],
      ["memories learned", el("span", { testid: "status-learning-learned" }, `${learning.learned}`)],
      ...learning.recent.slice(0, 3).map((row) => [row.thread_id, el("span", { title: when(row.finished_at) }, `${row.status} · ${row.learned} learned`)]),
    ] : [["state", "unavailable (see Health)"]]).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
}

// Who the page works as: the user, the project, how the server knows the user, and the
// projects this user is granted ("*": every one; the user's own memory needs no grant).
function scopeCard(scope) {
  if (!scope) return null;
  const granted = scope.projects || [];
  const list = $("scope-projects");
  if (list) list.replaceChildren(...granted.filter((p) => p !== "*").map((p) => el("option", { value: p })));
  return el("div", { class: "card", testid: "status-you" },
    el("h3", {}, "You"),
    el("dl", {}, [
      [el("dt", {}, "user"), el("dd", { testid: "status-user" }, scope.user)],
      [el("dt", {}, "project"), el("dd", { testid: "status-project" }, scope.project === "local" ? "your own" : scope.project)],
      [el("dt", {}, "known by"), el("dd", {}, scope.via)],
      [el("dt", {}, "admin"), el("dd", { testid: "status-admin" }, scope.admin ? "yes" : "no")],
      [el("dt", {}, "granted projects"), el("dd", { testid: "status-granted" },
        granted.includes("*") ? "every project" : (granted.length ? granted.join(", ") : "none (your own memory only)"))],
    ]));
}

// The Chroma target (a folder or a server address), from servers that report it.
function chromaRow(s) {
  const target = s.chroma ?? (s.spaces && s.spaces.chroma);
  if (target === undefined || target === null || target === "") return [];
  const text = typeof target === "string" ? target : (target.target || target.url || target.path || JSON.stringify(target));
  return [["chroma", el("span", { testid: "status-chroma" }, text)]];
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

// Show the token field where the server accepts remote writes with a token or identifies
// users by one; the user field is editable only where the page may pick a scope.
function applyAuthority(s) {
  const auth = s.authentication || "none";
  $("token-box").hidden = s.remote_access !== "trusted-host" && auth === "none";
  document.body.classList.toggle("read-only", !s.write_enabled);
  if (s.scope && !s.scope_pick) {
    // The server knows the user (a token, LangGraph auth): show it, it cannot be picked here.
    const user = $("scope-user");
    user.disabled = true;
    user.value = s.scope.user === "local" ? "" : s.scope.user;
  }
}

// --- Runtime Memory ----------------------------------------------------------------------

async function loadRuntime() {
  const data = await api("runtime");
  state.runtime = data;
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
      confirmButton("Remove", () => mutate(
        () => api("runtime", { method: "POST", body: { action: "remove", target, old_text: entry.content } }), loadRuntime))));
  // Editing is a replace of the exact stored text, which the API matches first.
  function edit() {
    const box = el("textarea", { rows: 2, testid: "runtime-edit-content" });
    box.value = entry.content;
    const importance = el("select", { testid: "runtime-edit-importance" },
      ["normal", "critical", "low"].map((v) => el("option", { value: v, selected: v === entry.importance }, v)));
    item.replaceChildren(box, el("span", { class: "actions" }, importance,
      el("button", { type: "button", testid: "runtime-save", onclick: guard(() => writeRuntime({
        action: "replace", target, old_text: entry.content, content: box.value, importance: importance.value })) }, "Save"),
      el("button", { type: "button", onclick: show }, "Cancel")));
    box.focus();
  }
  show();
  return item;
}

async function addRuntime() {
  const content = $("runtime-add-content");
  // Sent as typed (even empty): the API is the one place that validates input.
  await writeRuntime({ action: "add", target: $("runtime-add-target").value, content: content.value,
    importance: $("runtime-add-importance").value });
  content.value = "";
}

async function writeRuntime(body) {
  try {
    return await mutate(() => api("runtime", { method: "POST", body }), loadRuntime);
  } catch (err) {
    throw oversized(err, body.target, body.content || "");
  }
}

const utf8Bytes = (text) => new TextEncoder().encode(text).length;

// An entry larger than its whole file (or than one entry may be) cannot be made room for:
// "compact and retry" would fail again, so say what can work instead.
function oversized(err, target, content) {
  const view = state.runtime && state.runtime[target];
  if (!(err instanceof ApiError) || !view || !["runtime-capacity", "invalid-input"].includes(err.code)) return err;
  const perEntry = state.runtime.max_entry_bytes || view.limit;
  const room = Math.min(view.limit, perEntry);
  // The server collapses whitespace before it counts bytes.
  const size = utf8Bytes(content.split(/\s+/).filter(Boolean).join(" "));
  if (size <= room) return err;
  const what = room === view.limit ? `the whole ${target.toUpperCase()} file holds` : "one entry may hold";
  return new ApiError(err.code,
    `This entry is ${size.toLocaleString()} bytes, more than ${what} (${room.toLocaleString()} bytes), so compacting `
    + "other entries cannot make room. Shorten it, split it into smaller entries, or store it as a Document.", err.status);
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
    el("div", { class: "md", testid: "doc-reader-content" }, md(content)),
    record.status === "active" ? confirmButton("Archive", () => mutate(
      () => api(`documents/${encodeURIComponent(id)}/archive`, { method: "POST" }),
      async () => { await loadDocuments(); await openDocument(id); },
      () => `Document '${record.title}' archived.`)) : null);
  reader.hidden = false;
}

async function createDocument() {
  const body = { title: $("doc-title").value, content: $("doc-content").value };
  if ($("doc-description").value) body.description = $("doc-description").value;
  const result = await mutate(() => api("documents", { method: "POST", body }), loadDocuments,
    (r) => `Document '${r.document ? r.document.title : body.title}' created.`);
  for (const id of ["doc-title", "doc-description", "doc-content"]) $(id).value = "";
  if (result && result.document) await openDocument(result.document.id);
}

// The search API answers a model (its hint tells the model how to use excerpts); the page says
// in its own words what it found and never shows that hint.
async function searchDocuments() {
  const q = $("doc-search-q").value;
  const result = await api(`documents/search?q=${encodeURIComponent(q)}&include_archived=true&limit=4`);
  const suggestions = result.suggestions || [];
  let summary = result.total === 1 ? "1 matching document" : `${result.total} matching documents`;
  if (result.total > result.results.length) summary += `, best ${result.results.length} shown`;
  if (!result.results.length) {
    summary = suggestions.length ? "No document matched. Recently updated documents:" : "There are no documents to search yet.";
  }
  fill("doc-search-results",
    el("p", { class: "muted", testid: "doc-search-summary" }, summary),
    el("ul", { class: "list" }, [...result.results, ...suggestions].map((hit) => el("li", { class: "hit", testid: "doc-search-hit" },
      el("div", {},
        el("button", { type: "button", class: "link", onclick: guard(() => openDocument(hit.id)) }, hit.title),
        el("small", { class: "muted" }, ` ${hit.status}${hit.kind === "result" ? ` · score ${hit.score}` : ""}`)),
      hit.content ? el("div", { class: "md excerpt", testid: "doc-search-excerpt" }, md(hit.truncated ? `${hit.content} …` : hit.content)) : null))));
}

// --- Memory Spaces -----------------------------------------------------------------------

async function loadSpaces(spaceId) {
  const [data] = await Promise.all([api("spaces"), loadProviders()]);
  $("spaces-count").textContent = `${data.active_count} active of ${data.total}`;
  fill("spaces-list", data.spaces.length ? data.spaces.map((space) => el("tr", { testid: "space-row", "data-space-id": space.id },
    el("td", {}, el("a", { href: `#/spaces/${encodeURIComponent(space.id)}`, testid: "space-open" }, space.name)),
    el("td", { "data-label": "id" }, el("code", {}, space.id)),
    el("td", { "data-label": "provider" }, space.provider_id, space.provider_registered ? "" : " (disabled)",
      space.secrets_configured.length ? [" ", el("span", { class: "badge ok", testid: "space-secrets", title: "secrets kept host-side" }, "secrets configured")] : null),
    el("td", {}, el("span", { class: `badge ${space.active ? "ok" : "off"}`, testid: "space-active" }, space.active ? "active" : "inactive")),
    el("td", {}, el("button", { type: "button", testid: "space-toggle", onclick: guard(() => mutate(
      () => api(`spaces/${encodeURIComponent(space.id)}/active`, { method: "POST", body: { active: !space.active } }),
      reloadSpaces,
      () => `Memory Space '${space.name}' is now ${space.active ? "inactive (its memories are kept)" : "active"}.`)) },
    space.active ? "Deactivate" : "Activate"))))
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
  const provider = $("space-provider").value;
  if (provider) body.provider_id = provider;
  if (state.newFields) Object.assign(body, collectFields(state.newFields));
  try {
    const result = await mutate(() => api("spaces", { method: "POST", body }), reloadSpaces,
      (r) => `Memory Space '${r.space ? r.space.name : body.name}' created; it becomes active with its first memory.`);
    $("space-name").value = "";
    $("space-description").value = "";
    renderNewFields(true);
    if (result && result.space) location.hash = `#/spaces/${encodeURIComponent(result.space.id)}`;
  } finally {
    clearSecrets($("space-fields")); // a typed secret never stays on the page
  }
}

// After a change: the catalog again (a first write activates a space), the open space's tab too.
const reloadSpaces = () => loadSpaces(state.space && state.space.id);
const spacePath = (suffix) => `spaces/${encodeURIComponent(state.space.id)}/${suffix}`;
const spaceName = () => (state.space ? state.space.name : "");

async function showTab(tab) {
  if (tab !== state.tab) state.contentOffset = 0;
  state.tab = tab;
  for (const node of document.querySelectorAll("#space-panel .tab")) node.hidden = node.dataset.tab !== tab;
  for (const node of document.querySelectorAll("#space-tabs button")) node.classList.toggle("on", node.dataset.tab === tab);
  if (tab === "content") await loadContent();
  else if (tab === "entities") await loadEntities();
  else if (tab === "graph") await loadGraph();
  else if (tab === "settings") renderSettings(state.space);
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
    el("span", { class: "actions" }, confirmButton("Forget", () => mutate(
      () => api(spacePath(`memories/${encodeURIComponent(row.id)}`), { method: "DELETE" }),
      reloadSpaces, () => `Forgot the memory in '${spaceName()}'.`)))))
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
  const name = spaceName();
  await mutate(() => api(spacePath("memories"), { method: "POST", body }), reloadSpaces,
    (r) => `Remembered in '${name}'.${r.activated ? " The space is now active." : ""}`);
  $("remember-content").value = "";
  $("remember-entities").value = "";
}

// --- Providers, connection tests, Configure, Disconnect / Remove --------------------------

// The form of a provider comes from its config_fields; secrets are password inputs that are
// never filled in (the API never returns a secret, only which ones are configured).
async function loadProviders() {
  const { providers } = await api("providers");
  state.providers = Object.fromEntries(providers.map((p) => [p.id, p]));
  $("providers-count").textContent = `${providers.filter((p) => p.registered).length} registered`;
  fill("providers-list", providers.map((p) => el("tr", { testid: "provider-row", "data-provider-id": p.id },
    el("td", {}, p.label, el("small", { class: "muted" }, ` ${p.id}`), p.registered ? null : el("span", { class: "badge off" }, " not registered")),
    el("td", { "data-label": "data" }, el("span", { class: `badge ${p.local ? "ok" : "medium"}` }, p.local ? "local" : "remote")),
    el("td", { "data-label": "capabilities" }, el("small", {}, p.capabilities.join(", "))),
    el("td", { "data-label": "spaces" }, String(p.spaces)),
    el("td", { "data-label": "leaving" }, p.removal === "remove" ? "Remove (deletes its data)" : "Disconnect (data kept)"))));
  const select = $("space-provider");
  const current = select.value || "mnemos";
  select.replaceChildren(...providers.filter((p) => p.registered).map((p) =>
    el("option", { value: p.id, selected: p.id === current }, `${p.label} (${p.id})`)));
  renderNewFields();
}

// Admin-only settings are shown read-only to other users (the server refuses them anyway).
function callerIsAdmin() {
  const scope = state.status && state.status.scope;
  return !scope || scope.admin !== false;
}

const INPUT_TYPES = { url: "url", number: "number", path: "text", text: "text", secret: "password" };

// One labelled input per field; ``value`` pre-fills settings, never secrets.
function fieldInputs(fields, prefix, values = {}, configured = []) {
  const inputs = {};
  const rows = fields.map((field) => {
    const id = `${prefix}-${field.name}`;
    let input;
    if (field.kind === "bool") {
      const on = field.name in values ? values[field.name] === true : field.default === true;
      input = el("input", { type: "checkbox", testid: id, checked: on });
    } else {
      // novalidate forms and step "any": the provider's check is the one that decides.
      input = el("input", { type: INPUT_TYPES[field.kind] || "text", testid: id, step: field.kind === "number" ? "any" : null,
        autocomplete: field.kind === "secret" ? "new-password" : "off",
        placeholder: field.kind === "secret" ? (configured.includes(field.name) ? "configured — type to replace" : "not set")
          : (field.default === null || field.default === undefined ? "" : String(field.default)) });
      if (field.kind !== "secret" && values[field.name] !== undefined && values[field.name] !== null) {
        input.value = typeof values[field.name] === "object" ? JSON.stringify(values[field.name]) : String(values[field.name]);
      }
    }
    inputs[field.name] = { field, input, clear: null, had: field.name in values };
    const extra = [];
    if (field.kind === "path" && !callerIsAdmin()) {
      // Where a space's data lives is the server's choice for anyone but an admin.
      input.disabled = true;
      extra.push(el("small", { class: "muted", testid: `${prefix}-${field.name}-locked` }, "chosen by the server"));
    }
    if (field.kind === "secret") {
      const isSet = configured.includes(field.name);
      extra.push(el("span", { class: `badge ${isSet ? "ok" : "off"}`, testid: `${prefix}-${field.name}-badge` }, isSet ? "configured" : "not set"));
      if (isSet) {
        const clear = el("input", { type: "checkbox", testid: `${prefix}-${field.name}-clear` });
        inputs[field.name].clear = clear;
        extra.push(el("label", { class: "inline muted" }, clear, " remove"));
      }
    }
    return el("div", { class: "field" },
      el("label", { class: "control" }, el("span", {}, field.label, field.required ? " *" : ""), input),
      extra, field.help ? el("small", { class: "muted" }, field.help) : null);
  });
  return { rows, inputs };
}

// ``patch``: an emptied setting is sent as null (removed), a secret only when typed or cleared.
function collectFields({ inputs }, patch = false) {
  const config = {};
  const secrets = {};
  for (const { field, input, clear, had } of Object.values(inputs)) {
    if (field.kind === "secret") {
      if (clear && clear.checked) secrets[field.name] = "";
      else if (input.value) secrets[field.name] = input.value;
    } else if (field.kind === "bool") {
      config[field.name] = input.checked;
    } else if (input.value.trim() !== "") {
      const text = input.value.trim();
      config[field.name] = field.kind === "number" ? Number(text) : (/^[[{]/.test(text) ? parseJson(text) : text);
    } else if (patch && had) {
      config[field.name] = null;
    }
  }
  const body = {};
  if (Object.keys(config).length) body.config = config;
  if (Object.keys(secrets).length) body.secrets = secrets;
  return body;
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text; // sent as typed: the provider's check says what is wrong
  }
}

function clearSecrets(container) {
  for (const input of container.querySelectorAll("input[type=password]")) input.value = "";
}

// Re-drawn when the provider changes (or ``force``): a reload keeps what was typed.
function renderNewFields(force = false) {
  const chosen = $("space-provider").value;
  if (!force && state.newFields && state.newFieldsFor === chosen) return;
  state.newFieldsFor = chosen;
  const provider = state.providers[chosen];
  const fields = provider ? provider.config_fields : [];
  state.newFields = fieldInputs(fields, "new-field");
  fill("space-fields", state.newFields.rows);
  fill("space-new-test-result");
  $("space-provider-note").textContent = provider
    ? `${provider.local ? "Data stays on this machine" : "Data lives in a remote service"}; its spaces are ${provider.removal === "remove" ? "removed (data deleted)" : "disconnected (data kept)"}.`
    : "";
}

function connectionResult(result, testid) {
  const parts = result.ok ? [`Connection OK · ${result.latency_ms} ms`] : [`Connection failed: ${result.error || "unhealthy"}`];
  const total = result.status ? result.status.total_insights : null;
  if (result.ok && typeof total === "number") parts.push(` · ${total} ${total === 1 ? "memory" : "memories"}`);
  return el("span", { class: result.ok ? "ok" : "warn", testid, "data-ok": String(result.ok) }, parts);
}

async function testNewConnection() {
  const provider = $("space-provider").value;
  fill("space-new-test-result", el("span", { class: "muted" }, "Testing…"));
  try {
    const result = await api(`providers/${encodeURIComponent(provider)}/test`, { method: "POST", body: collectFields(state.newFields) });
    fill("space-new-test-result", connectionResult(result, "new-test-outcome"));
  } catch (err) {
    fill("space-new-test-result");
    throw err;
  }
}

function renderSettings(space) {
  if (!space) return;
  const provider = state.providers[space.provider_id];
  const fields = provider ? provider.config_fields : [];
  const form = fieldInputs(fields, "config-field", space.config, space.secrets_configured);
  const name = el("input", { testid: "space-config-name" });
  name.value = space.name;
  const description = el("input", { testid: "space-config-description" });
  description.value = space.description;
  const native = provider ? provider.removal === "remove" : space.provider_id === "mnemos";
  fill("space-settings",
    el("div", { class: "row" },
      el("button", { type: "button", testid: "space-test", onclick: guard(() => testSpace(space)) }, "Test connection"),
      el("span", { id: "space-test-result", testid: "space-test-result" })),
    el("form", { class: "panel-inset", testid: "space-config-form", autocomplete: "off", novalidate: true,
      onsubmit: guard(() => saveSettings(space, name, description, form)) },
      el("h4", {}, "Configure"),
      el("div", { class: "field" }, el("label", { class: "control" }, el("span", {}, "Name"), name)),
      el("div", { class: "field" }, el("label", { class: "control" }, el("span", {}, "Description"), description)),
      form.rows,
      fields.length ? null : el("p", { class: "muted" }, `Provider ${space.provider_id} takes no settings.`),
      el("button", { type: "submit", testid: "space-config-save" }, "Save")),
    el("div", { class: "danger-zone" },
      el("h4", {}, native ? "Remove" : "Disconnect"),
      el("p", { class: "muted" }, native
        ? "Removing deletes every memory of this space for good, then its catalog entry."
        : `Disconnecting drops this space's catalog entry and its secrets here; the data in ${space.provider_id} is not deleted.`),
      el("button", { type: "button", class: "danger", testid: native ? "space-remove" : "space-disconnect",
        onclick: guard(() => leaveSpace(space, native)) }, native ? "Remove space…" : "Disconnect…")));
}

async function testSpace(space) {
  fill("space-test-result", el("span", { class: "muted" }, "Testing…"));
  try {
    const result = await api(`spaces/${encodeURIComponent(space.id)}/test`, { method: "POST" });
    fill("space-test-result", connectionResult(result, "space-test-outcome"));
  } catch (err) {
    fill("space-test-result");
    throw err;
  }
}

async function saveSettings(space, name, description, form) {
  const body = collectFields(form, true);
  if (name.value !== space.name) body.name = name.value;
  if (description.value !== space.description) body.description = description.value;
  try {
    await mutate(() => api(`spaces/${encodeURIComponent(space.id)}`, { method: "PATCH", body }), reloadSpaces,
      (r) => (r.changed ? `Memory Space '${r.space.name}' saved.` : "Nothing to change."));
  } finally {
    clearSecrets($("space-settings"));
  }
}

// Remove (native) and Disconnect (third-party) are confirmed by typing the space id.
async function leaveSpace(space, native) {
  const typed = await confirmDialog(native ? `Remove '${space.name}'?` : `Disconnect '${space.name}'?`,
    native ? "Every memory of this space is deleted for good. This cannot be undone."
      : `Only the local connection goes; the data in ${space.provider_id} stays where it is.`, space.id);
  if (typed === null) return;
  const path = `spaces/${encodeURIComponent(space.id)}`;
  await mutate(() => (native ? api(path, { method: "DELETE", body: { confirm: typed } })
    : api(`${path}/disconnect`, { method: "POST", body: { confirm: typed } })), null,
  () => (native ? `Memory Space '${space.name}' removed; its memories were deleted.`
    : `Memory Space '${space.name}' disconnected; its data in ${space.provider_id} was kept.`));
  state.space = null;
  if (location.hash === "#/spaces") await loadSpaces();
  else location.hash = "#/spaces";
}

// Resolves with the typed id, or null when cancelled.
function confirmDialog(title, text, expected) {
  const dialog = $("confirm-dialog");
  const input = $("confirm-input");
  const submit = $("confirm-submit");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-expect").textContent = expected;
  input.value = "";
  submit.disabled = true;
  return new Promise((resolve) => {
    const done = (value) => {
      input.removeEventListener("input", check);
      $("confirm-form").removeEventListener("submit", confirm);
      $("confirm-cancel").removeEventListener("click", cancel);
      dialog.removeEventListener("cancel", cancel);
      dialog.close();
      resolve(value);
    };
    const check = () => { submit.disabled = input.value.trim() !== expected; };
    const confirm = (event) => { event.preventDefault(); if (!submit.disabled) done(input.value.trim()); };
    const cancel = (event) => { event.preventDefault(); done(null); };
    input.addEventListener("input", check);
    $("confirm-form").addEventListener("submit", confirm);
    $("confirm-cancel").addEventListener("click", cancel);
    dialog.addEventListener("cancel", cancel);
    dialog.showModal();
    input.focus();
  });
}

// --- Graph (graph.js lays it out without label overlaps) ------------------------------------

async function loadGraph() {
  const graph = await api(spacePath("graph?limit=200"));
  if (!graph.nodes.length) {
    fill("graph-view", el("p", { class: "muted" }, "No memories to draw."));
    return;
  }
  // The chart keeps its natural size (readable labels); wider or taller ones scroll in their box.
  // A phone gets a wider chart to pan over rather than one tall column.
  const available = Math.min(1160, Math.max(640, $("graph-view").clientWidth || 960));
  const types = [...new Set(graph.edges.map((e) => e.type))];
  fill("graph-view", el("div", { class: "graph-box", testid: "graph-box" }, window.MnemonGraph.draw(graph, available)),
    el("p", { class: "muted legend" }, `${plural(graph.nodes.length, "node")}, ${plural(graph.edges.length, "edge")}`,
      types.map((t) => el("span", { class: `key ${t}` }, t))));
}

// --- Mnemos ------------------------------------------------------------------------------

// A task is named by its goal (what a person recognises); the id, shortened, is the fallback.
const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
const shortTaskId = (id) => (id.length > 16 ? `${id.slice(0, 8)}…` : id);
const taskLabel = (task) => (task.goal ? clip(task.goal.replace(/\s+/g, " ").trim(), 80) : shortTaskId(task.task_id));

async function loadMnemos(taskId) {
  const { tasks } = await api("mnemos/tasks");
  fill("tasks-list", tasks.length ? tasks.map((task) => {
    const f = task.last_fatigue;
    return el("tr", { testid: "task-row", "data-task-id": task.task_id },
      el("td", {},
        el("a", { href: `#/mnemos/${encodeURIComponent(task.task_id)}`, testid: "task-open", title: task.goal || task.task_id }, taskLabel(task)),
        task.goal ? el("small", { class: "muted id", testid: "task-id" }, ` ${shortTaskId(task.task_id)}`) : null),
      el("td", { "data-label": "nodes", testid: "task-node-total" }, `${task.nodes.active} active / ${task.nodes.total}`),
      el("td", { "data-label": "checkpoints", testid: "task-checkpoint-counts", title: `${task.checkpoints} in all` },
        `${task.mnemos_checkpoints} Mnemos · ${task.langgraph_checkpoints} LangGraph`),
      el("td", { "data-label": "fatigue" }, f ? el("span", { class: `badge ${f.state}` }, `${f.state} ${f.composite.toFixed(2)}`) : "–"));
  }) : el("tr", {}, el("td", { colspan: 4, class: "muted" }, "No Mnemos tasks yet.")));
  const chosen = tasks.find((t) => t.task_id === taskId);
  state.task = chosen ? taskId : null;
  $("task-panel").hidden = !state.task;
  if (!state.task) return;
  fill("task-title", chosen.goal ? `Task: ${taskLabel(chosen)}` : "Task ", el("small", { class: "muted" }, ` ${chosen.task_id}`));
  $("resume-text").hidden = true;
  const base = `mnemos/tasks/${encodeURIComponent(state.task)}`;
  const [fatigue, nodes, checkpoints] = await Promise.all([
    api(`${base}/fatigue?limit=50`), api(`${base}/nodes?limit=${NODES_SHOWN}`), api(`${base}/checkpoints`)]);
  drawFatigue(fatigue);
  showNodes(nodes.nodes, chosen.nodes);
  showCheckpoints(checkpoints);
}

const NODES_SHOWN = 200;

// Each node says where it came from: derived from the run's messages, given by the model
// (mnemon_task) or added by the agent or application (add_node).
function showNodes(nodes, counts) {
  const parts = [`${counts.active} active`, `${counts.compressed} compressed`, `${counts.evicted} evicted`];
  fill("task-node-counts", `(${counts.total}: ${parts.join(", ")})`);
  fill("task-nodes", nodes.length ? nodes.map((node) => el("li", { testid: "task-node", "data-origin": node.origin, "data-status": node.status },
    el("span", { class: "badge" }, node.type),
    el("span", { class: `badge origin ${node.origin}`, testid: "node-origin", title: "origin" }, node.origin),
    el("span", { class: "content" }, node.status === "compressed" && node.summary ? node.summary : node.content),
    el("small", { class: "muted" }, ` ${node.status} · weight ${Number(node.weight).toFixed(2)} · ${node.access_count} uses`)))
    : el("li", { class: "muted empty" }, "No nodes."));
  const more = $("task-nodes-more");
  more.hidden = nodes.length >= counts.total;
  more.textContent = more.hidden ? "" : `Showing the ${nodes.length} heaviest of ${counts.total} nodes.`;
}

const checkpointItem = (cp) => el("li", { testid: "task-checkpoint", "data-source": cp.source },
  el("code", {}, shortId(cp.id)),
  ` ${when(cp.created_at)}`,
  cp.source === "langgraph" && cp.step !== null ? el("small", { class: "muted" }, ` step ${cp.step}`) : null,
  cp.source === "langgraph" && cp.checkpoint_ns ? el("small", { class: "muted" }, ` subgraph ${cp.checkpoint_ns.split(":")[0]}`) : null,
  cp.fatigue_state ? el("span", { class: `badge ${cp.fatigue_state}` }, cp.fatigue_state) : null,
  cp.emergency ? el("span", { class: "badge EMERGENCY" }, "emergency") : null,
  cp.summary && cp.summary.goal ? el("span", { class: "content muted" }, clip(cp.summary.goal.replace(/\s+/g, " ").trim(), 60)) : null);

// Mnemos and LangGraph checkpoints apart: hundreds of super-steps must not hide the few
// checkpoints resume reads.
function showCheckpoints({ mnemos, langgraph, mnemos_total: own, langgraph_total: steps }) {
  fill("mnemos-checkpoint-count", `(${own})`);
  fill("mnemos-checkpoints", mnemos.length ? mnemos.map(checkpointItem) : el("li", { class: "muted empty" }, "No Mnemos checkpoints."));
  fill("langgraph-checkpoint-count", `(${steps})`);
  fill("langgraph-checkpoints", langgraph.length ? langgraph.map(checkpointItem) : el("li", { class: "muted empty" }, "No LangGraph checkpoints."));
  const more = $("langgraph-checkpoints-more");
  more.hidden = langgraph.length >= steps;
  more.textContent = more.hidden ? "" : `Showing the newest ${langgraph.length} of ${steps}.`;
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
      ` composite ${current.composite.toFixed(3)} · tokens ${current.token_utilization} of ${current.context_window.toLocaleString("en")} (${current.window_source}) · scatter ${current.scope_scatter} · re-read ${current.reread_ratio} · errors ${current.error_density}`) : null);
}

async function showResume() {
  const result = await api(`mnemos/tasks/${encodeURIComponent(state.task)}/resume`, { method: "POST" });
  const box = fill("resume-text", md(resumeForPage(result.resume)));
  box.hidden = false;
}

// The resume's structure lines end in " [boundary=B]" (B: a digest no stored text holds) for
// the model; the page shows its headings without B, and without the note and close line.
function resumeForPage(text) {
  const lines = String(text ?? "").split("\n");
  const open = (lines[0] || "").match(/ \[boundary=[0-9a-f]{12}\]$/);
  if (!open) return text;
  const tag = open[0];
  return lines
    .filter((line, i) => i !== 1 && !(line.startsWith("## End of ") && line.endsWith(tag)))
    .map((line) => (line.endsWith(tag) ? line.slice(0, -tag.length) : line))
    .join("\n");
}

// --- Learning passes ----------------------------------------------------------------------

// Receipt statuses as badges: what was stored, what was skipped, what the host refused.
const RECEIPT_BADGE = { committed: "ok", skipped: "off", rejected: "critical", failed: "critical" };
const PASS_BADGE = { committed: "ok", skipped: "off", undone: "off", refused: "medium", failed: "critical", running: "medium" };
const passes = (n) => `${n} ${n === 1 ? "pass" : "passes"}`;
const memories = (n) => `${n} ${n === 1 ? "memory" : "memories"}`;
const learnedCount = (pass) => pass.receipts.filter((r) => r.status === "committed" && r.memory_id && r.action !== "undo").length;

async function loadLearning() {
  const { passes: list } = await api("learn/passes?limit=50");
  fill("learning-count", passes(list.length));
  fill("learning-passes", list.length ? list.map(passItem)
    : el("li", { class: "muted empty" }, "No learning passes yet: learn from a thread below, or let the idle review run one."));
}

// One pass: its thread, when, extractor and status, then each receipt (what was learned,
// skipped or refused, and why). Stored text is text, never HTML.
function passItem(pass) {
  return el("li", { testid: "learn-pass", "data-pass-id": pass.pass_id, "data-status": pass.status },
    el("div", { class: "pass-head" },
      el("span", { class: `badge ${PASS_BADGE[pass.status] || ""}`, testid: "learn-pass-status" }, pass.status),
      el("strong", { testid: "learn-pass-thread" }, pass.thread_id),
      el("small", { class: "muted" }, ` ${when(pass.finished_at)} · ${pass.extractor} · ${memories(learnedCount(pass))} learned · `, el("code", {}, shortId(pass.pass_id))),
      pass.status === "committed" ? confirmButton("Undo", () => undoPass(pass)) : null),
    pass.reason ? el("p", { class: "muted pass-reason", testid: "learn-pass-reason" }, pass.reason) : null,
    pass.receipts.length ? el("ul", { class: "receipts", testid: "learn-receipts" }, pass.receipts.map((r) =>
      el("li", { testid: "learn-receipt", "data-status": r.status, "data-action": r.action },
        el("span", { class: `badge ${RECEIPT_BADGE[r.status] || ""}` }, `${r.action} ${r.status}`),
        " ",
        el("span", { class: "content", testid: "learn-receipt-content" }, r.content || "–"),
        r.message ? el("small", { class: "muted" }, ` — ${r.message}`) : null))) : null);
}

async function undoPass(pass) {
  const done = await mutate(() => api(`learn/passes/${encodeURIComponent(pass.pass_id)}/undo`, { method: "POST" }), loadLearning);
  const kept = done.receipts.filter((r) => r.action === "undo" && r.status !== "committed").length;
  notify(kept ? `Undid the pass on thread '${pass.thread_id}'; ${plural(kept, "change")} could not be reverted (see its receipts).`
    : `Undid the pass on thread '${pass.thread_id}': what it learned is forgotten.`, kept ? "warning" : "info");
}

async function learnNow() {
  const thread = $("learn-thread").value.trim();
  if (!thread) throw new ApiError("page", "name the thread to learn from", 0);
  const done = await mutate(() => api("learn", { method: "POST", body: { thread_id: thread } }), loadLearning);
  const learned = learnedCount(done);
  notify(`Pass on thread '${thread}': ${done.status}, ${memories(learned)} learned${done.reason ? ` (${done.reason})` : ""}.`,
    done.status === "committed" || done.status === "skipped" ? "info" : "warning");
  $("learn-thread").value = "";
}

// --- Routing -----------------------------------------------------------------------------

const PAGES = {
  status: () => loadStatus(),
  runtime: () => loadRuntime(),
  documents: () => loadDocuments(),
  spaces: (arg) => loadSpaces(arg),
  mnemos: (arg) => loadMnemos(arg),
  learning: () => loadLearning(),
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
  clearErrors(); // an error belongs to the page it happened on
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
  $("space-provider").addEventListener("change", () => renderNewFields());
  $("space-test-new").addEventListener("click", guard(testNewConnection));
  $("recall-form").addEventListener("submit", guard(runRecall));
  $("remember-form").addEventListener("submit", guard(remember));
  $("resume-button").addEventListener("click", guard(showResume));
  $("learn-form").addEventListener("submit", guard(learnNow));
  for (const button of document.querySelectorAll("#space-tabs button")) {
    button.addEventListener("click", guard(() => showTab(button.dataset.tab)));
  }
  $("content-prev").addEventListener("click", guard(() => { state.contentOffset = Math.max(0, state.contentOffset - PAGE_SIZE); return loadContent(); }));
  $("content-next").addEventListener("click", guard(() => { state.contentOffset += PAGE_SIZE; return loadContent(); }));
  for (const [key, id] of [["mnemon-user", "scope-user"], ["mnemon-project", "scope-project"]]) {
    const input = $(id);
    input.value = sessionStorage.getItem(key) || "";
    input.addEventListener("change", guard(async () => {
      const value = input.value.trim();
      if (value) sessionStorage.setItem(key, value);
      else sessionStorage.removeItem(key);
      await loadStatus();
      await route(); // the page now shows the other scope
    }));
  }
  $("scope-box").addEventListener("submit", (event) => event.preventDefault());
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
