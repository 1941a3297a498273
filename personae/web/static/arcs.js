// The chapter slider of /arcs/{novel}/{character}: grey out what lies beyond the chosen
// chapter and ask the character as of it. The server renders the same classes for ?chapter=N.
(function () {
  "use strict";
  var slider = document.getElementById("chapter");
  if (!slider) { return; }
  function show() {
    var chapter = Number(slider.value);
    document.querySelectorAll("[data-chapter]").forEach(function (cell) {
      cell.classList.toggle("future", Number(cell.dataset.chapter) > chapter);
    });
    document.querySelectorAll(".phase[data-start]").forEach(function (band) {
      band.classList.toggle("future", Number(band.dataset.start) > chapter);
    });
    ["chapter-shown", "ask-chapter-shown"].forEach(function (id) {
      var node = document.getElementById(id);
      if (node) { node.textContent = String(chapter); }
    });
    var hidden = document.getElementById("ask-chapter");
    if (hidden) { hidden.value = String(chapter); }
  }
  slider.addEventListener("input", show);
  slider.addEventListener("change", function () {
    var url = new URL(window.location.href);
    url.searchParams.set("chapter", slider.value);
    window.history.replaceState(null, "", url.pathname + url.search);
  });
  show();
})();
