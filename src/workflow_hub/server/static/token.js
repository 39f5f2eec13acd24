/*
 * The access token of the pages: given once in the address (?token=...) or typed into the form a
 * page shows when the server refuses it, then kept for the tab in sessionStorage, so that a
 * reload, the fleet's source frames and its hook feed share it. Where storage is refused (privacy
 * mode) it lasts as long as the page.
 *
 *   WorkflowHubToken.get()              the token, or null
 *   WorkflowHubToken.store(value)       keep a token
 *   WorkflowHubToken.takeFromAddress()  keep the address's token and take it out of the address
 */
(function (global) {
  "use strict";

  var KEY = "workflow-hub.token";
  var inMemory = null;

  function get() {
    try {
      return global.sessionStorage.getItem(KEY) || inMemory;
    } catch (error) {
      return inMemory;
    }
  }

  function store(value) {
    try {
      global.sessionStorage.setItem(KEY, value);
    } catch (error) {
      inMemory = value;
    }
  }

  function takeFromAddress() {
    var url = new URL(global.location.href);
    if (!url.searchParams.has("token")) return;
    store(url.searchParams.get("token"));
    url.searchParams.delete("token");
    global.history.replaceState(global.history.state, "", url.pathname + url.search + url.hash);
  }

  global.WorkflowHubToken = { get: get, store: store, takeFromAddress: takeFromAddress };
})(window);
