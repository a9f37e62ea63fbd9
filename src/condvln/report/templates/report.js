"use strict";
// CondVLN report: the filterable episode table and the per-episode map (no libraries).
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const body = document.querySelector("#episodes tbody");
  const panel = document.getElementById("map-panel");
  const select = {
    run: document.getElementById("f-run"),
    cat: document.getElementById("f-cat"),
    fail: document.getElementById("f-fail"),
    sr: document.getElementById("f-sr"),
    id: document.getElementById("f-id"),
  };

  function esc(text) {
    return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  }
  function pct(v) { return v === null || v === undefined ? "–" : (100 * v).toFixed(1); }
  function yesNo(v) { return v === null || v === undefined ? "–" : (v ? "yes" : "no"); }
  function outcome(row) { return row.fail === null ? "success" : row.fail; }

  function fillOptions(el, values) {
    for (const v of values) {
      const o = document.createElement("option");
      o.value = v; o.textContent = v; el.appendChild(o);
    }
  }
  const distinct = (key) => Array.from(new Set(DATA.rows.map(key))).sort();
  fillOptions(select.run, DATA.runs);
  fillOptions(select.cat, distinct((r) => String(r.cat)));
  fillOptions(select.fail, distinct(outcome));

  function rowHtml(i) {
    const row = DATA.rows[i];
    return `<tr data-i="${i}"><td class="text">${esc(DATA.runs[row.r])}</td><td>${esc(row.id)}</td>` +
      `<td class="text">${esc(row.scene)}</td><td class="text">${esc(row.cat)}</td><td>${esc(row.d)}</td>` +
      `<td>${esc(row.l)}</td><td class="text">${esc(outcome(row))}</td>` +
      `<td class="${row.sr ? "ok" : "bad"}">${yesNo(row.sr)}</td><td>${pct(row.spl)}</td>` +
      `<td>${pct(row.bsa)}</td><td>${yesNo(row.csr)}</td><td>${yesNo(row.ba)}</td><td>${esc(row.steps)}</td>` +
      `<td class="text">${row.e === null ? "no map" : "open"}</td></tr>`;
  }

  // Only the first `limit` matching rows are in the DOM (a 5,000-row table takes seconds to lay out).
  let matching = [], limit = DATA.page;
  const more = document.getElementById("show-more");
  function render() {
    body.innerHTML = matching.slice(0, limit).map(rowHtml).join("");
    const shown = Math.min(limit, matching.length);
    document.getElementById("row-count").textContent = `${matching.length} of ${DATA.rows.length} rows` +
      (shown < matching.length ? ` (first ${shown} shown)` : "");
    more.hidden = shown >= matching.length;
  }
  function applyFilters() {
    const run = select.run.value, cat = select.cat.value, fail = select.fail.value;
    const sr = select.sr.value, id = select.id.value.trim();
    matching = [];
    DATA.rows.forEach((row, i) => {
      if ((!run || DATA.runs[row.r] === run) && (!cat || String(row.cat) === cat) &&
        (!fail || outcome(row) === fail) && (!sr || String(row.sr) === sr) &&
        (!id || String(row.id) === id)) matching.push(i);
    });
    limit = DATA.page;
    render();
  }
  more.addEventListener("click", () => { limit += DATA.page; render(); });
  for (const el of Object.values(select)) {
    el.addEventListener("input", applyFilters);
    el.addEventListener("change", applyFilters);
  }
  document.getElementById("filters").addEventListener("submit", (ev) => ev.preventDefault());
  applyFilters();

  function el(tag, attrs, parent, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    parent.appendChild(node);
    return node;
  }
  const LINE = { "vector-effect": "non-scaling-stroke", fill: "none" };

  function drawMap(row) {
    const ep = DATA.episodes[row.e], scene = DATA.scenes[ep.scene], st = DATA.style;
    const [x0, z0, w, h] = scene.extent;
    const fs = Math.max(w, h) / 55;
    const svg = document.getElementById("map-svg");
    svg.replaceChildren();
    svg.setAttribute("viewBox", `${x0} ${z0} ${w} ${h}`);
    svg.setAttribute("preserveAspectRatio", "none");
    const img = document.getElementById("map-image");
    if (img.getAttribute("src") !== scene.image) img.setAttribute("src", scene.image);
    if (ep.reference.length > 1) {
      el("polyline", { ...LINE, points: ep.reference.map((p) => p.join(",")).join(" "),
        stroke: st.reference, "stroke-width": 2.5, "stroke-dasharray": "7 5" }, svg);
    }
    ep.branches.forEach((b) => {
      const colour = b.gold ? st.gold : st.branch;
      el("circle", { ...LINE, cx: b.position[0], cy: b.position[1], r: ep.radius, stroke: colour,
        "stroke-width": 1.8, "stroke-dasharray": b.gold ? "" : "2 4" }, svg);
    });
    const t = row.t, n = t.length / 2;
    const segs = el("g", { "stroke-linecap": "round" }, svg);
    for (let i = 0; i + 1 < n; i += 1) {
      const c = DATA.cmap[Math.round((n > 2 ? i / (n - 2) : 0) * (DATA.cmap.length - 1))];
      el("line", { ...LINE, x1: t[2 * i], y1: t[2 * i + 1], x2: t[2 * i + 2], y2: t[2 * i + 3],
        stroke: c, "stroke-width": 4 }, segs);
    }
    if (n > 0) {
      const sx = t[2 * n - 2], sz = t[2 * n - 1], r = fs * 0.35;
      if (row.stop) el("circle", { cx: sx, cy: sz, r: r, fill: st.stop }, svg);
      else el("path", { ...LINE, d: `M${sx - r},${sz - r}L${sx + r},${sz + r}M${sx - r},${sz + r}L${sx + r},${sz - r}`,
        stroke: st.stop, "stroke-width": 3 }, svg);
    }
    ep.subgoals.forEach(([oid, p], i) => {
      const reached = i < row.k, colour = reached ? st.reached : st.missed, s = fs * 0.7;
      el("rect", { x: p[0] - s / 2, y: p[1] - s / 2, width: s, height: s, fill: reached ? colour : "#fff",
        stroke: colour, "stroke-width": 2.5, "vector-effect": "non-scaling-stroke" }, svg);
      el("text", { x: p[0] + s, y: p[1] + 1.6 * s, "font-size": fs, fill: colour, "font-weight": 700 },
        svg, `S${i + 1} ${reached ? "reached" : "missed"}`);
    });
    ep.branches.forEach((b) => {
      const [bx, bz] = b.position, s = fs * (b.gold ? 0.75 : 0.5);
      if (b.gold) {
        const pts = [];
        for (let k = 0; k < 10; k += 1) {
          const a = Math.PI / 5 * k - Math.PI / 2, rr = k % 2 ? s * 0.45 : s;
          pts.push(`${bx + rr * Math.cos(a)},${bz + rr * Math.sin(a)}`);
        }
        el("polygon", { points: pts.join(" "), fill: st.gold, stroke: "#222", "stroke-width": 1,
          "vector-effect": "non-scaling-stroke" }, svg);
      } else {
        el("path", { ...LINE, d: `M${bx - s},${bz - s}L${bx + s},${bz + s}M${bx - s},${bz + s}L${bx + s},${bz - s}`,
          stroke: st.branch, "stroke-width": 4 }, svg);
      }
      const label = el("text", { x: bx + fs * 0.8, y: bz - fs * 0.6, "font-size": fs, "font-weight": 700,
        fill: "#222", "paint-order": "stroke", stroke: "#fff", "stroke-width": fs * 0.25 }, svg, b.label);
      label.dataset.gold = b.gold ? "1" : "0";
    });
    const [px, pz] = ep.start, dx = -Math.sin(ep.start_yaw), dz = -Math.cos(ep.start_yaw);
    el("line", { ...LINE, x1: px, y1: pz, x2: px + 0.7 * dx, y2: pz + 0.7 * dz, stroke: st.start, "stroke-width": 3 }, svg);
    el("circle", { cx: px, cy: pz, r: fs * 0.45, fill: st.start, stroke: "#222", "stroke-width": 1,
      "vector-effect": "non-scaling-stroke" }, svg);
    const [head, ...rest] = ep.caption;
    document.getElementById("map-title").textContent = `${DATA.runs[row.r]}: episode ${ep.episode_id}`;
    document.getElementById("map-caption").textContent = [`${DATA.runs[row.r]} · ${head}`, ...rest, row.out, ...(row.why || [])].join("\n");
  }

  function openMap(i) {
    const row = DATA.rows[i];
    if (!row || row.e === null) return;
    drawMap(row);
    panel.hidden = false;
    panel.dataset.row = String(i);
  }
  function closeMap() { panel.hidden = true; }
  body.addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr");
    if (tr) openMap(Number(tr.dataset.i));
  });
  document.getElementById("map-close").addEventListener("click", closeMap);
  panel.addEventListener("click", (ev) => { if (ev.target === panel) closeMap(); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") closeMap(); });
  window.condvlnReport = { openMap, closeMap, applyFilters, rows: DATA.rows.length };
})();
