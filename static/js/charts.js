// Draws every chart a page embeds as JSON (json_script) next to a [data-figure] element.
// No inline script anywhere, so a strict Content-Security-Policy can be switched on.
(function () {
  "use strict";

  function draw(root) {
    if (!window.Plotly) {
      return;
    }
    root.querySelectorAll("[data-figure]").forEach(function (el) {
      if (el.dataset.drawn) {
        return;
      }
      var source = document.getElementById(el.dataset.figure);
      if (!source) {
        return;
      }
      var figure = JSON.parse(source.textContent);
      window.Plotly.newPlot(el, figure.data, figure.layout, {
        displaylogo: false,
        responsive: true,
      });
      el.dataset.drawn = "1";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    draw(document);
  });
  // Charts swapped in by htmx (another app picked on the overview).
  document.addEventListener("htmx:afterSettle", function (event) {
    draw(event.target);
  });
})();
