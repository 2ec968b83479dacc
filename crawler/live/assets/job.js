// heed job view: a -redis job read from its Store. Text from the Store is
// put on the page with textContent only.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const num = (n) => Number(n).toLocaleString("en");
  let last = null;
  function td(text) { const e = document.createElement("td"); e.textContent = String(text); return e; }
  function ago(now, t) { const s = Math.max(0, Math.round((Date.parse(now) - Date.parse(t)) / 1000)); return s + "s ago"; }
  async function refresh() {
    try {
      const r = await fetch("api/job");
      if (!r.ok) throw new Error(String(r.status));
      const j = await r.json();
      $("job").textContent = j.name;
      $("state").textContent = j.paused ? "paused" : j.state;
      $("queued").textContent = num(j.counts.Queued);
      $("leased").textContent = num(j.counts.Leased);
      $("hosts").textContent = `${num(j.counts.Busy)} / ${num(j.counts.Ready)} / ${num(j.counts.Resting)}`;
      $("scheduled").textContent = num(j.counts.Scheduled);
      $("pages").textContent = num(j.pages);
      $("errors").textContent = num(j.errors);
      if (last) {
        const dt = (Date.parse(j.now) - Date.parse(last.now)) / 1000;
        if (dt > 0) $("rate").textContent = ((j.pages - last.pages) / dt).toFixed(1);
      }
      last = j;
      $("procs").tBodies[0].replaceChildren(...(j.processes || []).map((p) => {
        const tr = document.createElement("tr");
        tr.append(td(p.name), td(p.state), td(ago(j.now, p.seen)), td(ago(j.now, p.started)), td(num(p.pages)), td(num(p.errors)), td(`${p.pid} @ ${p.host}`));
        return tr;
      }));
    } catch (e) {
      $("state").textContent = "unreachable";
    }
    // The panel shows once the view serves it (crawl status -ui does).
    try {
      const r = await fetch("api/frontier");
      if (r.status === 200) { window.heedFrontier(await r.json()); $("frontier-panel").hidden = false; }
    } catch (e) { /* the job's state says unreachable */ }
  }
  const tok = new URLSearchParams(location.hash.slice(1)).get("token");
  if (tok) { $("token").value = tok; history.replaceState(null, "", location.pathname); }
  async function control(what) {
    try {
      const r = await fetch("api/" + what, { method: "POST", headers: { "X-Heed-Token": $("token").value } });
      $("control-msg").textContent = r.ok ? what + ": done" : what + ": " + (await r.text()).trim();
    } catch (e) { $("control-msg").textContent = what + ": " + e.message; }
    refresh();
  }
  for (const what of ["pause", "resume"]) $(what).addEventListener("click", () => control(what));
  refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, 2000);
})();
