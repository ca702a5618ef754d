// slotraft's live dashboard. Plain JavaScript, no library, no resource
// outside this server: it polls api/cluster (and, where a chaos
// supervisor serves the page, api/chaos) twice a second and redraws.
// Everything a node reports is put in the page as text, never as HTML.
"use strict";
(() => {
  const POLL_MS = 500;
  const TIMEOUT_MS = 3000;
  const HISTORY = 120; // samples of throughput kept per node (1 min)
  const SLOTS = 16384, COLS = 128, CELL = 4;

  const $ = (id) => document.getElementById(id);
  const state = {
    cluster: null, chaos: null, chaosOn: false, lastOK: 0, failingSince: 0,
    history: new Map(), // node id -> [{t, ops, p99}]
    ticked: new Set(),  // nodes ticked for a partition
    busy: false,        // a chaos action is on its way
  };

  // el builds an element; props go to the element (textContent, className,
  // dataset entries as data: {…}), children are elements or text.
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "data") Object.assign(e.dataset, v);
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else e[k] = v;
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  const badge = (text, cls) => el("span", {className: "badge " + (cls || text), textContent: text});
  const num = (text) => el("td", {className: "num", textContent: text});

  function fmtCount(n) {
    if (n === undefined || n === null) return "–";
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
    return String(Math.round(n));
  }
  function fmtBytes(b) {
    if (!b) return "–";
    const u = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return b.toFixed(i ? 1 : 0) + " " + u[i];
  }
  function fmtUs(us, windowMS) {
    if (!windowMS) return "…";
    if (!us) return "–";
    return us >= 1000 ? (us / 1000).toFixed(us >= 10000 ? 0 : 1) + " ms" : Math.round(us) + " µs";
  }
  function fmtTime(iso) {
    const d = new Date(iso);
    return d.toLocaleTimeString([], {hour12: false}) + "." + String(d.getMilliseconds()).padStart(3, "0");
  }
  function groupColour(g) {
    return "hsl(" + ((g * 137.508) % 360).toFixed(1) + ", 60%, " + (g % 2 ? 52 : 42) + "%)";
  }

  async function getJSON(url, init) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    try {
      const r = await fetch(url, Object.assign({cache: "no-store", signal: ctl.signal}, init));
      let body = null;
      try { body = await r.json(); } catch (_) { body = {error: r.status + " " + r.statusText}; }
      return {status: r.status, ok: r.ok, body};
    } finally {
      clearTimeout(timer);
    }
  }

  // ---- polling ----

  async function pollCluster() {
    try {
      const r = await getJSON("api/cluster");
      if (!r.ok) { // the server answered: it has no view of the cluster now
        const e = new Error(r.body && r.body.error || "HTTP " + r.status);
        e.answered = true;
        throw e;
      }
      state.cluster = r.body;
      state.lastOK = Date.now();
      state.failingSince = 0;
      remember(r.body);
      setPoll(null);
    } catch (e) {
      if (!state.failingSince) state.failingSince = Date.now();
      setPoll(e);
    }
    render();
    setTimeout(pollCluster, POLL_MS);
  }

  async function pollChaos() {
    try {
      const r = await getJSON("api/chaos");
      if (r.status === 404 && !state.chaosOn) return; // a node's own page: no chaos controls
      if (r.ok) {
        state.chaos = r.body;
        if (!state.chaosOn) { state.chaosOn = true; document.body.classList.add("chaos"); $("chaos").hidden = false; }
        render();
      }
    } catch (_) { /* the supervisor is gone or slow: keep the last state */ }
    setTimeout(pollChaos, POLL_MS);
  }

  function remember(c) {
    const now = Date.now();
    for (const n of c.nodes || []) {
      const h = state.history.get(n.id) || [];
      h.push({t: now, ops: n.stats ? n.stats.ops_per_sec : null, p99: n.stats ? n.stats.p99_us : null});
      while (h.length > HISTORY) h.shift();
      state.history.set(n.id, h);
    }
  }

  function setPoll(err) {
    const p = $("poll"), b = $("banner");
    if (!err) {
      p.dataset.state = "ok";
      p.textContent = "live · " + new Date().toLocaleTimeString([], {hour12: false});
      b.hidden = true;
      return;
    }
    p.dataset.state = "stale";
    p.textContent = (err.answered ? "no cluster view since " : "not answering since ") +
      new Date(state.failingSince).toLocaleTimeString([], {hour12: false});
    b.hidden = false;
    b.replaceChildren(err.answered ? "No view of the cluster now: " + err.message + ". "
      : "The server of this page does not answer (" + err.message + "). ");
    const c = state.cluster;
    if (c && !state.chaosOn) {
      const others = (c.nodes || []).filter((n) => n.id !== c.self && n.http);
      if (others.length) {
        b.append("Other nodes' dashboards: ");
        others.forEach((n, i) => {
          b.append(el("a", {href: "http://" + n.http + "/ui/", textContent: n.id}));
          if (i < others.length - 1) b.append(", ");
        });
      }
    }
  }

  // ---- rendering ----

  function render() {
    const c = state.cluster;
    if (c) {
      renderSummary(c);
      renderSlots(c);
      renderGroups(c);
      renderEvents(c);
    }
    renderNodes(c);
    if (state.chaosOn) renderChaos();
  }

  function renderSummary(c) {
    const up = (c.nodes || []).filter((n) => n.health === "ok").length;
    const parts = [
      (c.nodes || []).length + " nodes (" + up + " ok)",
      (c.groups || []).length + " groups",
      "map epoch " + c.epoch,
      "meta leader " + (c.meta_leader || "none"),
      "served by " + c.self + (c.version ? " (" + c.version + ")" : ""),
    ];
    $("summary").textContent = parts.join(" · ");
  }

  // Slot owners and migrations, per slot, for drawing and hovering.
  let owners = new Int32Array(SLOTS), migTo = new Int32Array(SLOTS);

  function renderSlots(c) {
    owners = new Int32Array(SLOTS);
    migTo = new Int32Array(SLOTS);
    let assigned = 0, migrating = 0;
    for (const r of c.slots || []) {
      for (let s = r.s; s <= r.e; s++) { if (!owners[s]) assigned++; owners[s] = r.g; }
    }
    for (const m of c.migrations || []) {
      for (const r of m.ranges || []) for (let s = r.s; s <= r.e; s++) { if (!migTo[s]) migrating++; migTo[s] = m.to; }
    }
    const cv = $("slotmap"), ctx = cv.getContext("2d");
    ctx.fillStyle = "#e4e7eb";
    ctx.fillRect(0, 0, cv.width, cv.height);
    const colours = new Map();
    const colour = (g) => { if (!colours.has(g)) colours.set(g, groupColour(g)); return colours.get(g); };
    for (let s = 0; s < SLOTS; s++) {
      const x = (s % COLS) * CELL, y = Math.floor(s / COLS) * CELL;
      if (migTo[s]) {
        ctx.fillStyle = "#000";
        ctx.fillRect(x, y, CELL, CELL);
        ctx.fillStyle = colour(migTo[s]);
        ctx.fillRect(x + 1, y + 1, CELL - 2, CELL - 2);
      } else if (owners[s]) {
        ctx.fillStyle = colour(owners[s]);
        ctx.fillRect(x, y, CELL, CELL);
      }
    }
    cv.dataset.assigned = String(assigned);
    cv.dataset.migrating = String(migrating);
    $("slot-count").textContent = assigned + " of " + SLOTS + " slots assigned" + (migrating ? " · " + migrating + " migrating" : "");
    const legend = $("legend");
    legend.replaceChildren(...(c.groups || []).map((g) => {
      const sw = el("span", {className: "swatch"});
      sw.style.background = colour(g.id);
      return el("li", {data: {group: String(g.id)}}, sw, "group " + g.id + ": " + g.slots + " slots, leader " + (g.leader || "none"));
    }));
    if (migrating) {
      const sw = el("span", {className: "swatch"});
      sw.style.background = "#000";
      legend.append(el("li", {}, sw, "migrating (inner colour: destination)"));
    }
    $("migrations").textContent = (c.migrations || []).map((m) => m.count + " slot(s) moving from group " + m.from + " to group " + m.to).join("; ");
  }

  $("slotmap").addEventListener("mousemove", (ev) => {
    const cv = ev.currentTarget, rect = cv.getBoundingClientRect();
    const col = Math.floor((ev.clientX - rect.left) * cv.width / rect.width / CELL);
    const row = Math.floor((ev.clientY - rect.top) * cv.height / rect.height / CELL);
    const s = row * COLS + col;
    if (col < 0 || col >= COLS || s < 0 || s >= SLOTS) return;
    let text = "slot " + s + ": " + (owners[s] ? "group " + owners[s] : "no group");
    const g = state.cluster && (state.cluster.groups || []).find((x) => x.id === owners[s]);
    if (g) text += ", leader " + (g.leader || "none");
    if (migTo[s]) text += ", migrating to group " + migTo[s];
    $("slot-hover").textContent = text;
  });

  function spark(id) {
    const cv = el("canvas", {className: "spark", width: HISTORY, height: 24});
    const h = state.history.get(id) || [];
    const ctx = cv.getContext("2d");
    const most = Math.max(1, ...h.map((p) => p.ops || 0));
    ctx.strokeStyle = "#2b6cb0";
    ctx.beginPath();
    h.forEach((p, i) => {
      const x = HISTORY - h.length + i, y = 23 - ((p.ops || 0) / most) * 22;
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
    cv.title = "peak " + fmtCount(most) + " ops/s over the last " + Math.round(h.length * POLL_MS / 1000) + " s";
    return cv;
  }

  function chaosNode(id) {
    return state.chaos && (state.chaos.nodes || []).find((n) => n.id === id);
  }

  function renderNodes(c) {
    const rows = [];
    const ids = (c ? c.nodes || [] : []).map((n) => n.id);
    for (const pn of state.chaos ? state.chaos.nodes || [] : []) if (!ids.includes(pn.id)) ids.push(pn.id);
    for (const id of ids) {
      const n = c && (c.nodes || []).find((x) => x.id === id);
      const st = n && n.stats;
      const pn = chaosNode(id);
      const health = n ? n.health : "unknown";
      const tr = el("tr", {data: {node: id, health, process: pn ? pn.process : "", self: String(!!c && c.self === id)}},
        el("td", {textContent: id, title: n ? "client " + n.client + ", bus " + n.bus + (n.http ? ", http " + n.http : "") : ""}),
        el("td", {title: n ? [n.error, n.stats_error].filter(Boolean).join("; ") : ""}, badge(health)),
        el("td", {textContent: n ? n.gossip : "–"}),
        num(n ? String(n.leaders) : "–"), num(n ? String(n.replicas) : "–"),
        num(st ? fmtCount(st.ops_per_sec) : "–"),
        num(st ? fmtUs(st.p50_us, st.window_ms) : "–"), num(st ? fmtUs(st.p99_us, st.window_ms) : "–"),
        num(st ? String(st.clients) : "–"), num(st ? fmtCount(st.keys) : "–"), num(st ? fmtBytes(st.used_bytes) : "–"),
        el("td", {}, spark(id)),
        el("td", {className: "chaos-col", title: pn && pn.note || ""}, pn ? badge(pn.process) : "–", pn && pn.pid ? " pid " + pn.pid : "",
          pn && pn.note ? el("div", {className: "muted", textContent: pn.note}) : null),
        el("td", {className: "chaos-col"}, ...(pn ? actionButtons(pn) : [])));
      rows.push(tr);
    }
    $("nodes").tBodies[0].replaceChildren(...rows);
  }

  function actionButtons(pn) {
    const can = pn.can || {};
    const b = (action, label, cls) => el("button", {
      type: "button", textContent: label, className: cls || "", disabled: state.busy || !can[action],
      title: can[action] ? action + " " + pn.id : "not possible now: " + (pn.note || pn.process),
      data: {action, node: pn.id}, on: {click: () => act({action, node: pn.id})},
    });
    const tick = el("input", {type: "checkbox", checked: state.ticked.has(pn.id), title: "tick to cut " + pn.id + " off in a partition",
      data: {tick: pn.id}, on: {change: (ev) => { if (ev.target.checked) state.ticked.add(pn.id); else state.ticked.delete(pn.id); }}});
    return [b("kill", "kill -9", "danger"), b("pause", "pause"), b("resume", "resume"), b("restart", "restart"),
      el("label", {}, tick, " cut")];
  }

  function renderGroups(c) {
    $("groups").tBodies[0].replaceChildren(...(c.groups || []).map((g) => {
      const sw = el("span", {className: "swatch"});
      sw.style.background = groupColour(g.id);
      const reps = el("td");
      for (const r of g.replicas || []) {
        reps.append(r.node + " ", badge(r.state), r.state !== "Leader" && r.lag ? " lag " + r.lag : "", "  ");
      }
      return el("tr", {data: {group: String(g.id), leader: g.leader || ""}},
        el("td", {}, sw, " " + g.id), num(String(g.slots)), el("td", {textContent: g.leader || "none"}),
        num(String(g.term)), reps);
    }));
  }

  function renderEvents(c) {
    $("events").tBodies[0].replaceChildren(...(c.events || []).map((e) =>
      el("tr", {data: {kind: e.kind}}, el("td", {textContent: fmtTime(e.at)}), el("td", {textContent: e.kind}),
        el("td", {textContent: e.text}), el("td", {textContent: (e.seen_by || []).join(", ")}))));
  }

  // ---- chaos ----

  function renderChaos() {
    const ch = state.chaos;
    $("chaos-mode").textContent = ch.mode === "chaos-run" ? "(chaos run)" : "(slotraft dev --chaos-ui)";
    const p = ch.partition || {};
    const reason = p.available ? "" : "partitions unavailable: " + p.reason;
    $("partition-reason").textContent = reason;
    for (const id of ["btn-partition", "btn-heal"]) {
      $(id).disabled = state.busy || !p.available;
      $(id).title = reason || $(id).title;
    }
    $("partition-state").textContent = p.cut ? "in force: " + p.cut : "no partition in force";
    $("chaos-log").replaceChildren(...(ch.log || []).slice().reverse().map((l) =>
      el("li", {textContent: fmtTime(l.at) + " " + l.text})));
    renderVerdict(ch.run);
  }

  function renderVerdict(run) {
    const v = $("verdict");
    if (!run) { v.hidden = true; return; }
    v.hidden = false;
    const fin = run.verdict;
    v.dataset.result = fin ? fin.result : "running";
    const kids = [el("strong", {textContent: fin ? "Verdict: " + fin.result : "Run in progress: " + run.phase}),
      " · " + Math.round(run.elapsed_s) + " s of " + Math.round(run.duration_s) + " s of faults · seed " + run.seed];
    const counts = (run.workloads || []).map((w) => w.name + " " + w.ok + " ok / " + w.fail + " failed / " + w.unknown + " unknown").join("; ");
    kids.push(el("div", {textContent: "operations: " + (counts || "none yet")}));
    kids.push(el("div", {textContent: "faults injected: " + run.faults_injected + (run.faults_active && run.faults_active.length ? "; in force: " + run.faults_active.join("; ") : "")}));
    if (run.crashes && run.crashes.length) kids.push(el("div", {textContent: "nodes that exited by themselves: " + run.crashes.join("; ")}));
    kids.push(el("div", {className: "muted", textContent: run.checked}));
    if (run.live) kids.push(renderLive(run.live, fin));
    if (fin) {
      for (const a of fin.anomalies || []) kids.push(el("div", {textContent: a.kind + ": " + a.text}));
      if (fin.error) kids.push(el("div", {textContent: "error: " + fin.error}));
    }
    v.replaceChildren(...kids);
  }

  // The live verdict of a chaos run: what the checks that hold on the
  // history so far found (provisional), and what waits for the end.
  function renderLive(lv, fin) {
    const found = lv.anomalies || [];
    let head = (fin ? "During the run, the live check found " : "Live check: ") +
      (found.length ? found.length + (lv.more ? "+" : "") + (found.length === 1 ? " anomaly" : " anomalies") + (fin ? "" : " so far (provisional)")
        : (fin ? "no anomaly" : "no anomaly so far"));
    if (!lv.checks) head = "Live check: the first runs a few seconds into the run";
    else head += " (checked " + lv.ops + " operations up to " + lv.up_to_s.toFixed(1) + " s" +
      (fin ? "" : ", " + Math.round(lv.age_s) + " s ago") + "; " + lv.checks + (lv.checks === 1 ? " check)" : " checks)");
    const box = el("div", {className: "live", data: {live: !lv.checks ? "waiting" : found.length ? "anomalies" : "ok"}},
      el("strong", {textContent: head}));
    for (const a of found) {
      box.append(el("div", {className: "provisional", textContent: "provisional, found at " + a.at_s.toFixed(1) + " s: " + a.kind + ": " + a.text}));
    }
    if (lv.undecided) box.append(el("div", {className: "muted", textContent: lv.undecided + " keys not decided by porcupine in the last check (tried again in the next)"}));
    if (lv.capped) box.append(el("div", {className: "muted", textContent: "live check " + lv.capped}));
    box.append(el("div", {className: "muted", textContent: "checked live: " + (lv.checked || []).join("; ")}));
    box.append(el("div", {className: "muted", textContent: "pending until the end: " + (lv.pending || []).join("; ")}));
    return box;
  }

  async function act(req) {
    state.busy = true;
    render();
    const out = $("chaos-result");
    out.className = "chaos-result";
    out.textContent = req.action + (req.node ? " " + req.node : "") + "…";
    try {
      const r = await getJSON("api/chaos/action", {
        method: "POST", body: JSON.stringify(req),
        headers: {"Content-Type": "application/json", "X-Slotraft-Chaos": "1"},
      });
      out.textContent = r.ok ? r.body.text : "refused: " + (r.body && r.body.error);
      if (!r.ok) out.className = "chaos-result error";
    } catch (e) {
      out.textContent = "failed: " + e.message;
      out.className = "chaos-result error";
    }
    state.busy = false;
    const ch = await getJSON("api/chaos").catch(() => null);
    if (ch && ch.ok) state.chaos = ch.body;
    render();
  }

  $("btn-partition").addEventListener("click", () => act({action: "partition", nodes: Array.from(state.ticked).sort()}));
  $("btn-heal").addEventListener("click", () => act({action: "heal"}));

  pollCluster();
  pollChaos();
})();
