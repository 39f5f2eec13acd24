/*
 * The filter form, the summary's group links and the address, kept in step (views.js says what a
 * view is). Any page with a list of roots can use it: the single hub's dashboard does, and the
 * fleet's page can (it needs the same form: see index.html).
 *
 *   var controls = new WorkflowHubControls.Controls(form, function (view) { ...redraw... });
 *   controls.view          the view shown now
 *   controls.groupHref(g)  the link of a summary group
 *
 * The form holds fields named q (search), state, reason, labels (optional: "team:infra, env:prod",
 * comma-separated, all must hold) and attention (a checkbox), and a reset
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

  /* The labels typed in the box: "team:infra, env:prod"; spaces around a key or a value are
     not part of it. */
  function typedLabels(value) {
    return Views.parseLabels(value.split(",").map(function (text) {
      var at = text.indexOf(":");
      return at < 0 ? text : text.slice(0, at).trim() + ":" + text.slice(at + 1).trim();
    }));
  }

  function Controls(form, onChange) {
    this.form = form;
    this.onChange = onChange;
    this.view = Views.parseView(window.location.hash);
    this._labelsFromQuery();
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
      var name = event.target.name;
      if (name === "q" || name === "labels") self._fromForm(self._typing ? "replace" : "push", true);
    });
    form.addEventListener("change", function (event) {
      if (event.target.name === "q" || event.target.name === "labels") {
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

  /*
   * `?label=team:infra&label=env:prod` in the query (a link made by hand or by another page) is
   * a view's labels too: they join the fragment's, and the query loses them at once, so that
   * the address holds the view in one place and Clear clears it.
   */
  Controls.prototype._labelsFromQuery = function () {
    var url = new URL(window.location.href);
    var given = url.searchParams.getAll("label");
    if (!given.length) return;
    url.searchParams.delete("label");
    var view = this.view;
    view.labels = Views.parseLabels(view.labels.concat(given));
    window.history.replaceState(null, "", url.pathname + url.search + Views.formatView(view));
  };

  /* The roots that carry `label` ("key:value") too: a label on a card narrows the view. */
  Controls.prototype.addLabel = function (label) {
    var view = Object.assign({}, this.view);
    view.labels = Views.parseLabels(this.view.labels.concat([label]));
    this._apply(view, "push", false);
    this._fill();
  };

  Controls.prototype._fromForm = function (how, typing) {
    var fields = this.form.elements;
    var view = Views.emptyView();
    view.group = this.view.group; // the summary's choice stays until another link or Clear
    view.q = fields.namedItem("q").value.slice(0, 200);
    view.state = fields.namedItem("state").value;
    view.reason = fields.namedItem("reason").value;
    view.attention = fields.namedItem("attention").checked;
    var labels = fields.namedItem("labels");
    if (labels) {
      view.labels = typedLabels(labels.value);
    } else {
      view.labels = this.view.labels;
    }
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
    var labels = fields.namedItem("labels");
    // The box keeps what is being typed while it means the same labels.
    if (labels && typedLabels(labels.value).join("\n") !== this.view.labels.join("\n")) {
      labels.value = this.view.labels.join(", ");
    }
  };

  global.WorkflowHubControls = { Controls: Controls };
})(typeof globalThis !== "undefined" ? globalThis : this);
