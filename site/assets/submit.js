// An open phase's "Submit from your browser" button: GitHub's new-file editor at the reader's own
// submission folder, with the file prefilled (runner/site/facts.py writes the address, LOGIN standing
// for the folder). Only a GitHub login or a team's folder name is put into the address: the field's
// pattern is the tree's own rule for them (runner/tree/schema_types.py NAME).
(function () {
  function wire(form) {
    var input = form.querySelector(".submit-login"), button = form.querySelector(".submit-button");
    var name = new RegExp("^(?:" + input.getAttribute("pattern") + ")$");
    function update() {
      var login = input.value.trim(), ok = name.test(login);
      if (ok) button.href = form.dataset.submit.replace("/LOGIN?", "/" + encodeURIComponent(login) + "?");
      else button.removeAttribute("href");
      button.setAttribute("aria-disabled", ok ? "false" : "true");
    }
    input.addEventListener("input", update);
    form.addEventListener("submit", function (event) { event.preventDefault(); if (button.href) button.click(); });
    update();
  }

  function init() {
    document.querySelectorAll(".submit-form:not([data-ready])").forEach(function (form) {
      form.dataset.ready = "1";
      wire(form);
    });
  }
  if (window.document$) { window.document$.subscribe(init); } else { document.addEventListener("DOMContentLoaded", init); }
})();
