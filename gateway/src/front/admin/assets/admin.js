// The mcpgw admin page: polls the admin view's JSON every second and renders it. No framework, no inline
// code (the page's Content-Security-Policy allows only this file), data written with textContent only.
"use strict";

const EVERY_MS = 1000;
const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("mcpgw-admin-token") || "";

function headers(extra) {
  const h = Object.assign({}, extra);
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

class Unauthorized extends Error {}

async function get(path) {
  const res = await fetch(path, { headers: headers(), cache: "no-store", credentials: "omit" });
  if (res.status === 401) throw new Unauthorized();
  if (!res.ok) throw new Error(path + ": " + res.status + " " + ((await res.json().catch(() => ({}))).error || ""));
  return res.json();
}

function duration(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
}

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "–" : String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function fill(tbody, items, key, render) {
  const rows = items.map((item) => {
    const tr = document.createElement("tr");
    tr.dataset.key = key(item);
    render(tr, item);
    return tr;
  });
  tbody.replaceChildren(...rows);
}

function renderSummary(s) {
  $("version").textContent = s.server.version;
  const status = $("status");
  status.textContent = s.status;
  status.className = "pill " + s.status;
  $("n-sessions").textContent = s.sessions;
  $("n-listens").textContent = s.listen_streams;
  $("n-inflight").textContent = s.in_flight;
  $("n-backends").textContent = s.backends;
  $("n-tools").textContent = s.catalog.tools;
  $("n-prompts").textContent = s.catalog.prompts;
  $("n-resources").textContent = s.catalog.resources + s.catalog.resource_templates;
  $("catalog-version").textContent = s.catalog.version;
}

const stateClass = { ready: "ok", connecting: "warn", down: "bad", stopped: "bad" };
const standingClass = { up: "ok", stale: "warn", down: "bad" };

function renderBackends(b) {
  fill($("backends").tBodies[0], b.backends, (x) => x.name, (tr, x) => {
    cell(tr, x.name).className = "name";
    cell(tr, x.transport);
    cell(tr, x.generation);
    cell(tr, x.state, stateClass[x.state]);
    cell(tr, x.standing, standingClass[x.standing]);
    cell(tr, x.circuit, x.circuit === "closed" ? "ok" : "bad");
    cell(tr, x.in_flight + " / " + x.max_in_flight, "num");
    cell(tr, x.restarts, "num");
    cell(tr, x.tools, "num");
    cell(tr, x.prompts, "num");
    cell(tr, x.resources + x.resource_templates, "num");
    cell(tr, x.last_error || x.standing_reason || "", "err");
  });
}

function renderSessions(s) {
  fill($("sessions").tBodies[0], s.sessions, (x) => x.id, (tr, x) => {
    const id = cell(tr, "");
    const code = document.createElement("code");
    code.textContent = x.id;
    id.appendChild(code);
    cell(tr, x.client.name + " " + x.client.version);
    cell(tr, x.generation);
    cell(tr, x.transport);
    cell(tr, x.principal || (x.bound ? "(token)" : ""));
    cell(tr, duration(x.age_ms), "num");
    cell(tr, duration(x.idle_ms), "num");
    cell(tr, x.in_flight, "num");
    cell(tr, x.stream_open ? "open" : "");
    cell(tr, x.subscriptions, "num");
  });
  $("sessions-shown").textContent =
    s.shown < s.total ? "(the " + s.shown + " most recent of " + s.total + ")" : "(" + s.total + ")";
  $("no-sessions").hidden = s.total > 0;
}

function renderAuthorizations(a) {
  $("authorizations-section").hidden = a.backends.length === 0;
  const when = (unix) => (unix ? new Date(unix * 1000).toLocaleString() : "not said");
  fill($("authorizations").tBodies[0], a.grants, (x) => x.principal + " " + x.backend, (tr, x) => {
    cell(tr, x.principal).className = "name";
    cell(tr, x.backend);
    cell(tr, when(x.expires), x.expires && x.expires * 1000 < Date.now() ? "warn" : "");
    cell(tr, x.refreshable ? "yes" : "no");
    cell(tr, when(x.stored));
  });
  $("listers").textContent = a.backends
    .map((b) => b.backend + ": listed " + (b.listed_as ? "with " + b.listed_as + "'s token" : "by no one yet"))
    .join(" · ");
}

function say(text) {
  const m = $("message");
  m.textContent = text;
  m.hidden = !text;
}

async function refresh() {
  try {
    const [summary, backends, sessions, catalog, authorizations] = await Promise.all([
      get("/admin/summary"), get("/admin/backends"), get("/admin/sessions"), get("/admin/catalog"),
      get("/admin/authorizations"),
    ]);
    renderAuthorizations(authorizations);
    renderSummary(summary);
    renderTools(catalog);
    renderBackends(backends);
    renderSessions(sessions);
    $("login").hidden = true;
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "1";
  } catch (e) {
    if (e instanceof Unauthorized) {
      $("login").hidden = false;
      say(token ? "The token was refused." : "");
    } else {
      const status = $("status");
      status.textContent = "unreachable";
      status.className = "pill error";
      say(String(e.message || e));
    }
  } finally {
    setTimeout(refresh, EVERY_MS);
  }
}

// The playground: the catalog's tools in a list, a field per argument of the chosen tool's inputSchema,
// and the call's JSON-RPC response. Values are read by the schema's type; objects and arrays as JSON.
let tools = [];

function renderTools(catalog) {
  const names = catalog.tools.map((t) => t.name).join("\n");
  if (names === tools.map((t) => t.name).join("\n")) return;
  tools = catalog.tools;
  const select = $("pg-tool");
  const chosen = select.value;
  select.replaceChildren(...tools.map((t) => {
    const option = document.createElement("option");
    option.value = t.name;
    option.textContent = t.name;
    return option;
  }));
  if (tools.some((t) => t.name === chosen)) select.value = chosen;
  renderFields();
}

function chosenTool() {
  return tools.find((t) => t.name === $("pg-tool").value);
}

function renderFields() {
  const tool = chosenTool();
  $("pg-description").textContent = (tool && tool.description) || "";
  const schema = (tool && tool.inputSchema) || {};
  const required = schema.required || [];
  const fields = Object.entries(schema.properties || {}).map(([name, prop]) => {
    const row = document.createElement("div");
    row.className = "field";
    const label = document.createElement("label");
    const type = prop.type || "any";
    label.textContent = name + " (" + type + (required.includes(name) ? ", required" : "") + ")";
    const id = "pg-arg-" + name;
    label.htmlFor = id;
    let input;
    if (type === "boolean") {
      input = document.createElement("input");
      input.type = "checkbox";
    } else if (type === "object" || type === "array" || type === "any") {
      input = document.createElement("textarea");
      input.rows = 2;
      input.placeholder = "JSON";
    } else {
      input = document.createElement("input");
      input.type = type === "integer" || type === "number" ? "number" : "text";
    }
    input.id = id;
    input.dataset.arg = name;
    input.dataset.type = type;
    input.dataset.required = required.includes(name) ? "1" : "";
    row.append(label, input);
    return row;
  });
  $("pg-fields").replaceChildren(...fields);
}

function readArguments() {
  const args = {};
  for (const input of $("pg-fields").querySelectorAll("[data-arg]")) {
    const { arg, type, required } = input.dataset;
    if (type === "boolean") {
      if (input.checked || required) args[arg] = input.checked;
      continue;
    }
    const text = input.value.trim();
    if (text === "" && !required) continue;
    if (type === "integer") args[arg] = parseInt(text, 10);
    else if (type === "number") args[arg] = Number(text);
    else if (type === "string") args[arg] = input.value;
    else args[arg] = JSON.parse(text);
  }
  return args;
}

async function callTool(ev) {
  ev.preventDefault();
  const out = $("pg-result");
  const button = $("pg-call");
  button.disabled = true;
  try {
    const args = readArguments();
    const res = await fetch("/admin/call", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", "X-Mcpgw-Admin": "1" }),
      credentials: "omit",
      body: JSON.stringify({ name: $("pg-tool").value, arguments: args }),
    });
    const body = await res.json().catch(() => ({}));
    const response = body.response || body;
    out.textContent = JSON.stringify(response, null, 2);
    const failed = !res.ok || response.error || (response.result && response.result.isError);
    out.className = "result " + (failed ? "bad" : "ok");
  } catch (e) {
    out.textContent = "Not called: " + (e.message || e);
    out.className = "result bad";
  } finally {
    out.hidden = false;
    button.disabled = false;
  }
}

async function reload() {
  const button = $("reload");
  button.disabled = true;
  try {
    const res = await fetch("/admin/reload", {
      method: "POST",
      headers: headers({ "X-Mcpgw-Admin": "1" }),
      credentials: "omit",
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      say("Reload refused: " + (body.error || res.status));
    } else {
      const failed = body.failed.map((f) => f.part + " (" + f.why + ")");
      say("Reloaded: " + (body.reloaded.join(", ") || "nothing to reload") +
        (failed.length ? ". Failed, kept as it was: " + failed.join(", ") : "."));
    }
  } catch (e) {
    say("Reload failed: " + (e.message || e));
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("reload").addEventListener("click", reload);
  $("pg-tool").addEventListener("change", renderFields);
  $("playground").addEventListener("submit", callTool);
  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem("mcpgw-admin-token", token);
    $("token").value = "";
    say("");
  });
  refresh();
});
