// The record browser: a recording paged and zoomed like a desktop EEG reader, drawn on canvases from
// the window endpoint (each pixel's minimum and maximum per channel, at the channel's own rate), with
// the windows the agent's tool calls read as bands (links to their steps) and its answer as lanes.
(function () {
  "use strict";

  var root = document.getElementById("record-browser");
  if (!root) {
    return;
  }
  var config = JSON.parse(document.getElementById("record-browser-data").textContent);
  var windowUrl = root.dataset.windowUrl;
  var GROUP_COLORS = { EEG: "#1d2430", EOG: "#2456a6", EMG: "#1b7a46", other: "#8a5a00" };
  var STAGE_COLORS = { W: "#f2c14e", REM: "#d1495b", N1: "#8ecae6", N2: "#219ebc", N3: "#023047" };
  var BAND_FILL = "rgba(255, 196, 0, 0.16)";
  var MIN_PAGE_SEC = 1;

  function part(role) { return root.querySelector("[data-role=" + role + "]"); }
  function control(name) { return root.querySelector("[data-control=" + name + "]"); }

  var narrow = window.matchMedia("(max-width: 640px)").matches;
  var state = {
    start: config.opening.start,
    length: Math.max(config.opening.stop - config.opening.start, Math.min(MIN_PAGE_SEC, config.duration)),
    montage: "recorded",
    group: narrow && config.groups.length > 1 ? config.groups[0] : "",
    highpass: "", lowpass: "", notch: "", clock: "",
    chosen: null,  // recorded channels to show (null: all)
    scale: 1,
    channelScale: {},
    selected: null,  // the channel whose name was clicked: + and − scale it alone
  };
  if (config.opening.channels) {
    state.chosen = config.opening.channels.slice();
  }
  var amplitudes = {};  // each channel's typical half range, from the first page it was drawn on
  var data = null;
  var request = null;

  // ------------------------------------------------------------------ time

  function clampStart(start) {
    return Math.min(Math.max(start, 0), Math.max(config.duration - state.length, 0));
  }

  function timeText(seconds, step) {
    if (state.clock && config.clock) {
      var parts = config.clock.split(":").map(Number);
      var total = Math.floor(parts[0] * 3600 + parts[1] * 60 + parts[2] + seconds) % 86400;
      var text = [Math.floor(total / 3600), Math.floor(total / 60) % 60, total % 60]
        .map(function (n) { return String(n).padStart(2, "0"); }).join(":");
      return step < 1 ? text + "." + String(Math.round((seconds % 1) * 10)) : text;
    }
    if (step >= 60) {
      var hours = Math.floor(seconds / 3600), minutes = Math.floor(seconds / 60) % 60;
      return hours + ":" + String(minutes).padStart(2, "0") + ":" + String(Math.round(seconds % 60)).padStart(2, "0");
    }
    return (step < 1 ? seconds.toFixed(1) : Math.round(seconds)) + " s";
  }

  function durationText(seconds) {
    var short = function (value) { return String(Math.round(value * 100) / 100); };
    if (seconds < 60) { return short(seconds) + " s"; }
    if (seconds < 3600) { return short(seconds / 60) + " min"; }
    return short(seconds / 3600) + " h";
  }

  function tickStep(length, pixels) {
    var steps = [0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800];
    var wanted = length / Math.max(pixels / 110, 1);
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] >= wanted) { return steps[i]; }
    }
    return steps[steps.length - 1];
  }

  // ------------------------------------------------------------------ fetching a page

  function query(start, stop, width, extra) {
    var params = new URLSearchParams({ start: start.toFixed(4), stop: stop.toFixed(4), width: String(width) });
    Object.keys(extra || {}).forEach(function (key) { if (extra[key]) { params.set(key, extra[key]); } });
    return windowUrl + "?" + params.toString();
  }

  function plotWidth() {
    return Math.max(50, Math.min(4000, Math.round(part("traces").clientWidth - labelWidth())));
  }

  function labelWidth() { return narrow ? 78 : 130; }

  function load() {
    var extra = { montage: state.montage, highpass: state.highpass, lowpass: state.lowpass, notch: state.notch };
    if (state.montage === "recorded" && state.chosen) {
      extra.channels = state.chosen.join(",");
    }
    if (request) { request.abort(); }
    request = new AbortController();
    part("notes").textContent = "Loading…";
    fetch(query(state.start, state.start + state.length, plotWidth(), extra), { signal: request.signal, headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok) {
            var errors = body.errors || {};
            throw new Error(Object.keys(errors).map(function (key) { return key + ": " + errors[key]; }).join(" ") || "The page could not be read.");
          }
          return body;
        });
      })
      .then(function (body) {
        data = body;
        config.bands = body.bands || config.bands;  // the calls as they are now (a player keeps calling)
        part("notes").textContent = (body.notes || []).join(" ");
        draw();
        drawOverview();
      })
      .catch(function (error) {
        if (error.name !== "AbortError") { part("notes").textContent = error.message; }
      });
  }

  // ------------------------------------------------------------------ drawing

  function sizedCanvas(container, height) {
    var canvas = container.querySelector("canvas");
    var ratio = window.devicePixelRatio || 1;
    var width = container.clientWidth;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = "100%";  // follows its container when the window narrows, until it is redrawn
    canvas.style.height = height + "px";
    var context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    return context;
  }

  function xOf(seconds) {
    return labelWidth() + (seconds - state.start) / state.length * plotWidth();
  }

  function shownChannels() {
    if (!data) { return []; }
    return data.channels.filter(function (channel) { return !state.group || channel.group === state.group; });
  }

  function values(channel) {
    return channel.kind === "samples" ? [channel.v] : [channel.min, channel.max];
  }

  function centreAndAmplitude(channel) {
    var all = [].concat.apply([], values(channel)).filter(function (v) { return v !== null; }).sort(function (a, b) { return a - b; });
    if (!all.length) { return [0, 1]; }
    var centre = all[Math.floor(all.length / 2)];
    if (!amplitudes[channel.name]) {
      var low = all[Math.floor(all.length * 0.02)], high = all[Math.floor(all.length * 0.98)];
      amplitudes[channel.name] = Math.max((high - low) / 2, Math.abs(centre) * 1e-6, 1e-9);
    }
    return [centre, amplitudes[channel.name]];
  }

  function rowHeight() { return narrow ? 46 : 54; }

  function drawTraces() {
    var channels = shownChannels();
    var rows = Math.max(channels.length, 1), row = rowHeight(), axis = 26;
    var context = sizedCanvas(part("traces"), rows * row + axis);
    var left = labelWidth(), right = left + plotWidth();
    // The bands of the calls, shaded over the channels each read.
    config.bands.forEach(function (band) {
      var x0 = Math.max(xOf(band.start), left), x1 = Math.min(xOf(band.stop), right);
      if (x1 < left || x0 > right) { return; }
      context.fillStyle = BAND_FILL;
      channels.forEach(function (channel, index) {
        if (band.channels.indexOf(channel.name) >= 0 || band.channels.length === 0) {
          context.fillRect(x0, index * row, Math.max(x1 - x0, 2), row);
        }
      });
    });
    channels.forEach(function (channel, index) {
      var centreAmplitude = centreAndAmplitude(channel);
      var gain = (row * 0.45) / centreAmplitude[1] * state.scale * (state.channelScale[channel.name] || 1);
      var middle = index * row + row / 2;
      var y = function (v) { return middle - (v - centreAmplitude[0]) * gain; };
      context.fillStyle = state.selected === channel.name ? "#2456a6" : "#1d2430";
      context.font = (state.selected === channel.name ? "bold " : "") + "12px system-ui, sans-serif";
      context.fillText(channel.name, 4, middle - 2);
      context.fillStyle = "#5f6b7a";
      context.font = "11px system-ui, sans-serif";
      context.fillText(channel.unit || "no unit", 4, middle + 12);
      context.save();
      context.beginPath();
      context.rect(left, index * row, right - left, row);
      context.clip();
      context.strokeStyle = GROUP_COLORS[channel.group] || "#1d2430";
      context.lineWidth = 1;
      context.beginPath();
      if (channel.kind === "samples") {
        channel.t.forEach(function (t, i) { var x = xOf(t); if (i) { context.lineTo(x, y(channel.v[i])); } else { context.moveTo(x, y(channel.v[i])); } });
        context.stroke();
      } else {
        // Each pixel spans its samples' time: its maximum along the top, its minimum back along the bottom.
        var ends = channel.t.slice(1).concat([channel.end]);
        channel.t.forEach(function (t, i) {
          var x0 = xOf(t), x1 = Math.max(xOf(ends[i]), x0 + 1);
          if (i) { context.lineTo(x0, y(channel.max[i])); } else { context.moveTo(x0, y(channel.max[i])); }
          context.lineTo(x1, y(channel.max[i]));
        });
        for (var i = channel.t.length - 1; i >= 0; i--) {
          context.lineTo(Math.max(xOf(ends[i]), xOf(channel.t[i]) + 1), y(channel.min[i]));
          context.lineTo(xOf(channel.t[i]), y(channel.min[i]));
        }
        context.closePath();
        context.fillStyle = context.strokeStyle;
        context.fill();
        context.stroke();
      }
      context.restore();
      context.strokeStyle = "#dde2e8";
      context.beginPath();
      context.moveTo(left, (index + 1) * row);
      context.lineTo(right, (index + 1) * row);
      context.stroke();
    });
    var step = tickStep(state.length, right - left), first = Math.ceil(state.start / step) * step;
    context.fillStyle = "#5f6b7a";
    context.font = "11px system-ui, sans-serif";
    for (var t = first; t <= state.start + state.length + 1e-9; t += step) {
      var x = xOf(t);
      context.fillRect(x, rows * row, 1, 5);
      context.fillText(timeText(t, step), Math.min(x + 2, right - 60), rows * row + 17);
    }
    part("traces").dataset.channels = channels.map(function (channel) { return channel.name; }).join(",");
  }

  function drawBands() {
    var container = part("bands");
    container.textContent = "";
    var left = labelWidth(), right = left + plotWidth(), ends = [];
    config.bands.forEach(function (band) {
      var x0 = xOf(band.start), x1 = xOf(band.stop);
      if (x1 < left || x0 > right) { return; }
      x0 = Math.max(x0, left);
      x1 = Math.min(Math.max(x1, x0 + 4), right);
      var level = 0;
      while (ends[level] !== undefined && ends[level] > x0) { level++; }
      ends[level] = x1 + 2;
      var link = document.createElement("a");
      link.href = band.url;
      link.className = "record-band";
      link.dataset.step = band.step;
      link.style.left = x0 + "px";
      link.style.width = (x1 - x0) + "px";
      link.style.top = (level * 18) + "px";
      link.title = "#" + band.step + " " + band.tool + ": " + band.start.toFixed(1) + "–" + band.stop.toFixed(1) + " s" +
        (band.channels.length ? " · " + band.channels.join(", ") : "");
      link.textContent = "#" + band.step + " " + band.tool;
      container.appendChild(link);
    });
    container.style.height = (config.bands.length ? Math.max(ends.length, 1) * 18 + 2 : 0) + "px";
  }

  function drawLanes() {
    var lanes = config.lanes, height = 26;
    var container = part("lanes");
    container.hidden = !lanes.length;
    if (!lanes.length) { return; }
    var context = sizedCanvas(container, lanes.length * height);
    var left = labelWidth(), right = left + plotWidth();
    lanes.forEach(function (lane, index) {
      var top = index * height;
      context.fillStyle = "#f4f6f9";
      context.fillRect(left, top + 3, right - left, height - 6);
      context.fillStyle = "#1d2430";
      context.font = "12px system-ui, sans-serif";
      context.fillText(lane.name, 4, top + 17);
      context.save();
      context.beginPath();
      context.rect(left, top, right - left, height);
      context.clip();
      if (lane.kind === "intervals") {
        lane.intervals.forEach(function (interval) {
          context.fillStyle = "rgba(209, 73, 91, 0.18)";
          context.fillRect(xOf(interval.tolerance[0]), top + 3, xOf(interval.tolerance[1]) - xOf(interval.tolerance[0]), height - 6);
          context.fillStyle = lane.name === "reference" ? "#1d2430" : "#d1495b";
          context.fillRect(xOf(interval.start), top + 6, Math.max(xOf(interval.stop) - xOf(interval.start), 2), height - 12);
        });
      } else {
        var disagree = {};
        (lane.disagree || []).forEach(function (epoch) { disagree[epoch] = true; });
        var first = Math.max(Math.floor(state.start / lane.epoch_sec), 0);
        var last = Math.min(Math.ceil((state.start + state.length) / lane.epoch_sec), lane.stages.length);
        for (var epoch = first; epoch < last; epoch++) {
          var x0 = xOf(epoch * lane.epoch_sec), x1 = xOf((epoch + 1) * lane.epoch_sec);
          context.fillStyle = STAGE_COLORS[lane.stages[epoch]] || "#999";
          context.fillRect(x0, top + 5, Math.max(x1 - x0, 1), height - 12);
          if (disagree[epoch]) {
            context.fillStyle = "#b3261e";
            context.fillRect(x0, top + height - 6, Math.max(x1 - x0, 1), 4);
          }
          if (x1 - x0 > 24) {
            context.fillStyle = lane.stages[epoch] === "N3" ? "#fff" : "#1d2430";
            context.fillText(lane.stages[epoch], x0 + 3, top + 17);
          }
        }
      }
      context.restore();
    });
  }

  function drawPosition() {
    var stop = Math.min(state.start + state.length, config.duration);
    var step = state.length < 60 ? 0.5 : 60;
    part("position").textContent = timeText(state.start, step) + " – " + timeText(stop, step) +
      " of " + timeText(config.duration, 60) + " (page " + durationText(state.length) + ")";
    var box = part("page-box"), overview = part("overview");
    var scale = overview.clientWidth / config.duration;
    box.style.left = (state.start * scale) + "px";
    box.style.width = Math.max(state.length * scale, 2) + "px";
  }

  function draw() {
    drawTraces();
    drawBands();
    drawLanes();
    drawPosition();
  }

  var overviewData = null;

  function drawOverview() {
    var container = part("overview"), height = 44;
    var context = sizedCanvas(container, height);
    var width = container.clientWidth, scale = width / config.duration;
    context.fillStyle = BAND_FILL.replace("0.16", "0.6");
    config.bands.forEach(function (band) { context.fillRect(band.start * scale, 0, Math.max((band.stop - band.start) * scale, 1), 6); });
    if (!overviewData || !overviewData.channels.length) { return; }
    var channel = overviewData.channels[0];
    // Scaled on the whole record's own envelope (its 1st and 99th percentiles), not on a page's traces.
    var lows = (channel.kind === "samples" ? channel.v : channel.min).slice().sort(function (a, b) { return a - b; });
    var highs = (channel.kind === "samples" ? channel.v : channel.max).slice().sort(function (a, b) { return a - b; });
    if (!lows.length) { return; }
    var bottom = lows[Math.floor(lows.length * 0.01)], top = highs[Math.floor(highs.length * 0.99)];
    var centreAmplitude = [(top + bottom) / 2, Math.max((top - bottom) / 2, 1e-9)];
    var gain = (height * 0.45) / centreAmplitude[1];
    context.strokeStyle = "#5f6b7a";
    context.beginPath();
    channel.t.forEach(function (t, i) {
      var x = t * scale, low = channel.kind === "samples" ? channel.v[i] : channel.min[i], high = channel.kind === "samples" ? low : channel.max[i];
      context.moveTo(x, height / 2 + 3 - (low - centreAmplitude[0]) * gain);
      context.lineTo(x, height / 2 + 3 - (high - centreAmplitude[0]) * gain);
    });
    context.stroke();
  }

  function loadOverview() {
    var first = config.channels.filter(function (channel) { return channel.group === "EEG"; })[0] || config.channels[0];
    var width = Math.max(50, Math.min(4000, Math.round(part("overview").clientWidth)));
    fetch(query(0, config.duration, width, { channels: first.name }), { headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) { overviewData = body; drawOverview(); drawPosition(); })
      .catch(function () { drawOverview(); });
  }

  // ------------------------------------------------------------------ moving

  function go(start, length) {
    state.length = Math.min(Math.max(length === undefined ? state.length : length, Math.min(MIN_PAGE_SEC, config.duration)), config.duration);
    state.start = clampStart(start);
    syncPageControl();
    drawPosition();
    load();
  }

  function syncPageControl() {
    var select = control("page"), value = state.length >= config.duration ? "whole" : String(Math.round(state.length));
    var option = Array.prototype.find.call(select.options, function (o) { return o.value === value; });
    if (!option) {
      option = select.querySelector("option[data-custom]") || document.createElement("option");
      option.dataset.custom = "1";
      option.value = value;
      option.textContent = durationText(state.length);
      select.insertBefore(option, select.firstChild);
    }
    select.value = value;
  }

  function page(direction) { go(state.start + direction * state.length); }

  function zoom(factor) {
    var centre = state.start + state.length / 2, length = Math.min(state.length * factor, config.duration);
    go(centre - length / 2, length);
  }

  function rescale(factor) {
    if (state.selected) {
      state.channelScale[state.selected] = (state.channelScale[state.selected] || 1) * factor;
    } else {
      state.scale *= factor;
    }
    if (data) { drawTraces(); }
  }

  root.addEventListener("click", function (event) {
    var action = event.target.closest("[data-action]");
    if (!action) { return; }
    ({
      back: function () { page(-1); },
      forward: function () { page(1); },
      "zoom-in": function () { zoom(0.5); },
      "zoom-out": function () { zoom(2); },
      smaller: function () { rescale(1 / 1.5); },
      larger: function () { rescale(1.5); },
    })[action.dataset.action]();
  });

  control("page").addEventListener("change", function (event) {
    var value = event.target.value;
    if (value === "whole") { go(0, config.duration); } else { go(state.start, Number(value)); }
  });
  ["montage", "highpass", "lowpass", "notch"].forEach(function (name) {
    control(name).addEventListener("change", function (event) {
      state[name] = event.target.value;
      amplitudes = {};
      load();
    });
  });
  control("group").addEventListener("change", function (event) { state.group = event.target.value; if (data) { draw(); } });
  control("group").value = state.group;
  control("clock").addEventListener("change", function (event) { state.clock = event.target.value; if (data) { draw(); } });
  part("channel-list").addEventListener("change", function () {
    var boxes = part("channel-list").querySelectorAll("input[type=checkbox]");
    var chosen = Array.prototype.filter.call(boxes, function (box) { return box.checked; }).map(function (box) { return box.value; });
    state.chosen = chosen.length === boxes.length ? null : chosen;
    if (chosen.length) { load(); }
  });
  if (state.chosen) {
    part("channel-list").querySelectorAll("input[type=checkbox]").forEach(function (box) { box.checked = state.chosen.indexOf(box.value) >= 0; });
  }

  document.addEventListener("keydown", function (event) {
    if (event.target.closest && event.target.closest("input, select, textarea")) { return; }
    var actions = { ArrowLeft: function () { page(-1); }, ArrowRight: function () { page(1); },
      "+": function () { rescale(1.5); }, "=": function () { rescale(1.5); }, "-": function () { rescale(1 / 1.5); } };
    if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
  });

  // A click on a channel's name chooses it for + and −; a drag across the traces zooms to that stretch.
  var traces = part("traces"), dragFrom = null;
  traces.addEventListener("mousedown", function (event) { dragFrom = event.offsetX; });
  traces.addEventListener("mouseup", function (event) {
    var from = dragFrom;
    dragFrom = null;
    if (from === null) { return; }
    if (event.offsetX < labelWidth() && Math.abs(event.offsetX - from) < 4) {
      var channel = shownChannels()[Math.floor(event.offsetY / rowHeight())];
      state.selected = channel && state.selected !== channel.name ? channel.name : null;
      drawTraces();
      return;
    }
    if (Math.abs(event.offsetX - from) > 8) {
      var toTime = function (x) { return state.start + (Math.max(x, labelWidth()) - labelWidth()) / plotWidth() * state.length; };
      var a = toTime(Math.min(from, event.offsetX)), b = toTime(Math.max(from, event.offsetX));
      go(a, b - a);
    }
  });
  var touchFrom = null;
  traces.addEventListener("touchstart", function (event) { touchFrom = event.touches[0].clientX; }, { passive: true });
  traces.addEventListener("touchend", function (event) {
    if (touchFrom === null) { return; }
    var dx = event.changedTouches[0].clientX - touchFrom;
    touchFrom = null;
    if (Math.abs(dx) > 40) { page(dx < 0 ? 1 : -1); }
  });
  part("overview").addEventListener("click", function (event) {
    var t = event.offsetX / part("overview").clientWidth * config.duration;
    go(t - state.length / 2);
  });
  document.addEventListener("eegab:steps-changed", function () { load(); });
  // A scrollbar appearing once the traces are drawn narrows them: redraw at the new width (the data stay).
  if (window.ResizeObserver) {
    var lastWidth = part("traces").clientWidth;
    new ResizeObserver(function () {
      var width = part("traces").clientWidth;
      if (width !== lastWidth) {
        lastWidth = width;
        if (data) { draw(); }
        drawOverview();
      }
    }).observe(part("traces"));
  }
  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { drawOverview(); load(); }, 200);
  });

  syncPageControl();
  drawPosition();
  loadOverview();
  load();
})();
