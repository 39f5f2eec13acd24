/*
 * The filter form, the summary's group links and the address, kept in step (views.js says what a
 * view is). Any page with a list of roots can use it: the single hub's dashboard does, and the
 * fleet's page can (it needs the same form: see index.html).
 *
 *   var controls = new WorkflowHubControls.Controls(form, function (view) { ...redraw... });
 *   controls.view          the view shown now
 *   controls.groupHref(g)  the link of a summary group
 *
 * The form holds fields named q (search), state, reason and attention (a checkbox), and a reset
 * button; empty <select>s get their options here. The view lives in the address fragment: a
 * summary link is a plain fragment link (the browser adds the history entry), a change of a
 * select or the checkbox adds one, and typing in the search box adds one per search (the
 * following keystrokes replace it), so Back steps through the views the reader chose.
 */
(function (global) {
  "use strict";

  var Views = global.WorkflowHubViews;

  var words = Views.words; // options read in words ("waiting for input"), valued raw

  function fillOptions(select, values, anyLabel) {
    if (!select || select.options.length) return;
    var any = document.createElement("option");
    any.value = "";
    any.textContent = anyLabel;
    select.appendChild(any);
    values.forEach(function (value) {
      var option = document.createElement("option");
      option.value = value;
      option.textContent = words(value);
      select.appendChild(option);
    });
  }

  function Controls(form, onChange) {
    this.form = form;
    this.onChange = onChange;
    this.view = Views.parseView(window.location.hash);
    this._typing = false; // the current history entry is a search being typed
    var fields = form.elements;
    fillOptions(fields.namedItem("state"), Views.STATES, "any state");
    fillOptions(fields.namedItem("reason"), Views.REASONS, "any reason");
    this._fill();

    var self = this;
    form.addEventListener("submit", function (submit) {
      submit.preventDefault(); // Enter in the search box: the view is already applied
      self._typing = false;
    });
    form.addEventListener("input", function (event) {
      if (event.target.name === "q") self._fromForm(self._typing ? "replace" : "push", true);
    });
    form.addEventListener("change", function (event) {
      if (event.target.name === "q") {
        self._typing = false; // the search is done (Enter, or focus left the box)
      } else {
        self._fromForm("push", false);
      }
    });
    form.addEventListener("reset", function () {
      // After the browser has cleared the fields.
      window.setTimeout(function () {
        self._apply(Views.emptyView(), "push", false);
      }, 0);
    });
    window.addEventListener("hashchange", function () { self._fromAddress(); });
    window.addEventListener("popstate", function () { self._fromAddress(); });
  }

  Controls.prototype.groupHref = function (group) {
    var view = Views.emptyView();
    view.group = group;
    return Views.formatView(view) || "#";
  };

  Controls.prototype._fromForm = function (how, typing) {
    var fields = this.form.elements;
    var view = Views.emptyView();
    view.group = this.view.group; // the summary's choice stays until another link or Clear
    view.q = fields.namedItem("q").value.slice(0, 200);
    view.state = fields.namedItem("state").value;
    view.reason = fields.namedItem("reason").value;
    view.attention = fields.namedItem("attention").checked;
    this._apply(view, how, typing);
  };

  Controls.prototype._apply = function (view, how, typing) {
    if (Views.sameView(view, this.view)) return;
    this.view = view;
    this._typing = typing;
    var address = window.location.pathname + window.location.search + Views.formatView(view);
    if (how === "replace") window.history.replaceState(null, "", address);
    else window.history.pushState(null, "", address);
    this.onChange(view);
  };

  Controls.prototype._fromAddress = function () {
    var view = Views.parseView(window.location.hash);
    this._typing = false;
    if (Views.sameView(view, this.view)) return;
    this.view = view;
    this._fill();
    this.onChange(view);
  };

  Controls.prototype._fill = function () {
    var fields = this.form.elements;
    var q = fields.namedItem("q");
    if (q.value !== this.view.q) q.value = this.view.q;
    fields.namedItem("state").value = this.view.state;
    fields.namedItem("reason").value = this.view.reason;
    fields.namedItem("attention").checked = this.view.attention;
  };

  global.WorkflowHubControls = { Controls: Controls };
})(typeof globalThis !== "undefined" ? globalThis : this);
