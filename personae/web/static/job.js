// A queued or running job's page (its place in line kept current): append its new progress lines as they come; reload when it ends.
(function () {
  "use strict";
  const list = document.getElementById("lines");
  const job = list.dataset.job;
  let seen = list.children.length;
  async function poll() {
    try {
      const response = await fetch("/jobs/" + job + "/lines?after=" + seen, { cache: "no-store" });
      if (response.ok) {
        const data = await response.json();
        for (const line of data.lines) {
          const item = document.createElement("li");
          item.textContent = line;
          list.appendChild(item);
        }
        seen += data.lines.length;
        const status = document.getElementById("status");
        status.textContent = data.waiting ? data.status + ": " + data.waiting : data.status;
        status.className = "status-" + data.status;
        if (data.status !== "running" && data.status !== "queued") {
          window.location.reload(); // the server renders the result or the error
          return;
        }
      }
    } catch (error) {
      // the server is restarting: try again
    }
    window.setTimeout(poll, 400);
  }
  window.setTimeout(poll, 400);
})();
