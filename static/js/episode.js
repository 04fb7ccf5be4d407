// The trajectory explorer: a step's details are fetched when it is expanded, and a signal tool
// call's plot is fetched from its signal.json endpoint then, so long episodes stay light.
(function () {
  "use strict";

  // The signal plot and the feature plot of one step share the call's time range (and, set by the
  // server, their left and right margins), so their time axes line up one above the other.
  function onTimeRange(figure, timeRange) {
    if (!figure || figure.empty || !timeRange) {
      return figure;
    }
    var layout = Object.assign({}, figure.layout);
    layout.xaxis = Object.assign({}, layout.xaxis, { range: timeRange.slice(), autorange: false });
    return Object.assign({}, figure, { layout: layout });
  }

  function showSignal(container) {
    var signal = container.querySelector("[data-role=signal]");
    var features = container.querySelector("[data-role=features]");
    var notes = container.querySelector("[data-role=notes]");
    return fetch(container.dataset.signalUrl, { headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
      .then(function (data) {
        signal.textContent = "";
        notes.textContent = (data.notes || []).join(" ");
        var drawn = [];
        if (data.figure) {
          drawn.push(window.eegab.plot(signal, onTimeRange(data.figure, data.time_range)));
        } else {
          signal.hidden = true;
        }
        if (data.features_figure) {
          features.hidden = false;
          drawn.push(window.eegab.plot(features, onTimeRange(data.features_figure, data.time_range)));
        }
        return Promise.all(drawn);
      })
      .catch(function () {
        signal.textContent = "The signal could not be loaded.";
      });
  }

  function load(details) {
    if (details.dataset.loaded) {
      return;
    }
    details.dataset.loaded = "1";
    var body = details.querySelector(".details-body");
    fetch(details.dataset.src, { headers: { Accept: "text/html" } })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) {
        body.innerHTML = html;
        body.querySelectorAll("[data-signal-url]").forEach(showSignal);
      })
      .catch(function () {
        body.innerHTML = "<p class=\"error-text\">The details could not be loaded.</p>";
        delete details.dataset.loaded;
      });
  }

  // "toggle" does not bubble, so listen in the capture phase.
  document.addEventListener("toggle", function (event) {
    var details = event.target;
    if (details.matches && details.matches("details.step-details") && details.open) {
      load(details);
    }
  }, true);
})();
