/* MEDAL Explorer's viewer, part 3 of 4 (the other views: task view, candidates, entropy heatmaps, unmasking order, decode step, inspector, what if, presenter mode, keys): medal/viewer/html_page.py joins
 * viewer-core.js, viewer-tree.js, viewer-views.js and viewer-compare.js, in that order,
 * into one script; this file is not a script of its own. */
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

  /* the winner against the runner-up, slot by slot (medal.candidates.compare_candidates) */
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
    if (card) for (var k0 = 0; k0 < card.how.length; k0++) if (card.how[k0] !== "0") marked[k0] = true;
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
          if (fl & 16) sp.classList.add("mv-edited");
          sp.title = "slot " + k + " · step " + step + " · " + ((fl & 2) ? "current search path (not yet chosen)" : (fl & 1) ? "MCTS initialisation" : "decoding")
            + ((fl & 16) ? " · rewritten later (token editing): was " + it[3] : "");
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
    if (this.store.meta && this.store.meta.edits) {
      var ed = h("span", "mv-tok mv-edited", "x"); ed.style.background = "#fff";
      lg.append(h("span", "", "; "), ed, h("span", "", " purple, ✎: rewritten after it was written (token editing)"));
    }
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
        if (fl & 16) { sp.classList.add("mv-edited"); sp.title += "; rewritten (token editing): was " + it[3]; }
        cells.appendChild(sp);
      }
      box.appendChild(cells);
      var lg = h("div", "mv-muted mv-steplegend");
      [["mv-masked", "_", "still masked"], ["mv-now", "x", "unmasked at this step"], ["mv-before", "x", "unmasked earlier"]].forEach(function (c) {
        lg.append(h("span", "mv-tok " + c[0], c[1]), h("span", "", " " + c[2] + "   "));
      });
      box.appendChild(lg);
    }
    if (st.edits && st.edits.length) {
      box.appendChild(h("p", "mv-muted", "Written tokens this step rewrote (token editing: a new token's confidence reached the editing threshold):"));
      box.appendChild(table(st.edits.map(function (e) {
        return {slot: e[0], was: e[1], now: e[2], confidence: e[3], threshold: e[4]};
      }), ["slot", "was", "now", "confidence", "threshold"], "mv-edits"));
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
        var L = st.last, was = L[1] === 0 || L[5] === null ? "∞" : fmt(L[5]);
        p.appendChild(h("p", "mv-muted", "The latest selection that considered it (iteration " + L[0] + ") saw N = " + L[1]
          + ", Q = " + fmt(L[2]) + ", parent N = " + L[3] + ": UCB " + was + (L[4] ? ", chosen" : "") + "."));
      }
      if (st.reward !== null && st.reward !== undefined)
        p.appendChild(h("p", "mv-rig", "reward = " + fmt(st.reward) + " (r_IG + the verifier's bonus, beyond the paper; completion verified: " + (st.verified === true ? "yes" : st.verified === false ? "no" : "—") + ")"));
      if (st.rig) p.appendChild(h("p", "mv-rig", "r_IG = (" + fmt(st.rig[0], 3) + " − " + fmt(st.rig[1], 3) + ") / " + fmt(st.rig[0], 3) + " = " + fmt(st.rig[2])));
      if (typeof st.r_IG === "number" && st.r_IG < 0) p.appendChild(h("p", "mv-muted mv-negrig", NEG_RIG));
      if (st.outlier) p.appendChild(h("p", "mv-warn", "⚠ " + st.outlier + "."));
    }
    if (card) {
      var seq = h("div", "mv-cells");
      seq.appendChild(h("span", "mv-oname", "sequence"));
      // per slot: card.texts[k], and card.how[k]: "2" this node's action, "1" committed, "0" masked
      var filled = false;
      card.texts.forEach(function (text, k) {
        var how = card.how[k];
        var sp = h("span", "mv-tok " + (how === "2" ? "mv-own" : how === "1" ? "mv-committed" : "mv-masked"), how !== "0" ? text : "_");
        sp.title = "slot " + k + (how === "2" ? ": this node's action" : how === "1" ? ": committed on the path" : ": masked");
        seq.appendChild(sp);
        if (how === "0" && text) filled = true;
      });
      p.appendChild(seq);
      if (filled) {
        var comp = h("div", "mv-cells"); comp.appendChild(h("span", "mv-oname", "completion"));
        card.texts.forEach(function (text, k) { comp.appendChild(h("span", "mv-tok " + (card.how[k] !== "0" ? "mv-committed" : "mv-fill"), text || "?")); });
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
      // at a step of the answer's decoding, the fork of that step (its own number, the one
      // `medal fork --step` takes); elsewhere, of the node the inspector shows
      var stp = atStep ? s.get(i, "v", "step") : null, own = stp && stp.row === "m";
      var at = own ? "--step " + stp.step + " --action " + (stp.slots.length ? stp.slots[0] : "SLOT") + ":TOKEN"
                   : nid !== null ? "--node " + nid + " --action SLOT:TOKEN" : null;
      if (at === null) return;
      box.appendChild(h("p", "mv-muted", own ? "Fork this run at this decode step (step " + stp.step + "; the slot it unmasked preset) on the command line, then compare the two:"
                                            : "Fork this run at node " + nid + " on the command line, then compare the two:"));
      box.appendChild(h("code", "mv-detail", "python -m medal fork TRACE.json " + at
        + " --trace fork.json\npython -m medal diff TRACE.json fork.json --html compare.html"));
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
    if (e.key === "Escape" && v.mapOn) { v.closeMap(true); return; }
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

