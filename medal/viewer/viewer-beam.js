/* MEDAL Explorer's viewer, the beam tree (issue 38): medal/viewer/html_page.py joins
 * viewer-core.js, viewer-tree.js, viewer-beam.js, viewer-views.js and viewer-compare.js, in
 * that order, into one script; this file is not a script of its own.
 *
 * An Order-Token Search or SOAR run has no MCTS tree: its Tree tab draws the run's beam
 * tree instead (meta.beam, built by medal/views/beam.py: every node's place, label,
 * colours and tooltip lines, computed in Python and drawn as given). The decode step shown
 * rings the winner-path node it replays. Labels are drawn on the canvas with markup off;
 * tooltips are written with textContent. */
  /* ---- the beam tree */
  var plainDrawTree = Viewer.prototype.drawTree;
  Viewer.prototype.drawTree = function (i, fresh) {
    var beam = this.store && this.store.meta && this.store.meta.beam;
    if (!beam) {
      if (this.beamView) this.hideBeam();
      return plainDrawTree.call(this, i, fresh);
    }
    this.drawBeam(beam, i);
  };

  Viewer.prototype.hideBeam = function () {
    var B = this.beamView;
    if (B.net) B.net.destroy();
    B.wrap.remove();
    this.el.treeWrap.style.display = ""; this.el.treeBar.style.display = "";
    this.beamView = null;
  };

  Viewer.prototype.beamNetwork = function (beam) {
    var self = this, E = this.el, B = this.beamView;
    if (B && B.beam === beam) return B;
    // the same beam tree again (a host's next bundle repeats the run's meta): kept
    var sig = JSON.stringify(beam);
    if (B && B.sig === sig) { B.beam = beam; return B; }
    if (B) this.hideBeam();
    if (this.network) this.resetTree();
    B = this.beamView = {beam: beam, sig: sig, tips: {}, at: null};
    B.wrap = h("div", "mv-beamwrap");
    B.head = h("div", "mv-beamhead", beam.summary);
    B.box = h("div", "mv-tree mv-beam"); B.box.id = "medal-beam";
    B.bar = h("div", "mv-treebar");
    var fit = h("button", "mv-btn mv-fit", "Fit tree"); fit.type = "button";
    tipped(fit, "Show the whole beam tree");
    fit.onclick = function () { ACTIVE = self; if (B.net) B.net.fit({animation: false}); };
    var lg = h("div", "mv-legend");
    beam.legend.forEach(function (k) {
      var sw = h("span", "mv-beamkey"); sw.style.background = k[1]; sw.style.borderColor = k[2];
      var item = h("span", "mv-k"); item.append(sw, h("span", "", " " + k[3]));
      lg.appendChild(item);
    });
    B.why = h("div", "mv-muted mv-beamwhy", beam.why);
    B.bar.append(fit, lg);
    B.wrap.append(B.head, B.box, B.bar, B.why);
    E.treeWrap.style.display = "none"; E.treeBar.style.display = "none";
    E.panels.tree.appendChild(B.wrap);
    var items = beam.nodes.map(function (n) {
      var t = B.tips[n.id] = document.createElement("div");
      t.className = "mv-nodetip"; t.textContent = n.tip.join("\n");
      return {id: n.id, label: n.label, x: n.x, y: n.y, color: n.color,
              borderWidth: n.borderWidth, font: n.font, title: t};
    });
    B.nodes = new vis.DataSet(items);
    B.edges = new vis.DataSet(beam.edges.map(function (e) { return Object.assign({}, e); }));
    B.net = new vis.Network(B.box, {nodes: B.nodes, edges: B.edges},
                            JSON.parse(JSON.stringify(beam.options)));
    B.byId = {};
    beam.nodes.forEach(function (n) { B.byId[n.id] = n; });
    B.net.on("afterDrawing", function () {
      B.box.setAttribute("data-drawn", String(self.pos));
      globalThis.__medalBeamDrawn = {pos: self.pos, at: B.at};
    });
    // drawn while its tab was hidden (no size): framed once it has one -- the whole tree
    // when its labels are readable so (MIN_SCALE, as the MCTS tree), else the replayed
    // node at that scale (Fit tree shows the whole)
    var sized = false;
    var fitOnce = function () {
      if (sized || B.box.clientWidth <= 0) return;
      sized = true; B.net.redraw(); B.net.fit({animation: false});
      B.readable = B.net.getScale() < MIN_SCALE;
      self.focusBeam(B);
    };
    if (typeof ResizeObserver !== "undefined") new ResizeObserver(fitOnce).observe(B.box);
    fitOnce();
    globalThis.__medalBeamNetwork = B.net;
    return B;
  };

  // The replayed node in view: at a readable scale the first time (B.readable), then
  // panned to only when it is outside the box (the reader's scale kept).
  Viewer.prototype.focusBeam = function (B) {
    var at = B.at, box = B.box;
    if (at === null || box.clientWidth <= 0) return;
    var p = B.net.getPositions([at])[at];
    if (!p) return;
    if (B.readable) {
      B.readable = false;
      B.net.moveTo({position: p, scale: MIN_SCALE, animation: false});
      return;
    }
    var a = B.net.DOMtoCanvas({x: 0, y: 0}), z = B.net.DOMtoCanvas({x: box.clientWidth, y: box.clientHeight});
    if (p.x < a.x || p.x > z.x || p.y < a.y || p.y > z.y) {
      B.net.moveTo({position: p, scale: B.net.getScale(), animation: false});
    }
  };

  Viewer.prototype.drawBeam = function (beam, i) {
    var B = this.beamNetwork(beam), at = beam.at[i];
    if (at === undefined) at = null;
    this.el.legend.textContent = "";
    if (B.at !== at) {
      var upd = [];
      if (B.at !== null && B.byId[B.at]) {
        var was = B.byId[B.at];
        upd.push({id: was.id, color: was.color, borderWidth: was.borderWidth});
      }
      if (at !== null && B.byId[at]) {
        var n = B.byId[at];
        upd.push({id: at, borderWidth: beam.at_width,
                  color: {background: n.color.background, border: beam.at_border,
                          highlight: n.color.highlight, hover: n.color.hover}});
      }
      B.at = at;
      if (upd.length) B.nodes.update(upd);
      this.focusBeam(B);
    }
    B.box.setAttribute("data-at", at === null ? "" : String(at));
    this.root.dataset.beamAt = at === null ? "" : String(at);
  };

