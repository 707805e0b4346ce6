// Live refresh while a launch is in progress: poll the JSON API and reload the page when the
// run's status or its list of launch events changes. No framework, no build step.
(function () {
  "use strict";
  var url = document.body.getAttribute("data-poll");
  if (!url) { return; }
  var seen = null;
  function digest(data) {
    if (Array.isArray(data)) {
      return data.map(function (r) { return r.id + ":" + r.status; }).join(",");
    }
    return data.status + ":" + (data.stages || []).length;
  }
  function tick() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (data === null) { return; }
        var now = digest(data);
        if (seen !== null && now !== seen) { window.location.reload(); return; }
        seen = now;
        window.setTimeout(tick, 1500);
      })
      .catch(function () { window.setTimeout(tick, 5000); });
  }
  tick();
}());
