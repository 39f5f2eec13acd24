/*
 * The fleet's page: one section per source, each the single hub's dashboard of that source
 * (served under sources/<name>/, in a frame), so a source is folded and drawn exactly as one
 * hub is. The list of sources (v1/sources) is polled: a source that appears gets a section,
 * and each heading shows the source's availability. The token is shared with the frames through
 * sessionStorage (the same key as the dashboard's).
 */
(function () {
  "use strict";

  var TOKEN_KEY = "workflow-hub.token";
  var POLL_MS = 2000;
  var status = document.querySelector('[data-testid="fleet-status"]');
  var list = document.querySelector('[data-testid="sources"]');
  var empty = document.querySelector('[data-testid="sources-empty"]');
  var form = document.querySelector('[data-testid="token-form"]');
  var input = document.getElementById("token-input");
  var sections = new Map();
  var timer = null;

  function token() {
    try {
      return window.sessionStorage.getItem(TOKEN_KEY);
    } catch (error) {
      return null;
    }
  }

  function storeToken(value) {
    try {
      window.sessionStorage.setItem(TOKEN_KEY, value);
    } catch (error) {
      // Without storage the frames cannot share the token; they then ask for it themselves.
    }
  }

  var address = new URL(window.location.href);
  if (address.searchParams.has("token")) {
    storeToken(address.searchParams.get("token"));
    address.searchParams.delete("token");
    window.history.replaceState(window.history.state, "", address.pathname + address.search);
  }

  function setStatus(state, text) {
    status.dataset.state = state;
    status.textContent = text;
  }

  function section(info) {
    var node = document.createElement("section");
    node.className = "source";
    node.dataset.source = info.source;
    var heading = document.createElement("h2");
    var link = document.createElement("a");
    link.href = info.path;
    link.textContent = info.source;
    var badge = document.createElement("span");
    badge.className = "badge";
    badge.dataset.role = "availability";
    heading.appendChild(link);
    heading.appendChild(document.createTextNode(" "));
    heading.appendChild(badge);
    var frame = document.createElement("iframe");
    frame.title = "source " + info.source;
    frame.dataset.source = info.source;
    frame.src = info.path;
    node.appendChild(heading);
    node.appendChild(frame);
    return node;
  }

  function show(sources) {
    sources.forEach(function (info) {
      var node = sections.get(info.source);
      if (!node) {
        node = section(info);
        sections.set(info.source, node);
        // In name order. Only the new section is inserted: a moved frame would reload.
        var next = null;
        sections.forEach(function (other, name) {
          if (name > info.source && (!next || name < next.dataset.source)) next = other;
        });
        list.insertBefore(node, next);
      }
      node.dataset.availability = info.availability || "unknown";
      node.querySelector('[data-role="availability"]').textContent = words(info.availability || "unknown");
    });
    empty.hidden = sections.size > 0;
  }

  function words(value) {
    return String(value).replace(/_/g, " ");
  }

  function poll() {
    window.clearTimeout(timer);
    var headers = {};
    var current = token();
    if (current) headers.Authorization = "Bearer " + current;
    window.fetch(new URL("v1/sources", document.baseURI).toString(), {
      headers: headers,
      cache: "no-store",
    }).then(
      function (response) {
        if (response.status === 401 || response.status === 403) {
          setStatus("needs-token", "needs a token");
          form.hidden = false;
          input.focus();
          return null;
        }
        return response.json().then(function (body) {
          setStatus("live", body.sources.length + " source" + (body.sources.length === 1 ? "" : "s"));
          show(body.sources);
          timer = window.setTimeout(poll, POLL_MS);
        });
      },
      function () {
        setStatus("reconnecting", "reconnecting");
        timer = window.setTimeout(poll, POLL_MS);
      }
    );
  }

  form.addEventListener("submit", function (submit) {
    submit.preventDefault();
    if (!input.value) return;
    storeToken(input.value);
    input.value = "";
    form.hidden = true;
    sections.forEach(function (node) {
      var frame = node.querySelector("iframe");
      frame.src = frame.src; // the frames take the token from sessionStorage when they load
    });
    poll();
  });

  poll();
})();
