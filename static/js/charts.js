// Renders the plotly figures the server built: every element with data-figure="<id>" is drawn
// from the JSON in <script id="<id>" type="application/json"> (Django's json_script). A figure
// {"empty": message} is that sentence instead of a chart. The mode bar never covers a legend or a
// title: it shows only under the pointer, and not at all on a screen that cannot hover (a phone),
// where plotly would otherwise show it for good. plotly.js (4.8 MB) is fetched once, when a page
// draws its first chart, from the address in this script's data-plotly: a page without a chart
// (the login page, the runs list) never loads it.
(function () {
  "use strict";

  var PLOTLY_URL = document.currentScript.dataset.plotly;
  var plotlyLoaded = null;

  function loadPlotly() {
    if (window.Plotly) {
      return Promise.resolve(window.Plotly);
    }
    if (!plotlyLoaded) {
      plotlyLoaded = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = PLOTLY_URL;
        script.addEventListener("load", function () { resolve(window.Plotly); });
        script.addEventListener("error", function () {
          plotlyLoaded = null;  // the next chart tries again
          reject(new Error("plotly.js could not be loaded"));
        });
        document.head.appendChild(script);
      });
    }
    return plotlyLoaded;
  }

  var CAN_HOVER = !(window.matchMedia && window.matchMedia("(hover: none)").matches);
  var CONFIG = {
    displaylogo: false,
    displayModeBar: CAN_HOVER ? "hover" : false,
    responsive: true,
    modeBarButtonsToRemove: ["lasso2d", "select2d"],
  };

  function plot(element, figure) {
    if (!figure) {
      return Promise.resolve();
    }
    if (figure.empty) {
      element.textContent = figure.empty;
      element.classList.add("chart-empty");
      return Promise.resolve();
    }
    var layout = Object.assign({ autosize: true }, figure.layout || {});
    return loadPlotly().then(function (Plotly) {
      return Plotly.newPlot(element, figure.data || [], layout, Object.assign({}, CONFIG, figure.config || {}));
    });
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
