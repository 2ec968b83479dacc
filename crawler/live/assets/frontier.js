// heed frontier panel, shared by the live page and the job view: draws
// /api/frontier's answer into #frontier-note, #frontier and #oldest. URLs
// from the Store are put on the page with textContent only.
"use strict";
window.heedFrontier = (function () {
  const $ = (id) => document.getElementById(id);
  const num = (n) => Number(n).toLocaleString("en");
  function cell(text) { const e = document.createElement("td"); if (text !== null) e.textContent = String(text); return e; }
  function dur(s) {
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
    return h ? `${h}h${String(m).padStart(2, "0")}m` : m ? `${m}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
  }
  return function render(f) {
    $("frontier-note").textContent = f.error ? f.error : `${num(f.queued)} queued${f.approximate ? ", estimated" : ""}`;
    const buckets = f.buckets || [], top = Math.max(1, ...buckets.map((b) => b.count));
    $("frontier").tBodies[0].replaceChildren(...buckets.map((b) => {
      const bar = document.createElement("i");
      bar.className = "bar";
      bar.style.width = (b.count / top * 100).toFixed(1) + "%";
      const bars = cell(null);
      bars.className = "bars";
      bars.appendChild(bar);
      const tr = document.createElement("tr");
      tr.append(cell(b.label), cell(num(b.count)), bars);
      tr.dataset.count = String(b.count);
      return tr;
    }));
    $("oldest").textContent = f.oldest_url || f.oldest_key ? `oldest overdue: ${f.oldest_url || f.oldest_key}, due ${dur(f.oldest_age_s)} ago` : "";
  };
})();
