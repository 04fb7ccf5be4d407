// The play page: each form (a tool's arguments, the final answer) is read into the JSON action an
// external agent would post, checked against the ranges the page gives, and sent; the environment's
// reply is shown and the step list refreshed, its newest result opened as the explorer shows it
// (episode.js). The final answer, which ends the episode, is sent once the player confirms it; its
// rows (T5 seizure intervals, T6 hypnogram runs) are previewed live; on T5, dragging across a
// signal or feature plot adds an interval.
(function () {
  "use strict";

  var configElement = document.getElementById("play-config");
  if (!configElement) {
    return;
  }
  var config = JSON.parse(configElement.textContent);
  var reply = document.getElementById("play-reply");
  var stepsBox = document.getElementById("play-steps");
  var answerForm = document.querySelector("form[data-action=final_answer]");
  var preview = document.getElementById("play-preview");
  var busy = false;

  function csrfToken() {
    var input = document.querySelector("[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function postJSON(url, body) {
    return fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().then(function (data) { return { ok: response.ok, data: data }; },
        function () { return { ok: false, data: { detail: "The server answered " + response.status + "." } }; });
    });
  }

  // ── reading a form into JSON ──────────────────────────────────────────────────────────────

  // The fields whose nearest container is `container` (a form, a group's fieldset or a row).
  function ownFields(container) {
    return Array.prototype.filter.call(container.querySelectorAll(".play-field"), function (field) {
      return field.parentElement.closest(".play-fields") === container;
    });
  }

  function rangeText(field) {
    var low = field.dataset.min, high = field.dataset.max;
    if (low !== undefined && high !== undefined) {
      return "from " + low + " to " + high;
    }
    return low !== undefined ? "at least " + low : "at most " + high;
  }

  function readNumber(field, label, errors) {
    var text = field.querySelector("[data-input]").value.trim();
    if (text === "") {
      return undefined;
    }
    var value = Number(text);
    if (!isFinite(value)) {
      errors.push(label + ": “" + text + "” is not a number.");
      return undefined;
    }
    if (field.dataset.kind === "integer" && Math.floor(value) !== value) {
      errors.push(label + ": give a whole number, not " + text + ".");
      return undefined;
    }
    var low = field.dataset.min === undefined ? -Infinity : Number(field.dataset.min);
    var high = field.dataset.max === undefined ? Infinity : Number(field.dataset.max);
    if (value < low || value > high) {
      errors.push(label + ": " + text + " is out of range; give a number " + rangeText(field) + ".");
      return undefined;
    }
    return value;
  }

  function readField(field, label, errors) {
    var kind = field.dataset.kind;
    var inputs = field.querySelectorAll("[data-input]");
    if (kind === "rows") {
      var rows = field.querySelectorAll("[data-rows] > .play-row");
      return Array.prototype.map.call(rows, function (row, index) {
        return readFields(row, label + " row " + (index + 1), errors);
      });
    }
    if (kind === "group") {
      return readFields(field.querySelector(".play-fields"), label, errors);
    }
    if (kind === "number" || kind === "integer") {
      return readNumber(field, label, errors);
    }
    if (kind === "multichoice") {
      var chosen = Array.prototype.filter.call(inputs, function (input) { return input.checked; })
        .map(function (input) { return input.value; });
      return chosen.length ? chosen : undefined;
    }
    if (kind === "choice" && inputs.length && inputs[0].type === "radio") {
      var picked = Array.prototype.find.call(inputs, function (input) { return input.checked; });
      return picked ? picked.value : undefined;
    }
    if (kind === "boolean") {
      return inputs[0].checked;
    }
    if (kind === "lines") {
      var lines = inputs[0].value.split("\n").map(function (line) { return line.trim(); })
        .filter(function (line) { return line; });
      return lines.length ? lines : undefined;
    }
    var text = inputs[0].value.trim();
    return text === "" ? undefined : text;
  }

  function readFields(container, prefix, errors) {
    var values = {};
    ownFields(container).forEach(function (field) {
      var label = (prefix ? prefix + " · " : "") + field.dataset.name;
      var value = readField(field, label, errors);
      if (value === undefined) {
        if (field.dataset.required) {
          errors.push(label + ": " + (field.dataset.kind === "choice" ? "choose one." : "give a value."));
        }
        return;
      }
      values[field.dataset.name] = value;
    });
    return values;
  }

  function action(form, errors) {
    var values = readFields(form, "", errors);
    if (form.dataset.action === "tool_call") {
      return { action: "tool_call", tool_name: form.dataset.toolName, arguments: values };
    }
    return Object.assign({ action: "final_answer" }, values);
  }

  // ── the reply ─────────────────────────────────────────────────────────────────────────────

  var REPLY_KEY = "play-reply-" + window.location.pathname;

  function showReply(status, errors, observation) {
    reply.hidden = false;
    reply.querySelector("[data-role=status]").textContent = status;
    var list = reply.querySelector("[data-role=errors]");
    list.textContent = "";
    errors.forEach(function (error) {
      var item = document.createElement("li");
      item.textContent = error;
      list.appendChild(item);
    });
    var pre = reply.querySelector("[data-role=observation]");
    pre.textContent = observation || "";
    pre.hidden = !observation;
  }

  function refreshSteps() {
    return fetch(stepsBox.dataset.stepsUrl, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) {
        stepsBox.innerHTML = html;
        document.dispatchEvent(new CustomEvent("eegab:steps-changed"));  // the record browser redraws its bands
        var results = stepsBox.querySelectorAll(".kind-tool_call details.step-details");
        if (results.length) {
          results[results.length - 1].open = true;  // episode.js loads it, as when a visitor expands it
        }
      });
  }

  function send(form) {
    if (busy) {
      return;
    }
    var errors = [];
    var body = action(form, errors);
    if (errors.length) {
      showReply("Not sent: fix the form and send it again. Nothing was used of your budget.", errors, "");
      reply.scrollIntoView({ block: "nearest" });
      return;
    }
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      return;  // the final answer, which ends the episode, is sent only once the player says yes
    }
    busy = true;
    form.classList.add("sending");
    postJSON(config.action_url, body).then(function (result) {
      var data = result.data;
      if (!result.ok) {
        showReply("Not played: " + (data.detail || "the server refused the action."), [], "");
        return;
      }
      if (data.done) {
        // The page it opens says the answer was received too (a message of the server's).
        showReply(data.received ? "Your final answer was received. Opening its result…" :
          "The episode has ended (" + data.ended_by.replace(/_/g, " ") + "). Opening its result…", [], "");
        window.location.assign(data.episode_url);
        return;
      }
      document.querySelector("[data-usage=turns]").textContent = data.usage.turns;
      document.querySelector("[data-usage=tool_calls]").textContent = data.usage.tool_calls;
      var status = data.status === "ok" ? "Done: the environment answered." :
        "The environment answered “" + data.status.replace(/_/g, " ") + "”; the episode goes on.";
      showReply(status, data.errors || [], data.observation);
      var named = body.action === "tool_call" && data.status === "ok" &&
        (body.tool_name === "get_channel_list" || body.tool_name === "get_recording_info");
      if (named && document.querySelector("[data-channels-typed]")) {
        // The record's channels are now known to the player: the forms offer them as choices once
        // the page is drawn again, with this reply kept across the reload.
        window.sessionStorage.setItem(REPLY_KEY, JSON.stringify([status, data.errors || [], data.observation]));
        window.location.reload();
        return;
      }
      return refreshSteps();
    }).catch(function () {
      showReply("The action could not be sent; check the connection and send it again.", [], "");
    }).then(function () {
      busy = false;
      form.classList.remove("sending");
    });
  }

  document.querySelectorAll("form.play-form").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      send(form);
    });
  });

  // ── the answer's rows and live preview ────────────────────────────────────────────────────

  function addRow(rowsField, values) {
    var template = rowsField.querySelector("template[data-row-template]");
    var row = template.content.firstElementChild.cloneNode(true);
    rowsField.querySelector("[data-rows]").appendChild(row);
    Object.keys(values || {}).forEach(function (name) {
      var input = row.querySelector(".play-field[data-name=" + name + "] [data-input]");
      if (input) {
        input.value = values[name];
      }
    });
    answerChanged();
    return row;
  }

  document.addEventListener("click", function (event) {
    var add = event.target.closest("[data-add-row]");
    if (add) {
      addRow(add.closest(".play-field"));
      return;
    }
    var remove = event.target.closest("[data-remove-row]");
    if (remove) {
      remove.closest(".play-row").remove();
      answerChanged();
    }
  });

  // T6: the architecture the rows imply, filled in until the player types a value of their own.
  function labelsOf(rows, nEpochs) {
    var labels = new Array(nEpochs).fill("W");
    rows.forEach(function (row) {
      var start = Number(row.start_epoch), end = Math.min(Number(row.end_epoch), nEpochs - 1);
      if (!isFinite(start) || !isFinite(end) || !row.stage || start < 0 || end < start) {
        return;
      }
      for (var epoch = start; epoch <= end; epoch += 1) {
        labels[epoch] = row.stage;
      }
    });
    return labels;
  }

  function fillArchitecture(answer) {
    var group = answerForm.querySelector(".play-field[data-name=architecture]");
    if (!group || !config.n_epochs || !Array.isArray(answer.hypnogram_rle)) {
      return;
    }
    var labels = labelsOf(answer.hypnogram_rle, config.n_epochs);
    var share = function (test) { return labels.filter(test).length / labels.length; };
    var implied = {
      REM_pct: share(function (stage) { return stage === "REM"; }),
      N3_pct: share(function (stage) { return stage === "N3"; }),
      sleep_efficiency: share(function (stage) { return stage !== "W"; }),
    };
    Object.keys(implied).forEach(function (name) {
      var input = group.querySelector(".play-field[data-name=" + name + "] [data-input]");
      if (input && !input.dataset.edited) {
        input.value = Math.round(implied[name] * 10000) / 10000;
      }
    });
  }

  var previewTimer = null;
  function answerChanged() {
    if (!answerForm) {
      return;
    }
    var answer = readFields(answerForm, "", []);
    fillArchitecture(answer);
    if (!preview) {
      return;
    }
    clearTimeout(previewTimer);
    previewTimer = setTimeout(function () {
      postJSON(preview.dataset.previewUrl, answer).then(function (result) {
        if (result.ok && result.data.figure) {
          window.eegab.plot(preview, result.data.figure);
        }
      });
    }, 250);
  }

  if (answerForm) {
    answerForm.addEventListener("input", function (event) {
      if (event.target.closest(".play-field[data-name=architecture]")) {
        event.target.dataset.edited = "1";
        return;
      }
      answerChanged();
    });
    answerForm.addEventListener("change", answerChanged);
  }
  if (preview) {
    window.eegab.plot(preview, JSON.parse(document.getElementById("play-preview-figure").textContent));
  }

  // ── T5: a drag across a plot of the record's time adds a seizure interval ─────────────────

  var seizureRows = config.task === "T5" && answerForm
    ? answerForm.querySelector(".play-field[data-name=seizure_events]") : null;

  function addInterval(x0, x1) {
    var onset = Math.max(0, Math.min(x0, x1)), offset = Math.max(x0, x1);
    if (config.duration_sec) {
      offset = Math.min(offset, config.duration_sec);
    }
    if (!(offset > onset)) {
      return;
    }
    addRow(seizureRows, { onset_sec: Math.round(onset * 10) / 10, offset_sec: Math.round(offset * 10) / 10 });
  }

  function hookPlot(plot) {
    if (plot.dataset.dragHooked || !plot.on || !plot._fullLayout) {
      return false;
    }
    plot.dataset.dragHooked = "1";
    window.Plotly.relayout(plot, { dragmode: "select", selectdirection: "h" });
    plot.on("plotly_selected", function (event) {
      var range = event && event.range && event.range.x;
      var selection = event && event.selections && event.selections[0];
      if (range) {
        addInterval(range[0], range[1]);
      } else if (selection) {
        addInterval(selection.x0, selection.x1);
      } else {
        return;
      }
      window.Plotly.relayout(plot, { selections: [] });
    });
    return true;
  }

  var kept = window.sessionStorage.getItem(REPLY_KEY);
  if (kept) {
    window.sessionStorage.removeItem(REPLY_KEY);
    showReply.apply(null, JSON.parse(kept));
  }

  if (seizureRows && window.MutationObserver) {
    var hookAll = function () {
      stepsBox.querySelectorAll("[data-role=signal].js-plotly-plot, [data-role=features].js-plotly-plot")
        .forEach(function (plot) {
          if (!hookPlot(plot) && !plot.dataset.dragHooked) {
            setTimeout(hookAll, 100);  // plotly has not finished its first draw
          }
        });
    };
    new MutationObserver(hookAll).observe(stepsBox, { childList: true, subtree: true });
  }
})();
