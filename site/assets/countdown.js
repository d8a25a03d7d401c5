// "closes in 3 days": each <span class="countdown" data-until="ISO time"> counts down in the reader's clock.
(function () {
  function words(ms) {
    var s = Math.abs(ms) / 1000, units = [["day", 86400], ["hour", 3600], ["minute", 60]];
    for (var i = 0; i < units.length; i++) {
      if (s >= units[i][1]) { var n = Math.floor(s / units[i][1]); return n + " " + units[i][0] + (n === 1 ? "" : "s"); }
    }
    return "less than a minute";
  }
  function tick() {
    document.querySelectorAll(".countdown[data-until]").forEach(function (node) {
      var ms = new Date(node.dataset.until).getTime() - Date.now();
      node.textContent = "(" + (ms > 0 ? "in " + words(ms) : words(ms) + " ago") + ")";
    });
  }
  function init() { tick(); }
  if (window.document$) { window.document$.subscribe(init); } else { document.addEventListener("DOMContentLoaded", init); }
  setInterval(tick, 60000);
})();
