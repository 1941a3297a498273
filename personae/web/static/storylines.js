// The position slider of /storylines/{n}: keep the number box, the question form and the
// greyed actions in step with it (the server renders the same for ?position=P).
(function () {
  "use strict";
  var slider = document.getElementById("position");
  var number = document.getElementById("position-number");
  if (!slider || !number) { return; }
  function show(value) {
    var position = Math.max(Number(slider.min), Math.min(Number(slider.max), Math.round(Number(value))));
    if (isNaN(position)) { return; }
    slider.value = String(position);
    number.value = String(position);
    document.querySelectorAll(".position-field").forEach(function (field) { field.value = String(position); });
    document.querySelectorAll(".position-shown").forEach(function (node) { node.textContent = String(position); });
    document.querySelectorAll("tr[data-position]").forEach(function (row) {
      row.classList.toggle("future", Number(row.dataset.position) >= position);
    });
  }
  slider.addEventListener("input", function () { show(slider.value); });
  number.addEventListener("change", function () { show(number.value); });
})();
