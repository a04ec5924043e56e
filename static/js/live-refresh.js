/* Pages whose background work is still running (a queued or running submission, diagnostics,
   cue discovery, a skill-set build) keep themselves up to date without reloading.

   The page marks a placeholder with data-refresh="SECONDS" (templates/_live_refresh.html). Every
   SECONDS this script fetches the same address, and when the content of <main> changed, swaps the
   fresh content in, keeping this status line and its button in place (so keyboard focus and what
   a screen reader was reading stay where they were). It stops once the fresh page has no
   data-refresh placeholder any more: the work is done.

   It replaces <meta http-equiv="refresh">, which reloaded the whole page every few seconds with
   no way to stop it (WCAG 2.2.1 "Timing adjustable", 2.2.2 "Pause, stop, hide"): here a visible
   "Pause updates" button stops it, and the choice is remembered for the browser tab
   (sessionStorage). Without JavaScript the placeholder's plain "Reload" link stays.

   An external file loaded with defer, no inline code and no eval, so the page works under a
   strict Content-Security-Policy (script-src 'self'). */
(function () {
  "use strict";

  var PAUSED_KEY = "expbench.updatesPaused";
  var main = document.querySelector("main");
  var root = main && main.querySelector("[data-refresh]");
  if (!root || !window.fetch || !window.DOMParser) {
    return;
  }

  var state = "running";
  var timer = null;
  var checks = 0;
  var swaps = 0;
  var lastSignature = signature(main.innerHTML);
  // The words in the page's language, read once: the placeholder carries them (data-text-*,
  // translated by the template); the English here is what a page without them gets.
  var wordsSource = root.querySelector(".live-refresh-words");
  var translated = {};
  ["running", "paused", "done", "pause", "resume", "error", "checked"].forEach(function (name) {
    translated[name] = wordsSource && wordsSource.getAttribute("data-text-" + name);
  });

  var fallback = root.querySelector(".live-refresh-fallback");
  if (fallback) {
    fallback.hidden = true;
  }
  var line = document.createElement("p");
  line.className = "live-refresh-line";
  var dot = document.createElement("span");
  dot.className = "live-refresh-dot";
  dot.setAttribute("aria-hidden", "true");
  // The live region holds only the state, so a screen reader hears a change of state once, not
  // every check; the time of the last check sits outside it.
  var status = document.createElement("span");
  status.className = "live-refresh-status";
  status.setAttribute("role", "status");
  status.setAttribute("aria-live", "polite");
  status.tabIndex = -1; // focus lands here if the button goes away under it
  var checked = document.createElement("span");
  checked.className = "live-refresh-time muted small";
  var button = document.createElement("button");
  button.type = "button";
  button.className = "button secondary small";
  line.append(dot, status, " ", checked, " ", button);
  root.append(line);

  button.addEventListener("click", function () {
    if (state === "paused") {
      remember(false);
      setState("running");
      tick();
    } else {
      remember(true);
      clearTimeout(timer);
      setState("paused");
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && state === "running") {
      tick(); // a tab in the background is not polled; catch up when it is shown again
    }
  });

  if (remembered()) {
    setState("paused");
  } else {
    setState("running");
    schedule();
  }

  function period() {
    var seconds = parseFloat(root.getAttribute("data-refresh"));
    return Math.max(1, isFinite(seconds) ? seconds : 3) * 1000;
  }

  function words(name, english, values) {
    var text = translated[name] || english;
    Object.keys(values || {}).forEach(function (key) {
      text = text.split("{" + key + "}").join(values[key]);
    });
    return text;
  }

  function setState(next, message) {
    state = next;
    root.setAttribute("data-refresh-state", next);
    var seconds = Math.round(period() / 1000);
    var text = message || {
      running: words("running", "Updating every {seconds} seconds while the work runs.", {seconds: seconds}),
      paused: words("paused", "Updates paused. This page shows the state when it was last updated."),
      done: words("done", "The work has finished: this page is up to date and no longer updates.")
    }[next];
    if (status.textContent !== text) {
      status.textContent = text;
    }
    button.textContent = next === "paused" ? words("resume", "Resume updates") : words("pause", "Pause updates");
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(tick, period());
  }

  function tick() {
    clearTimeout(timer);
    if (state !== "running" && state !== "error") {
      return;
    }
    if (document.hidden) {
      schedule();
      return;
    }
    checks += 1;
    root.setAttribute("data-refresh-checks", String(checks));
    // no-cache: revalidate with the page's ETag (the boards answer 304 when nothing changed).
    fetch(window.location.href, {credentials: "same-origin", cache: "no-cache", headers: {Accept: "text/html"}})
      .then(function (response) {
        if (response.redirected) { // e.g. signed out meanwhile: show where the server sends us
          window.location.assign(response.url);
          return null;
        }
        if (!response.ok && response.status !== 404) {
          throw new Error("HTTP " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        if (html === null || state === "paused") {
          return;
        }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var freshMain = fresh.querySelector("main");
        if (!freshMain) {
          throw new Error("no page content");
        }
        apply(fresh, freshMain);
      })
      .catch(function () {
        if (state === "running" || state === "error") {
          setState("error", words("error", "Could not reach the server; trying again every {seconds} seconds.",
                                  {seconds: Math.round(period() / 1000)}));
          schedule();
        }
      });
  }

  function apply(fresh, freshMain) {
    var freshRoot = freshMain.querySelector("[data-refresh]");
    var done = !freshRoot;
    var freshSignature = signature(freshMain.innerHTML);
    var changed = freshSignature !== lastSignature;
    if (changed && busy()) {
      schedule(); // the reader is typing or selecting text in the page: try again next time
      return;
    }
    checked.textContent = words("checked", "Checked at {time}.", {time: new Date().toLocaleTimeString()});
    if (changed) {
      lastSignature = freshSignature;
      if (freshRoot) {
        root.setAttribute("data-refresh", freshRoot.getAttribute("data-refresh") || "3");
      }
      swap(freshMain, freshRoot);
      if (fresh.title) {
        document.title = fresh.title;
      }
      swaps += 1;
      root.setAttribute("data-refresh-swaps", String(swaps));
    }
    if (done) {
      clearTimeout(timer);
      var hadFocus = document.activeElement === button;
      button.remove();
      setState("done");
      if (hadFocus) {
        status.focus();
      }
      return;
    }
    setState("running");
    schedule();
  }

  function swap(freshMain, freshRoot) {
    // Everything in <main> but this status line is replaced; the line itself never leaves the
    // page, so focus on its button stays. Focus elsewhere and open <details> are carried over by
    // id, else by position in <main> (a page keeps its shape while its work runs).
    var active = document.activeElement;
    var focusId = null;
    var focusPath = null;
    if (active && active !== document.body && main.contains(active) && !root.contains(active)) {
      focusId = active.id || null;
      focusPath = pathOf(active);
    }
    var open = Array.prototype.map.call(main.querySelectorAll("details[open]"), pathOf);
    var nodes = Array.prototype.slice.call(freshMain.childNodes);
    var at = nodes.indexOf(freshRoot);
    if (freshRoot && at < 0) { // placed deeper than <main>'s own children: moved in with the rest
      var hadFocus = root.contains(active) ? active : null;
      freshRoot.replaceWith(root);
      main.replaceChildren.apply(main, nodes);
      if (hadFocus) {
        hadFocus.focus({preventScroll: true});
      }
    } else {
      Array.prototype.slice.call(main.childNodes).forEach(function (node) {
        if (node !== root) {
          node.remove();
        }
      });
      if (at < 0) {
        root.after.apply(root, nodes); // done: the final status line stays visible, at the top
      } else {
        root.before.apply(root, nodes.slice(0, at));
        root.after.apply(root, nodes.slice(at + 1));
      }
    }
    open.forEach(function (path) {
      var details = nodeAt(path);
      if (details && details.tagName === "DETAILS") {
        details.open = true;
      }
    });
    var target = (focusId && document.getElementById(focusId)) || (focusPath && nodeAt(focusPath));
    if (target && active && target.tagName === active.tagName && main.contains(target)) {
      target.focus({preventScroll: true});
    }
  }

  function busy() {
    var active = document.activeElement;
    if (active && main.contains(active) && !root.contains(active) &&
        (/^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName) || active.isContentEditable)) {
      return true;
    }
    var selection = window.getSelection && window.getSelection();
    return !!(selection && !selection.isCollapsed && main.contains(selection.anchorNode));
  }

  // An element's position in <main> as child indices, the status line left out (it may move to
  // the top when the work is done).
  function pathOf(node) {
    var path = [];
    while (node && node !== main) {
      var parent = node.parentElement;
      if (!parent) {
        return null;
      }
      path.unshift(childrenOf(parent).indexOf(node));
      node = parent;
    }
    return node === main ? path : null;
  }

  function nodeAt(path) {
    var node = main;
    for (var i = 0; node && path && i < path.length; i += 1) {
      node = childrenOf(node)[path[i]];
    }
    return path ? node || null : null;
  }

  function childrenOf(parent) {
    return Array.prototype.filter.call(parent.children, function (child) { return child !== root; });
  }

  // Forms carry a fresh CSRF token in every response: not a change of the page.
  function signature(html) {
    return html.replace(/(name="csrfmiddlewaretoken" value=")[^"]*/g, "$1");
  }

  function remembered() {
    try {
      return window.sessionStorage.getItem(PAUSED_KEY) === "1";
    } catch (error) { // storage disabled: the pause lasts until the page is left
      return false;
    }
  }

  function remember(paused) {
    try {
      if (paused) {
        window.sessionStorage.setItem(PAUSED_KEY, "1");
      } else {
        window.sessionStorage.removeItem(PAUSED_KEY);
      }
    } catch (error) {
      // storage disabled: nothing to remember it in
    }
  }
})();
