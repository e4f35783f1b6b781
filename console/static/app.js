// sluice console: one page per hash route (#/cluster, #/topics,
// #/topic/NAME, #/messages/TOPIC/PARTITION, #/groups, #/group/NAME,
// #/charts), rendered from the JSON API under /api/. Plain JavaScript, no
// build step: the broker embeds this file as written.
"use strict";

let info = { readOnly: false };
let timer = null; // the current page's refresh
let flash = ""; // a notice the next topics page shows (after a delete)
const page = document.getElementById("page");

// ---- helpers ----

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

async function api(path, opts) {
  const o = Object.assign({ headers: {} }, opts || {});
  if (o.body !== undefined) {
    o.headers["Content-Type"] = "application/json";
    o.body = JSON.stringify(o.body);
  }
  const resp = await fetch("api/" + path, o);
  let data = null;
  try { data = await resp.json(); } catch (e) { /* not JSON */ }
  if (!resp.ok) {
    throw new Error((data && data.error) || resp.status + " " + resp.statusText);
  }
  return data;
}

function bytes(n) {
  if (n < 0 || n === undefined || n === null) return "?";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
}

function num(n) { return n === undefined || n === null ? "" : Number(n).toLocaleString("en-US"); }

function ids(a) { return (a || []).join(", "); }

function errorBox(e) { return `<div class="error" id="error">${esc(e.message || e)}</div>`; }

function every(ms, fn) {
  stop();
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try { await fn(); } finally { running = false; }
  };
  tick();
  timer = setInterval(tick, ms);
}

function stop() {
  if (timer) { clearInterval(timer); timer = null; }
}

// confirm opens the modal; with typed set, the confirm button stays
// disabled until the user types it.
function confirmModal(title, bodyHTML, typed) {
  return new Promise((resolve) => {
    const m = document.getElementById("modal");
    document.getElementById("modal-title").textContent = title;
    const body = document.getElementById("modal-body");
    body.innerHTML = bodyHTML + (typed ? `<p>Type <b>${esc(typed)}</b> to confirm:</p><input id="modal-input" autocomplete="off" style="width:100%">` : "");
    const ok = document.getElementById("modal-confirm");
    const cancel = document.getElementById("modal-cancel");
    ok.disabled = !!typed;
    if (typed) {
      const inp = document.getElementById("modal-input");
      inp.addEventListener("input", () => { ok.disabled = inp.value !== typed; });
      setTimeout(() => inp.focus(), 0);
    }
    m.classList.remove("hidden");
    const done = (v) => {
      m.classList.add("hidden");
      ok.onclick = cancel.onclick = null;
      resolve(v);
    };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
  });
}

// ---- routing ----

const routes = {
  cluster: clusterPage,
  topics: topicsPage,
  topic: topicPage,
  messages: messagesPage,
  groups: groupsPage,
  group: groupPage,
  charts: chartsPage,
};

let generation = 0; // bumped by every route; a page's late async work checks it

function route() {
  stop();
  generation++;
  window.routes = (window.routes || 0) + 1;
  const parts = (location.hash.replace(/^#\/?/, "") || "cluster").split("/").map(decodeURIComponent);
  const name = routes[parts[0]] ? parts[0] : "cluster";
  const nav = { topic: "topics", group: "groups" }[name] || name;
  document.querySelectorAll("header nav a").forEach((a) => a.classList.toggle("active", a.dataset.nav === nav));
  page.dataset.page = name;
  delete page.dataset.ready;
  page.innerHTML = "";
  routes[name](...parts.slice(1));
}

window.addEventListener("hashchange", route);

// ---- cluster ----

function clusterPage() {
  page.innerHTML = `<h2>Cluster</h2><div id="cluster"><p class="muted">Loading…</p></div>`;
  every(1000, async () => {
    const el = document.getElementById("cluster");
    if (!el) return;
    let c;
    try { c = await api("cluster"); } catch (e) { el.innerHTML = errorBox(e); return; }
    const up = c.brokers.filter((b) => b.state === "up").length;
    const health = c.ready ? `<span class="badge ok">ready</span>` : `<span class="badge bad" title="${esc(c.notReady)}">not ready</span>`;
    const parts = `<span id="partitions-health">` + (c.offline > 0 ? `<span class="badge bad">${c.offline} offline</span>` :
      c.underReplicated > 0 ? `<span class="badge warn">${c.underReplicated} under-replicated</span>` : `<span class="badge ok">all in sync</span>`) + "</span>";
    el.innerHTML = `
      <div class="cards">
        <div class="card"><div class="label">Cluster id</div><div class="value" id="cluster-id">${esc(c.clusterId)}</div></div>
        <div class="card"><div class="label">Brokers up</div><div class="value" id="brokers-up">${up} / ${c.brokers.length}</div></div>
        <div class="card"><div class="label">Active controller</div><div class="value" id="controller">${c.controllerId >= 0 ? "node " + c.controllerId : "none"}</div></div>
        <div class="card"><div class="label">Node ${info.nodeId} health</div><div class="value">${health}</div></div>
        <div class="card"><div class="label">Partitions</div><div class="value">${num(c.partitions)} ${parts}</div></div>
        <div class="card"><div class="label">Topics</div><div class="value">${num(c.topics)}</div></div>
        <div class="card"><div class="label">Version</div><div class="value">${esc(info.version)}</div></div>
      </div>
      ${c.notReady ? `<div class="error">This node is not ready: ${esc(c.notReady)}</div>` : ""}
      <h3>Brokers</h3>
      <table id="brokers"><thead><tr><th>Node</th><th>State</th><th>Address</th><th>Rack</th><th>Roles</th></tr></thead><tbody>
      ${c.brokers.map((b) => `<tr id="broker-${b.id}" data-state="${b.state}" class="state-${b.state}">
        <td>${b.id}${b.self ? ' <span class="muted">(this node)</span>' : ""}</td>
        <td><span class="badge ${b.state}">${b.state === "up" ? "up" : "down (fenced)"}</span></td>
        <td>${esc(b.host)}:${b.port}</td><td>${esc(b.rack)}</td>
        <td>${b.controller ? '<span class="badge info">controller</span> ' : ""}${b.voter ? '<span class="badge">raft voter</span>' : '<span class="muted">observer</span>'}</td></tr>`).join("")}
      </tbody></table>
      <h3>Raft quorum (metadata log)</h3>
      ${c.quorumError ? `<div class="error">${esc(c.quorumError)}</div>` : ""}
      <table id="voters"><thead><tr><th>Voter</th><th>Role</th><th class="num">Log end offset</th><th>Last fetch</th></tr></thead><tbody>
      ${(c.voters || []).map((v) => `<tr><td>${v.id}</td><td>${v.leader ? '<span class="badge info">leader</span>' : "follower"}</td>
        <td class="num">${num(v.logEndOffset)}</td><td>${v.lastFetchTimestamp > 0 ? new Date(v.lastFetchTimestamp).toLocaleTimeString() : ""}</td></tr>`).join("")}
      </tbody></table>
      <p class="muted">Leader epoch ${c.quorumEpoch}; observers: ${ids(c.observers) || "none"}.</p>`;
  });
}

// ---- topics ----

function topicsPage() {
  const ro = info.readOnly;
  page.innerHTML = `<h2>Topics</h2>
    ${ro ? `<div class="notice">Read-only console (console.read.only): topics cannot be created or deleted here.</div>` : `
    <form class="toolbar" id="create-form">
      <label>Name<input id="new-topic-name" required placeholder="orders"></label>
      <label>Partitions<input id="new-topic-partitions" type="number" min="1" placeholder="default" style="width:90px"></label>
      <label>Replication factor<input id="new-topic-rf" type="number" min="1" placeholder="default" style="width:90px"></label>
      <label>Configs (k=v, comma separated)<input id="new-topic-configs" placeholder="cleanup.policy=compact" style="width:240px"></label>
      <button id="create-topic" type="submit">Create topic</button>
    </form>`}
    <label class="muted"><input type="checkbox" id="show-internal"> show internal topics</label>
    <div id="topics-msg">${flash}</div><div id="topics"><p class="muted">Loading…</p></div>`;
  flash = "";
  const form = document.getElementById("create-form");
  if (form) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const configs = {};
      for (const kv of document.getElementById("new-topic-configs").value.split(",")) {
        const i = kv.indexOf("=");
        if (i > 0) configs[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
      }
      const body = {
        name: document.getElementById("new-topic-name").value.trim(),
        partitions: Number(document.getElementById("new-topic-partitions").value) || 0,
        replicationFactor: Number(document.getElementById("new-topic-rf").value) || 0,
        configs,
      };
      const msg = document.getElementById("topics-msg");
      try {
        const r = await api("topics", { method: "POST", body });
        msg.innerHTML = `<div class="notice" id="created">Created topic <b>${esc(r.name)}</b> (${r.partitions} partitions, replication factor ${r.replicationFactor}).</div>`;
        form.reset();
        load();
      } catch (e) { msg.innerHTML = errorBox(e); }
    });
  }
  document.getElementById("show-internal").addEventListener("change", () => load());
  let last = [];
  const render = () => {
    const el = document.getElementById("topics");
    if (!el) return;
    const internal = document.getElementById("show-internal").checked;
    const rows = last.filter((t) => internal || !t.internal);
    el.innerHTML = `<table id="topics-table"><thead><tr><th>Topic</th><th class="num">Partitions</th><th class="num">Replication</th>
      <th class="num">Records</th><th class="num">Size (all replicas)</th><th>Health</th>${ro ? "" : "<th></th>"}</tr></thead><tbody>
      ${rows.map((t) => `<tr id="topic-row-${esc(t.name)}"><td><a href="#/topic/${encodeURIComponent(t.name)}">${esc(t.name)}</a>${t.internal ? ' <span class="muted">internal</span>' : ""}</td>
        <td class="num">${t.partitions}</td><td class="num">${t.replicationFactor}</td><td class="num">${num(t.records)}</td><td class="num">${bytes(t.size)}</td>
        <td>${t.offline ? `<span class="badge bad">${t.offline} offline</span>` : t.underReplicated ? `<span class="badge warn">${t.underReplicated} under-replicated</span>` : '<span class="badge ok">ok</span>'}</td>
        ${ro ? "" : `<td><button class="small danger" data-delete="${esc(t.name)}">Delete</button></td>`}</tr>`).join("")}
      </tbody></table>${rows.length ? "" : '<p class="muted">No topics.</p>'}`;
    el.querySelectorAll("button[data-delete]").forEach((b) => b.addEventListener("click", () => deleteTopic(b.dataset.delete)));
  };
  const load = async () => {
    try { last = await api("topics"); render(); } catch (e) { const el = document.getElementById("topics"); if (el) el.innerHTML = errorBox(e); }
  };
  every(3000, load);
}

async function deleteTopic(name) {
  const ok = await confirmModal("Delete topic " + name + "?", `<p>Every record of <b>${esc(name)}</b> is deleted on every broker. This cannot be undone.</p>`, name);
  if (!ok) return;
  const msg = document.getElementById("topics-msg");
  try {
    await api("topics/" + encodeURIComponent(name), { method: "DELETE" });
    flash = `<div class="notice" id="deleted">Deleted topic <b>${esc(name)}</b>.</div>`;
    if (page.dataset.page === "topics") route(); else location.hash = "#/topics";
  } catch (e) { if (msg) msg.innerHTML = errorBox(e); else alert(e.message); }
}

function topicPage(name) {
  page.innerHTML = `<h2>Topic <span id="topic-name">${esc(name)}</span></h2><div id="topics-msg"></div><div id="topic"><p class="muted">Loading…</p></div>`;
  every(2000, async () => {
    const el = document.getElementById("topic");
    if (!el) return;
    let t;
    try { t = await api("topics/" + encodeURIComponent(name)); } catch (e) { el.innerHTML = errorBox(e); return; }
    el.innerHTML = `
      <div class="cards">
        <div class="card"><div class="label">Partitions</div><div class="value">${t.partitions}</div></div>
        <div class="card"><div class="label">Replication factor</div><div class="value">${t.replicationFactor}</div></div>
        <div class="card"><div class="label">Records</div><div class="value">${num(t.records)}</div></div>
        <div class="card"><div class="label">Size (all replicas)</div><div class="value">${bytes(t.size)}</div></div>
        <div class="card"><div class="label">Topic id</div><div class="value" style="font-size:13px">${esc(t.id)}</div></div>
      </div>
      <p><a href="#/messages/${encodeURIComponent(name)}/0">Browse messages</a>
      ${info.readOnly || t.internal ? "" : ` · <button class="small danger" id="delete-topic">Delete topic</button>`}</p>
      <h3>Partitions</h3>
      <table id="partitions"><thead><tr><th>Partition</th><th>Leader</th><th class="num">Epoch</th><th>Replicas</th><th>ISR</th><th>Offline</th>
        <th class="num">Start offset</th><th class="num">End offset</th><th class="num">Leader size</th><th></th></tr></thead><tbody>
      ${t.partitionList.map((p) => `<tr><td>${p.partition}</td><td>${p.leader >= 0 ? p.leader : '<span class="badge bad">none</span>'}</td><td class="num">${p.leaderEpoch}</td>
        <td>${ids(p.replicas)}</td><td>${ids(p.isr)}${p.isr.length < p.replicas.length ? ' <span class="badge warn">under-replicated</span>' : ""}</td><td>${ids(p.offlineReplicas)}</td>
        <td class="num">${num(p.startOffset)}</td><td class="num">${num(p.endOffset)}</td><td class="num">${bytes(p.size)}</td>
        <td><a href="#/messages/${encodeURIComponent(name)}/${p.partition}">records</a></td></tr>`).join("")}
      </tbody></table>
      <h3>Configs</h3>
      <table id="configs"><thead><tr><th>Name</th><th>Value</th><th>Source</th></tr></thead><tbody>
      ${(t.configs || []).map((c) => `<tr><td>${esc(c.name)}</td><td>${c.sensitive ? "<i>hidden</i>" : esc(c.value)}</td><td class="muted">${esc(c.source)}</td></tr>`).join("")}
      </tbody></table>`;
    const del = document.getElementById("delete-topic");
    if (del) del.addEventListener("click", () => deleteTopic(name));
  });
}

// ---- messages ----

function decodeB64(s) {
  if (s === null || s === undefined) return null;
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function hex(b) {
  const lines = [];
  for (let i = 0; i < b.length; i += 16) {
    const row = b.slice(i, i + 16);
    const h = Array.from(row, (x) => x.toString(16).padStart(2, "0")).join(" ");
    const a = Array.from(row, (x) => (x >= 32 && x < 127 ? String.fromCharCode(x) : ".")).join("");
    lines.push(i.toString(16).padStart(8, "0") + "  " + h.padEnd(48) + "  " + a);
  }
  return lines.join("\n");
}

function show(b64, format) {
  const b = decodeB64(b64);
  if (b === null) return '<span class="muted">null</span>';
  if (format === "hex") return `<pre>${esc(hex(b))}</pre>`;
  const text = new TextDecoder("utf-8").decode(b);
  if (format === "json") {
    try { return `<pre class="json">${esc(JSON.stringify(JSON.parse(text), null, 2))}</pre>`; } catch (e) {
      return `<pre>${esc(text)}</pre><span class="muted">(not JSON)</span>`;
    }
  }
  return `<pre>${esc(text)}</pre>`;
}

async function messagesPage(topic, partition) {
  page.innerHTML = `<h2>Message browser</h2>
    <form class="toolbar" id="records-form">
      <label>Topic<select id="msg-topic"></select></label>
      <label>Partition<select id="msg-partition"></select></label>
      <label>From<select id="msg-mode"><option value="offset">offset</option><option value="timestamp">timestamp</option><option value="newest">newest</option></select></label>
      <label id="msg-value-label">Offset<input id="msg-value" value="0" style="width:200px"></label>
      <label>Limit<input id="msg-limit" type="number" value="50" min="1" max="500" style="width:80px"></label>
      <label>Show as<select id="msg-format"><option value="text">text</option><option value="json">JSON</option><option value="hex">hex</option></select></label>
      <button id="load-records" type="submit">Load</button>
    </form>
    <div id="records"></div>`;
  const tSel = document.getElementById("msg-topic");
  const pSel = document.getElementById("msg-partition");
  const mode = document.getElementById("msg-mode");
  const val = document.getElementById("msg-value");
  let topics = [];
  const gen = generation;
  try { topics = await api("topics"); } catch (e) { document.getElementById("records").innerHTML = errorBox(e); return; }
  if (gen !== generation) return; // the user went elsewhere meanwhile
  tSel.innerHTML = topics.map((t) => `<option ${t.name === topic ? "selected" : ""}>${esc(t.name)}</option>`).join("");
  const fillPartitions = () => {
    const t = topics.find((x) => x.name === tSel.value);
    const n = t ? t.partitions : 0;
    pSel.innerHTML = Array.from({ length: n }, (_, i) => `<option value="${i}" ${String(i) === partition ? "selected" : ""}>${i}</option>`).join("");
  };
  fillPartitions();
  tSel.addEventListener("change", () => { partition = "0"; fillPartitions(); });
  mode.addEventListener("change", () => {
    const lbl = document.getElementById("msg-value-label");
    lbl.firstChild.textContent = mode.value === "timestamp" ? "Time (ISO or ms)" : "Offset";
    lbl.classList.toggle("hidden", mode.value === "newest");
    if (mode.value === "timestamp") val.value = new Date(Date.now() - 3600e3).toISOString();
    if (mode.value === "offset") val.value = "0";
  });
  let last = null;
  const render = () => {
    const el = document.getElementById("records");
    if (!last) return;
    const f = document.getElementById("msg-format").value;
    const r = last;
    el.innerHTML = `<p class="muted" id="records-summary">${r.records.length} records of ${esc(r.topic)}/${r.partition} from offset ${r.from}
        (partition offsets ${r.startOffset} – ${r.endOffset}).</p>
      <table id="records-table"><thead><tr><th class="num">Offset</th><th>Timestamp</th><th>Key</th><th>Value</th><th>Headers</th></tr></thead><tbody>
      ${r.records.map((m) => `<tr data-offset="${m.offset}"><td class="num">${m.offset}</td><td>${new Date(m.timestamp).toISOString()}</td>
        <td>${show(m.key, f)}</td><td>${show(m.value, f)}${m.truncated ? '<span class="muted">(truncated)</span>' : ""}</td>
        <td>${m.headers.map((h) => `<div class="hdr"><b>${esc(h.key)}</b>: ${show(h.value, f === "json" ? "text" : f)}</div>`).join("")}</td></tr>`).join("")}
      </tbody></table>`;
  };
  document.getElementById("msg-format").addEventListener("change", render);
  document.getElementById("records-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const el = document.getElementById("records");
    const q = new URLSearchParams({ limit: document.getElementById("msg-limit").value || "50" });
    if (mode.value === "offset") q.set("offset", val.value.trim() || "0");
    if (mode.value === "newest") q.set("from", "newest");
    if (mode.value === "timestamp") {
      const s = val.value.trim();
      const ms = /^\d+$/.test(s) ? Number(s) : Date.parse(s);
      if (isNaN(ms)) { el.innerHTML = errorBox("not a time: " + s); return; }
      q.set("timestamp", String(ms));
    }
    el.innerHTML = '<p class="muted">Loading…</p>';
    try {
      last = await api(`topics/${encodeURIComponent(tSel.value)}/partitions/${pSel.value}/records?${q}`);
      history.replaceState(null, "", `#/messages/${encodeURIComponent(tSel.value)}/${pSel.value}`);
      render();
    } catch (e) { el.innerHTML = errorBox(e); }
  });
  page.dataset.ready = "messages";
}

// ---- groups ----

function groupsPage() {
  page.innerHTML = `<h2>Consumer groups</h2><div id="groups"><p class="muted">Loading…</p></div>`;
  every(1000, async () => {
    const el = document.getElementById("groups");
    if (!el) return;
    let gs;
    try { gs = await api("groups"); } catch (e) { el.innerHTML = errorBox(e); return; }
    el.innerHTML = gs.length === 0 ? '<p class="muted">No groups.</p>' : `<table id="groups-table"><thead><tr><th>Group</th><th>State</th><th>Protocol</th>
      <th class="num">Members</th><th>Coordinator</th><th class="num">Lag</th></tr></thead><tbody>
      ${gs.map((g) => `<tr id="group-row-${esc(g.name)}"><td><a href="#/group/${encodeURIComponent(g.name)}">${esc(g.name)}</a></td><td>${stateBadge(g.state)}</td>
        <td>${esc(g.protocolType)} ${esc(g.protocol)}</td><td class="num">${g.members}</td><td>${g.coordinator}</td>
        <td class="num lag">${g.lag < 0 ? "?" : num(g.lag)}</td></tr>`).join("")}</tbody></table>`;
  });
}

function stateBadge(s) {
  const cls = { Stable: "ok", Empty: "", Dead: "bad", PreparingRebalance: "warn", CompletingRebalance: "warn" }[s] ?? "";
  return `<span class="badge ${cls}">${esc(s)}</span>`;
}

function groupPage(name) {
  page.innerHTML = `<h2>Group <span id="group-name">${esc(name)}</span></h2><div id="group-msg"></div><div id="group"><p class="muted">Loading…</p></div>
    <div id="reset-box"></div>`;
  let resetShown = null;
  every(1000, async () => {
    const el = document.getElementById("group");
    if (!el) return;
    let g;
    try { g = await api("groups/" + encodeURIComponent(name)); } catch (e) { el.innerHTML = errorBox(e); return; }
    el.innerHTML = `
      <div class="cards">
        <div class="card"><div class="label">State</div><div class="value" id="group-state">${stateBadge(g.state)}</div></div>
        <div class="card"><div class="label">Members</div><div class="value">${g.members}</div></div>
        <div class="card"><div class="label">Total lag</div><div class="value" id="group-lag">${g.lag < 0 ? "?" : g.lag}</div></div>
        <div class="card"><div class="label">Coordinator</div><div class="value">node ${g.coordinator}</div></div>
        <div class="card"><div class="label">Protocol</div><div class="value">${esc(g.protocolType)} ${esc(g.protocol)}</div></div>
      </div>
      ${g.error ? `<div class="error">${esc(g.error)}</div>` : ""}
      <h3>Members</h3>
      ${g.memberList.length === 0 ? '<p class="muted">No members.</p>' : `<table id="members"><thead><tr><th>Member</th><th>Client</th><th>Host</th><th>Assigned partitions</th></tr></thead><tbody>
      ${g.memberList.map((m) => `<tr><td>${esc(m.memberId)}${m.instanceId ? ` <span class="muted">(${esc(m.instanceId)})</span>` : ""}</td><td>${esc(m.clientId)}</td><td>${esc(m.clientHost)}</td>
        <td>${Object.entries(m.assignments).map(([t, ps]) => `${esc(t)}: ${ids(ps)}`).join("<br>")}</td></tr>`).join("")}</tbody></table>`}
      <h3>Lag per partition</h3>
      <table id="lags"><thead><tr><th>Topic</th><th class="num">Partition</th><th class="num">Committed</th><th class="num">End offset</th><th class="num">Lag</th><th>Member</th></tr></thead><tbody>
      ${g.partitions.map((p) => `<tr><td>${esc(p.topic)}</td><td class="num">${p.partition}</td><td class="num">${p.committed < 0 ? "–" : num(p.committed)}</td>
        <td class="num">${num(p.end)}</td><td class="num" id="lag-${esc(p.topic)}-${p.partition}">${p.lag < 0 ? "?" : num(p.lag)}</td><td class="muted">${esc(p.member)}</td></tr>`).join("")}
      </tbody></table>`;
    const canReset = !info.readOnly && (g.state === "Empty" || g.state === "Dead");
    if (canReset !== resetShown) {
      resetShown = canReset;
      const box = document.getElementById("reset-box");
      box.innerHTML = !canReset ? (info.readOnly ? "" : '<p class="muted">Offsets can be reset once the group is Empty (no consumers).</p>') : `
        <h3>Reset offsets</h3>
        <form class="toolbar" id="reset-form">
          <label>To<select id="reset-to"><option value="earliest">earliest</option><option value="latest">latest</option><option value="offset">offset</option><option value="timestamp">timestamp</option></select></label>
          <label>Offset / time (ISO or ms)<input id="reset-value" style="width:220px"></label>
          <label>Topic (empty: every committed topic)<input id="reset-topic" style="width:200px"></label>
          <button id="reset-offsets" type="submit" class="danger">Reset offsets</button>
        </form>`;
      const f = document.getElementById("reset-form");
      if (f) f.addEventListener("submit", (ev) => { ev.preventDefault(); resetOffsets(name); });
    }
  });
}

async function resetOffsets(name) {
  const to = document.getElementById("reset-to").value;
  const v = document.getElementById("reset-value").value.trim();
  const body = { to, topic: document.getElementById("reset-topic").value.trim() };
  if (to === "offset") body.offset = Number(v);
  if (to === "timestamp") body.timestamp = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  const ok = await confirmModal(`Reset offsets of ${name}?`, `<p>The group's committed offsets ${body.topic ? "of " + esc(body.topic) + " " : ""}move to <b>${esc(to)}${to === "offset" || to === "timestamp" ? " " + esc(v) : ""}</b>.</p>`);
  if (!ok) return;
  const msg = document.getElementById("group-msg");
  try {
    const r = await api("groups/" + encodeURIComponent(name) + "/reset", { method: "POST", body });
    msg.innerHTML = `<div class="notice" id="reset-done">Reset ${r.partitions} partitions.</div>`;
  } catch (e) { msg.innerHTML = errorBox(e); }
}

// ---- charts ----

const history_ = []; // metrics samples, newest last, at most 180
const HISTORY = 180;
let metricsPoller = null;

async function pollMetrics() {
  try {
    const m = await api("metrics");
    history_.push(m);
    if (history_.length > HISTORY + 1) history_.shift();
    if (page.dataset.page === "charts") drawCharts();
  } catch (e) { /* the node is going away; keep the history */ }
}

// rates turns the samples into per-second points of f(prev, cur, dt).
function rates(f) {
  const pts = [];
  for (let i = 1; i < history_.length; i++) {
    const a = history_[i - 1], b = history_[i];
    const dt = (b.time - a.time) / 1000;
    if (dt <= 0) continue;
    const v = f(a, b, dt);
    pts.push({ t: b.time, v: v === null || isNaN(v) ? null : v });
  }
  return pts;
}

function counterRate(key) { return rates((a, b, dt) => Math.max(0, (b.counters[key] || 0) - (a.counters[key] || 0)) / dt); }

function latencyMean(req) {
  return rates((a, b) => {
    const la = a.latency[req], lb = b.latency[req];
    if (!la || !lb || lb.count <= la.count) return null;
    const mean = (lb.sum - la.sum) / (lb.count - la.count);
    return b.latencyUnit === "s" ? mean * 1000 : mean;
  });
}

function latencyQuantile(req, q) {
  return rates((a, b) => {
    const la = a.latency[req], lb = b.latency[req];
    if (!la || !lb || !lb.bounds || lb.count <= la.count || !la.counts || la.counts.length !== lb.counts.length) return null;
    const total = lb.count - la.count;
    const want = q * total;
    for (let i = 0; i < lb.bounds.length; i++) {
      if (lb.counts[i] - la.counts[i] >= want) return b.latencyUnit === "s" ? lb.bounds[i] * 1000 : lb.bounds[i];
    }
    return null;
  });
}

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"];

function drawChart(id, series, fmt) {
  const cv = document.getElementById(id);
  if (!cv) return;
  const dpr = window.devicePixelRatio || 1;
  const w = cv.clientWidth, h = cv.clientHeight;
  cv.width = w * dpr; cv.height = h * dpr;
  const g = cv.getContext("2d");
  g.scale(dpr, dpr);
  g.clearRect(0, 0, w, h);
  const padL = 64, padR = 10, padT = 10, padB = 22;
  const now = history_.length ? history_[history_.length - 1].time : Date.now();
  const t0 = now - HISTORY * 1000;
  let maxV = 0;
  for (const s of series) for (const p of s.points) if (p.v !== null && p.t >= t0) maxV = Math.max(maxV, p.v);
  if (maxV === 0) maxV = 1;
  maxV *= 1.1;
  g.strokeStyle = "#e5e7eb"; g.fillStyle = "#6b7280"; g.font = "11px system-ui, sans-serif"; g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = padT + (h - padT - padB) * (1 - i / 4);
    g.beginPath(); g.moveTo(padL, y); g.lineTo(w - padR, y); g.stroke();
    g.textAlign = "right"; g.fillText(fmt(maxV * i / 4), padL - 6, y + 4);
  }
  g.textAlign = "center";
  for (let s = 0; s <= HISTORY; s += 30) {
    const x = padL + (w - padL - padR) * (s / HISTORY);
    g.fillText(s === HISTORY ? "now" : `-${HISTORY - s}s`, x, h - 6);
  }
  series.forEach((s, i) => {
    g.strokeStyle = COLORS[i % COLORS.length]; g.lineWidth = 2; g.beginPath();
    let pen = false;
    for (const p of s.points) {
      if (p.t < t0 || p.v === null) { pen = false; continue; }
      const x = padL + (w - padL - padR) * ((p.t - t0) / (HISTORY * 1000));
      const y = padT + (h - padT - padB) * (1 - p.v / maxV);
      if (pen) g.lineTo(x, y); else g.moveTo(x, y);
      pen = true;
    }
    g.stroke();
  });
  const leg = document.getElementById(id + "-legend");
  if (leg) {
    leg.innerHTML = series.map((s, i) => {
      const lastP = [...s.points].reverse().find((p) => p.v !== null);
      return `<span><i style="background:${COLORS[i % COLORS.length]}"></i>${esc(s.name)}: ${lastP ? fmt(lastP.v) : "–"}</span>`;
    }).join("");
  }
}

function fmtRate(unit) { return (v) => (v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : v.toFixed(v < 10 ? 1 : 0)) + unit; }

function drawCharts() {
  const last = history_[history_.length - 1];
  const reqs = last ? Object.keys(last.latency).sort() : [];
  // Kafka splits Fetch into FetchConsumer and FetchFollower.
  const shown = reqs.filter((r) => r === "FetchConsumer" || r === "Fetch");
  const latSeries = [];
  // Produce alone when there is one: a consumer's fetch waits out its
  // max wait (seconds), which would flatten Produce's milliseconds.
  const one = reqs.includes("Produce") ? ["Produce"] : shown.length ? shown : reqs.slice(0, 2);
  for (const r of one) {
    latSeries.push({ name: r + " mean", points: latencyMean(r) });
    if (last.latency[r].bounds) latSeries.push({ name: r + " p99", points: latencyQuantile(r, 0.99) });
  }
  drawChart("chart-bytes", [{ name: "bytes in/s", points: counterRate("bytesIn") }, { name: "bytes out/s", points: counterRate("bytesOut") }], fmtRate("B"));
  drawChart("chart-records", [{ name: "records in/s", points: counterRate("messagesIn") }], fmtRate(""));
  drawChart("chart-requests", [{ name: "requests/s", points: counterRate("requests") }, { name: "errors/s", points: counterRate("errors") }], fmtRate(""));
  drawChart("chart-latency", latSeries, (v) => v.toFixed(v < 10 ? 2 : 0) + " ms");
  const note = document.getElementById("latency-note");
  if (note) note.classList.toggle("hidden", reqs.length > 0);
  const n = document.getElementById("chart-samples");
  if (n) n.textContent = String(history_.length);
}

function chartsPage() {
  page.innerHTML = `<h2>Live charts <span class="muted" style="font-size:13px">node ${info.nodeId}'s own counters, sampled every second (<span id="chart-samples">0</span> samples)</span></h2>
    <div class="charts">
      <div class="chart"><h3>Bytes in / out per second</h3><canvas id="chart-bytes"></canvas><div class="legend" id="chart-bytes-legend"></div></div>
      <div class="chart"><h3>Records in per second</h3><canvas id="chart-records"></canvas><div class="legend" id="chart-records-legend"></div></div>
      <div class="chart"><h3>Requests per second</h3><canvas id="chart-requests"></canvas><div class="legend" id="chart-requests-legend"></div></div>
      <div class="chart"><h3>Request latency (TotalTimeMs)</h3><canvas id="chart-latency"></canvas><div class="legend" id="chart-latency-legend"></div>
        <p class="muted hidden" id="latency-note">This node exports no request latency family (kafka_network_requestmetrics_totaltimems) yet.</p></div>
    </div>`;
  drawCharts();
}

// ---- start ----

(async () => {
  try { info = await api("info"); } catch (e) { /* shown by the pages */ }
  document.getElementById("node-info").textContent = `node ${info.nodeId} · ${info.version || ""}${info.readOnly ? " · read-only" : ""}`;
  metricsPoller = setInterval(pollMetrics, 1000);
  pollMetrics();
  route();
})();
