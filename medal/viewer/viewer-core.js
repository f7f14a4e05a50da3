/* MEDAL Explorer's viewer: one run's frames, stepped in the browser.
 *
 * Hosts: the Streamlit app (medal/app/components.py), the self-contained HTML export and a
 * Jupyter notebook (medal/viewer). Python computes the frames; this script draws
 * them: header, tree (vis-network), task view, candidates, entropy heatmaps (SVG), unmasking
 * order, inspector, timeline, keys and play. Every string from a trace is written with
 * textContent (or SVG text nodes); the only HTML taken as HTML is the task view, built by
 * Python from escaped text. No network request is ever made.
 *
 * Part 1 of 4 (the frames' store, the viewer's shell, stepping, drawing a position):
 * medal/viewer/html_page.py joins viewer-core.js, viewer-tree.js, viewer-views.js and
 * viewer-compare.js, in that order, into one script (this part opens the closure that
 * viewer-compare.js closes).
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
  // Text from a trace (a token, a prompt, a node's sequence) may hold bidirectional
  // controls: an unclosed right-to-left override (U+202E) reversed the rest of its line
  // (issue 40). Text holding one is written as an isolate (FSI ... PDI, its own stray PDIs
  // dropped so that it cannot close an isolate around it): it turns only itself around.
  // viewer.css isolates the elements that hold trace text as well.
  var BIDI = /[\u202A-\u202E\u2066-\u2069]/;
  function bidiSafe(text) {
    var s = String(text);
    if (!BIDI.test(s)) return s;
    var depth = 0, out = "";
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      if (c >= 0x2066 && c <= 0x2068) depth += 1;
      else if (c === 0x2069) { if (depth === 0) continue; depth -= 1; }
      out += s[i];
    }
    return "\u2068" + out + "\u2069";
  }
  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = bidiSafe(text);
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
    if (text !== undefined) e.textContent = bidiSafe(text);
    return e;
  }
  // UCB = Q + c·√(ln N(parent) / N), worked through with the node's figures (the bonus
  // and the UCB as Python computed them, medal.scores.ucb_bonus / ucb: no arithmetic here)
  function ucbText(st) {
    if (st.pN === null || st.pN === undefined) return "— the root is never selected (selection starts below it), so it has no UCB.";
    var f = "Q + c·√(ln N(parent) / N) = " + fmt(st.Q) + " + " + st.c + "·√(ln " + st.pN + " / " + st.N + ")";
    if (st.N === 0) return f + " = ∞ — unvisited (N = 0): the next selection at its parent tries it before any visited sibling.";
    return f + " = " + fmt(st.Q) + " + " + fmt(st.bonus) + " = " + fmt(st.UCB);
  }
  // a long answer (256 slots of a real model's tokens) as a window of CLIP characters
  // around what is written (from just before the first written character: a partial
  // answer is mostly "_" masks) and a button that shows the whole; a short one as it is
  var CLIP = 120;
  function clipped(text) {
    if (text.length <= CLIP) return h("code", "mv-seq", text);
    var first = text.search(/[^_]/), start = first > 12 ? first - 12 : 0;
    var end = Math.min(text.length, start + CLIP);
    var code = h("code", "mv-seq", (start ? "…" : "") + text.slice(start, end) + (end < text.length ? "…" : ""));
    var wrap = h("span", ""), more = h("button", "mv-more", "show all (" + text.length + " characters)");
    more.onclick = function () { code.textContent = text; code.classList.add("mv-whole"); more.remove(); };
    wrap.append(code, " ", more);
    return wrap;
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
    tipped(E.fit, "Show the whole tree (a map of it when it is too large to read at once)");
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
    // the overview (issue 28 #7: a minimap in a corner of the tree's box; viewer-tree.js)
    E.treeWrap = h("div", "mv-treewrap");
    E.mini = h("canvas", "mv-mini"); E.mini.setAttribute("role", "img");
    E.mini.setAttribute("aria-label", "Overview of the whole tree: click or drag to move the view");
    tipped(E.mini, "Overview: every drawn node; the ringed dot is the current node, the red box the view. Click or drag to move the view there.");
    // the map (viewer-tree.js, paintMap): Fit on a tree too large to read whole
    E.mapWrap = h("div", "mv-map"); E.mapWrap.setAttribute("role", "dialog");
    E.mapWrap.setAttribute("aria-label", "Map of the whole tree");
    E.map = h("canvas", "mv-map-canvas"); E.map.setAttribute("role", "img");
    E.map.setAttribute("aria-label", "The whole tree: hover a node for its figures, click one to go there");
    E.mapTip = h("div", "mv-maptip"); E.mapNote = h("div", "mv-map-note");
    E.mapClose = h("button", "mv-btn mv-map-close", "Close map (Esc)"); E.mapClose.type = "button";
    E.mapWrap.append(E.map, E.mapTip, E.mapNote, E.mapClose);
    // an expansion's children out of view, named at the box's edge (viewer-tree.js, awayMarks)
    E.away = h("div", "mv-away"); E.away.setAttribute("role", "group");
    E.away.setAttribute("aria-label", "New children out of view");
    E.treeWrap.append(E.treeBox, E.away, E.mini, E.mapWrap);
    E.miniOn = h("label", "mv-check mv-mini-on"); E.miniOnBox = h("input"); E.miniOnBox.type = "checkbox";
    E.miniOnBox.checked = true;
    E.miniOn.append(E.miniOnBox, h("span", "", " overview"));
    E.miniOnBox.onchange = function () { ACTIVE = self; self.miniFrame(); };
    this.miniEvents();
    this.mapEvents();
    E.legend = h("div", "mv-legend"); E.treeBar.append(E.fit, E.goto, E.nq, E.fold, E.miniOn, E.legend);
    E.panels.tree.append(E.nodeLine, E.treeWrap, E.treeBar);
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
      var p = this.pending; this.pending = null; answered = p; this.retryMs = 0; this.retryIn(0);
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
    // the host is alive and has not answered this step yet: its silence counts from now
    if (this.retry && this.pending && this.pending.op === "step") this.retryIn(this.retryMs || RETRY_MS);
    if (this.playing && !this.timer) this.schedule();
    return {};
  };

  // A live step asked for and not answered is asked again after RETRY_MS of silence from
  // the host (then twice that, and so on): a request can be lost on its way (a trigger set
  // while the host's page was being rerun: under heavy load, 1 of 8 runs of the app's
  // live-press test kept "working…" for good with the host idle and the viewer waiting).
  // Only a step is asked again: it names the position it wants, so a repeat the host did
  // get changes nothing; an iteration would run a second one.
  var RETRY_MS = 3000;
  Viewer.prototype.ask = function (op, payload) {
    if (!this.request) return;
    this.seq += 1;
    payload = Object.assign({op: op, seq: this.seq, key: this.store ? this.store.key : null}, payload);
    this.pending = payload;
    this.retryIn(op === "step" ? (this.retryMs || RETRY_MS) : 0);
    this.request(payload);
    this.status("working…");
    if (this.el.stopRun && op !== "stop" && op !== "reset") this.el.stopRun.disabled = false;   // stop what it started
  };

  // (re)starts the wait before a pending step is asked again; 0: no wait
  Viewer.prototype.retryIn = function (ms) {
    var self = this;
    if (this.retry) { clearTimeout(this.retry); this.retry = null; }
    if (!ms) return;
    this.retry = setTimeout(function () {
      self.retry = null;
      var p = self.pending;
      if (!p || p.op !== "step") return;
      self.retryMs = Math.min(8 * RETRY_MS, ms * 2);
      self.ask("step", {want: p.want});
    }, ms);
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
    // a run with Fast-dLLM's KV cache: its logits, and so its answer, were approximate
    if (m.kv_cache) E.problem.appendChild(h("span", "mv-bad", "  ·  KV cache: " + m.kv_cache + " — APPROXIMATE"));
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
      line.append(h("b", "", "Answer: "), clipped(hd.answer.text),
                  h("span", hd.answer.verified ? "mv-ok" : "mv-bad",
                    hd.answer.verified === true ? " ✓ correct" : hd.answer.verified === false ? " ✗ wrong" : ""));
    } else if (hd.decoding) {
      // a decode step: the answer being decoded (not the search's partial answer), and
      // this step's tokens with their p, margin and score one click away
      var self = this, tokens = h("button", "mv-more", "this step's tokens (p, margin, score) ▸");
      tokens.onclick = function () { self.setTab("order"); };
      line.append(h("b", "", "The answer after " + hd.decoding.label + ": "), clipped(hd.decoding.text), " ", tokens);
    } else if (hd.partial !== null && hd.partial !== undefined) {
      var what = hd.tree && hd.tree.winner !== null && hd.tree.winner !== undefined && hd.focus === hd.tree.winner ? "winner" : "current node";
      line.append(h("b", "", "Partial answer of the " + what + " #" + hd.focus + ": "), clipped(hd.partial));
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

