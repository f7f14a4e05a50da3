/* MEDAL Explorer's viewer: one run's frames, stepped in the browser.
 *
 * Hosts: the Streamlit app (medal/viz/components.py), the self-contained HTML export and a
 * Jupyter notebook (medal/viewer/__init__.py). Python computes the frames; this file draws
 * them: header, tree (vis-network), task view, candidates, entropy heatmaps (SVG), unmasking
 * order, inspector, timeline, keys and play. Every string from a trace is written with
 * textContent (or SVG text nodes); the only HTML taken as HTML is the task view, built by
 * Python from escaped text. No network request is ever made.
 */
(function () {
  "use strict";
  if (globalThis.MedalViewer) return;

  var TABS = [["tree", "Tree"], ["answer", "Answer"], ["cands", "Candidates"],
              ["entropy", "Entropy"], ["order", "Unmasking order"], ["inspector", "Inspector"]];
  var VIRIDIS = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"];
  // the order strip: a rainbow whose first steps are far apart (purple, blue, cyan...)
  var STEPS = ["#30123b", "#4662d7", "#36aaf9", "#1ae4b6", "#72fe5e", "#c8ef34", "#faba39",
               "#f66b19", "#ca2a04", "#7a0403"];
  var PARTS = ["h", "n", "e", "s", "a", "g", "o", "v"];
  // a negative reward, explained where it appears (tooltip, inspector, legend)
  var NEG_RIG = "r_IG < 0: after this token the other masked slots are, in total, less certain than before it (the model's entropy rose), so the gain is negative.";
  // around the row of children a selection's leaf will have: their labels, r_IG and
  // completion lines included (11 characters at 15 px; 5 lines)
  var ROOM_X = 60, ROOM_Y = 110;
  var NARROW_PX = 760;
  var MIN_SCALE = 0.8;          // 12 px / 15 px labels: never smaller on screen when stepping
  var MAX_SCALE = 1.1;

  function lerp(t, stops) {
    t = Math.max(0, Math.min(1, t));
    var p = t * (stops.length - 1), i = Math.min(Math.floor(p), stops.length - 2), f = p - i;
    var a = stops[i], b = stops[i + 1], out = "#";
    for (var k = 1; k < 7; k += 2) {
      var v = Math.round(parseInt(a.substr(k, 2), 16) * (1 - f) + parseInt(b.substr(k, 2), 16) * f);
      out += (v < 16 ? "0" : "") + v.toString(16);
    }
    return out;
  }
  function ink(bg) {
    var r = parseInt(bg.substr(1, 2), 16), g = parseInt(bg.substr(3, 2), 16), b = parseInt(bg.substr(5, 2), 16);
    return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#000000" : "#ffffff";
  }
  function fmt(v, d) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "number") {
      if (!isFinite(v)) return v > 0 ? "∞" : "-∞";
      return Number.isInteger(v) ? String(v) : v.toFixed(d === undefined ? 4 : d);
    }
    if (v === true) return "yes";
    if (v === false) return "no";
    return String(v);
  }
  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  // The controls' tips: shown above the control after a short hover, never while or after
  // it is pressed (until the pointer leaves it). A browser's own tooltip (title) opens
  // under the pointer, so after every click on Next phase it covered the position line
  // below the controls (issue 18).
  var TIP_DELAY = 600;
  function tips(root, under) {
    var tip = h("div", "mv-tip"), timer = null, on = null;
    tip.setAttribute("role", "tooltip");
    root.appendChild(tip);
    function hide() { clearTimeout(timer); timer = null; tip.classList.remove("mv-tip-on"); }
    root.addEventListener("mouseover", function (e) {
      var b = e.target.closest ? e.target.closest("[data-tip]") : null;
      if (!b || b === on || b.closest(".mv") !== root) return;   // (a viewer inside Compare: its own)
      on = b; hide();
      if (b.dataset.pressed) return;
      timer = setTimeout(function () {
        if (on !== b || b.dataset.pressed || !b.isConnected) return;
        tip.textContent = b.dataset.tip;
        var rb = root.getBoundingClientRect(), bb = b.getBoundingClientRect();
        tip.classList.add("mv-tip-on");
        var w = tip.offsetWidth, ht = tip.offsetHeight;
        var x = Math.max(0, Math.min(bb.left - rb.left, rb.width - w));
        var y = bb.top - rb.top - ht - 6;
        if (bb.top - ht - 6 < 0) {       // no room above on screen: below the position line
          var low = under && under();
          y = (low ? low.getBoundingClientRect().bottom : bb.bottom) - rb.top + 6;
        }
        tip.style.left = x + "px"; tip.style.top = y + "px";
      }, TIP_DELAY);
    });
    root.addEventListener("mouseout", function (e) {
      if (!on || (e.relatedTarget && on.contains(e.relatedTarget))) return;
      if (e.target !== on && !on.contains(e.target)) return;
      delete on.dataset.pressed; on = null; hide();
    });
    root.addEventListener("pointerdown", function (e) {
      var b = e.target.closest ? e.target.closest("[data-tip]") : null;
      if (b) b.dataset.pressed = "1";
      hide();
    }, true);
    root.addEventListener("keydown", hide, true);
    return tip;
  }
  function tipped(el, text) {
    el.dataset.tip = text;
    el.setAttribute("aria-description", text);
    return el;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  // UCB = Q + c·√(ln N(parent) / N), worked through with the node's figures
  function ucbText(st) {
    if (st.pN === null || st.pN === undefined) return "— the root is never selected (selection starts below it), so it has no UCB.";
    var f = "Q + c·√(ln N(parent) / N) = " + fmt(st.Q) + " + " + st.c + "·√(ln " + st.pN + " / " + st.N + ")";
    if (st.N === 0) return f + " = ∞ — unvisited (N = 0): the next selection at its parent tries it before any visited sibling.";
    var bonus = st.c * Math.sqrt(Math.log(Math.max(st.pN, 1)) / st.N);
    return f + " = " + fmt(st.Q) + " + " + fmt(bonus) + " = " + fmt(st.Q + bonus);
  }
  function table(rows, cols, cls) {
    var t = h("table", "mv-table" + (cls ? " " + cls : "")), head = h("tr");
    cols.forEach(function (c) { head.appendChild(h("th", "", c)); });
    t.appendChild(head);
    rows.forEach(function (r) {
      var tr = h("tr");
      if (r._winner) tr.className = "mv-win";
      cols.forEach(function (c) { tr.appendChild(h("td", "", fmt(r[c]))); });
      t.appendChild(tr);
    });
    return t;
  }

  /* ------------------------------------------------------------------ the frames */
  // A store holds one run: the pool of distinct values and, per position, the full state
  // (part -> Map key -> pool index), rebuilt from the shared frames as they arrive.
  function Store(key) {
    this.key = key; this.pool = []; this.states = []; this.meta = {}; this.options = {};
    this.live = false; this.done = true; this.cursor = null; this.target = null;
  }
  Store.prototype.add = function (data) {
    if (data.pool_from !== this.pool.length && data.pool_from > this.pool.length) return false;
    if (data.frames_from > this.states.length) return false;
    this.pool.length = data.pool_from;
    for (var i = 0; i < data.pool.length; i++) this.pool.push(data.pool[i]);
    this.states.length = data.frames_from;
    for (var f = 0; f < data.frames.length; f++) {
      var prev = this.states.length ? this.states[this.states.length - 1] : null, st = {};
      var delta = data.frames[f];
      PARTS.forEach(function (p) {
        var ch = delta[p];
        if (!ch) { st[p] = prev ? prev[p] : new Map(); return; }
        var m = prev ? new Map(prev[p]) : new Map();
        for (var k = 0; k < ch.length; k += 2) {
          if (ch[k + 1] < 0) m.delete(ch[k]); else m.set(ch[k], ch[k + 1]);
        }
        st[p] = m;
      });
      this.states.push(st);
    }
    this.meta = data.meta || this.meta; this.options = data.options || this.options;
    this.live = !!data.live; this.done = data.done !== false;
    return true;
  };
  Store.prototype.get = function (i, part, key) {
    var idx = this.states[i][part].get(key);
    return idx === undefined ? undefined : this.pool[idx];
  };
  Store.prototype.items = function (i, part) {
    var out = [], pool = this.pool;
    this.states[i][part].forEach(function (idx, k) { out.push([k, pool[idx]]); });
    return out;
  };

  var STORES = globalThis.__medalStores || (globalThis.__medalStores = {});

  /* ------------------------------------------------------------------ the viewer */
  function Viewer(root, opts) {
    this.root = root; this.opts = opts || {};
    this.request = this.opts.request || null;
    this.store = null; this.pos = 0; this.tab = this.opts.tab || globalThis.__medalTab || "tree";
    this.timer = null; this.playing = false; this.shownTree = {n: new Map(), e: new Map()};
    this.tips = {}; this.notes = {};
    this.selected = null; this.drawn = {}; this.seq = 0; this.padding = false;
    this.opened = new Set(); this.foldAll = false; this.foldCount = 0;
    this.build();
  }

  Viewer.prototype.build = function () {
    var self = this, r = this.root;
    r.textContent = "";
    r.classList.add("mv");
    r.tabIndex = -1;
    this.el = {};
    var E = this.el;
    E.problem = h("div", "mv-problem");
    E.controls = h("div", "mv-controls");
    function button(name, label, title, fn) {
      var b = tipped(h("button", "mv-btn mv-" + name, label), title);
      b.type = "button"; b.onclick = function () { ACTIVE = self; fn(); };
      E[name] = b; E.controls.appendChild(b); return b;
    }
    button("first", "|◀ Start", "Back to the first position (Home)", function () { self.stop(); self.go(0); });
    button("prev", "◀ Previous", "One position back (←)", function () { self.stop(); self.step(-1); });
    button("next", "Next phase ▶", "One position on (→): an MCTS phase, the candidate choice or a decoding step", function () { self.stop(); self.step(1); });
    button("iter", "Next iteration ▶▶", "To the end of the next MCTS iteration", function () { self.stop(); self.nextIteration(); });
    button("play", "▶ Play", "Step on by itself at the chosen speed (Space)", function () { self.toggle(); });
    button("end", "Run to end ▶|", "To the last position (End); a live run runs to its end", function () { self.stop(); self.toEnd(); });
    E.speed = h("select", "mv-speed");
    [["2000", "0.5/s"], ["1000", "1/s"], ["500", "2/s"], ["250", "4/s"], ["100", "10/s"]].forEach(function (o) {
      var op = h("option", "", o[1]); op.value = o[0]; if (o[0] === "1000") op.selected = true; E.speed.appendChild(op);
    });
    tipped(E.speed, "Play speed (positions per second)");
    E.speed.onchange = function () { if (self.playing) { self.stop(); self.toggle(); } };
    E.controls.appendChild(E.speed);
    if (this.request) {
      button("stopRun", "Stop", "Stop a live run that is running to its end", function () { self.stop(); self.ask("stop", {}); });
      button("reset", "Reset", "Discard the live run; the next step starts a new one with the sidebar's settings", function () { self.stop(); self.ask("reset", {}); });
    }
    button("presenter", "Presenter", "Full window, large type (Esc leaves)", function () { self.presenter(); });
    E.status = h("span", "mv-status");
    E.controls.appendChild(E.status);
    E.slider = h("input", "mv-slider"); E.slider.type = "range"; E.slider.min = "0"; E.slider.step = "1";
    E.slider.setAttribute("aria-label", "Timeline: position");
    E.slider.oninput = function () { ACTIVE = self; self.stop(); self.go(Number(E.slider.value)); };
    E.progress = h("div", "mv-progress"); E.bar = h("div", "mv-bar"); E.bar.appendChild(h("div"));
    E.caption = h("span", "mv-caption"); E.progress.append(E.bar, E.caption);
    E.phase = h("div", "mv-phase"); E.title = h("span", "mv-title"); E.cycle = h("span", "mv-cycle");
    E.phase.append(E.title, E.cycle);
    E.expl = h("div", "mv-expl"); E.detail = h("div", "mv-detail");
    E.tabs = h("div", "mv-tabs"); E.tabs.setAttribute("role", "tablist");
    E.panels = {};
    TABS.forEach(function (t) {
      var b = h("button", "mv-tab", t[1]); b.type = "button"; b.dataset.tab = t[0];
      b.setAttribute("role", "tab");
      b.onclick = function () { ACTIVE = self; self.setTab(t[0]); };
      E.tabs.appendChild(b);
      var p = h("div", "mv-panel"); p.dataset.tab = t[0]; E.panels[t[0]] = p;
    });
    E.nodeLine = h("div", "mv-node-line");
    E.treeBox = h("div", "mv-tree"); E.treeBox.id = "medal-tree";
    E.treeBar = h("div", "mv-treebar");
    E.fit = h("button", "mv-btn mv-fit", "Fit tree"); E.fit.type = "button";
    tipped(E.fit, "Show the whole tree");
    E.fit.onclick = function () { ACTIVE = self; self.fitAll(); };
    // go to node #id (issue 28 #7: a node named in the inspector, a diff or a talk, found
    // in a tree of hundreds)
    E.goto = h("form", "mv-goto");
    E.gotoIn = h("input", "mv-goto-in"); E.gotoIn.type = "text"; E.gotoIn.inputMode = "numeric";
    E.gotoIn.size = 5; E.gotoIn.placeholder = "#id"; E.gotoIn.setAttribute("aria-label", "Go to node number");
    E.gotoMsg = h("span", "mv-goto-msg");
    var gb = h("button", "mv-btn mv-goto-btn", "Go to node"); gb.type = "submit";
    E.goto.append(gb, E.gotoIn, E.gotoMsg);
    E.goto.onsubmit = function (e) { e.preventDefault(); ACTIVE = self; self.gotoNode(E.gotoIn.value); };
    // N and Q on the canvas, for a lecture (issue 28 #6): a line under each node's label
    E.nq = h("label", "mv-check mv-nq"); E.nqBox = h("input"); E.nqBox.type = "checkbox";
    E.nq.append(E.nqBox, h("span", "", " N, Q on the canvas"));
    E.nqBox.onchange = function () {
      ACTIVE = self; self.showNQ = E.nqBox.checked;
      self.shownTree.n = new Map();          // every node's label again
      if (self.store && self.store.states.length) self.drawTree(self.pos);
    };
    E.fold = h("label", "mv-check mv-fold"); E.foldBox = h("input"); E.foldBox.type = "checkbox";
    E.fold.append(E.foldBox, h("span", "", " fold low-visit leaves"));
    E.foldBox.onchange = function () {
      ACTIVE = self; self.foldAll = E.foldBox.checked; self.opened = new Set();
      if (self.store && self.store.states.length) self.drawTree(self.pos);
    };
    E.legend = h("div", "mv-legend"); E.treeBar.append(E.fit, E.goto, E.nq, E.fold, E.legend);
    E.panels.tree.append(E.nodeLine, E.treeBox, E.treeBar);
    var top = h("div", "mv-top");
    top.append(E.problem, E.controls, E.slider, E.progress, E.phase, E.expl, E.detail);
    r.append(top, E.tabs);
    TABS.forEach(function (t) { r.appendChild(E.panels[t[0]]); });
    // a narrow column (the app at 1024 px with its sidebar open: 564 px): a compact header,
    // so that the tree starts on the first screen (issue 28 #5: 495 px down a 768 px window)
    var narrow = function () { r.classList.toggle("mv-narrow", r.clientWidth > 0 && r.clientWidth < NARROW_PX); };
    narrow();
    if (typeof ResizeObserver !== "undefined") new ResizeObserver(narrow).observe(r);
    r.addEventListener("pointerdown", function () { ACTIVE = self; }, true);
    r.addEventListener("focusin", function () { ACTIVE = self; });
    E.tip = tips(r, function () { return E.progress; });
    ACTIVE = this;
  };

  /* -------------------------------------------------------------- data in */
  Viewer.prototype.load = function (data) {
    var store = STORES[data.key];
    if (!store || data.frames_from === 0 && data.pool_from === 0) {
      var old = store;
      store = new Store(data.key);
      if (old) { store.cursor = old.cursor; store.target = old.target; }
      STORES[data.key] = store;
    }
    if (!store.add(data)) return {need: {key: data.key, pool: store.pool.length, frames: store.states.length}};
    var fresh = this.store !== store;
    this.store = store;
    if (fresh) this.resetTree();
    var n = store.states.length, answered = null;
    if (data.ack !== undefined && data.ack !== null && data.ack === this.seq && this.pending) {
      // the host answered this viewer's request: go where it asked for
      var p = this.pending; this.pending = null; answered = p;
      if (p.op === "end") store.target = n - 1;
      else if (p.op === "iteration") store.target = this.iterationEnd(p.from);
      else if (p.op === "step") store.target = Math.max(p.want - 1, store.target === null ? 0 : store.target);
      else if (p.op === "reset") store.target = 0;
    }
    if (store.target === null || store.target === undefined) store.target = (store.cursor === null ? n - 1 : store.cursor);
    var want = Math.min(store.target, n - 1);
    this.show(Math.max(0, want), fresh);
    // presses that arrived while the host was busy: ask again for what is still missing --
    // but not what the host has just answered without reaching (a run stopped over its
    // budget, or failed): asking again would only repeat that answer, without end
    if (store.live && !store.done && store.target > n - 1 && !this.pending) {
      if (answered && answered.op === "step" && store.target <= answered.want - 1) store.target = n - 1;
      else this.ask("step", {want: store.target + 1});
    }
    if (this.playing && !this.timer) this.schedule();
    return {};
  };

  Viewer.prototype.ask = function (op, payload) {
    if (!this.request) return;
    this.seq += 1;
    payload = Object.assign({op: op, seq: this.seq, key: this.store ? this.store.key : null}, payload);
    this.pending = payload;
    this.request(payload);
    this.status("working…");
    if (this.el.stopRun && op !== "stop" && op !== "reset") this.el.stopRun.disabled = false;   // stop what it started
  };

  Viewer.prototype.status = function (text) { this.el.status.textContent = text || ""; };

  /* -------------------------------------------------------------- stepping */
  Viewer.prototype.n = function () { return this.store ? this.store.states.length : 0; };
  Viewer.prototype.canGrow = function () { return this.store ? (this.store.live && !this.store.done) : !!this.request; };

  Viewer.prototype.step = function (d) {
    var n = this.n();
    if (!this.store) { if (d > 0 && this.request) { this.ask("step", {want: 1}); } return; }
    var s = this.store, t = (s.target === null ? this.pos : s.target) + d;
    if (t < 0) t = 0;
    if (t > n - 1) {
      if (this.canGrow()) { s.target = t; this.ask("step", {want: t + 1}); return; }
      t = n - 1;
    }
    s.target = t;
    this.show(t);
  };
  Viewer.prototype.go = function (i) {
    if (!this.store) return;
    i = Math.max(0, Math.min(this.n() - 1, i));
    this.store.target = i; this.show(i);
  };
  Viewer.prototype.iterationEnd = function (from) {
    var n = this.n();
    for (var i = from + 1; i < n; i++) {
      var hd = this.store.get(i, "h", "0");
      if (hd && hd.iteration_end) return i;
    }
    return n - 1;
  };
  Viewer.prototype.nextIteration = function () {
    if (!this.store) { if (this.request) this.ask("iteration", {from: -1}); return; }
    var cur = this.store.target === null ? this.pos : this.store.target, n = this.n();
    var i = this.iterationEnd(cur);
    if (i > cur && (i < n - 1 || !this.canGrow() || this.store.get(i, "h", "0").iteration_end)) { this.go(i); return; }
    if (this.canGrow()) { this.ask("iteration", {from: cur}); return; }
    this.go(n - 1);
  };
  Viewer.prototype.toEnd = function () {
    if (this.canGrow()) { this.ask("end", {}); return; }
    this.go(this.n() - 1);
  };
  Viewer.prototype.toggle = function () {
    if (this.playing) { this.stop(); return; }
    if (!this.store && !this.request) return;
    if (this.store && this.pos >= this.n() - 1 && !this.canGrow()) this.go(0);
    this.playing = true;
    this.el.play.textContent = "⏸ Pause";
    this.root.dataset.playing = "1";
    this.schedule();
  };
  Viewer.prototype.schedule = function () {
    var self = this;
    clearTimeout(this.timer);
    this.timer = setTimeout(function () {
      self.timer = null;
      if (!self.playing) return;
      if (self.store && self.pos >= self.n() - 1 && !self.canGrow()) { self.stop(); return; }
      if (self.pending) return;        // a live step on its way: load() schedules the next
      self.step(1);
      if (!self.pending) self.schedule();
    }, Number(this.el.speed.value));
  };
  Viewer.prototype.stop = function () {
    clearTimeout(this.timer); this.timer = null;
    if (this.playing) { this.playing = false; this.el.play.textContent = "▶ Play"; delete this.root.dataset.playing; }
  };

  /* -------------------------------------------------------------- drawing */
  Viewer.prototype.show = function (i, fresh) {
    var s = this.store;
    if (!s || !s.states.length) { this.empty(); return; }
    i = Math.max(0, Math.min(s.states.length - 1, i));
    this.pos = i; s.cursor = i;
    var hd = s.get(i, "h", "0"), E = this.el, n = s.states.length;
    E.problem.textContent = "";
    E.problem.append(h("b", "", "Problem: "), h("span", "mv-prompt", s.meta.prompt || ""));
    E.problem.title = (s.meta.prompt || "");
    var m = s.meta;
    E.problem.appendChild(h("span", "mv-muted", "  ·  " + (m.strategy || "") + " · " + (m.model || "")
      + (m.lc !== undefined && m.lc !== null ? " · L_c=" + m.lc + ", C=" + m.C + ", c=" + m.c : "")));
    E.slider.max = String(n - 1); E.slider.value = String(i);
    E.bar.firstChild.style.width = Math.round(100 * (hd.progress || 0)) + "%";
    E.caption.textContent = "position " + (i + 1) + " of " + n + (s.live && !s.done ? "+" : "") + " · " + hd.caption;
    E.title.textContent = "Phase: " + hd.title + (hd.iteration ? " · iteration " + hd.iteration : "")
      + ((hd.kind === "decode" || hd.kind === "compare") && hd.label ? " · " + hd.label : "");
    E.cycle.textContent = "";
    if (hd.mcts) {
      ["selection", "expansion", "simulation", "backpropagation"].forEach(function (k, j) {
        if (j) E.cycle.appendChild(document.createTextNode(" → "));
        E.cycle.appendChild(h("span", k === hd.phase ? "mv-cur" : "mv-off", k));
      });
    }
    E.expl.textContent = hd.explanation;
    E.detail.textContent = hd.detail || "";
    var line = E.nodeLine; line.textContent = "";
    if (hd.answer) {
      line.append(h("b", "", "Answer: "), h("code", "mv-seq", hd.answer.text),
                  h("span", hd.answer.verified ? "mv-ok" : "mv-bad",
                    hd.answer.verified === true ? " ✓ correct" : hd.answer.verified === false ? " ✗ wrong" : ""));
    } else if (hd.partial !== null && hd.partial !== undefined) {
      var what = hd.tree && hd.tree.winner !== null && hd.tree.winner !== undefined && hd.focus === hd.tree.winner ? "winner" : "current node";
      line.append(h("b", "", "Partial answer of the " + what + " #" + hd.focus + ": "), h("code", "mv-seq", hd.partial));
    }
    var atHead = i >= n - 1, grow = this.canGrow();
    E.prev.disabled = i <= 0; E.first.disabled = i <= 0;
    E.next.disabled = atHead && !grow; E.iter.disabled = atHead && !grow; E.end.disabled = atHead && !grow;
    if (E.stopRun) { E.stopRun.disabled = !(s.live && !s.done); E.stopRun.style.display = s.live ? "" : "none"; E.reset.style.display = s.live ? "" : "none"; }
    if (!this.pending) this.status(s.live ? (s.done ? "live run finished" : "live run") : "");
    this.drawTree(i, fresh);
    this.drawn = {};
    this.drawTab();
    this.root.dataset.position = String(i);
    this.root.dataset.frames = String(n);
    if (this.opts.onShow) this.opts.onShow(i, n);
  };

  Viewer.prototype.empty = function () {
    var E = this.el, self = this;
    E.title.textContent = this.request ? "Not started" : "No run";
    E.expl.textContent = this.request ? "Press Next phase (→), Next iteration or Run to end to start a run with the settings in the sidebar." : "";
    E.problem.textContent = ""; E.detail.textContent = ""; E.caption.textContent = "";
    E.slider.max = "0"; E.slider.value = "0";
    E.nodeLine.textContent = ""; E.cycle.textContent = ""; E.legend.textContent = "";
    E.bar.firstChild.style.width = "0";
    [E.prev, E.first].forEach(function (b) { b.disabled = true; });
    [E.next, E.iter, E.end].forEach(function (b) { b.disabled = !self.request; });
    if (E.stopRun) { E.stopRun.disabled = true; E.stopRun.style.display = this.request ? "" : "none"; E.reset.style.display = E.stopRun.style.display; }
    this.drawn = {};
    TABS.forEach(function (t) { if (t[0] !== "tree") E.panels[t[0]].textContent = ""; });
    if (!this.pending) this.status("");
    this.resetTree();
    this.root.dataset.position = "-1"; this.root.dataset.frames = "0";
  };

  Viewer.prototype.setTab = function (name) {
    this.tab = name; globalThis.__medalTab = name;
    if (this.opts.onTab) this.opts.onTab(name);
    this.drawTab();
    if (name === "tree" && this.network) { this.network.redraw(); }
  };

  Viewer.prototype.drawTab = function () {
    var self = this, E = this.el;
    Array.prototype.forEach.call(E.tabs.children, function (b) {
      var on = b.dataset.tab === self.tab;
      b.classList.toggle("mv-on", on); b.setAttribute("aria-selected", on ? "true" : "false");
    });
    TABS.forEach(function (t) { E.panels[t[0]].style.display = t[0] === self.tab ? "" : "none"; });
    if (!this.store || !this.store.states.length || this.drawn[this.tab]) return;
    this.drawn[this.tab] = true;
    var i = this.pos, p = E.panels[this.tab];
    if (this.tab === "answer") this.drawAnswer(i, p);
    else if (this.tab === "cands") this.drawCandidates(i, p);
    else if (this.tab === "entropy") this.drawEntropy(i, p);
    else if (this.tab === "order") this.drawOrder(i, p);
    else if (this.tab === "inspector") this.drawInspector(i, p);
  };

  /* ---- the tree */
  Viewer.prototype.resetTree = function () {
    if (this.pan) { try { cancelAnimationFrame(this.pan.raf); } catch (e) { /* none */ } }
    this.pan = null; this.panning = false; this.lastDrawn = undefined;
    if (this.network) { this.network.destroy(); this.network = null; }
    this.gliding = null; this.opened = new Set();
    this.nodes = null; this.edges = null;
    this.shownTree = {n: new Map(), e: new Map()};
    this.tips = {}; this.notes = {};
    this.el.treeBox.textContent = "";
    this.el.treeBox.removeAttribute("data-drawn");
  };

  Viewer.prototype.ensureNetwork = function () {
    if (this.network) return;
    var self = this;
    this.nodes = new vis.DataSet([]); this.edges = new vis.DataSet([]);
    var opts = JSON.parse(JSON.stringify(this.store.options || {}));
    this.network = new vis.Network(this.el.treeBox, {nodes: this.nodes, edges: this.edges}, opts);
    this.network.on("click", function (p) {
      var id = p.nodes && p.nodes.length ? p.nodes[0] : null;
      if (typeof id === "number") { self.selected = id; self.setTab("inspector"); }
      else if (typeof id === "string" && id.indexOf("fold-") === 0) {     // open a folded group
        self.opened.add(Number(id.slice(5)));
        if (self.store && self.store.states.length) self.drawTree(self.pos);
      }
    });
    this.network.on("showPopup", function (id) { self.fillTip(id); });
    this.network.on("afterDrawing", function () {
      if (self.framedPending !== null) {     // framed before this drawing (drawTree)
        self.framedAt = self.framedPending;
        self.root.dataset.framed = String(self.framedPending);
        self.framedPending = null;
      }
      var f = self.toFrame;
      if (f && self.tab === "tree" && self.el.treeBox.clientWidth > 0) {
        self.toFrame = null;
        self.frame(f.info, f.force);
        self.framedAt = f.pos;
        self.root.dataset.framed = String(f.pos);
        self.whenFramed(f.pos);
      }
      self.el.treeBox.setAttribute("data-drawn", String(self.pos));
      globalThis.__medalTreeDrawn = {pos: self.pos, t: performance.now()};
    });
    globalThis.__medalTreeNetwork = this.network;
    globalThis.__medalTreeBox = this.el.treeBox;
    this.framed = false;
    this.framedPending = null;
  };

  // One drawing for everything a step changed: vis-network draws on its next animation
  // frame once for any number of requests (DataSet updates, a view moved). A step used to
  // draw synchronously and again on the next frame for the updates, and a third time
  // after framing (issue 18: step p90 <= 50 ms at 300 nodes).
  // A framing that glides is framed (framedAt) when the glide ends.
  Viewer.prototype.whenFramed = function (pos) {
    var self = this, g = this.pan;
    if (!g) return;
    this.framedPending = null;
    if (this.framedAt === pos) this.framedAt = null;
    g.done = function () { self.framedAt = pos; self.root.dataset.framed = String(pos); };
  };
  Viewer.prototype.requestDraw = function () {
    var em = this.network && this.network.body && this.network.body.emitter;
    if (em) em.emit("_requestRedraw"); else if (this.network) this.network.redraw();
  };

  Viewer.prototype.drawTree = function (i, fresh) {
    var s = this.store, st = s.states[i];
    if (!st.n.size) {
      if (this.network) this.resetTree();
      this.el.treeBox.classList.add("mv-notree");
      this.el.treeBox.textContent = "No search tree at this position (or for this strategy).";
      this.el.legend.textContent = "";
      return;
    }
    if (!this.network) { this.el.treeBox.textContent = ""; this.el.treeBox.classList.remove("mv-notree"); this.ensureNetwork(); }
    var pool = s.pool, self = this;
    // vis-network draws the whole canvas synchronously after every DataSet change (its
    // "startSimulation" with physics off): up to four drawings a step. Held back while
    // the step's changes go in, then drawn once (requestDraw).
    var em = this.network.body && this.network.body.emitter;
    if (em) em.emit("_blockRedraw");
    var changed = [], moved = [];
    this.settle();
    try {
    var view = this.folded(i, st);
    this.foldCount = view.count;
    ["n", "e"].forEach(function (part) {
      var shown = self.shownTree[part], want = view[part], ds = part === "n" ? self.nodes : self.edges;
      var gone = [], upd = [];
      // (a folded group's own items are not in the pool: their "index" is a signature)
      var itemOf = function (idx, k) { return typeof idx === "string" ? view.synth[k] : pool[idx]; };
      shown.forEach(function (idx, k) { if (!want.has(k)) gone.push(typeof idx === "string" ? k : pool[idx].id); });
      want.forEach(function (idx, k) {
        if (shown.get(k) !== idx) {
          var src = itemOf(idx, k), item = Object.assign({}, src);     // every style field: see Python
          if (part === "n") {
            item.title = self.tipFor(item.id); delete item.note; self.notes[item.id] = src.note;
            if (self.showNQ && typeof item.id === "number") {
              var fig = s.get(i, "s", String(item.id));
              if (fig) item.label += "\nN" + fig.N + " Q" + (fig.N > 0 ? fmt(fig.Q, 2) : "—");   // 9 characters: siblings 104 px apart
            }
            var was = ds.get(item.id);
            if (was && (was.x !== item.x || was.y !== item.y)) moved.push([item.id, was.x, was.y, item.x, item.y]);
          }
          upd.push(item);
        }
      });
      if (gone.length) ds.remove(gone);
      if (upd.length) ds.update(upd);
      if (part === "n") changed = upd;
      self.shownTree[part] = want;
    });
    this.freshBoxes(changed);
    if (moved.length) this.glide(moved);
    } finally { if (em) em.emit("_allowRedraw"); }
    var hd = s.get(i, "h", "0");
    // one step forwards or back glides the view to its new place; a jump (the slider,
    // Start, a node's link) moves it at once
    this.stepped = this.lastDrawn !== undefined && Math.abs(i - this.lastDrawn) === 1;
    this.lastDrawn = i;
    this.drawLegend(s.get(i, "v", "legend"));
    var force = !this.framed || fresh || (this.toFrame && this.toFrame.force);
    this.toFrame = {info: hd.tree || {}, force: force, pos: i};
    this.framed = true;
    if (this.tab === "tree" && this.el.treeBox.clientWidth > 0) {
      // framed now, before the drawing: frame() measures each node's box from its data
      // (nodeBox), which the DataSets already hold; the tree is then drawn once
      var f = this.toFrame; this.toFrame = null;
      this.frame(f.info, f.force);
      this.framedPending = f.pos;
      this.whenFramed(f.pos);
      this.requestDraw();
    } else {
      this.network.redraw();    // off screen or not sized yet: framed after the drawing
    }
  };

  // vis-network draws a node only when its stored box overlaps the view, and it stores a
  // node's box only when it draws it (or passes over it off screen): a node just added
  // has the empty box at the origin, one just moved or relabelled its old box. Such nodes
  // were left undrawn after a step (issue 28: 17 of 149 positions of the longer search,
  // the winner's star among them) until something else redrew the canvas. Every node a
  // step added or changed gets its box measured before the step's one drawing.
  Viewer.prototype.freshBoxes = function (items) {
    var net = this.network, body = net && net.body;
    if (!items.length || !body || !net.canvas || !net.canvas.getContext) return;
    var ctx = net.canvas.getContext();
    for (var k = 0; k < items.length; k++) {
      var bn = body.nodes[items[k].id];
      if (!bn || !bn.shape) continue;
      try { bn.resize(ctx); bn.updateBoundingBox(ctx, bn.selected); } catch (e) { /* a later vis-network: drawn on its next redraw */ }
    }
  };

  // In a live run the tidy layout is of the tree so far: a node may move as the tree
  // grows (a replay lays out the finished tree once; nothing moves). A moved node glides
  // from its old place to its new one in GLIDE_MS rather than jumping (issue 28 #3).
  var GLIDE_MS = 300;
  Viewer.prototype.glide = function (moved) {
    var self = this, body = this.network.body, t0 = performance.now();
    this.gliding = moved;
    moved.forEach(function (m) { var bn = body.nodes[m[0]]; if (bn) { bn.x = m[1]; bn.y = m[2]; } });
    function tick() {
      if (self.gliding !== moved || !self.network) return;
      var t = Math.min(1, (performance.now() - t0) / GLIDE_MS), e = t * t * (3 - 2 * t);
      moved.forEach(function (m) {
        var bn = body.nodes[m[0]];
        if (bn) { bn.x = m[1] + (m[3] - m[1]) * e; bn.y = m[2] + (m[4] - m[2]) * e; }
      });
      if (t < 1) { self.network.redraw(); requestAnimationFrame(tick); }
      else { self.gliding = null; self.requestDraw(); }
    }
    requestAnimationFrame(tick);
  };
  // a glide under way ends at once, its nodes where the data has them (a new step)
  Viewer.prototype.settle = function () {
    var g = this.gliding, body = this.network && this.network.body;
    this.gliding = null;
    if (!g || !body) return;
    g.forEach(function (m) { var bn = body.nodes[m[0]]; if (bn) { bn.x = m[3]; bn.y = m[4]; } });
  };

  // Folding (issue 28 #7): above FOLD_ABOVE drawn nodes (or always, with the tree bar's
  // checkbox), the low-visit leaves (N <= FOLD_N) of a node -- two or more, none on the
  // path, new, a candidate, the winner, weighed by a selection or selected -- are drawn as
  // one "+k" box where they would be; a click on it opens them for the rest of the run.
  var FOLD_ABOVE = 300, FOLD_N = 1;
  Viewer.prototype.folded = function (i, st) {
    var s = this.store, pool = s.pool, self = this, plain = {n: st.n, e: st.e, synth: {}, count: 0};
    var total = 0;
    st.n.forEach(function (idx) { if (typeof pool[idx].id === "number") total += 1; });
    if (!(this.foldAll ? total > 0 : total > FOLD_ABOVE)) return plain;
    var info = (s.get(i, "h", "0") || {}).tree || {};
    var keep = new Set([].concat(info.path || [], info.new || [], info.candidates || [], info.ucb || [],
                                 info.winner !== null && info.winner !== undefined ? [info.winner] : [],
                                 this.selected !== null && this.selected !== undefined ? [this.selected] : []));
    var kids = new Set(), parentOf = new Map();
    st.e.forEach(function (idx) {
      var e = pool[idx];
      kids.add(e.from);
      if (typeof e.to === "number") parentOf.set(e.to, e.from);
    });
    var groups = new Map();
    st.n.forEach(function (idx, k) {
      var n = pool[idx];
      if (typeof n.id !== "number" || keep.has(n.id) || kids.has(n.id)) return;
      var p = parentOf.get(n.id), f = s.get(i, "s", k);
      if (p === undefined || self.opened.has(p) || !f || f.N > FOLD_N) return;
      if (!groups.has(p)) groups.set(p, []);
      groups.get(p).push(n);
    });
    var N = new Map(st.n), E = new Map(st.e), synth = {}, count = 0;
    groups.forEach(function (list, p) {
      if (list.length < 2) return;
      var lo = Infinity, hi = -Infinity;
      list.forEach(function (n) { N.delete(String(n.id)); E.delete(p + "-" + n.id); lo = Math.min(lo, n.x); hi = Math.max(hi, n.x); });
      count += list.length;
      // at a folded child's own place (free: nodes are 104 px apart), the one nearest the
      // middle of the group -- a kept sibling may sit in the middle
      var mid = (lo + hi) / 2, x = list[0].x;
      list.forEach(function (n) { if (Math.abs(n.x - mid) < Math.abs(x - mid)) x = n.x; });
      var id = "fold-" + p, eid = id + "-e", y = list[0].y, grey = "#8a8a8a";
      synth[id] = {id: id, label: "+" + list.length, x: x, y: y, shape: "box", size: 10,
                   note: list.length + " children of node #" + p + " with N <= " + FOLD_N + " folded (#" + list.map(function (n) { return n.id; }).join(", #") + "); click to open them",
                   color: {background: "#f2f2f2", border: grey, highlight: {background: "#f2f2f2", border: "#000000"}, hover: {background: "#f2f2f2", border: "#000000"}},
                   borderWidth: 1.5, borderWidthSelected: 2.5, shapeProperties: {borderDashes: [4, 3]},
                   font: {size: 15, background: "rgba(255,255,255,0)", color: "#444444"}};
      synth[eid] = {id: eid, from: p, to: id, width: 1, dashes: true,
                    color: {color: grey, highlight: grey, hover: grey, inherit: false, opacity: 1.0},
                    arrows: {to: {enabled: true, scaleFactor: 0.45}}};
      N.set(id, "F" + list.length + "@" + x);
      E.set(eid, "F" + p);
    });
    return {n: N, e: E, synth: synth, count: count};
  };

  // One tooltip element per node, written when it opens, from the figures shown now.
  Viewer.prototype.tipFor = function (id) {
    var t = this.tips[id];
    if (!t) { t = this.tips[id] = document.createElement("div"); t.className = "mv-nodetip"; }
    return t;
  };
  Viewer.prototype.fillTip = function (id) {
    var t = this.tips[id], s = this.store;
    if (!t || !s) return;
    var st = s.get(this.pos, "s", String(id)), card = s.get(this.pos, "a", String(id)), lines = [];
    if (card) lines.push(card.label);
    if (st) {
      lines.push("N = " + st.N + " · W = " + fmt(st.W) + " · Q = " + fmt(st.Q));
      lines.push("UCB = " + fmt(st.UCB) + " · r_IG = " + fmt(st.r_IG));
      if (typeof st.r_IG === "number" && st.r_IG < 0) lines.push(NEG_RIG);
      if (st.badges) lines.push(st.badges);
      if (st.outlier) lines.push("⚠ " + st.outlier);
    }
    if (card) lines.push(card.sequence);
    if (this.notes[id]) lines.push(this.notes[id]);
    t.textContent = lines.join("\n");
  };

  Viewer.prototype.box = function () {
    var b = this.el.treeBox;
    return {w: b.clientWidth || 800, h: b.clientHeight || 500};
  };
  // A node's box (node and label) from its own data: vis-network updates a box only when
  // it draws the node, and it does not draw nodes outside the view, so its boxes of
  // off-screen nodes can be stale (a label that grew a line since).
  Viewer.prototype.nodeBox = function (id) {
    var n = this.nodes.get(id);
    if (!n) return null;
    var lines = String(n.label || "").split("\n"), f = (n.font && n.font.size) || 16;
    var w = 0;
    lines.forEach(function (ln) { w = Math.max(w, Array.from(ln).length); });
    var half = Math.max(n.size || 10, (w * 0.62 * f + 8) / 2);
    return {left: n.x - half, right: n.x + half, top: n.y - (n.size || 10) - 2,
            bottom: n.y + (n.size || 10) + 4 + lines.length * f * 1.2};
  };
  Viewer.prototype.bounds = function (ids) {
    var l = Infinity, r = -Infinity, t = Infinity, b = -Infinity, self = this;
    ids.forEach(function (id) {
      var bb = self.nodeBox(id);
      if (!bb) return;
      l = Math.min(l, bb.left); r = Math.max(r, bb.right); t = Math.min(t, bb.top); b = Math.max(b, bb.bottom);
    });
    return l === Infinity ? null : {left: l, right: r, top: t, bottom: b};
  };
  Viewer.prototype.visibleAll = function (bb) {
    var net = this.network, box = this.box();
    var a = net.canvasToDOM({x: bb.left, y: bb.top}), z = net.canvasToDOM({x: bb.right, y: bb.bottom});
    return a.x >= -1 && a.y >= -1 && z.x <= box.w + 1 && z.y <= box.h + 1;
  };
  Viewer.prototype.moveTo = function (bb, minScale) {
    var box = this.box(), pad = 24;
    var k = Math.min((box.w - pad) / Math.max(1, bb.right - bb.left), (box.h - pad) / Math.max(1, bb.bottom - bb.top), MAX_SCALE);
    if (minScale !== undefined) k = Math.max(k, minScale);
    var cy = (bb.top + bb.bottom) / 2;
    // a small tree sits at the top of the box (its labels on the first screen), not centred
    if ((bb.bottom - bb.top) * k < box.h - pad) cy = bb.top + (box.h / 2 - pad) / k;
    this.viewTo((bb.left + bb.right) / 2, cy, k);
    return k;
  };
  // The view to (x, y) at scale k. Stepping by one position (frame() without force), a move is a
  // short glide (PAN_MS, eased in and out) rather than a jump, so the eye follows the path to its new
  // place (issue 28 #3); a new step, Fit, Go to node or a tab change ends a glide at its
  // target first. ``panning`` is true while one is under way.
  var PAN_MS = [180, 480];      // a glide's time: 180 ms, longer for a longer way (8 px a ms), 480 at most
  Viewer.prototype.viewTo = function (x, y, k) {
    var net = this.network, self = this;
    this.endPan();
    var c = net.getViewPosition(), k0 = net.getScale();
    var far = Math.hypot(x - c.x, y - c.y) * k;
    if (!this.panNext || (far < 2 && Math.abs(k / k0 - 1) < 1e-3) || typeof requestAnimationFrame !== "function") {
      net.moveTo({position: {x: x, y: y}, scale: k, animation: false});
      return;
    }
    var ms = Math.min(PAN_MS[1], Math.max(PAN_MS[0], 120 + far / 8));
    var t0 = null, g = this.pan = {x: x, y: y, k: k, raf: 0, done: null};
    this.panning = true;
    function tick(now) {
      if (self.pan !== g) return;
      if (t0 === null) t0 = now;
      var u = Math.min(1, (now - t0) / ms), e = u < 0.5 ? 2 * u * u : 1 - Math.pow(-2 * u + 2, 2) / 2;
      net.moveTo({position: {x: c.x + (x - c.x) * e, y: c.y + (y - c.y) * e}, scale: k0 + (k - k0) * e, animation: false});
      if (u < 1) { g.raf = requestAnimationFrame(tick); return; }
      self.pan = null; self.panning = false;
      if (g.done) g.done();
    }
    g.raf = requestAnimationFrame(tick);
  };
  // A glide under way ends at its target now.
  Viewer.prototype.endPan = function () {
    var g = this.pan;
    if (!g) return;
    this.pan = null; this.panning = false;
    try { cancelAnimationFrame(g.raf); } catch (e) { /* none */ }
    this.network.moveTo({position: {x: g.x, y: g.y}, scale: g.k, animation: false});
    if (g.done) g.done();
  };
  // Stepping frames what matters now: the path, the new children, the candidates and the
  // winner. The view moves only when one of them is outside it.
  Viewer.prototype.frame = function (info, force) {
    if (!this.network) return;
    this.endPan();
    this.panNext = !force && this.stepped;
    try { this.frameNow(info, force); } finally { this.panNext = false; }
  };
  Viewer.prototype.frameNow = function (info, force) {
    var drawn = this.nodes, have = function (id) { return drawn.get(id) !== null; };
    var win = info.winner !== null && info.winner !== undefined ? [info.winner] : [];
    // what to frame, most first: everything that matters now; without the candidates and
    // the siblings weighed by a selection; the newest node of the path and its children
    var leaf = (info.path || []).length ? info.path[info.path.length - 1] : null;
    var sets = [[].concat(info.path || [], info.new || [], info.candidates || [], win, info.ucb || []),
                [].concat(info.path || [], info.new || [], info.candidates || [], win),
                [].concat(info.path || [], info.new || [], win),
                [].concat((info.path || []).slice(-1), info.new || [], win),
                // a parent far from its new children (the layout never moves a node): the
                // children, the event of this phase
                (info.new && info.new.length ? info.new : (info.path || []).slice(-1)).concat(win)];
    var box = this.box(), chosen = null, boxes = [];
    // a tidy tree of the finished run spreads a node's children as wide as their subtrees
    // will grow: when they do not fit at a readable scale, the parent and its children
    // nearest to it, as many as fit
    if (leaf !== null && have(leaf) && info.new && info.new.length) sets.push(this.nearest(leaf, info.new.filter(have), box));
    var k0 = this.network.getScale(), keep = !force && k0 >= MIN_SCALE - 1e-6 && k0 <= MAX_SCALE + 1e-6;
    function fitsAt(bb, k) {
      return (bb.right - bb.left) * k <= box.w - 24 && (bb.bottom - bb.top) * k <= box.h - 24;
    }
    for (var k = 0; k < sets.length; k++) {
      var ids = sets[k].filter(have);
      if (!ids.length) continue;
      var bb = this.bounds(ids);
      if (!bb) continue;
      // a selection ends at a leaf that the expansion next draws children under: room for
      // them now (where it fits), so the view need not move again at the expansion
      if (info.room && leaf !== null && ids.indexOf(leaf) >= 0) {
        var wide = {left: Math.min(bb.left, info.room[0] - ROOM_X), right: Math.max(bb.right, info.room[1] + ROOM_X),
                    top: bb.top, bottom: Math.max(bb.bottom, info.room[2] + ROOM_Y)};
        if (!force && this.visibleAll(wide)) return;
        if (keep && fitsAt(wide, k0)) { this.panTo(wide, k0); return; }
      }
      if (!force && this.visibleAll(bb)) return;       // already in view: the view holds still
      // stepping: the scale holds and the view moves no further than it must (issue 28 #3:
      // it used to re-centre and re-zoom, 41 moves of over 300 px on the longer search)
      if (keep && fitsAt(bb, k0)) { this.panTo(bb, k0); return; }
      if (keep && fitsAt(bb, MIN_SCALE)) {      // zoomed out only as far as it must
        var kf = Math.min((box.w - 24) / Math.max(1, bb.right - bb.left), (box.h - 24) / Math.max(1, bb.bottom - bb.top));
        this.panTo(bb, Math.max(MIN_SCALE, Math.min(k0, kf))); return;
      }
      boxes.push(bb);
    }
    for (k = 0; k < boxes.length; k++) { chosen = boxes[k]; if (fitsAt(chosen, MIN_SCALE)) break; }
    if (!chosen) { chosen = this.bounds([info.root].filter(have)); if (!chosen) return; }
    this.moveTo(chosen, MIN_SCALE);
  };
  // ``from`` and the nearest of ``ids`` (by x) that fit with it in the box at MIN_SCALE
  Viewer.prototype.nearest = function (from, ids, box) {
    var self = this, x0 = this.nodes.get(from).x, out = [from];
    ids = ids.slice().sort(function (a, b) { return Math.abs(self.nodes.get(a).x - x0) - Math.abs(self.nodes.get(b).x - x0) || a - b; });
    for (var k = 0; k < ids.length; k++) {
      var bb = this.bounds(out.concat([ids[k]]));
      if ((bb.right - bb.left) * MIN_SCALE > box.w - 24 || (bb.bottom - bb.top) * MIN_SCALE > box.h - 24) break;
      out.push(ids[k]);
    }
    return out;
  };
  // The least move that brings ``bb`` inside the box at scale ``k`` (12 px clear of its
  // edges); ``bb`` wider than the box: its left part (the root's side) shown.
  Viewer.prototype.panTo = function (bb, k) {
    var box = this.box(), m = 12 / k, c = this.network.getViewPosition();
    var hw = box.w / 2 / k, hh = box.h / 2 / k, x = c.x, y = c.y;
    if (bb.right + m > x + hw) x = bb.right + m - hw;
    if (bb.left - m < x - hw) x = bb.left - m + hw;
    if (bb.bottom + m > y + hh) y = bb.bottom + m - hh;
    if (bb.top - m < y - hh) y = bb.top - m + hh;
    this.viewTo(x, y, k);
  };
  // The node with this id framed (centred, at a readable scale) and outlined; a node not
  // in the tree at this position, or hidden by the node cap, is said so.
  Viewer.prototype.gotoNode = function (text) {
    var E = this.el, id = parseInt(String(text).replace(/^\s*#/, ""), 10);
    E.gotoMsg.textContent = "";
    if (!isFinite(id)) { E.gotoMsg.textContent = "a node number, e.g. 12"; return false; }
    var st = this.store ? this.store.get(this.pos, "s", String(id)) : undefined;
    if (!this.network || !this.nodes || !this.nodes.get(id)) {
      E.gotoMsg.textContent = st ? "node #" + id + " is hidden at this position (fewer visits; see the legend)"
                                 : "node #" + id + " is not in the tree at this position";
      return false;
    }
    this.endPan();
    var n = this.nodes.get(id), k = Math.max(MIN_SCALE, Math.min(MAX_SCALE, this.network.getScale()));
    this.selected = id;
    this.network.moveTo({position: {x: n.x, y: n.y + 40}, scale: k, animation: false});
    this.outline(id);
    this.drawn = {};
    E.gotoMsg.textContent = "node #" + id + (st ? ": N = " + st.N + ", Q = " + fmt(st.Q) : "");
    this.requestDraw();
    return true;
  };
  Viewer.prototype.fitAll = function () {
    if (!this.network) return;
    var bb = this.bounds(this.nodes.getIds());
    if (bb) this.moveTo(bb);       // whole tree, at whatever scale it needs
  };

  Viewer.prototype.drawLegend = function (lg) {
    var L = this.el.legend; L.textContent = "";
    if (!lg) return;
    function key(el) { var k = h("span", "mv-k"); k.append.apply(k, el); L.appendChild(k); }
    if (lg.q) {
      var grad = h("span", "mv-grad"); grad.style.background = "linear-gradient(90deg," + lg.stops.join(",") + ")";
      key([h("span", "", "Q " + fmt(lg.q[0], 3) + " "), grad, h("span", "", " " + fmt(lg.q[1], 3) + " (this run's range; beyond it: end colour, ⇡/⇣)")]);
    } else key([h("span", "", "colour: Q (from iteration 1's simulation on)")]);
    function sw(colour, glyph, text, cls) { var g = h("span", cls || "", glyph); g.style.color = colour; key([g, h("span", "", " " + text)]); }
    sw(lg.colours.unvisited, "●", "unvisited"); key([h("span", "", "size: N")]);
    sw(lg.colours.path, "━", "current path"); sw(lg.colours.winner, "━", "winner's path");
    var d = h("span", "mv-dashed", "  "); d.style.borderColor = lg.colours["new"]; key([d, h("span", "", " new in this phase (dashed)")]);
    sw(lg.colours.candidate, "◆", "candidate"); sw(lg.colours.winner, "★", "winner");
    var sel = h("span", "mv-selbox", "  "); key([sel, h("span", "", " selected (inspector)")]);
    key([h("span", "", "#id: node id; UCB shown during a selection")]);
    key([h("span", "", "r=: a new child's reward r_IG (during a simulation; below 0: the other slots less certain after its token)")]);
    key([h("span", "", "⚠ r_IG outlier (tiny parent entropy)")]);
    var hid = h("span", "", "+k"); hid.style.color = "#777"; key([hid, h("span", "", " k nodes hidden below (fewer visits), dashed edge")]);
    if (this.showNQ) key([h("span", "", "N12 Q0.42 under a label: its visits N and mean reward Q")]);
    if (lg.clipped) key([h("b", "", "⇡⇣ " + lg.clipped + " node" + (lg.clipped > 1 ? "s" : "") + " with Q outside the scale (clipped)")]);
    if (lg.hidden) key([h("b", "", lg.hidden + " nodes hidden (showing " + (lg.total - lg.hidden) + " of " + lg.total + ")")]);
    if (this.foldCount) key([h("b", "", "+k boxes: " + this.foldCount + " low-visit leaves folded (click a box to open it)")]);
    var ts = this.store && this.store.meta && this.store.meta.tree;
    if (ts) {
      var shape = h("span", "mv-k mv-shape", "the run's tree: " + ts.nodes + " nodes, depth " + ts.depth + ", "
        + ts.expanded + " expanded (" + ts.branching + " children each on average); nodes per depth "
        + ts.per_level.join(" · ") + "; visits per depth " + ts.visits.join(" · "));
      L.appendChild(shape);
    }
  };

  /* ---- answer (task view) */
  Viewer.prototype.drawAnswer = function (i, p) {
    p.textContent = "";
    var html = this.store.get(i, "v", "task");
    if (!html) { p.appendChild(h("p", "mv-muted", "This task has no dedicated view: see the unmasking order.")); return; }
    var d = h("div", "mv-task"); d.innerHTML = html;   // built by Python from escaped text
    p.appendChild(d);
  };

  /* ---- candidates */
  Viewer.prototype.drawCandidates = function (i, p) {
    p.textContent = "";
    var c = this.store.get(i, "v", "cands");
    if (!c) { p.appendChild(h("p", "mv-muted", "The candidate comparison appears once the search has chosen a candidate (MEDAL strategies only).")); return; }
    if (c.tie) p.appendChild(h("p", "mv-warn", c.tie));
    var ul = h("ul", "mv-winners");
    Object.keys(c.winners).forEach(function (k) { ul.appendChild(h("li", "", "winner by " + k + ": " + c.winners[k])); });
    p.appendChild(ul);
    // bars: cumulative IG and Q on [0, 1]; a value outside is clipped and marked
    var bars = h("div", "mv-bars");
    c.rows.forEach(function (r) {
      var row = h("div", "mv-barrow" + (r._winner ? " mv-win" : ""));
      row.appendChild(h("span", "mv-barlabel", "node " + r.node + (r._winner ? " ★" : "")));
      [["cumulative IG", "_ig"], ["Q", "_q"]].forEach(function (kk) {
        var k = kk[0], v = r[kk[1]]; if (typeof v !== "number") return;
        var clipped = v > 1 || v < 0, w = Math.max(0, Math.min(1, v));
        var cell = h("span", "mv-barcell"), b = h("span", "mv-barfill" + (clipped ? " mv-clip" : ""));
        b.style.width = Math.round(160 * w) + "px";
        cell.append(h("span", "mv-barname", k + " "), b, h("span", "", " " + fmt(v, 3) + (clipped ? " (clipped)" : "")));
        row.appendChild(cell);
      });
      bars.appendChild(row);
    });
    p.appendChild(bars);
    var cols = Object.keys(c.rows[0] || {}).filter(function (k) { return k.charAt(0) !== "_"; });
    p.appendChild(table(c.rows, cols));
    if (c.slots) this.drawSlotComparison(c.slots, p);
    if (c.why) { var w = h("details", "mv-why"); w.appendChild(h("summary", "", "Why the winner won (the engine's account)")); w.appendChild(h("pre", "", c.why)); p.appendChild(w); }
  };

  /* the winner against the runner-up, slot by slot (medal.diff.compare_candidates) */
  Viewer.prototype.drawSlotComparison = function (sc, p) {
    var box = h("div", "mv-slotcmp");
    box.appendChild(h("h4", "", "Winner (node " + sc.a + ") against the runner-up (node " + sc.b + "), slot by slot"));
    box.appendChild(h("p", "", "Cumulative IG " + fmt(sc.ig[0], 4) + " against " + fmt(sc.ig[1], 4) +
      ": difference " + fmt(sc.difference, 4) + ". Each slot's IG part is (H runner-up − H winner) / Σ H at the root; the parts add up to the difference. " +
      "Slots whose token differs: " + (sc.differing.length ? sc.differing.join(", ") : "none") + "."));
    if (sc.rows.length) {
      var cols = Object.keys(sc.rows[0]);
      box.appendChild(table(sc.rows, cols, "mv-slottable"));
    }
    if (sc.more) box.appendChild(h("p", "mv-muted", "… and " + sc.more + " more slots with a smaller part (medal candidates TRACE " + sc.a + " " + sc.b + " lists every one)."));
    p.appendChild(box);
  };

  /* ---- entropy heatmaps (SVG) */
  Viewer.prototype.drawEntropy = function (i, p) {
    var self = this, s = this.store;
    p.textContent = "";
    var lab = h("label", "mv-check"), cb = h("input"); cb.type = "checkbox"; cb.checked = this.padding;
    cb.onchange = function () { self.padding = cb.checked; self.drawn.entropy = false; self.drawTab(); };
    lab.append(cb, h("span", "", " show the padding after the end of the answer"));
    p.appendChild(lab);
    var grids = [], zmax = 0;
    for (var g = 0; g < 2; g++) {
      var meta = s.get(i, "g", String(g));
      if (!meta) continue;
      var rows = [];
      for (var r = 0; r < meta.rows; r++) rows.push(s.get(i, "g", g + "/" + r));
      var keep = (this.padding || meta.end === null || meta.end === undefined) ? meta.x.length : Math.min(meta.x.length, meta.end + 1);
      rows.forEach(function (row) { row.h.slice(0, keep).forEach(function (v) { if (v !== null && v > zmax) zmax = v; }); });
      grids.push({meta: meta, rows: rows, keep: keep});
    }
    zmax = zmax || 1;
    var width = Math.max(480, (p.clientWidth || this.root.clientWidth || 900) - 10);
    grids.forEach(function (G) {
      // a long answer (LLaDA's 256 slots) wraps into bands of the slots that fit the
      // column at a readable cell width (16 px at least), each band with its own labels
      var cols = G.keep, left = 130, top = 24, avail = width - left - 20;
      var cw = Math.max(16, Math.min(34, Math.floor(avail / Math.max(1, cols))));
      var per = Math.max(1, Math.floor(avail / cw)), bands = Math.max(1, Math.ceil(cols / per));
      var ch = 20, nrows = Math.max(1, G.rows.length), labels = 62, gap = 12;
      var band = ch * nrows + labels + gap;
      var W = left + cw * Math.min(cols, per) + 20, H = top + band * bands + 12;
      var el = svg("svg", {width: W, height: H, "class": "mv-heat", "font-family": "sans-serif"});
      el.appendChild(svg("text", {x: left, y: 16, "font-size": 14, "font-weight": 600}, G.meta.title));
      if (!G.rows.length) el.appendChild(svg("text", {x: left, y: top + 14, "font-size": 12, fill: "#666"}, "(no step yet)"));
      for (var b = 0; b < bands; b++) {
        var c0 = b * per, c1 = Math.min(cols, c0 + per), y0 = top + b * band;
        G.rows.forEach(function (row, ri) {
          var y = y0 + ri * ch;
          el.appendChild(svg("text", {x: left - 6, y: y + ch / 2 + 4, "font-size": 12, "text-anchor": "end"}, row.y));
          for (var c = c0; c < c1; c++) {
            var v = row.h[c], x = left + (c - c0) * cw;
            var bg = v === null || v === undefined ? "#f4f4f4" : lerp(v / zmax, VIRIDIS);
            var rect = svg("rect", {x: x + 0.5, y: y + 0.5, width: cw - 1, height: ch - 1, fill: bg, "data-slot": c});
            rect.appendChild(svg("title", {}, row.y + " · slot " + G.meta.x[c] + (v === null || v === undefined ? " · unmasked" : " · H = " + v.toFixed(3))));
            el.appendChild(rect);
            var mk = row.m[c];
            if (mk) el.appendChild(svg("text", {x: x + cw / 2, y: y + ch / 2 + 4, "font-size": 12, "text-anchor": "middle",
              fill: v === null || v === undefined ? "#222" : ink(bg), "pointer-events": "none"}, mk.length > 3 ? mk.slice(0, 3) : mk));
          }
        });
        var yb = y0 + ch * nrows;
        for (var c = c0; c < c1; c++) {
          var x = left + (c - c0) * cw + cw / 2;
          el.appendChild(svg("text", {x: x, y: yb + 14, "font-size": 12, "text-anchor": "end",
            transform: "rotate(-55 " + x + " " + (yb + 14) + ")"}, G.meta.x[c]));
        }
      }
      var hidden = G.meta.x.length - cols;
      el.appendChild(svg("text", {x: left, y: H - 6, "font-size": 12, fill: "#555"}, "slot / token" + (bands > 1 ? " (" + bands + " bands of " + per + " slots)" : "") + (hidden ? " (" + hidden + " padding slots hidden)" : "")));
      p.appendChild(el);
    });
    var bar = h("div", "mv-colorbar"), grad = h("span", "mv-grad");
    grad.style.background = "linear-gradient(90deg," + VIRIDIS.join(",") + ")";
    bar.append(h("span", "", "entropy H: 0 "), grad, h("span", "", " " + zmax.toFixed(2)));
    p.appendChild(bar);
    p.appendChild(h("p", "mv-muted", "Entropy of every masked slot before each step (grey: already unmasked); the token in a cell is the one unmasked there. MEDAL's first rows are the search's commitments along the winner's path (during the search: the current path)."));
  };

  /* ---- unmasking order */
  Viewer.prototype.drawOrder = function (i, p) {
    var s = this.store; p.textContent = "";
    var meta = s.get(i, "o", "0");
    if (!meta) return;
    this.drawStep(i, p);
    var sel = this.selected, card = sel !== null ? s.get(i, "a", String(sel)) : null, marked = {};
    if (card) card.cells.forEach(function (c, k) { if (c[1] > 0) marked[k] = true; });
    ["m", "g"].forEach(function (tag, gi) {
      if (gi >= meta.names.length) return;
      var row = h("div", "mv-orow"); row.appendChild(h("div", "mv-oname", meta.names[gi]));
      var cells = h("div", "mv-ocells");
      for (var k = 0; ; k++) {
        var it = s.get(i, "o", tag + "/" + k);
        if (!it) break;
        var text = it[0], step = it[1], fl = it[2], sp;
        if (fl & 8) { sp = h("span", "mv-tok mv-fixed", text); sp.title = "slot " + k + ": fixed by the task's format"; }
        else if (step === null) { sp = h("span", "mv-tok mv-masked", "_"); sp.title = "slot " + k + ": still masked"; }
        else {
          var bg = lerp(step / Math.max(1, meta.steps - 1), STEPS);
          sp = h("span", "mv-tok", text === "" ? "∅" : text); sp.style.background = bg; sp.style.color = ink(bg);
          var sub = h("sub", "", step); sp.appendChild(sub);
          if (fl & 2) sp.classList.add("mv-tentative"); else if (fl & 1) sp.classList.add("mv-search");
          if (fl & 4) sp.classList.add("mv-after");
          sp.title = "slot " + k + " · step " + step + " · " + ((fl & 2) ? "current search path (not yet chosen)" : (fl & 1) ? "MCTS initialisation" : "decoding");
        }
        if (gi === 0 && marked[k]) sp.classList.add("mv-hl");
        cells.appendChild(sp);
      }
      row.appendChild(cells); p.appendChild(row);
    });
    var lg = h("div", "mv-muted"), a = h("span", "mv-tok", "0"), z = h("span", "mv-tok", "n");
    a.style.background = STEPS[0]; a.style.color = "#fff"; z.style.background = STEPS[STEPS.length - 1]; z.style.color = "#fff";
    var o = h("span", "mv-tok mv-search", "x"); o.style.background = "#fff";
    lg.append(h("span", "", "colour: step of unmasking "), a, h("span", "", " first → last "), z,
              h("span", "", "; "), o, h("span", "", " red outline: committed by the MCTS initialisation (dashed: the path the search is on); faded: after the end of the answer"));
    p.appendChild(lg);
    var summary = s.get(i, "v", "summary");
    if (summary && summary.length) p.appendChild(table(summary, Object.keys(summary[0])));
  };

  /* ---- a decoding step, as the field's demos show one (issue 28 #6): the answer with
   * each slot coloured by its state -- still masked, unmasked at this step, unmasked
   * earlier -- and the eligible slots' p, margin and score, the chosen marked */
  Viewer.prototype.drawStep = function (i, p) {
    var s = this.store, st = s.get(i, "v", "step");
    if (!st) return;
    var box = h("div", "mv-step");
    box.appendChild(h("h4", "", st.label + ": the answer at this step"));
    var now = {}; st.slots.forEach(function (k) { now[k] = true; });
    if (st.row) {
      var cells = h("div", "mv-cells mv-stepstrip");
      for (var k = 0; ; k++) {
        var it = s.get(i, "o", st.row + "/" + k);
        if (!it) break;
        var text = it[0], fl = it[2], sp;
        if (fl & 8) sp = h("span", "mv-tok mv-fixed", text);
        else if (now[k]) sp = h("span", "mv-tok mv-now", text === "" ? "∅" : text);
        else if (it[1] === null) sp = h("span", "mv-tok mv-masked", "_");
        else sp = h("span", "mv-tok mv-before", text === "" ? "∅" : text);
        sp.title = "slot " + k + ": " + ((fl & 8) ? "fixed by the task's format" : now[k] ? "unmasked at this step"
          : it[1] === null ? "still masked" : "unmasked earlier");
        cells.appendChild(sp);
      }
      box.appendChild(cells);
      var lg = h("div", "mv-muted mv-steplegend");
      [["mv-masked", "_", "still masked"], ["mv-now", "x", "unmasked at this step"], ["mv-before", "x", "unmasked earlier"]].forEach(function (c) {
        lg.append(h("span", "mv-tok " + c[0], c[1]), h("span", "", " " + c[2] + "   "));
      });
      box.appendChild(lg);
    }
    if (st.eligible.length) {
      var rows = st.eligible.slice().sort(function (a, b) { return (b.score || 0) - (a.score || 0); }).map(function (r) {
        return {slot: r.slot, p: r.p, margin: r.margin, score: r.score, "unmasked now": r.now ? "✓" : ""};
      });
      box.appendChild(h("p", "mv-muted", "The eligible slots (still masked, in the block being decoded), by score; the step unmasks the best:"));
      box.appendChild(table(rows, ["slot", "p", "margin", "score", "unmasked now"], "mv-eligible"));
    }
    p.appendChild(box);
  };

  /* ---- inspector */
  Viewer.prototype.drawInspector = function (i, p) {
    var self = this, s = this.store; p.textContent = "";
    var ids = s.items(i, "s").map(function (kv) { return Number(kv[0]); }).sort(function (a, b) { return a - b; });
    if (!ids.length) { p.appendChild(h("p", "mv-muted", "No search tree to inspect at this position.")); this.drawWhatIf(i, p, null); return; }
    var hd = s.get(i, "h", "0");
    var nid = this.selected;
    if (ids.indexOf(nid) < 0) nid = hd.tree && hd.tree.winner !== null && hd.tree.winner !== undefined && ids.indexOf(hd.tree.winner) >= 0 ? hd.tree.winner : (hd.focus !== null && ids.indexOf(hd.focus) >= 0 ? hd.focus : ids[ids.length - 1]);
    var pick = h("select", "mv-pick");
    ids.forEach(function (k) { var c = s.get(i, "a", String(k)); var o = h("option", "", c ? c.label : "node " + k); o.value = String(k); if (k === nid) o.selected = true; pick.appendChild(o); });
    pick.onchange = function () { self.selected = Number(pick.value); self.drawn = {}; self.drawTab(); self.outline(); };
    var lab = h("label", "", "Node (or click one in the tree): "); lab.appendChild(pick); p.appendChild(lab);
    var card = s.get(i, "a", String(nid)), st = s.get(i, "s", String(nid));
    p.appendChild(h("h4", "", "Node " + nid + (st ? ": " + st.badges : "")));
    if (st) {
      p.appendChild(table([st], ["N", "W", "Q", "UCB", "r_IG", "depth"]));
      p.appendChild(h("p", "mv-ucb", "UCB " + ucbText(st)));
      if (st.last) {
        var L = st.last, was = L[1] === 0 ? "∞" : fmt(L[2] + st.c * Math.sqrt(Math.log(Math.max(L[3], 1)) / L[1]));
        p.appendChild(h("p", "mv-muted", "The latest selection that considered it (iteration " + L[0] + ") saw N = " + L[1]
          + ", Q = " + fmt(L[2]) + ", parent N = " + L[3] + ": UCB " + was + (L[4] ? ", chosen" : "") + "."));
      }
      if (st.rig) p.appendChild(h("p", "mv-rig", "r_IG = (" + fmt(st.rig[0], 3) + " − " + fmt(st.rig[1], 3) + ") / " + fmt(st.rig[0], 3) + " = " + fmt(st.rig[2])));
      if (typeof st.r_IG === "number" && st.r_IG < 0) p.appendChild(h("p", "mv-muted mv-negrig", NEG_RIG));
      if (st.outlier) p.appendChild(h("p", "mv-warn", "⚠ " + st.outlier + "."));
    }
    if (card) {
      var seq = h("div", "mv-cells");
      seq.appendChild(h("span", "mv-oname", "sequence"));
      card.cells.forEach(function (c, k) {
        var sp = h("span", "mv-tok " + (c[1] === 2 ? "mv-own" : c[1] === 1 ? "mv-committed" : "mv-masked"), c[1] ? c[0] : "_");
        sp.title = "slot " + k + (c[1] === 2 ? ": this node's action" : c[1] === 1 ? ": committed on the path" : ": masked");
        seq.appendChild(sp);
      });
      p.appendChild(seq);
      if (card.cells.some(function (c) { return c[1] === 0 && c[0]; })) {
        var comp = h("div", "mv-cells"); comp.appendChild(h("span", "mv-oname", "completion"));
        card.cells.forEach(function (c) { comp.appendChild(h("span", "mv-tok " + (c[1] ? "mv-committed" : "mv-fill"), c[0] || "?")); });
        p.appendChild(comp);
      }
      p.appendChild(h("h4", "", "Action set (what expanding this node adds)"));
      if (card.actions.length) p.appendChild(table(card.actions, Object.keys(card.actions[0])));
      else p.appendChild(h("p", "mv-muted", "Empty: this node is terminal (L_c slots committed, or nothing eligible)."));
    }
    var c = s.get(i, "v", "cands");
    if (c && c.why) { p.appendChild(h("h4", "", "Candidate choice")); p.appendChild(h("p", "", c.why)); }
    this.drawWhatIf(i, p, nid);
    this.outline(nid);
  };
  Viewer.prototype.outline = function (nid) {
    if (!this.network) return;
    if (nid === undefined) nid = this.selected;
    try { if (nid !== null && nid !== undefined && this.nodes.get(nid)) this.network.selectNodes([nid]); } catch (e) { /* not drawn */ }
  };

  /* ---- what if… (issue 19): fork the run at the selected node or this decode step. In
   * the app the server runs the fork (the viewer asks it: op "whatif") and opens it beside
   * the original in the Compare view; elsewhere the command line that does it is shown. */
  Viewer.prototype.drawWhatIf = function (i, p, nid) {
    var self = this, s = this.store;
    if (!s || this.opts.host === "compare" || (s.live && !s.done)) return;
    var hd = s.get(i, "h", "0") || {}, atStep = hd.kind === "decode";
    if (nid === null && !atStep) return;
    var box = h("div", "mv-whatif");
    box.appendChild(h("h4", "", "What if…"));
    if (this.request) {
      box.appendChild(h("p", "mv-muted", "Force another token and see where the run goes: the fork runs on the server and opens beside this run, on one timeline."));
      if (nid !== null) {
        var bn = h("button", "mv-btn mv-whatif-node", "What if… at node " + nid); bn.type = "button";
        bn.title = "Force a (slot, token) at node " + nid + ", then search on or decode from there";
        bn.onclick = function () { ACTIVE = self; self.stop(); self.ask("whatif", {pos: i, node: nid}); };
        box.appendChild(bn);
      }
      if (atStep) {
        var bs = h("button", "mv-btn mv-whatif-step", "What if… at this decode step"); bs.type = "button";
        bs.title = "Force a (slot, token) at this decoding step, then decode on";
        bs.onclick = function () { ACTIVE = self; self.stop(); self.ask("whatif", {pos: i, step: true}); };
        box.appendChild(bs);
      }
    } else {
      box.appendChild(h("p", "mv-muted", "Fork this run on the command line, then compare the two:"));
      box.appendChild(h("code", "mv-detail", "python -m medal fork TRACE.json " + (nid !== null ? "--node " + nid : "--step K")
        + " --action SLOT:TOKEN --trace fork.json\npython -m medal diff TRACE.json fork.json --html compare.html"));
    }
    p.appendChild(box);
  };

  /* ---- presenter mode */
  Viewer.prototype.presenter = function (on) {
    var r = this.root;
    on = on === undefined ? !r.classList.contains("mv-presenter") : on;
    r.classList.toggle("mv-presenter", on);
    this.el.presenter.textContent = on ? "Leave presenter (Esc)" : "Presenter";
    var self = this;
    requestAnimationFrame(function () {
      if (!self.network || !self.store) return;
      self.network.setSize("100%", self.el.treeBox.clientHeight + "px");
      self.toFrame = {info: self.store.get(self.pos, "h", "0").tree || {}, force: true, pos: self.pos};   // afresh
      self.network.redraw();
    });
  };

  /* ------------------------------------------------------------------ keys */
  var ACTIVE = null;
  function textField(t) {
    if (!t) return false;
    var tag = (t.tagName || "").toLowerCase();
    if (tag === "textarea" || t.isContentEditable) return true;
    if (tag === "input") return ["range", "checkbox", "radio", "button", "submit", "reset", "file", "color"].indexOf((t.type || "text").toLowerCase()) < 0;
    return false;
  }
  var KEYS = {ArrowRight: 1, ArrowLeft: -1, " ": "play", Home: "first", End: "last"};
  function onKey(e) {
    var v = ACTIVE;
    if (!v || !v.root.isConnected) return;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    if (e.key === "Escape" && v.root.classList.contains("mv-presenter")) { v.presenter(false); return; }
    var a = KEYS[e.key];
    if (a === undefined) return;
    var t = (e.composedPath && e.composedPath()[0]) || e.target;
    if (textField(t)) return;
    e.preventDefault(); e.stopPropagation();
    if (e.type !== "keydown") return;
    if (a === 1 || a === -1) { v.stop(); v.step(a); }
    else if (a === "play") v.toggle();
    else if (a === "first") { v.stop(); v.go(0); }
    else if (a === "last") { v.stop(); v.toEnd(); }
  }
  if (!globalThis.__medalKeys) {
    globalThis.__medalKeys = true;
    window.addEventListener("keydown", function (e) { onKey(e); }, true);
    // Space on a focused button would click it on key-up: the key is the viewer's
    window.addEventListener("keyup", function (e) { if (e.key === " ") onKey(e); }, true);
  }

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
