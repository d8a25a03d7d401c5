// The catalog on the home page, searched the way OpenChallenges' is: a facet per filter with counts
// that follow the other filters (values within a facet are alternatives, facets narrow each other),
// full-text search over the cards and the challenges' own pages (their words, from the file the
// catalog's data-search names, fetched on the first search), sorting, and the whole state in the
// query string, so a link, a reload and back/forward give the same view (the words as `search=`: the
// theme opens its own search over the page for `q=`). The cards and facets are rendered by the build;
// this only hides, counts and reorders them. On a phone the filters fold into one toggle.
(function () {
  var SORTS = ["deadline", "start", "name"], QUERY = "search";

  function fold(text) {  // as runner/site/catalog.py `words` folds: accents dropped, case folded
    return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }
  function day(iso) { return Number(iso.slice(0, 10).replace(/-/g, "")); }  // 2026-06-01 -> 20260601
  function terms(text) { return fold(text).match(/[\p{L}\p{N}]+/gu) || []; }

  function Catalog(app) {
    this.app = app;
    this.list = app.querySelector(".catalog");
    this.cards = Array.prototype.map.call(app.querySelectorAll(".catalog-card"), function (node) {
      return { node: node, slug: node.dataset.slug, facets: JSON.parse(node.dataset.facets), text: node.dataset.text,
               start: node.dataset.start, end: node.dataset.end, name: node.dataset.name };
    });
    this.keys = Array.prototype.map.call(app.querySelectorAll(".catalog-facet"), function (f) { return f.dataset.facet; });
    this.pages = null;  // slug -> words of its pages, once fetched
    this.typing = false;
  }

  Catalog.prototype.read = function () {  // the state the query string holds
    var params = new URLSearchParams(window.location.search), state = { q: params.get(QUERY) || "", f: {} };
    state.sort = SORTS.indexOf(params.get("sort")) >= 0 ? params.get("sort") : "deadline";
    this.keys.forEach(function (key) { state.f[key] = params.get(key) ? params.get(key).split(",") : []; });
    return state;
  };

  Catalog.prototype.controls = function () {  // the state the controls show
    var app = this.app, state = { q: app.querySelector("#catalog-search").value.trim(), f: {},
                                  sort: app.querySelector("#catalog-sort").value };
    this.keys.forEach(function (key) {
      state.f[key] = Array.prototype.map.call(app.querySelectorAll('input[name="' + key + '"]:checked'),
                                              function (box) { return box.value; });
    });
    return state;
  };

  Catalog.prototype.url = function (state) {
    var parts = [];
    if (state.q) parts.push(QUERY + "=" + encodeURIComponent(state.q));
    this.keys.forEach(function (key) {
      if (state.f[key].length) parts.push(key + "=" + state.f[key].map(encodeURIComponent).join(","));
    });
    if (state.sort !== "deadline") parts.push("sort=" + state.sort);
    return window.location.pathname + (parts.length ? "?" + parts.join("&") : "") + window.location.hash;
  };

  Catalog.prototype.save = function (push) {  // a new history entry per decision, one per typing spell
    var url = this.url(this.controls());
    if (url === window.location.pathname + window.location.search + window.location.hash) return;
    window.history[push ? "pushState" : "replaceState"](null, "", url);
  };

  Catalog.prototype.show = function (state) {  // controls from the state, then the cards
    var app = this.app;
    app.querySelector("#catalog-search").value = state.q;
    app.querySelector("#catalog-sort").value = state.sort;
    this.keys.forEach(function (key) {
      app.querySelectorAll('input[name="' + key + '"]').forEach(function (box) {
        box.checked = state.f[key].indexOf(box.value) >= 0;
      });
    });
    if (state.q && !this.pages) this.fetchPages();
    this.apply(state);
  };

  Catalog.prototype.fetchPages = function () {
    var self = this;
    if (this.loading) return;
    this.loading = true;
    fetch(this.app.dataset.search).then(function (r) { return r.json(); }).then(function (words) {
      self.pages = words;
      self.apply(self.controls());
    }).catch(function () { self.pages = {}; });  // the cards' own words still search
  };

  Catalog.prototype.matchesText = function (card, wanted) {
    if (!wanted.length) return true;
    var text = card.text + " " + ((this.pages && this.pages[card.slug]) || "");
    return wanted.every(function (word) { return text.indexOf(word) >= 0; });
  };

  Catalog.prototype.apply = function (state) {
    var self = this, wanted = terms(state.q), keys = this.keys, counts = {}, shown = 0;
    keys.forEach(function (key) { counts[key] = {}; });
    this.cards.forEach(function (card) {
      var misses = keys.filter(function (key) {  // the facets this card fails
        var chosen = state.f[key];
        return chosen.length && !card.facets[key].some(function (v) { return chosen.indexOf(v) >= 0; });
      });
      var found = self.matchesText(card, wanted);
      // A facet's counts: the cards that every other filter keeps.
      keys.forEach(function (key) {
        if (found && (misses.length === 0 || (misses.length === 1 && misses[0] === key))) {
          card.facets[key].forEach(function (v) { counts[key][v] = (counts[key][v] || 0) + 1; });
        }
      });
      card.node.hidden = !(found && misses.length === 0);
      if (!card.node.hidden) shown += 1;
    });
    this.app.querySelectorAll(".catalog-n").forEach(function (node) {
      var key = node.closest(".catalog-facet").dataset.facet, n = counts[key][node.dataset.count] || 0;
      node.textContent = n;
      node.closest(".catalog-value").classList.toggle("catalog-none", n === 0);
    });
    this.sort(state.sort);
    var total = this.cards.length;
    this.app.querySelector("#catalog-count").textContent = (shown === total ? "" : shown + " of ") + total +
      " challenge" + (total === 1 ? "" : "s");
    this.app.querySelector(".catalog-empty").hidden = shown > 0;
    var chosen = keys.reduce(function (n, key) { return n + state.f[key].length; }, 0);
    this.app.querySelector("#catalog-filters-toggle").textContent = "Filters" + (chosen ? " (" + chosen + ")" : "");
  };

  Catalog.prototype.sort = function (how) {
    // An order depends on the sort alone (not on the filters): each is computed once per page view,
    // and the cards are moved only when the order shown changes.
    if (this.shown === how) return;
    this.orders = this.orders || {};
    if (!this.orders[how]) this.orders[how] = this.ordered(how);
    var list = this.list;
    this.orders[how].forEach(function (card) { list.appendChild(card.node); });
    this.shown = how;
  };

  Catalog.prototype.ordered = function (how) {
    var today = day(new Date().toISOString()), names = new Intl.Collator(undefined, { sensitivity: "base" });
    var key = {  // [group, number]: smaller first
      // open deadlines soonest first, then those with no end date, then the ended, latest first
      deadline: function (card) { return !card.end ? [1, 0] : day(card.end) >= today ? [0, day(card.end)] : [2, -day(card.end)]; },
      start: function (card) { return card.start ? [0, -day(card.start)] : [1, 0]; },  // newest first
      name: function () { return [0, 0]; },
    }[how];
    var keyed = this.cards.map(function (card) { return { card: card, key: key(card) }; });
    keyed.sort(function (a, b) {
      return a.key[0] - b.key[0] || a.key[1] - b.key[1] || names.compare(a.card.name, b.card.name);
    });
    return keyed.map(function (k) { return k.card; });
  };

  Catalog.prototype.listen = function () {
    var self = this, app = this.app, timer = null;
    app.addEventListener("change", function (event) {
      if (event.target.matches(".catalog-facet input, #catalog-sort")) {
        self.typing = false;
        self.apply(self.controls());
        self.save(true);
      }
    });
    app.querySelector("#catalog-search").addEventListener("input", function () {
      var state = self.controls();
      if (state.q && !self.pages) self.fetchPages();
      self.apply(state);
      clearTimeout(timer);
      timer = setTimeout(function () { self.save(!self.typing); self.typing = true; }, 300);
    });
    app.querySelector("#catalog-clear").addEventListener("click", function () {
      self.typing = false;
      self.show({ q: "", f: self.keys.reduce(function (f, k) { f[k] = []; return f; }, {}), sort: self.controls().sort });
      self.save(true);
    });
    window.addEventListener("popstate", function () { self.typing = false; self.show(self.read()); });
    var toggle = app.querySelector("#catalog-filters-toggle");
    toggle.addEventListener("click", function () {
      var open = app.classList.toggle("catalog-filters-open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  };

  function init() {
    var app = document.querySelector(".catalog-app");
    if (!app || app.dataset.ready) return;
    app.dataset.ready = "1";
    var catalog = new Catalog(app);
    catalog.show(catalog.read());
    catalog.listen();
  }
  if (window.document$) { window.document$.subscribe(init); } else { document.addEventListener("DOMContentLoaded", init); }
})();
