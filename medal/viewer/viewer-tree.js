/* MEDAL Explorer's viewer, part 2 of 4 (the tree: vis-network, folding, framing, the view's glides, go to node, legend): medal/viewer/html_page.py joins
 * viewer-core.js, viewer-tree.js, viewer-views.js and viewer-compare.js, in that order,
 * into one script; this file is not a script of its own. */
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
    this.miniMap = null; this.closeMap(); this.miniFrame();
    this.el.away.textContent = ""; this.awaySig = null; this.root.dataset.away = "0";
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
      if (self.miniDirty) self.miniTree();
      else if (self.mapOn && (self.mapAt !== self.pos || self.el.map.style.width !== self.box().w + "px")) self.paintMap();
      self.miniFrame();
      self.awayMarks();
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
      this.miniMap = null; this.miniFrame();
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
    this.miniDirty = true;
    if (moved.length) this.glide(moved);
    } finally { if (em) em.emit("_allowRedraw"); }
    var hd = s.get(i, "h", "0");
    // one step forwards or back glides the view to its new place; a jump (the slider,
    // Start, a node's link) moves it at once
    this.stepped = this.lastDrawn !== undefined && Math.abs(i - this.lastDrawn) === 1;
    this.forwards = this.stepped && i > this.lastDrawn;
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
      self.miniDirty = true;
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
    if (card) lines.push(bidiSafe(card.sequence));
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
  Viewer.prototype.nodeBox = function (id, item) {
    var n = item || this.nodes.get(id);
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
    // stepping forwards past an expansion: while the children it just made are in view
    // and the path still ends at their parent, the siblings a selection weighs (UCB) do not
    // move the view (issue 41 #4): what matters -- the path, the candidates, the winner --
    // still does (issue 28 #3; the view used to hold on the children alone and left the
    // root outside, 5 positions of 3 examples under MEDAL_FULL_SWEEP=1)
    var prev = this.forwards && !force && !(info["new"] || []).length && this.pos > 0 ? this.store.get(this.pos - 1, "h", "0") : null;
    var made = (prev && prev.tree && prev.tree["new"]) || [];
    var first = made.length && leaf !== null && made.every(have) && this.visibleAll(this.bounds(made)) &&
        (prev.tree.path || []).slice(-1)[0] === leaf ? 1 : 0;
    // a move while stepping zooms out to the readable minimum (MIN_SCALE): the view then
    // holds more of the next positions (the large example at 1024x768: 103 -> 99 moves)
    if (keep && this.panNext) k0 = MIN_SCALE;
    for (var k = first; k < sets.length; k++) {
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
        if (keep && fitsAt(wide, k0)) { this.panTo(this.ahead(wide, k0), k0); return; }
      }
      if (!force && this.visibleAll(bb)) return;       // already in view: the view holds still
      // stepping: the scale holds and the view moves no further than it must (issue 28 #3:
      // it used to re-centre and re-zoom, 41 moves of over 300 px on the longer search)
      if (keep && fitsAt(bb, k0)) { this.panTo(this.ahead(bb, k0), k0); return; }
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
  // Looking ahead (a replay, or a live run's positions already made): ``bb`` grown by what
  // the next positions will frame -- each selection's leaf and the room for its children,
  // each expansion's new children, the winner -- in order, for as long as the whole still
  // fits in the box at scale ``k``. The view then moves once to where it can hold still
  // for those positions, rather than once an iteration (issue 28 #3).
  var AHEAD = 48;               // positions looked at, at most (~12 iterations)
  Viewer.prototype.ahead = function (bb, k) {
    var s = this.store, i = this.pos, box = this.box(), self = this, out = bb;
    if (!s || !this.panNext || !this.forwards) return bb;      // stepping forwards only
    var fits = function (b) { return (b.right - b.left) * k <= box.w - 24 && (b.bottom - b.top) * k <= box.h - 24; };
    for (var j = i + 1; j < Math.min(s.states.length, i + 1 + AHEAD); j++) {
      var hd = s.get(j, "h", "0"), t = (hd && hd.tree) || {}, path = t.path || [];
      if (!path.length) continue;
      var ids = path.slice(-1).concat(t["new"] || [], t.winner !== null && t.winner !== undefined ? [t.winner] : []);
      var l = Infinity, r = -Infinity, tp = Infinity, b = -Infinity, miss = false;
      ids.forEach(function (id) {
        var bx = self.nodeBox(id, s.get(j, "n", String(id)));
        if (!bx) { miss = true; return; }
        l = Math.min(l, bx.left); r = Math.max(r, bx.right); tp = Math.min(tp, bx.top); b = Math.max(b, bx.bottom);
      });
      if (miss) break;          // a node this view does not draw (a fold, the node cap)
      if (t.room) { l = Math.min(l, t.room[0] - ROOM_X); r = Math.max(r, t.room[1] + ROOM_X); b = Math.max(b, t.room[2] + ROOM_Y); }
      var grown = {left: Math.min(out.left, l), right: Math.max(out.right, r),
                   top: Math.min(out.top, tp), bottom: Math.max(out.bottom, b)};
      if (!fits(grown)) break;
      out = grown;
    }
    return out;
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
  // A move that brings ``bb`` inside the box at scale ``k``, at least 12 px clear of its
  // edges; ``bb`` wider than the box: its left part (the root's side) shown. Hysteresis
  // (issue 28 #3): the view holds still while what it frames is inside it (frameNow), and
  // when it must move, it moves along each axis where ``bb`` is out until ``bb`` sits in
  // the middle (COMFORT: the margin, as a share of the box, at most) rather than at the
  // edge it came in by -- the next positions' nodes, on either side, are then more often
  // in view (with ``ahead``: 100 -> 88 moves in 437 steps of the large example at 1440x900).
  var COMFORT = 0.5;
  Viewer.prototype.panTo = function (bb, k) {
    var box = this.box(), c = this.network.getViewPosition();
    var hw = box.w / 2 / k, hh = box.h / 2 / k, x = c.x, y = c.y;
    var mx = Math.max(12, Math.min(COMFORT * box.w, (box.w - (bb.right - bb.left) * k) / 2)) / k;
    var my = Math.max(12, Math.min(COMFORT * box.h, (box.h - (bb.bottom - bb.top) * k) / 2)) / k;
    if (bb.right + mx > x + hw) x = bb.right + mx - hw;
    if (bb.left - mx < x - hw) x = bb.left - mx + hw;
    if (bb.bottom + my > y + hh) y = bb.bottom + my - hh;
    if (bb.top - my < y - hh) y = bb.top - my + hh;
    this.viewTo(x, y, k);
  };
  // Issue 41 #4: at an expansion, each new child out of view is named at the edge of the
  // tree's box on the side where it lies (its label's first line and an arrow), level with
  // it where it can be; a click (or Enter) brings it into view. A family spread wider
  // than the box at the smallest readable scale (0.8; the tidy layout of the finished
  // run: the large example's root has 5 children over 17,316 px) cannot be shown whole
  // and readable at once; the view shows the parent and its nearest children, and the
  // others are named here. Redrawn with the tree (afterDrawing), so a glide or a drag
  // keeps them true; a signature saves the DOM's work when nothing moved.
  var AWAY = {h: 20, gap: 3, edge: 4, w: 240};
  Viewer.prototype.awayMarks = function () {
    var box = this.el.away, net = this.network;
    var info = this.store && this.store.states.length ? ((this.store.get(this.pos, "h", "0") || {}).tree || {}) : {};
    var ids = net && !this.mapOn && this.tab === "tree" ? (info["new"] || []) : [];
    var W = this.el.treeBox.clientWidth, H = this.el.treeBox.clientHeight, self = this, out = [];
    for (var k = 0; k < ids.length && W > 0; k++) {
      var bb = this.nodeBox(ids[k]);
      if (!bb) continue;
      var a = net.canvasToDOM({x: bb.left, y: bb.top}), z = net.canvasToDOM({x: bb.right, y: bb.bottom});
      if (a.x >= -1 && a.y >= -1 && z.x <= W + 1 && z.y <= H + 1) continue;       // in view
      var c = net.canvasToDOM({x: (bb.left + bb.right) / 2, y: (bb.top + bb.bottom) / 2});
      var side = c.x < 0 ? "left" : c.x > W ? "right" : c.y < 0 ? "top" : "bottom";
      out.push({id: ids[k], side: side, x: c.x, y: c.y, text: String(this.nodes.get(ids[k]).label || "").split("\n").slice(0, 2).join(" ")});
    }
    var sig = out.map(function (m) { return m.id + m.side + Math.round(m.x) + "," + Math.round(m.y); }).join(";") + "|" + W + "x" + H;
    if (sig === this.awaySig) return;
    this.awaySig = sig;
    box.textContent = "";
    this.root.dataset.away = String(out.length);
    if (!out.length) return;
    // what the marks must not cover (box px): the overview, and the key nodes in view --
    // the path, the new children, the candidates, the winner -- with their labels
    var wrap = this.el.treeWrap.getBoundingClientRect(), tb = this.el.treeBox.getBoundingClientRect();
    var ox = tb.left - wrap.left, oy = tb.top - wrap.top, busy = [];
    if (this.el.mini.classList.contains("mv-mini-shown")) {
      var mn = this.el.mini.getBoundingClientRect();
      busy.push({l: mn.left - tb.left, t: mn.top - tb.top, r: mn.right - tb.left, b: mn.bottom - tb.top});
    }
    [].concat(info.path || [], info["new"] || [], info.candidates || [],
              info.winner !== null && info.winner !== undefined ? [info.winner] : []).forEach(function (id) {
      var nb = self.nodeBox(id);
      if (!nb) return;
      var p = net.canvasToDOM({x: nb.left, y: nb.top}), q = net.canvasToDOM({x: nb.right, y: nb.bottom});
      if (q.x < 0 || q.y < 0 || p.x > W || p.y > H) return;
      busy.push({l: p.x, t: p.y, r: q.x, b: q.y});
    });
    var hits = function (r) {
      for (var j = 0; j < busy.length; j++) {
        var o = busy[j];
        if (r.l < o.r + AWAY.gap && o.l < r.r + AWAY.gap && r.t < o.b + AWAY.gap && o.t < r.b + AWAY.gap) return o;
      }
      return null;
    };
    // along its edge from where it would sit level with its child: the first free place
    // onwards (down, or right), else back (up, or left); failing both, where it would sit
    var place = function (along, want, lo, hi, rect) {
      var at = Math.max(lo, Math.min(hi, want)), o;
      for (var t = 0; t < 64 && at <= hi && (o = hits(rect(at))); t++) at = (along ? o.b : o.r) + AWAY.gap;
      if (at <= hi && !hits(rect(at))) return at;
      at = Math.max(lo, Math.min(hi, want));
      for (t = 0; t < 64 && at >= lo && (o = hits(rect(at))); t++) at = (along ? o.t : o.l) - AWAY.gap - (along ? AWAY.h : rect(at).r - rect(at).l);
      return at >= lo && !hits(rect(at)) ? at : Math.max(lo, Math.min(hi, want));
    };
    var arrow = {left: "\u2190 ", right: "\u2192 ", top: "\u2191 ", bottom: "\u2193 "};
    var order = {left: 0, right: 1, top: 2, bottom: 3};
    out.sort(function (p, q) {
      return order[p.side] - order[q.side] || (p.side === "left" || p.side === "right" ? p.y - q.y : p.x - q.x);
    });
    out.forEach(function (m) {
      var side = m.side, el = h("button", "mv-away-mark", arrow[side] + m.text);
      el.type = "button"; el.dataset.id = String(m.id); el.dataset.side = side;
      el.setAttribute("aria-label", "New child " + m.text + ", out of view to the " + side + ": show it");
      tipped(el, "A new child of this expansion, out of view to the " + side + ": its family is wider than the box at a readable scale. Click to bring it into view.");
      el.onclick = function () { ACTIVE = self; self.endPan(); self.panTo(self.nodeBox(m.id), self.network.getScale()); };
      box.appendChild(el);
      var w = Math.min(AWAY.w, el.offsetWidth || AWAY.w), rect, x, y;
      if (side === "left" || side === "right") {
        x = side === "left" ? AWAY.edge : W - w - AWAY.edge;
        rect = function (at) { return {l: x, t: at, r: x + w, b: at + AWAY.h}; };
        y = place(true, m.y - AWAY.h / 2, AWAY.edge, H - AWAY.h - AWAY.edge, rect);
      } else {
        y = side === "top" ? AWAY.edge : H - AWAY.h - AWAY.edge;
        rect = function (at) { return {l: at, t: y, r: at + w, b: y + AWAY.h}; };
        x = place(false, m.x - w / 2, AWAY.edge, W - w - AWAY.edge, rect);
      }
      el.style.left = (ox + x) + "px"; el.style.top = (oy + y) + "px";
      busy.push(rect(side === "left" || side === "right" ? y : x));
    });
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

  /* ---- the overview (issue 28 #7): a small map in a corner of the tree's box with every
   * drawn node at its place (the '+k' marks as grey specks), the current path in its
   * colour, the current node ringed and the main view's box in red; a click or a drag on
   * it moves the view there. Drawn into a canvas of its own once a step (miniTree), and
   * copied with the view's box at every drawing of the tree (miniFrame: a glide's frames
   * too); hidden while the whole tree is in view, where it would add nothing. Its x and y
   * have scales of their own (a search tree is many times wider than deep), each at
   * most MINI.stretch times the other: levels stay apart. */
  var MINI = {w: 220, h: 104, small: [160, 80], pad: 5, stretch: 40, gap: 6};
  // The geometry of a whole-tree drawing in a W x H box (the overview, the map): the drawn
  // nodes' extent, x and y scales of their own, each at most ``stretch`` times the other
  // and neither above ``most``; null when nothing is drawn.
  Viewer.prototype.treeGeom = function (W, H, p, stretch, most) {
    var body = this.network && this.network.body;
    if (!body || !body.nodeIndices) return null;
    var ids = body.nodeIndices, nodes = body.nodes, l = Infinity, r = -Infinity, t = Infinity, b = -Infinity;
    for (var k = 0; k < ids.length; k++) {
      var bn = nodes[ids[k]];
      if (!bn) continue;
      l = Math.min(l, bn.x); r = Math.max(r, bn.x); t = Math.min(t, bn.y); b = Math.max(b, bn.y);
    }
    if (l === Infinity) return null;
    var tw = Math.max(1, r - l), th = Math.max(1, b - t);
    var sx = (W - 2 * p) / tw, sy = (H - 2 * p) / th, u = Math.min(sx, sy);
    sx = Math.min(sx, u * stretch, most); sy = Math.min(sy, u * stretch, most);
    return {l: l, t: t, sx: sx, sy: sy, p: p, ox: p, oy: p, tw: tw, th: th,
            w: Math.max(40, Math.round(tw * sx + 2 * p)), h: Math.max(24, Math.round(th * sy + 2 * p)),
            tree: {l: l - 20, r: r + 20, t: t - 20, b: b + 20}};
  };
  // Paints the drawn tree on ``c`` at m's scales: the edges (the path's in its colour),
  // every node in its colour (fold boxes and '+k' marks grey), the candidates (diamonds),
  // the winner and the current node (ringed) on top. ``big`` (the map): dots sized by N,
  // the winner a star; else 3 px squares. Returns each node's mark: [id, x, y, radius].
  Viewer.prototype.paintTree = function (c, m, big) {
    var body = this.network.body, ids = body.nodeIndices, nodes = body.nodes, s = this.store;
    var X = function (x) { return m.ox + (x - m.l) * m.sx; }, Y = function (y) { return m.oy + (y - m.t) * m.sy; };
    var eids = body.edgeIndices || [], marked = [], e, o, k, marks = [];
    c.beginPath(); c.strokeStyle = big ? "#b4b4b4" : "#c4c4c4"; c.lineWidth = 1;
    for (k = 0; k < eids.length; k++) {
      e = body.edges[eids[k]];
      if (!e || !e.from || !e.to) continue;
      if ((e.options.width || 1) >= 3) { marked.push(e); continue; }
      c.moveTo(X(e.from.x), Y(e.from.y)); c.lineTo(X(e.to.x), Y(e.to.y));
    }
    c.stroke();
    marked.forEach(function (e) {
      c.beginPath(); c.strokeStyle = e.options.color.color; c.lineWidth = big ? 3 : 2.5;
      c.moveTo(X(e.from.x), Y(e.from.y)); c.lineTo(X(e.to.x), Y(e.to.y)); c.stroke();
    });
    var info = (s.get(this.pos, "h", "0") || {}).tree || {}, path = info.path || [];
    var cur = path.length ? path[path.length - 1] : null, special = [];
    for (k = 0; k < ids.length; k++) {
      var id = ids[k], n = nodes[id];
      if (!n) continue;
      o = n.options;
      var x = X(n.x), y = Y(n.y);
      if (typeof id !== "number") {
        c.fillStyle = "#9a9a9a";
        if (big) { c.fillRect(x - 3, y - 3, 6, 6); marks.push([id, x, y, 4]); } else c.fillRect(x - 1, y - 1, 2, 2);
        continue;
      }
      if (id === cur || o.shape !== "dot") { special.push(n); continue; }
      c.fillStyle = o.color.background;
      if (big) {
        var rad = Math.max(2.5, Math.min(7, (o.size || 10) / 3.5));
        c.beginPath(); c.arc(x, y, rad, 0, 2 * Math.PI); c.fill();
        marks.push([id, x, y, rad]);
      } else c.fillRect(x - 1.5, y - 1.5, 3, 3);
    }
    special.forEach(function (n) {
      var x = X(n.x), y = Y(n.y), o = n.options, d = big ? 7 : 4;
      if (n.id === cur) return;
      c.fillStyle = o.color.background; c.strokeStyle = o.color.border; c.lineWidth = 1.5;
      c.beginPath();
      if (big && o.shape === "star") {
        for (var j = 0; j < 10; j++) {
          var a = -Math.PI / 2 + j * Math.PI / 5, rr = j % 2 ? d * 0.45 : d * 1.3;
          c.lineTo(x + rr * Math.cos(a), y + rr * Math.sin(a));
        }
      } else { c.moveTo(x, y - d); c.lineTo(x + d, y); c.lineTo(x, y + d); c.lineTo(x - d, y); }
      c.closePath(); c.fill(); c.stroke();
      if (big) marks.push([n.id, x, y, d]);
    });
    var at = null;
    if (cur !== null && nodes[cur]) {
      var cn = nodes[cur], cx = X(cn.x), cy = Y(cn.y), ring = big ? 9 : 6, dot = big ? 5.5 : 3.5;
      c.beginPath(); c.arc(cx, cy, ring, 0, 2 * Math.PI); c.fillStyle = cn.options.color.border; c.fill();
      c.beginPath(); c.arc(cx, cy, dot, 0, 2 * Math.PI); c.fillStyle = cn.options.color.background; c.fill();
      at = [cx, cy];
      if (big) marks.push([cur, cx, cy, ring]);
    }
    return {cur: at, marks: marks, path: path, info: info};
  };
  Viewer.prototype.miniTree = function () {
    this.miniDirty = false;
    if (this.mapOn) this.paintMap();
    var s = this.store;
    var small = this.box().w < 900, W = small ? MINI.small[0] : MINI.w, H = small ? MINI.small[1] : MINI.h;
    var m = s && s.states.length ? this.treeGeom(W, H, MINI.pad, MINI.stretch, Infinity) : null;
    if (!m) { this.miniMap = null; return; }
    var cw = m.w, ch = m.h;
    m.dpr = Math.max(1, Math.min(3, globalThis.devicePixelRatio || 1));
    m.off = (this.miniMap && this.miniMap.off) || document.createElement("canvas");
    var off = m.off;
    off.width = Math.round(cw * m.dpr); off.height = Math.round(ch * m.dpr);
    var c = off.getContext("2d");
    c.setTransform(m.dpr, 0, 0, m.dpr, 0, 0);
    c.fillStyle = "rgba(255,255,255,0.94)"; c.fillRect(0, 0, cw, ch);
    var drawn = this.paintTree(c, m, false);
    if (drawn.cur) m.cur = drawn.cur;
    this.miniMap = m;
  };

  /* ---- the map (issue 28: "Fit gives a readable tree at any size"): a tree that the view
   * cannot show whole at a readable scale (labels >= 12 px) is a strip of dots and
   * unreadable labels when fitted (116 nodes: 8,200 px wide, scale 0.17). Fit then also
   * opens a map over the tree's box: every drawn node at its place with x and y scales of
   * their own (the levels spread down the box), dots coloured by Q and sized by N, the
   * path, the candidates, the winner and the current node marked, and labels at 12 px
   * where they fit, the current node's, the path's, the winner's and the candidates' first,
   * then the most visited (level of detail). Hovering a node shows its figures; a click goes
   * there at a readable scale (a '+k' box opens); Esc or the close button leave it. It
   * follows the position while it is open. */
  var MAP = {pad: 26, level: 1.4, font: 12, hit: 10, foot: 22};
  Viewer.prototype.fitAll = function () {
    if (!this.network) return;
    var bb = this.bounds(this.nodes.getIds());
    if (!bb) return;
    this.endPan();
    var k = this.moveTo(bb);       // whole tree, at whatever scale it needs
    if (k < MIN_SCALE) this.openMap(); else this.closeMap();
  };
  Viewer.prototype.openMap = function () {
    this.mapOn = true;
    this.el.mapWrap.classList.add("mv-map-shown");
    this.root.dataset.map = "shown";
    this.paintMap();
    this.miniFrame();
  };
  Viewer.prototype.closeMap = function (reframe) {
    if (!this.mapOn) return;
    this.mapOn = false; this.mapMarks = null;
    this.el.mapWrap.classList.remove("mv-map-shown");
    this.el.mapTip.style.display = "none";
    this.root.dataset.map = "hidden";
    if (reframe && this.network && this.store && this.store.states.length) {     // back to what matters now
      this.toFrame = {info: this.store.get(this.pos, "h", "0").tree || {}, force: true, pos: this.pos};
      this.requestDraw();
    }
    this.miniFrame();
  };
  Viewer.prototype.paintMap = function () {
    var cv = this.el.map, box = this.box();
    if (!this.network || !this.store || !this.store.states.length) { this.closeMap(); return; }
    var W = box.w, H = box.h - MAP.foot;
    var m = this.treeGeom(W, H, MAP.pad, Infinity, MAP.level);
    if (!m) { this.closeMap(); return; }
    m.ox = Math.max(MAP.pad, (W - m.tw * m.sx) / 2);      // centred across, from the top down
    var dpr = Math.max(1, Math.min(3, globalThis.devicePixelRatio || 1));
    cv.width = Math.round(W * dpr); cv.height = Math.round(box.h * dpr);
    cv.style.width = W + "px"; cv.style.height = box.h + "px";
    var c = cv.getContext("2d");
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.fillStyle = "#ffffff"; c.fillRect(0, 0, W, box.h);
    var drawn = this.paintTree(c, m, true);
    // labels: the key nodes first, then by visits; one where it fits (below its mark, else above)
    var body = this.network.body, info = drawn.info, rank = {};
    var give = function (ids, r) { (ids || []).forEach(function (id) { if (rank[id] === undefined) rank[id] = r; }); };
    give(drawn.path.slice(-1), 0); give(info.winner !== null && info.winner !== undefined ? [info.winner] : [], 1);
    give(drawn.path, 2); give(info.candidates, 3); give(info["new"], 4);
    give(this.selected !== null && this.selected !== undefined ? [this.selected] : [], 4);
    var order = drawn.marks.slice().sort(function (a, b) {
      var ra = rank[a[0]] === undefined ? 9 : rank[a[0]], rb = rank[b[0]] === undefined ? 9 : rank[b[0]];
      if (ra !== rb) return ra - rb;
      var fa = body.nodes[a[0]].options.size || 0, fb = body.nodes[b[0]].options.size || 0;
      return fb - fa || a[2] - b[2];
    });
    c.font = MAP.font + "px monospace"; c.textBaseline = "top"; c.textAlign = "center";
    var placed = [], labelled = [], lh = MAP.font + 3, marks = drawn.marks;
    // a label's box: inside the map, over no other label and no node's mark
    var free = function (bx, own) {
      if (bx.l < 1 || bx.r > W - 1 || bx.t < 1 || bx.b > H) return false;     // H: above the note
      var j, q;
      for (j = 0; j < placed.length; j++) {
        q = placed[j];
        if (bx.l < q.r && q.l < bx.r && bx.t < q.b && q.t < bx.b) return false;
      }
      for (j = 0; j < marks.length; j++) {
        q = marks[j];
        if (q[0] !== own && q[1] + q[3] > bx.l && q[1] - q[3] < bx.r && q[2] + q[3] > bx.t && q[2] - q[3] < bx.b) return false;
      }
      return true;
    };
    order.forEach(function (mk) {
      var n = body.nodes[mk[0]], text = String((n.options && n.options.label) || "").split("\n");
      text = text.slice(0, typeof mk[0] === "number" ? 2 : 1).join(" ").replace(/^★ /, "");
      if (!text) return;
      var w = c.measureText(text).width + 4, x = mk[1], y = mk[2], r = mk[3];
      // below or above its mark; a key node's also beside it, or further down or up (a thin
      // line leads to it): a run's candidates are often siblings side by side
      var tries = [[x - w / 2, y + r + 1], [x - w / 2, y - r - 1 - lh]];
      if (rank[mk[0]] !== undefined) {
        tries.push([x + r + 2, y - lh / 2], [x - r - 2 - w, y - lh / 2]);
        for (var d = 1; d <= 4; d++) tries.push([x - w / 2, y + r + 1 + d * lh], [x - w / 2, y - r - 1 - (d + 1) * lh]);
      }
      for (var j = 0; j < tries.length; j++) {
        var l = j === 2 || j === 3 ? tries[j][0] : Math.max(1, Math.min(W - 1 - w, tries[j][0]));   // inside the map
        var bx = {l: l, r: l + w, t: tries[j][1], b: tries[j][1] + lh};
        if (free(bx, mk[0])) { placed.push(bx); labelled.push([mk[0], text, bx, j >= 4 ? [x, y] : null]); return; }
      }
    });
    labelled.forEach(function (lb) {
      var bx = lb[2], key = rank[lb[0]] !== undefined;
      if (lb[3]) {
        c.beginPath(); c.strokeStyle = "#777777"; c.lineWidth = 1;
        c.moveTo(lb[3][0], lb[3][1]); c.lineTo((bx.l + bx.r) / 2, bx.t > lb[3][1] ? bx.t : bx.b); c.stroke();
      }
      c.fillStyle = key ? "rgba(255,243,196,0.95)" : "rgba(255,255,255,0.9)";
      c.fillRect(bx.l, bx.t, bx.r - bx.l, bx.b - bx.t);
      c.fillStyle = key ? "#000000" : "#333333";
      c.fillText(lb[1], (bx.l + bx.r) / 2, bx.t + 1.5);
    });
    var total = drawn.marks.filter(function (mk) { return typeof mk[0] === "number"; }).length;
    this.el.mapNote.textContent = "Whole tree: " + total + " nodes, " + labelled.length + " labelled (path, winner,"
      + " candidates first). Hover: figures · click: go there · Esc: close";
    this.mapMarks = drawn.marks; this.mapLabels = labelled; this.mapGeom = m; this.mapAt = this.pos;
  };
  // the map's node under a point of it (CSS px), or null
  Viewer.prototype.mapHit = function (px, py) {
    var best = null, d = Infinity;
    (this.mapMarks || []).forEach(function (mk) {
      var e = Math.hypot(mk[1] - px, mk[2] - py);
      if (e <= Math.max(MAP.hit, mk[3] + 3) && e < d) { d = e; best = mk[0]; }
    });
    return best;
  };
  Viewer.prototype.mapEvents = function () {
    var self = this, E = this.el, cv = E.map;
    cv.addEventListener("pointermove", function (e) {
      var r = cv.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
      var id = self.mapHit(px, py), tip = E.mapTip;
      cv.style.cursor = id !== null ? "pointer" : "zoom-in";
      if (id === null) { tip.style.display = "none"; return; }
      var t = self.tips[id], text;
      if (t) { self.fillTip(id); text = t.textContent; }
      else { var n = self.nodes.get(id) || {}; text = self.notes[id] || (typeof n.title === "string" ? n.title : String(id)); }
      tip.textContent = bidiSafe(text);    // text, never HTML: token texts come from models and files
      tip.style.display = "block";
      var tw = tip.offsetWidth, th = tip.offsetHeight, W = r.width, H = r.height;
      tip.style.left = Math.max(2, Math.min(W - tw - 2, px + 14)) + "px";
      tip.style.top = (py + 16 + th < H ? py + 16 : Math.max(2, py - th - 12)) + "px";
    });
    cv.addEventListener("pointerleave", function () { E.mapTip.style.display = "none"; });
    cv.addEventListener("click", function (e) {
      ACTIVE = self;
      var r = cv.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
      var id = self.mapHit(px, py), m = self.mapGeom;
      self.closeMap();
      if (typeof id === "number") { self.gotoNode(String(id)); return; }
      var at = self.nodes.get(id), s = self.store;
      if (typeof id === "string" && id.indexOf("fold-") === 0) {          // open a folded group, go there
        self.opened.add(Number(id.slice(5)));
        if (s && s.states.length) self.drawTree(self.pos);
      }
      var x = at ? at.x : m.l + (px - m.ox) / m.sx, y = at ? at.y : m.t + (py - m.oy) / m.sy;
      self.endPan();
      self.network.moveTo({position: {x: x, y: y + 40}, scale: 1, animation: false});
      self.requestDraw();
    });
    E.mapClose.onclick = function () { ACTIVE = self; self.closeMap(true); };
  };
  // The overview's canvas: the tree (miniTree's) and the view's box, in the corner of the
  // tree's box that covers the fewest drawn nodes (the key nodes above all); faded while
  // it still covers one of those.
  Viewer.prototype.miniFrame = function () {
    var cv = this.el.mini, m = this.miniMap, net = this.network;
    var on = !!(m && net && !this.mapOn && this.el.miniOnBox.checked && this.tab === "tree" && this.el.treeBox.clientWidth > 0);
    var a, z, box;
    if (on) {
      box = this.box();
      a = net.DOMtoCanvas({x: 0, y: 0}); z = net.DOMtoCanvas({x: box.w, y: box.h});
      var T = m.tree;
      on = !(a.x <= T.l && a.y <= T.t && z.x >= T.r && z.y >= T.b);   // the whole tree in view
    }
    cv.classList.toggle("mv-mini-shown", on);
    this.root.dataset.overview = on ? "shown" : "hidden";
    if (!on) return;
    var pw = Math.round(m.w * m.dpr), ph = Math.round(m.h * m.dpr);
    if (cv.width !== pw || cv.height !== ph) {
      cv.width = pw; cv.height = ph; cv.style.width = m.w + "px"; cv.style.height = m.h + "px";
    }
    var c = cv.getContext("2d");
    c.setTransform(1, 0, 0, 1, 0, 0); c.clearRect(0, 0, pw, ph); c.drawImage(m.off, 0, 0);
    c.setTransform(m.dpr, 0, 0, m.dpr, 0, 0);
    var x0 = Math.max(0.75, m.p + (a.x - m.l) * m.sx), y0 = Math.max(0.75, m.p + (a.y - m.t) * m.sy);
    var x1 = Math.min(m.w - 0.75, m.p + (z.x - m.l) * m.sx), y1 = Math.min(m.h - 0.75, m.p + (z.y - m.t) * m.sy);
    if (x1 - x0 < 3) { var mx = (x0 + x1) / 2; x0 = mx - 1.5; x1 = mx + 1.5; }
    if (y1 - y0 < 3) { var my = (y0 + y1) / 2; y0 = my - 1.5; y1 = my + 1.5; }
    c.fillStyle = "rgba(214,39,40,0.10)"; c.fillRect(x0, y0, x1 - x0, y1 - y0);
    c.strokeStyle = "#d62728"; c.lineWidth = 1.5; c.strokeRect(x0, y0, x1 - x0, y1 - y0);
    m.view = [x0, y0, x1, y1];
    this.miniCorner(box, m);
  };
  Viewer.prototype.miniCorner = function (box, m) {
    var net = this.network, body = net.body, ids = body.nodeIndices, g = MINI.gap + 8;
    var info = (this.store.get(this.pos, "h", "0") || {}).tree || {};
    var key = new Set([].concat(info.path || [], info["new"] || [], info.candidates || [],
                                info.winner !== null && info.winner !== undefined ? [info.winner] : [],
                                this.selected !== null && this.selected !== undefined ? [this.selected] : []));
    var corners = ["tr", "tl", "br", "bl"], score = {br: 0, bl: 0, tr: 0, tl: 0}, hot = {br: 0, bl: 0, tr: 0, tl: 0};
    var w = m.w + g, h = m.h + g;
    for (var k = 0; k < ids.length; k++) {
      var n = body.nodes[ids[k]];
      if (!n) continue;
      var q = net.canvasToDOM({x: n.x, y: n.y});
      if (q.x < -20 || q.y < -20 || q.x > box.w + 20 || q.y > box.h + 20) continue;
      var right = q.x > box.w - w, left = q.x < w, bottom = q.y > box.h - h, top = q.y < h;
      if (!(right || left) || !(top || bottom)) continue;
      var wgt = key.has(ids[k]) ? 1000 : 1, hit = key.has(ids[k]) ? 1 : 0;
      if (right && bottom) { score.br += wgt; hot.br += hit; }
      if (left && bottom) { score.bl += wgt; hot.bl += hit; }
      if (right && top) { score.tr += wgt; hot.tr += hit; }
      if (left && top) { score.tl += wgt; hot.tl += hit; }
    }
    // a corner out of the window (the bottom of a box taller than what is left of the
    // window below it: the export at 1024x768) is the last choice
    var tb = this.el.treeBox.getBoundingClientRect(), vh = globalThis.innerHeight || 0;
    if (vh && tb.bottom > vh) { score.br += 1e6; score.bl += 1e6; }
    if (tb.top < 0) { score.tr += 1e6; score.tl += 1e6; }
    var at = this.miniAt || "tr";
    // never away from under the pointer (a click or drag on it moves the view)
    if (score[at] > 0 && !this.miniHover) corners.forEach(function (c) { if (score[c] < score[at]) at = c; });
    this.miniAt = at;
    var cv = this.el.mini;
    cv.style.top = at[0] === "t" ? MINI.gap + "px" : "auto";
    cv.style.bottom = at[0] === "b" ? MINI.gap + "px" : "auto";
    cv.style.left = at[1] === "l" ? MINI.gap + "px" : "auto";
    cv.style.right = at[1] === "r" ? MINI.gap + "px" : "auto";
    cv.classList.toggle("mv-mini-under", hot[at] > 0);
    cv.dataset.corner = at;
  };
  // a point of the overview (its CSS px) -> the tree's coordinates
  Viewer.prototype.miniToTree = function (px, py) {
    var m = this.miniMap;
    return {x: m.l + (px - m.p) / m.sx, y: m.t + (py - m.p) / m.sy};
  };
  Viewer.prototype.miniEvents = function () {
    var self = this, cv = this.el.mini, drag = null;
    function go(e) {
      if (!self.network || !self.miniMap) return;
      var r = cv.getBoundingClientRect(), at = self.miniToTree(e.clientX - r.left, e.clientY - r.top);
      self.endPan();
      self.network.moveTo({position: at, scale: self.network.getScale(), animation: false});
    }
    cv.addEventListener("pointerdown", function (e) {
      if (e.button !== 0) return;
      e.preventDefault(); e.stopPropagation();
      drag = e.pointerId;
      try { cv.setPointerCapture(e.pointerId); } catch (err) { /* a synthetic event */ }
      go(e);
    });
    cv.addEventListener("pointermove", function (e) { if (drag === e.pointerId) go(e); });
    cv.addEventListener("pointerenter", function () { self.miniHover = true; });
    cv.addEventListener("pointerleave", function () { self.miniHover = drag !== null; });
    var up = function (e) {
      if (drag !== e.pointerId) return;
      drag = null;
      var r = cv.getBoundingClientRect();
      self.miniHover = e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom;
    };
    cv.addEventListener("pointerup", up); cv.addEventListener("pointercancel", up);
  };

  Viewer.prototype.drawLegend = function (lg) {
    var L = this.el.legend; L.textContent = "";
    if (!lg) return;
    function key(el) { var k = h("span", "mv-k"); k.append.apply(k, el); L.appendChild(k); }
    if (lg.q) {
      var grad = h("span", "mv-grad"); grad.style.background = "linear-gradient(90deg," + lg.stops.join(",") + ")";
      var qt = lg.q_text || [fmt(lg.q[0], 3), fmt(lg.q[1], 3)];
      key([h("span", "", "Q " + qt[0] + " "), grad, h("span", "", " " + qt[1] + " (this run's range; beyond it: end colour, ⇡/⇣)")]);
    } else key([h("span", "", "colour: Q (from iteration 1's simulation on)")]);
    function sw(colour, glyph, text, cls) { var g = h("span", cls || "", glyph); g.style.color = colour; key([g, h("span", "", " " + text)]); }
    sw(lg.colours.unvisited, "●", "unvisited"); key([h("span", "", "size: N")]);
    sw(lg.colours.path, "━", "current path"); sw(lg.colours.winner, "━", "winner's path");
    var d = h("span", "mv-dashed", "  "); d.style.borderColor = lg.colours["new"]; key([d, h("span", "", " new in this phase (dashed)")]);
    sw(lg.colours.candidate, "◆", "candidate"); sw(lg.colours.winner, "★", "winner");
    var sel = h("span", "mv-selbox", "  "); key([sel, h("span", "", " selected (inspector)")]);
    key([h("span", "", "#id @slot, then the token (cut to fit: the whole in the tooltip); UCB shown during a selection")]);
    key([h("span", "", "r=: a new child's reward r_IG (during a simulation; below 0: the other slots less certain after its token)")]);
    key([h("span", "", "⚠ r_IG outlier (tiny parent entropy)")]);
    var hid = h("span", "", "+k↓"); hid.style.color = "#777"; key([hid, h("span", "", " after a node's token: k nodes below it not drawn (fewer visits)")]);
    var ov = h("span", "mv-ovkey", "▭"); ov.style.color = "#d62728";
    key([ov, h("span", "", " overview (in a corner while part of the tree is out of view): every drawn node, the current node ringed, the red box is the view; click or drag on it to move the view")]);
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

