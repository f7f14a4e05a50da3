/* MEDAL Explorer's viewer, part 4 of 4 (the Compare view, two runs side by side, and the closure's exports): medal/viewer/html_page.py joins
 * viewer-core.js, viewer-tree.js, viewer-views.js and viewer-compare.js, in that order,
 * into one script; this file is not a script of its own. */
  /* ------------------------------------------------------------------ compare (issue 19)
   * Two runs side by side on one timeline: two viewers, stepped together by one shared
   * timeline whose rows align the runs' positions (medal/compare.py), a "Where they part"
   * panel and the answers, verdicts and costs side by side. Every string from a trace is
   * written with textContent. */
  function Compare(root, data, opts) {
    this.root = root; this.opts = opts || {}; this.data = data;
    this.rows = data.rows || []; this.row = 0; this.timer = null; this.playing = false;
    this.build();
  }
  Compare.prototype.build = function () {
    var self = this, r = this.root, d = this.data, names = d.names || ["A", "B"];
    r.textContent = ""; r.classList.add("mv", "mv-cmp"); r.tabIndex = -1;
    var E = this.el = {};
    E.tip = tips(r, function () { return E.caption; });
    E.head = h("div", "mv-cmp-head");
    E.head.append(h("b", "", "Compare: "), h("span", "mv-cmp-name", names[0]), h("span", "", " vs "),
                  h("span", "mv-cmp-name", names[1]), h("span", "mv-muted mv-cmp-verdict", "  ·  " + (d.verdict || "")));
    E.controls = h("div", "mv-controls mv-cmp-controls");
    function button(name, label, title, fn) {
      var b = tipped(h("button", "mv-btn mv-" + name, label), title);
      b.type = "button"; b.onclick = function () { ACTIVE = self; fn(); };
      E[name] = b; E.controls.appendChild(b); return b;
    }
    button("first", "|◀ Start", "Both runs back to the first position (Home)", function () { self.stop(); self.go(0); });
    button("prev", "◀ Previous", "One position back on the shared timeline (←)", function () { self.stop(); self.step(-1); });
    button("next", "Next phase ▶", "One position on, in both runs (→)", function () { self.stop(); self.step(1); });
    button("play", "▶ Play", "Step both runs on by themselves (Space)", function () { self.toggle(); });
    button("end", "Run to end ▶|", "Both runs at their last position (End)", function () { self.stop(); self.toEnd(); });
    if (d.part) button("toPart", "Where they part ◆", "To the first position where the runs differ", function () { self.stop(); self.go(d.part.row); });
    E.status = h("span", "mv-status"); E.controls.appendChild(E.status);
    E.slider = h("input", "mv-slider mv-cmp-slider"); E.slider.type = "range"; E.slider.min = "0"; E.slider.step = "1";
    E.slider.max = String(Math.max(0, this.rows.length - 1));
    E.slider.setAttribute("aria-label", "Shared timeline: position of both runs");
    E.slider.oninput = function () { ACTIVE = self; self.stop(); self.go(Number(E.slider.value)); };
    E.caption = h("div", "mv-caption mv-cmp-caption");
    E.part = h("div", "mv-cmp-part"); this.drawPart();
    E.side = h("div", "mv-cmp-side"); this.drawSide();
    E.cols = h("div", "mv-cmp-cols");
    this.views = [];
    [0, 1].forEach(function (k) {
      var col = h("div", "mv-cmp-col"), title = h("div", "mv-cmp-title", names[k]), box = h("div", "mv-cmp-view");
      col.dataset.side = k ? "b" : "a";
      col.append(title, box); E.cols.appendChild(col);
      var v = new Viewer(box, {host: "compare", onTab: function (name) { self.syncTab(k, name); }});
      v.load(k ? d.b : d.a);
      self.views.push(v);
    });
    r.append(E.head, E.controls, E.slider, E.caption, E.part, E.side, E.cols);
    ["pointerdown", "focusin", "click"].forEach(function (ev) { r.addEventListener(ev, function () { ACTIVE = self; }); });
    ACTIVE = this;
    this.go(0);
  };
  Compare.prototype.syncTab = function (k, name) {
    if (this.syncing) return;
    this.syncing = true;
    try { var o = this.views[1 - k]; if (o.tab !== name) o.setTab(name); } finally { this.syncing = false; }
  };
  Compare.prototype.drawPart = function () {
    var p = this.el.part, d = this.data, part = d.part, names = d.names || ["A", "B"];
    p.textContent = "";
    p.appendChild(h("h4", "", "Where they part"));
    if (!part) { p.appendChild(h("p", "mv-ok", "Nowhere: the two runs are identical (timing and environment aside).")); return; }
    p.appendChild(h("p", "", "At row " + (part.row + 1) + " of the shared timeline: " + (part.label || "")
      + " (" + (part.phase || "") + ")" + (part.within_tolerance ? ", within the float tolerance" : "")));
    var cause = h("p", "mv-cmp-cause"); cause.append(h("b", "", "Why: " + (part.cause || "")),
      h("span", "", part.near_tie ? "  (a near tie: equal to float32 rounding)" : ""));
    p.appendChild(cause);
    p.appendChild(h("p", "mv-cmp-expl", part.explanation || ""));
    var keys = [];
    [part.a || {}, part.b || {}].forEach(function (o) { Object.keys(o).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
    if (keys.length) {
      var rows = keys.map(function (k) {
        var row = {"": k}; row[names[0]] = fmtAny((part.a || {})[k]); row[names[1]] = fmtAny((part.b || {})[k]); return row;
      });
      p.appendChild(table(rows, ["", names[0], names[1]], "mv-cmp-choice"));
    }
    (part.paths || []).forEach(function (x) { p.appendChild(h("div", "mv-detail", x[0] + ": " + fmtAny(x[1]) + " → " + fmtAny(x[2]))); });
  };
  function fmtAny(v) {
    if (v === null || v === undefined) return "–";
    if (Array.isArray(v)) return v.map(fmtAny).join(", ");
    if (typeof v === "object") v = JSON.stringify(v);
    v = fmt(v);
    return typeof v === "string" && v.length > 240 ? v.slice(0, 239) + "…" : v;
  }
  Compare.prototype.drawSide = function () {
    var p = this.el.side, d = this.data, names = d.names || ["A", "B"];
    p.textContent = "";
    p.appendChild(h("h4", "", "Side by side"));
    var rows = (d.side || []).map(function (x) {
      var row = {"": x[0]}; row[names[0]] = fmtAny(x[1]); row[names[1]] = fmtAny(x[2]); return row;
    });
    Object.keys(d.config || {}).forEach(function (k) {
      var row = {"": "config " + k}; row[names[0]] = fmtAny(d.config[k][0]); row[names[1]] = fmtAny(d.config[k][1]); rows.push(row);
    });
    var t = table(rows, ["", names[0], names[1]], "mv-cmp-table");
    Array.prototype.forEach.call(t.querySelectorAll("tbody tr, tr"), function (tr) {
      var c = tr.children; if (c.length === 3 && c[0].tagName === "TD" && c[1].textContent !== c[2].textContent && c[0].textContent !== "seconds") tr.classList.add("mv-cmp-diff");
    });
    p.appendChild(t);
    if (d.phases) p.appendChild(h("p", "mv-muted", "Phases: " + Object.keys(d.phases).map(function (k) { return k + " " + d.phases[k]; }).join(", ")));
  };
  // the position each run shows at a row: its own, or (where it has none) its latest before
  Compare.prototype.sideAt = function (r, k) {
    for (var i = r; i >= 0; i--) if (this.rows[i][k] !== null && this.rows[i][k] !== undefined) return this.rows[i][k];
    for (i = r + 1; i < this.rows.length; i++) if (this.rows[i][k] !== null && this.rows[i][k] !== undefined) return this.rows[i][k];
    return 0;
  };
  Compare.prototype.n = function () { return this.rows.length; };
  Compare.prototype.go = function (r) {
    var n = this.n(), E = this.el, self = this, d = this.data, names = d.names || ["A", "B"];
    if (!n) return;
    r = Math.max(0, Math.min(n - 1, r)); this.row = r;
    this.views.forEach(function (v, k) { v.go(self.sideAt(r, k)); });
    E.slider.value = String(r);
    var lab = (d.labels || [])[r] || [null, null];
    E.caption.textContent = "";
    E.caption.append(h("span", "", "row " + (r + 1) + " of " + n + " · "),
      h("span", "mv-cmp-la", names[0] + ": " + (lab[0] === null ? "(no such position; its latest shown)" : lab[0])), h("span", "", " · "),
      h("span", "mv-cmp-lb", names[1] + ": " + (lab[1] === null ? "(no such position; its latest shown)" : lab[1])));
    var parted = d.part && d.part.row !== null && r >= d.part.row;
    if (d.part && r === d.part.row) E.caption.appendChild(h("b", "mv-bad", "  ◆ they part here: " + (d.part.cause || "")));
    else if (parted) E.caption.appendChild(h("span", "mv-muted", "  (after they part)"));
    E.prev.disabled = r <= 0; E.first.disabled = r <= 0; E.next.disabled = r >= n - 1; E.end.disabled = r >= n - 1;
    this.root.dataset.row = String(r); this.root.dataset.rows = String(n);
    if (this.opts.onShow) this.opts.onShow(r, n);
  };
  Compare.prototype.step = function (dr) { this.go(this.row + dr); };
  Compare.prototype.toEnd = function () { this.go(this.n() - 1); };
  Compare.prototype.toggle = function () {
    if (this.playing) { this.stop(); return; }
    if (this.row >= this.n() - 1) this.go(0);
    this.playing = true; this.el.play.textContent = "⏸ Pause"; this.schedule();
  };
  Compare.prototype.schedule = function () {
    var self = this;
    clearTimeout(this.timer);
    this.timer = setTimeout(function () {
      if (!self.playing) return;
      if (self.row >= self.n() - 1) { self.stop(); return; }
      self.step(1); self.schedule();
    }, 1000);
  };
  Compare.prototype.stop = function () {
    clearTimeout(this.timer); this.timer = null;
    if (this.playing) { this.playing = false; this.el.play.textContent = "▶ Play"; }
  };
  Compare.prototype.presenter = function (on) { this.root.classList.toggle("mv-presenter", !!on); };

  function mountCompare(root, data, opts) {
    var c = new Compare(root, data, opts);
    globalThis.__medalCompare = c;
    return c;
  }

  function unpack(b64) {
    var bin = atob(b64.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  function mount(root, data, opts) {
    var v = new Viewer(root, opts);
    if (data) v.load(data); else v.empty();
    globalThis.__medalViewer = v;
    return v;
  }

  globalThis.MedalViewer = {mount: mount, unpack: unpack, Viewer: Viewer, stores: STORES,
                            active: function () { return ACTIVE; }};
  globalThis.MedalViewer.compare = mountCompare;
  globalThis.MedalViewer.Compare = Compare;
})();
