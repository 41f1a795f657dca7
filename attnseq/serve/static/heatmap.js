"use strict";
// Attention heatmaps drawn as SVG: one row per output token (or query), one column per source
// token; hover tells the two tokens and the weight; a local window is outlined on each row; a
// copying model's p_gen is a column beside the rows.
// Downloads: the SVG itself, or a PNG drawn from it on a canvas. No library, no network.
const Heatmap = (() => {
  const SVGNS = "http://www.w3.org/2000/svg";
  const FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace";
  // viridis, 10 stops (matplotlib's colour map, the one `attnseq plot attention` uses)
  const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
                   [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];

  function color(w) {
    const x = Math.min(1, Math.max(0, Number.isFinite(w) ? w : 0)) * (VIRIDIS.length - 1);
    const i = Math.min(VIRIDIS.length - 2, Math.floor(x)), f = x - i;
    const c = VIRIDIS[i].map((v, k) => Math.round(v + f * (VIRIDIS[i + 1][k] - v)));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }

  // A token as a person can see it: spaces, tabs and newlines get visible symbols.
  function shown(token) {
    if (token === "") return "∅";
    return token.replace(/ /g, "␣").replace(/\t/g, "⇥").replace(/\n/g, "↵");
  }

  function el(name, attrs, parent, text) {
    const node = document.createElementNS(SVGNS, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  // draw({matrix: rows x cols weights, rows, cols: token labels, window: {bounds, centres} or
  // null, pGen: a copying model's p_gen per row or null, rowAxis, colAxis, onHover(cell or
  // null)}) -> an <svg> element
  function draw(spec) {
    const {matrix, rows, cols} = spec;
    const nRows = matrix.length, nCols = nRows ? matrix[0].length : 0;
    const pGen = spec.pGen || null;
    const cell = Math.max(12, Math.min(28, Math.floor(620 / Math.max(nCols, 1))));
    const fontSize = Math.min(13, Math.max(9, cell - 8));
    const charW = fontSize * 0.62;
    const colLabels = cols.map(shown), rowLabels = rows.map(shown);
    const vertical = colLabels.some(t => t.length > 2);
    const longest = labels => Math.max(1, ...labels.map(t => t.length));
    const left = Math.ceil(longest(rowLabels) * charW) + 30;
    const top = (vertical ? Math.ceil(longest(colLabels) * charW) : fontSize) + 30;
    const strip = pGen ? cell + 10 : 0;  // the p_gen column beside the rows
    const width = left + nCols * cell + strip + 60, height = top + nRows * cell + 16;
    const svg = el("svg", {xmlns: SVGNS, width, height, viewBox: `0 0 ${width} ${height}`, class: "heatmap",
                           "data-rows": nRows, "data-cols": nCols, "font-family": FONT, "font-size": fontSize});
    el("rect", {x: 0, y: 0, width, height, fill: "#ffffff"}, svg);
    el("text", {x: left + nCols * cell / 2, y: 12, "text-anchor": "middle", fill: "#555", "font-size": 11},
       svg, spec.colAxis || "source");
    el("text", {x: 12, y: top + nRows * cell / 2, "text-anchor": "middle", fill: "#555", "font-size": 11,
                transform: `rotate(-90 12 ${top + nRows * cell / 2})`}, svg, spec.rowAxis || "output");
    const colText = colLabels.map((t, j) => {
      const x = left + j * cell + cell / 2, y = top - 6;
      return vertical
        ? el("text", {x, y, class: "col-label", "text-anchor": "start", "dominant-baseline": "middle",
                      transform: `rotate(-90 ${x} ${y})`}, svg, t)
        : el("text", {x, y, class: "col-label", "text-anchor": "middle"}, svg, t);
    });
    const rowText = rowLabels.map((t, i) => el("text", {x: left - 6, y: top + i * cell + cell / 2,
      class: "row-label", "text-anchor": "end", "dominant-baseline": "central"}, svg, t));
    const cells = el("g", {class: "cells"}, svg);
    matrix.forEach((row, i) => row.forEach((w, j) => {
      const r = el("rect", {x: left + j * cell, y: top + i * cell, width: cell, height: cell, fill: color(w),
                            class: "cell", "data-row": i, "data-col": j, "data-weight": w}, cells);
      el("title", {}, r, `${rowLabels[i]} ← ${colLabels[j]}: ${Number(w).toFixed(3)}`);
    }));
    if (spec.window) {
      const g = el("g", {class: "window"}, svg);
      spec.window.bounds.slice(0, nRows).forEach(([lo, hi], i) => {
        el("rect", {x: left + lo * cell + 1, y: top + i * cell + 1, width: (hi - lo + 1) * cell - 2,
                    height: cell - 2, fill: "none", stroke: "#ff4d4d", "stroke-width": 2, class: "window-row"}, g);
        const c = spec.window.centres[i];
        el("circle", {cx: left + (c + 0.5) * cell, cy: top + i * cell + cell / 2, r: Math.max(2, cell / 7),
                      fill: "#ff4d4d", class: "window-centre"}, g);
      });
    }
    if (pGen) {  // 1: written from the vocabulary, 0: copied from where the row attends
      const g = el("g", {class: "p-gen"}, svg), x = left + nCols * cell + 8;
      el("text", {x: x + cell / 2, y: top - 6, "text-anchor": "middle", "font-size": 10, fill: "#555"}, g, "p_gen");
      pGen.slice(0, nRows).forEach((p, i) => {
        const r = el("rect", {x, y: top + i * cell, width: cell, height: cell, fill: color(p), class: "p-gen-cell",
                              "data-row": i, "data-p-gen": p}, g);
        el("title", {}, r, `${rowLabels[i]}: p_gen ${Number(p).toFixed(3)} (1 - p_gen copied)`);
      });
    }
    // the colour scale
    const defs = el("defs", {}, svg);
    const grad = el("linearGradient", {id: "scale", x1: 0, y1: 1, x2: 0, y2: 0}, defs);
    VIRIDIS.forEach((c, k) => el("stop", {offset: k / (VIRIDIS.length - 1), "stop-color": `rgb(${c})`}, grad));
    const sx = left + nCols * cell + strip + 14, sh = Math.max(40, nRows * cell);
    el("rect", {x: sx, y: top, width: 10, height: sh, fill: "url(#scale)"}, svg);
    el("text", {x: sx + 14, y: top + 8, "font-size": 10, fill: "#555"}, svg, "1");
    el("text", {x: sx + 14, y: top + sh, "font-size": 10, fill: "#555"}, svg, "0");

    let lit = null;
    const light = (i, j, on) => {
      rowText[i].classList.toggle("lit", on);
      colText[j].classList.toggle("lit", on);
    };
    cells.addEventListener("mouseover", e => {
      const t = e.target;
      if (!t.classList || !t.classList.contains("cell")) return;
      const i = +t.dataset.row, j = +t.dataset.col;
      if (lit) light(...lit, false);
      lit = [i, j];
      light(i, j, true);
      if (spec.onHover) spec.onHover({row: i, col: j, rowToken: rows[i], colToken: cols[j], weight: matrix[i][j]});
    });
    cells.addEventListener("mouseleave", () => {
      if (lit) light(...lit, false);
      lit = null;
      if (spec.onHover) spec.onHover(null);
    });
    return svg;
  }

  function serialize(svg) {
    const copy = svg.cloneNode(true);
    copy.querySelectorAll(".lit").forEach(n => n.classList.remove("lit"));
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
  }

  function save(blob, filename) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = filename;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  function downloadSVG(svg, filename) {
    save(new Blob([serialize(svg)], {type: "image/svg+xml"}), filename);
  }

  function downloadPNG(svg, filename, scale = 2) {
    const image = new Image();
    const url = URL.createObjectURL(new Blob([serialize(svg)], {type: "image/svg+xml"}));
    image.onload = () => {
      const canvas = document.createElement("canvas");
      canvas.width = svg.width.baseVal.value * scale;
      canvas.height = svg.height.baseVal.value * scale;
      const ctx = canvas.getContext("2d");
      ctx.scale(scale, scale);
      ctx.drawImage(image, 0, 0);
      URL.revokeObjectURL(url);
      canvas.toBlob(blob => save(blob, filename), "image/png");
    };
    image.src = url;
  }

  return {draw, shown, color, downloadSVG, downloadPNG, serialize};
})();
