// Small SVG charts drawn in the browser, served from the site itself so they work offline.
// Hand-written rather than plotly: the site needs three simple chart types, which take a few KB
// here, where plotly.min.js would add about 4.6 MB to download and parse on every page view.
window.ChallengeCharts = (function () {
  var NS = "http://www.w3.org/2000/svg";
  var ACCENT = "#1565c0", MUTED = "#90a4ae", MARK = "#d84315";

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, content, attrs) {
    var node = el("text", Object.assign({ x: x, y: y, "font-size": 11, fill: "currentColor" }, attrs || {}), parent);
    node.textContent = content;
    return node;
  }

  function svg(width, height, label) {
    return el("svg", { viewBox: "0 0 " + width + " " + height, width: "100%", role: "img",
      "aria-label": label, "class": "chart", style: "max-width:" + width + "px" });
  }

  // Room for the longest of `names` at font size 11.
  function room(names) {
    return 12 + 6.5 * Math.max.apply(null, names.map(function (n) { return n.length; }).concat([4]));
  }

  function linear(lo, hi, a, b) {
    var span = hi - lo || 1;
    return function (v) { return a + (v - lo) / span * (b - a); };
  }

  function quantile(sorted, q) {
    var i = (sorted.length - 1) * q, lo = Math.floor(i), hi = Math.ceil(i);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
  }

  function format(value, places) {
    return value === null || value === undefined || !isFinite(value) ? "–" : Number(value).toFixed(places);
  }

  // A box (quartiles, median) over every value as a dot; `mark` (a value) is drawn highlighted.
  function strip(values, options) {
    var o = Object.assign({ width: 520, label: "", format: function (v) { return format(v, 3); } }, options || {});
    var vs = values.filter(function (v) { return typeof v === "number" && isFinite(v); });
    var sorted = vs.slice().sort(function (a, b) { return a - b; });
    var chart = svg(o.width, 64, o.label);
    if (!sorted.length) { text(chart, 8, 30, "no values"); return chart; }
    var lo = sorted[0], hi = sorted[sorted.length - 1], x = linear(lo, hi, 60, o.width - 60);
    var q1 = quantile(sorted, 0.25), q2 = quantile(sorted, 0.5), q3 = quantile(sorted, 0.75);
    el("line", { x1: x(lo), x2: x(hi), y1: 24, y2: 24, stroke: MUTED }, chart);
    el("rect", { x: x(q1), y: 14, width: Math.max(x(q3) - x(q1), 1), height: 20, fill: "none", stroke: ACCENT }, chart);
    el("line", { x1: x(q2), x2: x(q2), y1: 14, y2: 34, stroke: ACCENT, "stroke-width": 2 }, chart);
    vs.forEach(function (v, i) {
      el("circle", { cx: x(v), cy: 24 + ((i * 7) % 13) - 6, r: 3, fill: ACCENT, "fill-opacity": 0.5 }, chart);
    });
    if (typeof o.mark === "number") {
      el("circle", { cx: x(o.mark), cy: 24, r: 6, fill: MARK, stroke: "white", "stroke-width": 1.5 }, chart);
    }
    text(chart, x(lo), 52, o.format(lo), { "text-anchor": "middle" });
    text(chart, x(hi), 52, o.format(hi), { "text-anchor": "middle" });
    text(chart, x(q2), 52, "median " + o.format(q2), { "text-anchor": "middle" });
    return chart;
  }

  // Bootstrap ranks: one row per team, a circle per rank sized by how often the team got it,
  // and its median rank (diamond) with the 95% interval (line).
  function blob(data) {
    var teams = data.algorithms, n = teams.length, row = 26, left = room(teams);
    var width = left + n * 40 + 20, chart = svg(width, (n + 1) * row + 20, "Bootstrap rank distribution per team");
    var x = function (rank) { return left + (rank - 0.5) * 40; };
    for (var r = 1; r <= n; r++) text(chart, x(r), 14, String(r), { "text-anchor": "middle" });
    teams.forEach(function (team, i) {
      var y = (i + 1) * row + 8, freq = data.rank_frequencies[team] || {};
      text(chart, left - 8, y + 4, team, { "text-anchor": "end" });
      el("line", { x1: x(data.ci_low[team]), x2: x(data.ci_high[team]), y1: y, y2: y, stroke: MUTED, "stroke-width": 2 }, chart);
      Object.keys(freq).forEach(function (rank) {
        el("circle", { cx: x(Number(rank)), cy: y, r: 2 + 10 * Math.sqrt(freq[rank]), fill: ACCENT, "fill-opacity": 0.6 }, chart)
          .appendChild(el("title", {})).textContent = team + ": rank " + rank + " in " + Math.round(freq[rank] * 100) + "% of samples";
      });
      var m = x(data.median_rank[team]);
      el("path", { d: "M" + m + " " + (y - 5) + " l5 5 l-5 5 l-5 -5 z", fill: MARK }, chart);
    });
    return chart;
  }

  // Pairwise significance: a filled cell where the row's team is significantly better than the column's.
  function matrix(teams, significant) {
    var n = teams.length, cellSize = 22, left = room(teams), top = left * 0.87;
    var chart = svg(left + n * cellSize + 10, top + n * cellSize + 10, "Pairwise significance map");
    teams.forEach(function (team, i) {
      text(chart, left - 6, top + i * cellSize + 15, team, { "text-anchor": "end" });
      var label = text(chart, 0, 0, team, { transform: "translate(" + (left + i * cellSize + 15) + "," + (top - 6) + ") rotate(-60)" });
      label.setAttribute("text-anchor", "start");
      teams.forEach(function (_, j) {
        el("rect", { x: left + j * cellSize, y: top + i * cellSize, width: cellSize - 2, height: cellSize - 2,
          fill: significant[i][j] ? ACCENT : "none", stroke: MUTED }, chart)
          .appendChild(el("title", {})).textContent = teams[i] + (significant[i][j] ? " is" : " is not") +
            " significantly better than " + teams[j];
      });
    });
    return chart;
  }

  // A data file as JSON: gzipped ones (large phases' result shards, snapshots) decompressed here, so
  // the site keeps them at a fifth of their size; a server that already decoded one hands over JSON.
  function json(url) {
    return fetch(url).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.arrayBuffer();
    }).then(function (buffer) {
      var head = new Uint8Array(buffer, 0, Math.min(2, buffer.byteLength));
      if (head[0] !== 0x1f || head[1] !== 0x8b) return JSON.parse(new TextDecoder().decode(buffer));
      var stream = new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"));
      return new Response(stream).text().then(JSON.parse);
    });
  }

  // Runs `init` on every page view, also under Material's instant navigation.
  function onPage(init) {
    if (window.document$) { window.document$.subscribe(init); } else { document.addEventListener("DOMContentLoaded", init); }
  }

  return { el: el, strip: strip, blob: blob, matrix: matrix, format: format, json: json, onPage: onPage };
})();
