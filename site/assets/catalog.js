// Filters the challenge catalog on the home page by text, status and submission type.
(function () {
  function apply() {
    var text = (document.getElementById("catalog-search").value || "").toLowerCase();
    var status = document.getElementById("catalog-status").value;
    var kind = document.getElementById("catalog-submission").value;
    var shown = 0;
    document.querySelectorAll(".catalog-card").forEach(function (card) {
      var ok = (!text || card.dataset.text.indexOf(text) >= 0) &&
        (!status || card.dataset.status === status) &&
        (!kind || card.dataset.submission.split(" ").indexOf(kind) >= 0);
      card.hidden = !ok;
      if (ok) shown += 1;
    });
    document.getElementById("catalog-count").textContent =
      shown + " challenge" + (shown === 1 ? "" : "s");
  }
  function init() {
    if (!document.getElementById("catalog-search")) return;
    ["catalog-search", "catalog-status", "catalog-submission"].forEach(function (id) {
      document.getElementById(id).addEventListener("input", apply);
    });
  }
  if (window.document$) { window.document$.subscribe(init); } else { document.addEventListener("DOMContentLoaded", init); }
})();
