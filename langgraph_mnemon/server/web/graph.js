// Graph layout for the Memory Space graph view: a deterministic force layout, then label
// collision removal, so no two labels (or a label and a node) ever overlap. Each node owns one
// box: its circle plus its label to the right; nodes are placed one by one at the free spot
// nearest to where the force layout put them. The chart keeps its natural size (11 px labels,
// never scaled down) and its container scrolls, so 100 or 200 nodes stay readable.
//
//   MnemonGraph.draw(graph, availableWidth)  -> an <svg> element (nodes, edges, labels)
"use strict";

(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const RADIUS = 6;
  const LABEL_DX = 10; // circle centre to label start
  const LINE = 16; // box height: one line of 11 px text
  const GAP = 6; // free space kept between two boxes
  const PAD = 12;
  const MAX_LABEL = 28;

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      node.setAttribute(key === "testid" ? "data-testid" : key, value);
    }
    for (const child of children) node.append(child instanceof Node ? child : String(child));
    return node;
  }

  const shorten = (label) => (label.length > MAX_LABEL ? `${label.slice(0, MAX_LABEL - 1)}…` : label);

  // Widths from the browser's own text engine, with the chart's CSS (estimated if not laid out).
  function measure(labels) {
    const probe = svg("svg", { class: "graph", width: 1, height: 1 });
    Object.assign(probe.style, { position: "absolute", left: "-9999px", visibility: "hidden" });
    const group = svg("g", { class: "node" });
    probe.append(group);
    document.body.append(probe);
    const widths = labels.map((text) => {
      const node = svg("text", {}, text);
      group.append(node);
      return node.getComputedTextLength() || text.length * 6.5;
    });
    probe.remove();
    return widths;
  }

  // Repulsion between all nodes, springs along edges, a weak pull to the centre; starts on a
  // circle so the same graph always gets the same picture. Unbounded while it runs (walls
  // would stack nodes along the edges), then scaled into width x height.
  function force(count, links, width, height) {
    const cx = width / 2;
    const cy = height / 2;
    const pos = Array.from({ length: count }, (_, i) => ({
      x: cx + width * 0.38 * Math.cos((2 * Math.PI * i) / Math.max(count, 1)),
      y: cy + height * 0.38 * Math.sin((2 * Math.PI * i) / Math.max(count, 1)),
    }));
    const ideal = Math.max(40, Math.sqrt((width * height) / Math.max(count, 1)) * 0.7);
    for (let step = 0; step < 300; step++) {
      const cool = 1 - step / 300;
      const push = pos.map(() => ({ x: 0, y: 0 }));
      for (let i = 0; i < count; i++) {
        for (let j = i + 1; j < count; j++) {
          const dx = pos[i].x - pos[j].x || 0.01;
          const dy = pos[i].y - pos[j].y || 0.01;
          const f = (ideal * ideal) / (dx * dx + dy * dy);
          push[i].x += dx * f; push[i].y += dy * f;
          push[j].x -= dx * f; push[j].y -= dy * f;
        }
      }
      for (const [a, b] of links) {
        const dx = pos[b].x - pos[a].x;
        const dy = pos[b].y - pos[a].y;
        const pull = (Math.hypot(dx, dy) - ideal) / (Math.hypot(dx, dy) || 0.01) / 2;
        push[a].x += dx * pull; push[a].y += dy * pull;
        push[b].x -= dx * pull; push[b].y -= dy * pull;
      }
      for (let i = 0; i < count; i++) {
        push[i].x += (cx - pos[i].x) * 0.02;
        push[i].y += (cy - pos[i].y) * 0.02;
        const len = Math.hypot(push[i].x, push[i].y) || 1;
        const move = Math.min(len, 10 * cool + 0.5);
        pos[i].x += (push[i].x / len) * move;
        pos[i].y += (push[i].y / len) * move;
      }
    }
    return fit(pos, width, height);
  }

  function fit(pos, width, height) {
    const xs = pos.map((p) => p.x);
    const ys = pos.map((p) => p.y);
    const [x0, y0] = [Math.min(...xs), Math.min(...ys)];
    const sx = width / (Math.max(...xs) - x0 || 1);
    const sy = height / (Math.max(...ys) - y0 || 1);
    return pos.map((p) => ({ x: (p.x - x0) * sx, y: (p.y - y0) * sy }));
  }

  // A node's box: the circle and the label to its right.
  const box = (p, w) => ({ x0: p.x - RADIUS - 1, x1: p.x + LABEL_DX + w + 1, y0: p.y - LINE / 2, y1: p.y + LINE / 2 });

  const hits = (a, b) => a.x0 < b.x1 + GAP && b.x0 < a.x1 + GAP && a.y0 < b.y1 + GAP && b.y0 < a.y1 + GAP;

  // Offsets around a wanted spot, nearest first: one label line vertically, a few px sideways.
  const STEP_X = 12;
  const STEP_Y = LINE + GAP;
  const RINGS = 40;
  const OFFSETS = [];
  for (let i = -RINGS; i <= RINGS; i++) {
    for (let j = -RINGS; j <= RINGS; j++) OFFSETS.push([i * STEP_X, j * STEP_Y]);
  }
  OFFSETS.sort((a, b) => Math.hypot(...a) - Math.hypot(...b) || a[1] - b[1] || a[0] - b[0]);

  // Place nodes one by one, central ones first, each at the free spot nearest to where the force
  // layout wanted it, inside [0, right]; with no free spot near, below everything placed.
  // Placed boxes are kept in rows of STEP_Y, so a candidate is only checked against its rows.
  function place(pos, widths, cx, cy, right) {
    const order = pos.map((_, i) => i).sort((a, b) =>
      Math.hypot(pos[a].x - cx, pos[a].y - cy) - Math.hypot(pos[b].x - cx, pos[b].y - cy) || a - b);
    const rows = new Map();
    const row = (y) => Math.floor(y / STEP_Y);
    const free = (b) => {
      for (let r = row(b.y0) - 1; r <= row(b.y1) + 1; r++) {
        if ((rows.get(r) || []).some((other) => hits(b, other))) return false;
      }
      return true;
    };
    let bottom = 0;
    for (const i of order) {
      const want = pos[i];
      let spot = null;
      for (const [dx, dy] of OFFSETS) {
        const candidate = box({ x: want.x + dx, y: want.y + dy }, widths[i]);
        const inside = candidate.x0 >= 0 && (candidate.x1 <= right || candidate.x0 <= 0);
        if (inside && free(candidate)) { spot = { x: want.x + dx, y: want.y + dy }; break; }
      }
      if (!spot) spot = { x: RADIUS + 1, y: bottom + GAP + LINE };
      pos[i] = spot;
      const made = box(spot, widths[i]);
      bottom = Math.max(bottom, made.y1);
      const r = row(spot.y);
      rows.set(r, [...(rows.get(r) || []), made]);
    }
  }

  /** Node positions and the chart size for ``nodes`` / ``links`` in about ``width`` pixels. */
  function layout(count, links, widths, width) {
    const need = widths.reduce((sum, w) => sum + (w + LABEL_DX + RADIUS + 3 * GAP) * (LINE + 3 * GAP), 0);
    const inner = Math.max(200, width - 2 * PAD - Math.max(0, ...widths) - LABEL_DX);
    const height = Math.max(240, Math.ceil((need * 1.6) / inner));
    const pos = force(count, links, inner, height);
    place(pos, widths, inner / 2, height / 2, Math.max(width - 2 * PAD, inner));
    const boxes = pos.map((p, i) => box(p, widths[i]));
    const left = Math.min(...boxes.map((b) => b.x0));
    const top = Math.min(...boxes.map((b) => b.y0));
    for (const p of pos) { p.x += PAD - left; p.y += PAD - top; }
    return {
      pos,
      width: Math.ceil(Math.max(...boxes.map((b) => b.x1)) - left + 2 * PAD),
      height: Math.ceil(Math.max(...boxes.map((b) => b.y1)) - top + 2 * PAD),
    };
  }

  /** The chart of a graph projection ({nodes, edges}) laid out for ``available`` pixels. */
  function draw(graph, available) {
    const labels = graph.nodes.map((n) => shorten(n.label));
    const index = new Map(graph.nodes.map((node, i) => [node.id, i]));
    const links = graph.edges.map((e) => [index.get(e.source), index.get(e.target)])
      .filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
    const widths = measure(labels);
    const { pos, width, height } = layout(graph.nodes.length, links, widths, available);
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "graph", role: "img",
      testid: "graph-svg", "aria-label": `${graph.nodes.length} memories, ${graph.edges.length} links` });
    for (const edge of graph.edges) {
      const a = pos[index.get(edge.source)];
      const b = pos[index.get(edge.target)];
      if (!a || !b) continue;
      chart.append(svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: `edge ${edge.type}`, testid: "graph-edge",
        "stroke-width": 1 + 2 * (edge.weight ?? 0.5) }, svg("title", {}, `${edge.type} ${edge.weight ?? ""}`)));
    }
    graph.nodes.forEach((node, i) => {
      chart.append(svg("g", { class: `node ${node.category || ""}`, testid: "graph-node", transform: `translate(${pos[i].x},${pos[i].y})` },
        svg("title", {}, `${node.label}${node.entities.length ? `\n[${node.entities.join(", ")}]` : ""}`),
        svg("circle", { r: RADIUS }),
        svg("text", { x: LABEL_DX, y: 4, testid: "graph-label" }, labels[i])));
    });
    return chart;
  }

  window.MnemonGraph = Object.freeze({ draw, layout });
})();
