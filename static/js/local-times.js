// Times are written in UTC by the server (<time datetime="..." data-local>); show each also in
// the reader's own time zone, beside the UTC text, so a deadline is never misread.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("time[data-local]").forEach(function (node) {
    var moment = new Date(node.getAttribute("datetime"));
    if (isNaN(moment.getTime())) { return; }
    var local = document.createElement("span");
    local.className = "muted small local-time";
    local.textContent = " (your time: " + moment.toLocaleString(undefined, {
      dateStyle: "medium", timeStyle: "short", timeZoneName: "short"}) + ")";
    node.after(local);
  });
});
