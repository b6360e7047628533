// Thread page: while a compaction is pending or running, refresh the
// compaction list from the console's JSON endpoint (the same partial the page
// renders). Without JavaScript the page refreshes itself (<noscript> meta).
(function () {
  "use strict";
  var box = document.getElementById("compactions");
  if (!box || box.dataset.live !== "true") return;
  var list = box.querySelector(".compactions");
  var note = box.querySelector(".live-note");
  var button = box.querySelector(".compact-form button");
  var startGeneration = parseInt(box.dataset.generation, 10);
  var delay = 1500;

  function poll() {
    fetch(box.dataset.pollUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        list.innerHTML = data.html;
        if (data.live) {
          delay = Math.min(delay * 1.3, 10000);
          window.setTimeout(poll, delay);
          return;
        }
        box.dataset.live = "false";
        if (button) button.disabled = false;
        if (note) {
          note.textContent = "";
          if (data.current_generation !== startGeneration) {
            note.append("Compaction finished: generation " + data.current_generation + " has started. ");
          } else {
            note.append("Compaction finished. ");
          }
          var reload = document.createElement("a");
          reload.href = window.location.pathname + "?generation=" + data.current_generation;
          reload.textContent = "Reload the thread";
          note.append(reload);
        }
      })
      .catch(function () {
        window.setTimeout(poll, 10000);
      });
  }
  window.setTimeout(poll, delay);
})();
