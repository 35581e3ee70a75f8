/* tkbench dashboard: small extras; every page reads the same without them (written by tkbench dashboard) */
"use strict";
(function () {
  // the index: a box that keeps the drives whose row contains the text typed
  document.querySelectorAll("table.filterable").forEach(function (table) {
    var box = document.createElement("p");
    box.className = "filter";
    var input = document.createElement("input");
    input.type = "search";
    input.placeholder = "filter drives: model, serial, firmware, status";
    input.setAttribute("aria-label", "filter drives");
    box.appendChild(input);
    table.parentNode.insertBefore(box, table);
    input.addEventListener("input", function () {
      var want = input.value.toLowerCase();
      table.querySelectorAll("tbody tr").forEach(function (row) {
        row.hidden = want !== "" && row.textContent.toLowerCase().indexOf(want) < 0;
      });
    });
  });
  // a drive page: a click on a serial's row hides or shows its lines in every chart
  document.querySelectorAll("tr.serial-row").forEach(function (row) {
    row.classList.add("toggle");
    row.title = "click to hide or show this serial in the charts";
    row.addEventListener("click", function (event) {
      if (event.target.closest("a")) {
        return;
      }
      var off = row.classList.toggle("off");
      var selector = 'g.series[data-series="' + row.dataset.series + '"]';
      document.querySelectorAll(selector).forEach(function (g) {
        g.classList.toggle("hidden-series", off);
      });
    });
  });
})();
