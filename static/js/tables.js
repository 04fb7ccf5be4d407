// Sortable tables: a click on a <th class="sortable"> sorts its table's body by that column.
// A cell's data-sort value is used when present (numbers sort as numbers, blanks last), else its text.
(function () {
  "use strict";

  function cellValue(row, column) {
    var cell = row.children[column];
    if (!cell) {
      return "";
    }
    return cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
  }

  function compare(a, b) {
    var blankA = a === "", blankB = b === "";
    if (blankA || blankB) {
      return blankA === blankB ? 0 : blankA ? 1 : -1;
    }
    var numberA = Number(a), numberB = Number(b);
    if (!isNaN(numberA) && !isNaN(numberB)) {
      return numberA - numberB;
    }
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function columnIndex(header) {
    // Header cells may span columns; count the columns before this one.
    var index = 0, cell = header.previousElementSibling;
    while (cell) {
      index += cell.colSpan || 1;
      cell = cell.previousElementSibling;
    }
    return index;
  }

  function sortBy(header) {
    var table = header.closest("table");
    var body = table.tBodies[0];
    var column = columnIndex(header);
    var descending = header.getAttribute("aria-sort") === "ascending"
      || (!header.hasAttribute("aria-sort") && header.dataset.sortFirst === "descending");
    table.querySelectorAll("th.sortable").forEach(function (other) { other.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (first, second) {
      var order = compare(cellValue(first, column), cellValue(second, column));
      var blank = cellValue(first, column) === "" || cellValue(second, column) === "";
      return descending && !blank ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  document.addEventListener("click", function (event) {
    var header = event.target.closest("th.sortable");
    if (header) {
      sortBy(header);
    }
  });
  document.addEventListener("keydown", function (event) {
    var header = event.target.closest && event.target.closest("th.sortable");
    if (header && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      sortBy(header);
    }
  });

  // Filter forms that apply as soon as a choice changes.
  document.addEventListener("change", function (event) {
    var form = event.target.closest("form[data-autosubmit]");
    if (form && event.target.tagName === "SELECT") {
      form.submit();
    }
  });
})();
