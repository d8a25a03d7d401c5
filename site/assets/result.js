// The result viewer: one page per phase renders any of its results (?id=<participant>/<submission>)
// from the result's JSON, so the site builder's work does not grow with the number of results.
(function () {
  var C = window.ChallengeCharts;
  var ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*\/[A-Za-z0-9][A-Za-z0-9_.-]*$/;

  function add(parent, tag, content, className) {
    var node = parent.appendChild(document.createElement(tag));
    if (content !== undefined) node.textContent = content;
    if (className) node.className = className;
    return node;
  }

  // The unit suffix goes: values carry their unit.
  function label(key) {
    return key.replace(/_(bytes|byte_s|s)$/, "").replace(/_/g, " ").replace(/^./, function (c) { return c.toUpperCase(); });
  }

  // Units follow the runner's field names: *_bytes, *_byte_s, *_s.
  function show(key, value, places) {
    if (value === null || value === undefined) return "–";
    if (typeof value === "boolean") return value ? "yes" : "no";
    if (Array.isArray(value)) {
      var numbers = value.every(function (v) { return typeof v === "number"; });
      return numbers && value.length <= 8 ? value.map(function (v) { return C.format(v, places); }).join(", ")
        : value.length + " values";
    }
    if (typeof value !== "number") return typeof value === "object" ? JSON.stringify(value) : String(value);
    if (/_bytes$/.test(key)) return (value / 1048576).toFixed(1) + " MiB";
    if (/_byte_s$/.test(key)) return (value / 1073741824).toFixed(2) + " GiB·s";
    if (/_s$/.test(key)) return value.toFixed(2) + " s";
    return Number.isInteger(value) ? String(value) : C.format(value, places);
  }

  function isRecord(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }

  // Any metrics.json shape as table rows {name: {column: plain value}}: a plain value is its own
  // row ({"auroc": 0.91}), and records nested deeper are flattened into dotted columns
  // ({"dice": {"liver": {"mean": ...}}} gives a column "liver.mean").
  function rowsOf(record) {
    var rows = {};
    Object.keys(record).forEach(function (name) {
      var value = record[name];
      rows[name] = isRecord(value) ? flatten(value, "", {}) : { value: value };
    });
    return rows;
  }

  function flatten(record, prefix, out) {
    Object.keys(record).forEach(function (key) {
      var value = record[key];
      if (isRecord(value) && Object.keys(value).length) flatten(value, prefix + key + ".", out);
      else out[prefix + key] = value;
    });
    return out;
  }

  // rows: {name: {column: value}} -> a table with a first column named `first`.
  function grid(parent, first, rows, places) {
    var names = Object.keys(rows), columns = [];
    names.forEach(function (n) {
      Object.keys(rows[n]).forEach(function (c) { if (columns.indexOf(c) < 0) columns.push(c); });
    });
    var wrap = add(parent, "div", undefined, "scroll");
    var table = add(wrap, "table"), head = table.createTHead().insertRow(), body = table.createTBody();
    [first].concat(columns).forEach(function (c) { add(head, "th", c === first ? c : label(c)); });
    names.forEach(function (n) {
      var tr = body.insertRow();
      tr.insertCell().textContent = n;
      columns.forEach(function (c) { tr.insertCell().textContent = show(c, rows[n][c], places); });
    });
    return columns;
  }

  function charts(parent, rows, columns, places) {
    columns.forEach(function (c) {
      var values = Object.keys(rows).map(function (n) { return rows[n][c]; });
      if (!values.some(function (v) { return typeof v === "number"; })) return;
      var figure = add(parent, "figure", undefined, "result-chart");
      add(figure, "figcaption", label(c) + " per case");
      figure.appendChild(C.strip(values, { label: label(c) + " per case",
        format: function (v) { return show(c, v, places); } }));
    });
  }

  // The containers' measurements side by side; nested ones (per case) as their own tables.
  function runs(view, result, places) {
    add(view, "p", "Submitted " + result.created_at + (result.started_at ? ", started " + result.started_at +
      ", finished " + result.finished_at : "") + ".", "result-dates");
    var present = ["training", "algorithm", "evaluation"].filter(function (k) { return isRecord(result[k]); });
    if (!present.length) return;
    add(view, "h3", "Containers");
    var fields = [];
    present.forEach(function (run) {
      Object.keys(result[run]).forEach(function (k) {
        var v = result[run][k];
        if (v !== null && !isRecord(v) && fields.indexOf(k) < 0) fields.push(k);
      });
    });
    var table = add(add(view, "div", undefined, "scroll"), "table"), head = table.createTHead().insertRow();
    [""].concat(present.map(label)).forEach(function (c) { add(head, "th", c); });
    var body = table.createTBody();
    fields.forEach(function (k) {
      var tr = body.insertRow();
      tr.insertCell().textContent = label(k);
      present.forEach(function (run) { tr.insertCell().textContent = show(k, result[run][k], places); });
    });
    present.forEach(function (run) {
      Object.keys(result[run]).forEach(function (k) {
        var nested = result[run][k];
        if (!isRecord(nested) || !Object.keys(nested).length) return;
        add(view, "h3", label(run) + ": " + k.replace(/_/g, " "));
        var columns = grid(view, k === "cases" ? "Case" : "", nested, places);
        if (k === "cases") charts(view, nested, columns, places);
      });
    });
  }

  function standing(view, board, result, o) {
    var scores = board.map(function (r) { return r[o.score]; });
    var mine = board.filter(function (r) {
      return r.participant === result.participant && r.submission === result.submission;
    })[0];
    add(view, "h3", "Standing in this phase");
    var ranked = board.filter(function (r) { return r.rank !== null; }).length;
    add(view, "p", mine
      ? (mine.rank ? "Rank " + mine.rank + " of " + ranked + " ranked results" : "Not ranked") + " on " + o.score +
        " (" + (o.order === "desc" ? "higher" : "lower") + " is better): " + C.format(mine[o.score], o.places) + "."
      : "This result is not listed on the leaderboard (the phase lists one result per participant).");
    var figure = add(view, "figure", undefined, "result-chart");
    add(figure, "figcaption", o.score + " of every result on the leaderboard" + (mine ? "; this one in red" : ""));
    figure.appendChild(C.strip(scores, { mark: mine ? mine[o.score] : undefined, label: o.score,
      format: function (v) { return C.format(v, o.places); } }));
  }

  // grand-challenge's two sections first, then whatever else the evaluation wrote, in any shape.
  function metrics(view, m, places) {
    if (isRecord(m.aggregates) && Object.keys(m.aggregates).length) {
      add(view, "h3", "Aggregates");
      grid(view, "Metric", rowsOf(m.aggregates), places);
    }
    if (isRecord(m["case"]) && Object.keys(m["case"]).length) {
      add(view, "h3", "Per case");
      var rows = rowsOf(m["case"]);
      charts(view, rows, grid(view, "Case", rows, places), places);
    }
    var others = {};
    Object.keys(m).forEach(function (k) { if (k !== "aggregates" && k !== "case") others[k] = m[k]; });
    if (Object.keys(others).length) {
      add(view, "h3", "Other values");
      grid(view, "Name", rowsOf(others), places);
    }
  }

  // The submission's title, description, comment and links (paper, code, its supplementary URL, its PDF beside
  // the result's JSON); the build leaves out the comment and links the phase does not show.
  function about(view, result, o) {
    var d = isRecord(result.details) ? result.details : {};
    if (d.title) add(view, "p", d.title, "result-title");
    if (d.description) add(view, "p", d.description, "result-description");
    if (typeof d.comment === "string" && d.comment) add(view, "p", "Comment: " + d.comment, "result-comment");
    var links = [["Paper", d.publication_url], ["Code", d.code_url]].filter(function (l) {
      return typeof l[1] === "string" && /^https?:\/\//.test(l[1]);
    });
    if (typeof d.supplementary_url === "string" && /^https:\/\//.test(d.supplementary_url)) {
      links.push([o.supplementaryUrl, d.supplementary_url]);
    }
    if (result.supplementary_file) links.push([o.supplementary, o.results + result.participant + "/" + result.supplementary_file]);
    if (!links.length) return;
    var p = add(view, "p", undefined, "result-links");
    links.forEach(function (l, i) {
      if (i) p.appendChild(document.createTextNode(" · "));
      var a = add(p, "a", l[0]);
      a.href = l[1];
    });
  }

  // The command that runs this result's algorithm on the reader's own cases (`challenge run`).
  function rerun(view, result) {
    if (typeof result.run !== "string") return;
    add(view, "h3", "Run this algorithm");
    add(view, "p", "On your own cases, in a clone of this repository, with the phase's sandbox and input layout " +
      "(Docker needed):");
    add(add(view, "pre", undefined, "result-run"), "code", result.run);
  }

  // Where the result comes from, as the runner signed it, and whether the record still verifies.
  var ORIGIN = [["data_manifest", "Data manifest"], ["evaluation_context", "Evaluation build context"],
    ["evaluation_image", "Evaluation image"], ["algorithm", "Algorithm"], ["submission_blob", "Submission file (git blob)"],
    ["phase_blob", "Phase file (git blob)"], ["runner_commit", "Runner commit"], ["signed_at", "Signed at"]];

  function provenance(view, result) {
    var v = isRecord(result.verification) ? result.verification : { verified: false, reason: "not checked" };
    add(view, "h3", "Provenance");
    add(view, "p", v.verified ? "Verified: signed by the runner " + v.signer + ", and its provenance matches the repository."
      : "Not verified: " + (v.reason || "no reason given") + ".", "result-verification " + (v.verified ? "verified" : "unverified"));
    var p = isRecord(result.provenance) ? result.provenance : null;
    if (!p) return;
    var table = add(view, "table", undefined, "result-provenance");
    var body = table.createTBody();
    ORIGIN.forEach(function (f) {
      if (p[f[0]] === null || p[f[0]] === undefined) return;
      var tr = body.insertRow();
      tr.insertCell().textContent = f[1];
      add(tr.insertCell(), "code", String(p[f[0]]));
    });
    if (isRecord(p.data)) Object.keys(p.data).forEach(function (k) {
      var tr = body.insertRow();
      tr.insertCell().textContent = "Hidden data: " + k;
      add(tr.insertCell(), "code", String(p.data[k]));
    });
  }

  function render(view, result, board, o) {
    view.textContent = "";
    add(view, "h2", result.participant + " / " + result.submission);
    about(view, result, o);
    add(view, "p", result.status === "succeeded" ? (o.withheld || "Succeeded.") : "Failed: " + (result.error || "no reason given"),
      "result-status status-" + result.status);
    // A self-reported phase (LUNA16's Type 0): the numbers below are the participant's, not measured here.
    if (o.selfReported && result.status === "succeeded") add(view, "p", "Self-reported metrics: the participant " +
      "computed them on the public data; the evaluation checked their shape, not their values.", "result-self-reported");
    if (result.excluded) add(view, "p", "Excluded from the ranking by the organizers: " + result.excluded, "result-excluded");
    else if (board && result.status === "succeeded" && !o.withheld) standing(view, board, result, o);
    if (result.metrics) metrics(view, result.metrics, o.places);
    runs(view, result, o.places);
    rerun(view, result);
    provenance(view, result);
  }

  // FNV-1a (32 bits) of the key's UTF-8 bytes, mixed by MurmurHash3's finaliser, modulo the shard
  // count: datafiles.shard_of.
  function shardOf(key, count) {
    var h = 0x811c9dc5;
    new TextEncoder().encode(key).forEach(function (byte) { h = Math.imul(h ^ byte, 0x01000193) >>> 0; });
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
    return ((h ^ (h >>> 16)) >>> 0) % count;
  }

  function load(view) {
    var o = { score: view.dataset.score, order: view.dataset.order, places: Number(view.dataset.places),
      withheld: view.dataset.withheld, results: view.dataset.results,
      supplementary: view.dataset.supplementary || "Method description",
      supplementaryUrl: view.dataset.supplementaryUrl || "Publication",
      selfReported: view.dataset.selfReported === "true" };
    var id = new URLSearchParams(window.location.search).get("id") || "";
    if (!ID.test(id)) return;
    // A large phase keeps its results in gzipped shards ({participant/submission: result}), the shard
    // named by shardOf (runner/site/datafiles.py); a small one has <participant>/<id>.json.
    var shards = Number(view.dataset.shards || 0), one = shards
      ? C.json(o.results + "shards/" + shardOf(id, shards) + ".json.gz").then(function (all) {
        if (!Object.prototype.hasOwnProperty.call(all, id)) throw new Error("missing");
        // A large record is published alone; its shard names the file (datafiles.ALONE).
        return all[id].$file === id + ".json" ? C.json(o.results + id + ".json") : all[id];
      })
      : C.json(o.results + id + ".json");
    Promise.all([one, C.json(view.dataset.board).catch(function () { return null; })])
      .then(function (both) { render(view, both[0], both[1], o); })
      .catch(function () { view.textContent = "No result " + id + " in this phase."; });
  }

  C.onPage(function () { document.querySelectorAll("#result-view").forEach(load); });
})();
