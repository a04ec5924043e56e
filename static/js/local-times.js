// Times are written in UTC by the server (<time datetime="..." data-local>); show each also in
// the reader's own time zone, beside the UTC text, so a deadline is never misread.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("time[data-local]").forEach(function (node) {
    var moment = new Date(node.getAttribute("datetime"));
    if (isNaN(moment.getTime())) { return; }
    var local = document.createElement("span");
    local.className = "muted small local-time";
    // In the page's language (its <html lang>, its words from <body data-text-your-time>).
    var shown = moment.toLocaleString(document.documentElement.lang || undefined, {
      dateStyle: "medium", timeStyle: "short", timeZoneName: "short"});
    var words = document.body.getAttribute("data-text-your-time") || "(your time: {time})";
    local.textContent = " " + words.split("{time}").join(shown);
    node.after(local);
  });
});
