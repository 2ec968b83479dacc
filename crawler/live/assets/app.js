// heed live page. Everything the crawl found (hosts, URLs, titles, errors)
// is put on the page with textContent, never as markup.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const SERIES = [["2xx", "#2e9d4b"], ["3xx", "#3b74c4"], ["4xx", "#e08a00"], ["5xx", "#d23b2f"], ["network", "#7b4bb5"], ["robots", "#8a8f98"]];
  const PERIOD = 2000;
  const LOG_ROWS = 25;
  const hostQuery = { q: "", state: "", sort: "key", desc: false, offset: 0, limit: 50 };
  let journalKey = "";

  const tok = new URLSearchParams(location.hash.slice(1)).get("token");
  if (tok) { $("token").value = tok; history.replaceState(null, "", location.pathname); }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function row(cells, cls) {
    const tr = el("tr", null, cls);
    for (const c of cells) tr.appendChild(c instanceof Node ? c : el("td", c));
    return tr;
  }
  function fill(tbody, rows) { tbody.replaceChildren(...rows); }
  const num = (n) => Number(n).toLocaleString("en");
  function dur(s) {
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
    return h ? `${h}h${String(m).padStart(2, "0")}m` : m ? `${m}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
  }
  function ago(t) {
    if (!t || t.startsWith("0001")) return "–";
    const d = (Date.parse(t) - Date.now()) / 1000;
    if (Math.abs(d) < 1) return "now";
    return d > 0 ? "in " + dur(d) : dur(-d) + " ago";
  }
  async function getJSON(path) {
    const r = await fetch(path, { headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error(path + ": " + r.status);
    return r.json();
  }

  function renderStatus(s) {
    $("state").textContent = s.state;
    $("uptime").textContent = dur(s.uptime_s);
    $("rate-minute").textContent = s.pages_per_s_minute.toFixed(1);
    $("rate-average").textContent = s.pages_per_s_average.toFixed(1);
    $("pages").textContent = num(s.pages);
    $("in-flight").textContent = num(s.in_flight);
    $("queued").textContent = num(s.queued);
    $("due").textContent = num(s.hosts_due_now) + " / " + num(s.hosts_later);
    $("errors").textContent = num(s.errors);
    fill($("alerts"), (s.alerts || []).map((a) => el("li", a)));
    const facts = [
      ["latency p50 / p95", `${s.latency_p50_ms.toFixed(0)} / ${s.latency_p95_ms.toFixed(0)} ms`],
      ["disallowed by robots.txt", num(s.disallowed)],
      ["hosts with work", num(s.hosts)],
      ["memory (heap / total)", `${(s.process.heap_bytes / 1048576).toFixed(1)} / ${(s.process.total_bytes / 1048576).toFixed(1)} MiB`],
      ["goroutines", num(s.process.goroutines)],
      ["open sockets", s.process.open_conns < 0 ? "–" : num(s.process.open_conns)],
    ];
    const f = s.freshness;
    if (f) {
      facts.push(["revisits", num(f.revisits)], ["changed / unchanged", `${num(f.changed)} / ${num(f.unchanged)} (${f.changed_pct.toFixed(1)}% changed)`],
        ["304 Not Modified", `${num(f.not_modified)} (${num(f.bytes_saved)} bytes saved)`], ["dropped", num(f.dropped)]);
    }
    const dl = $("facts");
    dl.replaceChildren();
    for (const [k, v] of facts) { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); }
  }

  const NS = "http://www.w3.org/2000/svg";
  function renderChart(c) {
    const svg = $("chart"), W = 900, H = 180;
    let n = 0, top = 1;
    for (const [name] of SERIES) {
      const s = c.series[name] || [];
      n = Math.max(n, s.length);
      for (const v of s) top = Math.max(top, v);
    }
    svg.replaceChildren();
    for (const [name, color] of SERIES) {
      const s = c.series[name] || [];
      const pts = s.map((v, i) => `${(n > 1 ? i / (n - 1) * W : 0).toFixed(1)},${(H - 4 - v / top * (H - 14)).toFixed(1)}`);
      const line = document.createElementNS(NS, "polyline");
      line.setAttribute("points", pts.join(" "));
      line.setAttribute("fill", "none");
      line.setAttribute("stroke", color);
      line.setAttribute("stroke-width", "1.5");
      line.setAttribute("data-series", name);
      line.setAttribute("data-points", String(s.length));
      svg.appendChild(line);
    }
    const label = document.createElementNS(NS, "text");
    label.setAttribute("x", "4"); label.setAttribute("y", "12"); label.setAttribute("font-size", "11");
    label.textContent = `max ${top}/s`;
    svg.appendChild(label);
  }
  $("legend").replaceChildren(...SERIES.map(([name, color]) => {
    const s = el("span"), i = el("i");
    i.style.background = color;
    s.append(i, name);
    return s;
  }));

  function stateClass(s) { return "s-" + s.split(" ")[0]; }
  function renderHosts(p) {
    $("host-count").textContent = `${num(p.total)} of ${num(p.hosts)}`;
    $("page-no").textContent = `${Math.floor(hostQuery.offset / hostQuery.limit) + 1} / ${Math.max(1, Math.ceil(p.total / hostQuery.limit))}`;
    fill($("hosts").tBodies[0], p.rows.map((h) => {
      const load = h.allowed_per_min > 0 ? `${h.load_per_min} / ${h.allowed_per_min.toFixed(0)} (${h.load_pct.toFixed(0)}%)` : `${h.load_per_min} / –`;
      const robots = h.robots_outcome ? `${h.robots_outcome}, ${ago(h.robots_at)}${h.crawl_delay_ms ? `, Crawl-delay ${h.crawl_delay_ms / 1000}s` : ""}` : "–";
      const tr = row([el("td", h.key), el("td", h.state, stateClass(h.state)), h.in_flight, h.queued < 0 ? "–" : num(h.queued), num(h.requests),
        `${h.delay_ms} ms (${h.reason})`, ago(h.next_allowed), load, h.recent_429, h.recent_5xx, robots,
        h.last_status ? `${h.last_status}, ${ago(h.last_at)}` : ago(h.last_at),
        h.revisits ? `${(h.revisit_wait_ms / 1000).toFixed(1)} s (${h.freshness_debt_pct.toFixed(0)}%)` : "–"],
        "pick" + (h.overloaded || h.freshness_capped ? " over" : ""));
      tr.dataset.key = h.key;
      tr.addEventListener("click", () => { journalKey = h.key; refreshJournal(); });
      return tr;
    }));
  }
  async function refreshHosts() {
    const q = new URLSearchParams({ q: hostQuery.q, state: hostQuery.state, sort: hostQuery.sort, desc: hostQuery.desc ? "1" : "0", offset: hostQuery.offset, limit: hostQuery.limit });
    renderHosts(await getJSON("api/hosts?" + q));
  }
  async function refreshJournal() {
    if (!journalKey) return;
    const j = await getJSON("api/host?key=" + encodeURIComponent(journalKey));
    $("journal-panel").hidden = false;
    $("journal-host").textContent = j.host.key;
    fill($("journal"), (j.journal || []).map((e) => el("li", `${new Date(e.at).toLocaleTimeString()} · ${e.kind} · ${e.text}`)));
  }
  for (const th of document.querySelectorAll("#hosts th[data-sort]")) {
    th.addEventListener("click", () => {
      const col = th.dataset.sort;
      hostQuery.desc = hostQuery.sort === col ? !hostQuery.desc : col !== "key";
      hostQuery.sort = col;
      hostQuery.offset = 0;
      for (const o of document.querySelectorAll("#hosts th")) o.classList.remove("sorted", "asc");
      th.classList.add("sorted");
      if (!hostQuery.desc) th.classList.add("asc");
      refreshHosts();
    });
  }
  let searchTimer = 0;
  $("search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { hostQuery.q = $("search").value; hostQuery.offset = 0; refreshHosts(); }, 200);
  });
  $("state-filter").addEventListener("change", () => { hostQuery.state = $("state-filter").value; hostQuery.offset = 0; refreshHosts(); });
  $("prev").addEventListener("click", () => { hostQuery.offset = Math.max(0, hostQuery.offset - hostQuery.limit); refreshHosts(); });
  $("next").addEventListener("click", () => { hostQuery.offset += hostQuery.limit; refreshHosts(); });

  function renderErrors(errs) {
    fill($("errs").tBodies[0], errs.map((e) => row([e.kind, num(e.count), el("td", `${e.example_url} — ${e.example}`, "url")])));
  }
  function renderLog(log) {
    fill($("log").tBodies[0], log.slice(0, LOG_ROWS).map((f) => row([new Date(f.at).toLocaleTimeString(), f.status || "–", (f.rtt_ns / 1e6).toFixed(0),
      el("td", f.url, "url"), el("td", f.error || f.title || "", "url")])));
  }

  async function control(what) {
    const msg = $("control-msg");
    try {
      const r = await fetch("api/" + what, { method: "POST", headers: { "X-Heed-Token": $("token").value } });
      msg.textContent = r.ok ? what + ": done" : what + ": " + (await r.text()).trim();
    } catch (e) { msg.textContent = what + ": " + e.message; }
    refresh();
  }
  for (const what of ["pause", "resume", "stop"]) $(what).addEventListener("click", () => control(what));

  let busy = false;
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      const [s, c, l, e, f] = await Promise.all([getJSON("api/status"), getJSON("api/chart"), getJSON("api/log"), getJSON("api/errors"), getJSON("api/frontier")]);
      renderStatus(s); renderChart(c); renderLog(l); renderErrors(e); window.heedFrontier(f);
      await refreshHosts();
      await refreshJournal();
    } catch (err) {
      $("state").textContent = "unreachable";
    } finally { busy = false; }
  }
  refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, PERIOD);
})();
