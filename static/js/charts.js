// Renders the plotly figures the server built: every element with data-figure="<id>" is drawn
// from the JSON in <script id="<id>" type="application/json"> (Django's json_script).
(function () {
  "use strict";

  var CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function plot(element, figure) {
    if (!window.Plotly || !figure) {
      return Promise.resolve();
    }
    var layout = Object.assign({ autosize: true }, figure.layout || {});
    return window.Plotly.newPlot(element, figure.data || [], layout, Object.assign({}, CONFIG, figure.config || {}));
  }

  function plotAll(root) {
    (root || document).querySelectorAll("[data-figure]").forEach(function (element) {
      if (element.dataset.plotted) {
        return;
      }
      var source = document.getElementById(element.dataset.figure);
      if (!source) {
        return;
      }
      element.dataset.plotted = "1";
      plot(element, JSON.parse(source.textContent));
    });
  }

  window.eegab = Object.assign(window.eegab || {}, { plot: plot, plotAll: plotAll });
  document.addEventListener("DOMContentLoaded", function () { plotAll(document); });
})();
