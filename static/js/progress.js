// Live progress of a run page: polls the run's small JSON endpoint while the run is going and
// updates the counters and the bar; reloads the page once when the run has ended.
(function () {
  "use strict";

  var POLL_MS = 3000;
  var panel = document.getElementById("progress");
  if (!panel) {
    return;
  }

  function lookup(data, path) {
    return path.split(".").reduce(function (value, key) { return value == null ? value : value[key]; }, data);
  }

  function tokens(count) {
    if (count >= 1e6) { return (count / 1e6).toFixed(2) + "M"; }
    if (count >= 1e4) { return Math.round(count / 1e3) + "k"; }
    if (count >= 1e3) { return (count / 1e3).toFixed(1) + "k"; }
    return String(count);
  }

  function usd(amount) {
    if (amount == null) { return "unpriced"; }
    if (amount === 0) { return "$0"; }
    return Math.abs(amount) >= 1 ? "$" + amount.toFixed(2) : "$" + amount.toFixed(4);
  }

  var FORMATS = { tokens: tokens, usd: usd };

  function show(data) {
    panel.querySelectorAll("[data-field]").forEach(function (element) {
      var value = lookup(data, element.dataset.field);
      var format = FORMATS[element.dataset.format];
      element.textContent = format ? format(value) : String(value);
    });
    var total = Math.max(data.total, 1);
    panel.querySelectorAll("[data-bar]").forEach(function (bar) {
      bar.style.width = (100 * (data.episodes[bar.dataset.bar] || 0) / total) + "%";
    });
    var status = document.getElementById("run-status");
    if (status) {
      status.textContent = data.status;
      status.className = "badge " + data.status;
    }
  }

  function poll() {
    fetch(panel.dataset.progressUrl, { headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
      .then(function (data) {
        show(data);
        if (data.finished) {
          window.location.reload();
        } else {
          window.setTimeout(poll, POLL_MS);
        }
      })
      .catch(function () { window.setTimeout(poll, POLL_MS * 3); });
  }

  var initial = JSON.parse(document.getElementById("progress-data").textContent);
  show(initial);
  if (!initial.finished) {
    window.setTimeout(poll, POLL_MS);
  }
})();
