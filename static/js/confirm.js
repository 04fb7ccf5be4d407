// Forms that ask before they are sent: a form with a data-confirm question (cancelling a run) is
// sent only once the person has said yes to it. Without JavaScript the form is sent as it stands.
(function () {
  "use strict";

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.matches("form[data-confirm]") && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });
})();
