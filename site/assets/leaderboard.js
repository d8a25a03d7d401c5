// Leaderboard pages: sort the table by any column, draw a long table whole on request, show a dated
// snapshot from the History section in place, and draw the ranking uncertainty from its exported JSON.
(function () {
  var C = window.ChallengeCharts;

  // Numbers sort as numbers ("0.935 ± 0.010" by its value), "–" (missing) always last.
  function key(cell) {
    var t = cell.textContent.trim();
    if (t === "" || t === "–") return null;
    var n = /^-?\d+(\.\d+)?(e-?\d+)?/.exec(t);
    return n ? parseFloat(n[0]) : t.toLowerCase();
  }

  function compare(a, b, descending) {
    if (a === null || b === null) return a === b ? 0 : (a === null ? 1 : -1);
    var order = typeof a === typeof b ? (a < b ? -1 : a > b ? 1 : 0) : (typeof a === "number" ? -1 : 1);
    return descending ? -order : order;
  }

  function sortable(table) {
    var headers = table.querySelectorAll("thead th");
    headers.forEach(function (th, column) {
      th.classList.add("lb-sortable");
      th.setAttribute("tabindex", "0");
      function sort() {
        var descending = th.getAttribute("aria-sort") === "ascending";
        headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
          return { row: row, key: key(row.cells[column]), i: i };
        });
        rows.sort(function (a, b) { return compare(a.key, b.key, descending) || a.i - b.i; });
        rows.forEach(function (r) { body.appendChild(r.row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
    });
  }

  function snapshotTable(data, places) {
    var table = document.createElement("table"), head = table.createTHead().insertRow();
    var shown = data.fields.filter(function (f) { return !/ error$/.test(f); });
    shown.forEach(function (f) { head.appendChild(document.createElement("th")).textContent = f; });
    var body = table.createTBody();
    data.rows.forEach(function (record) {
      var tr = body.insertRow();
      shown.forEach(function (f) {
        var v = record[f], err = record[f + " error"];
        var t = typeof v === "number" && f !== "rank" ? C.format(v, places) : (v === null ? "–" : String(v));
        if (typeof err === "number") t += " ± " + C.format(err, places);
        tr.insertCell().textContent = f === "submitted" ? t.slice(0, 10) : t;
      });
    });
    return table;
  }

  // A link's day (its "#...") from the phase's one history file, fetched once (by its absolute address:
  // under instant navigation, the same relative link on another phase's page is another file).
  var histories = {};
  function showSnapshot(link, target) {
    var url = link.href.split("#")[0], day = link.hash.slice(1);
    histories[url] = histories[url] || C.json(url).catch(function (e) { delete histories[url]; throw e; });
    histories[url].then(function (history) {
      var data = history.snapshots.filter(function (s) { return s.as_of === day; })[0];
      if (!data) throw new Error("no snapshot of " + day);
      target.textContent = "";
      var p = target.appendChild(document.createElement("p"));
      var part = data.total > data.rows.length ? "its first " + data.rows.length + " of " + data.total + " rows, " : "";
      p.textContent = "As of " + data.as_of + " (end of day, UTC), " + part + "commit " + data.commit.slice(0, 12) + ": ";
      var raw = p.appendChild(document.createElement("a"));
      raw.href = url;
      raw.textContent = "JSON (every day)";
      var wrap = target.appendChild(document.createElement("div"));
      wrap.className = "lb-table scroll";
      wrap.appendChild(snapshotTable(data, Number(target.dataset.places)));
      sortable(wrap.querySelector("table"));
    }).catch(function () {
      target.textContent = "The snapshot of " + day + " could not be loaded: ";
      var raw = target.appendChild(document.createElement("a"));
      raw.href = url;
      raw.textContent = "the history file";
    });
  }

  // A long table's page draws its first rows; the whole table comes from leaderboard.json on request.
  function showAll(button) {
    button.disabled = true;
    C.json(button.dataset.src).then(function (rows) {
      var fields = rows.length ? Object.keys(rows[0]) : [];
      var wrap = button.closest(".lb-more").previousElementSibling;
      wrap.textContent = "";
      wrap.appendChild(snapshotTable({ fields: fields, rows: rows }, Number(button.dataset.places)));
      sortable(wrap.querySelector("table"));
      button.closest(".lb-more").remove();
    }).catch(function () { button.disabled = false; });
  }

  function uncertainty(box) {
    C.json(box.dataset.src).then(function (data) {
      box.querySelector(".lb-blob").appendChild(C.blob(data));
      box.querySelector(".lb-significance").appendChild(C.matrix(data.algorithms, data.significance));
    });
  }

  C.onPage(function () {
    document.querySelectorAll(".lb-table table").forEach(sortable);
    var target = document.getElementById("lb-snapshot");
    document.querySelectorAll("a.lb-snapshot").forEach(function (link) {
      link.addEventListener("click", function (e) { e.preventDefault(); showSnapshot(link, target); });
    });
    document.querySelectorAll("#lb-uncertainty[data-src]").forEach(uncertainty);
    document.querySelectorAll("button.lb-all").forEach(function (button) {
      button.addEventListener("click", function () { showAll(button); });
    });
  });
})();
