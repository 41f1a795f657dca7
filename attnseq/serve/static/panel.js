"use strict";
// One result panel: a run's n-best list for one source, the selected hypothesis' output and
// score, and its attention as a heatmap, with selectors for the Transformer's layers and heads
// and its encoder self-attention. Used by the served page (app.js) and by the page that
// `attnseq plot attention --html` writes (report.js).
const Panel = (() => {
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  // A piece as a person can see it: Heatmap.shown's symbols, control characters as U+XXXX.
  const visible = piece => Heatmap.shown(piece).replace(/[\u0000-\u001f\u007f-\u009f]/g,
    c => "U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0"));

  const mean = mats => mats[0].map((row, i) => row.map((_, j) => mats.reduce((s, m) => s + m[i][j], 0) / mats.length));

  // The default selection: best hypothesis, cross-attention of the last layer, averaged over heads.
  const initial = () => ({hyp: 0, view: "cross", layer: null, head: "avg"});

  // What the selection shows: {matrix, rows, cols, window, rowAxis, colAxis, title}.
  function chosen(payload, sel) {
    const hyp = payload.hypotheses[Math.min(sel.hyp, payload.hypotheses.length - 1)];
    const src = payload.source_tokens;
    const pick = (stack, rowsAxis) => {
      const layer = sel.layer === null ? stack.length - 1 : Math.min(sel.layer, stack.length - 1);
      const heads = stack[layer];
      const head = sel.head === "avg" ? "avg" : Math.min(sel.head, heads.length - 1);
      return {matrix: head === "avg" ? mean(heads) : heads[head], layer, head};
    };
    if (sel.view === "encoder" && payload.encoder_attention) {
      const p = pick(payload.encoder_attention);
      return {matrix: p.matrix, rows: src, cols: src, window: null, rowAxis: "query (source)", colAxis: "source",
              title: `encoder self-attention, layer ${p.layer + 1}, ${p.head === "avg" ? "average over heads" : "head " + (p.head + 1)}`};
    }
    if (!hyp.attention) return null;
    const rows = hyp.output_tokens.slice();
    while (rows.length < hyp.attention.length) rows.push("</s>");
    if (hyp.cross_attention) {
      const p = pick(hyp.cross_attention);
      const last = p.layer === hyp.cross_attention.length - 1;
      const several = hyp.cross_attention.length > 1;
      return {matrix: last && p.head === "avg" ? hyp.attention : p.matrix, rows, cols: src,
              window: p.head === "avg" ? hyp.window : null, pGen: hyp.p_gen || null, rowAxis: "output", colAxis: "source",
              title: `${several ? "cross-attention, layer " + (p.layer + 1) + ", " : ""}` +
                     `${p.head === "avg" ? "average over heads" : "head " + (p.head + 1)}`};
    }
    return {matrix: hyp.attention, rows, cols: src, window: hyp.window, pGen: hyp.p_gen || null, rowAxis: "output",
            colAxis: "source", title: "attention"};
  }

  function select(label, cls, options, value, onchange) {
    return h("label", {class: cls}, label + " ",
      h("select", {class: cls, onchange},
        ...options.map(([v, text]) => h("option", {value: v, selected: String(v) === String(value)}, text))));
  }

  // render(root, info, payload, sel, onChange(newSel)): fills ``root`` (emptied first).
  // info: the run as GET /runs describes it; payload: a /translate answer or {error}.
  function render(root, info, payload, sel, onChange) {
    root.replaceChildren();
    root.className = "panel";
    root.dataset.run = info.name;
    root.append(h("header", {}, h("h2", {}, info.name), h("p", {class: "desc"}, info.description || "")));
    if (!payload) return;
    if (payload.error) {
      root.append(h("p", {class: "error", role: "alert"}, payload.error));
      return;
    }
    const hyps = payload.hypotheses;
    const k = Math.min(sel.hyp, hyps.length - 1);
    const best = hyps[k];
    root.append(h("div", {class: "output"},
      h("output", {class: "text"}, best.output === "" ? "∅ (empty)" : best.output),
      h("span", {class: "score", title: "sum of token log-probabilities" }, `score ${best.score.toFixed(4)}`)));
    if (payload.unknown && payload.unknown.length) {  // pieces this run's vocabulary lacks, read as unknown
      root.append(h("p", {class: "unknown", role: "note"},
        `Read as unknown, outside this model's vocabulary: ${payload.unknown.map(p => `“${visible(p)}”`).join(" ")}`));
    }
    if (payload.cut) {  // the source was longer than the run reads: outputs and attention are of its start
      root.append(h("p", {class: "cut", role: "note"},
        "Only the start of this input was read: it is longer than this model reads (decode.max_source_len)."));
    }
    if (payload.empty) {  // the best output is the empty string, not a failure to answer
      root.append(h("p", {class: "empty", role: "note"}, "The model's best translation is empty."));
    }
    if (hyps.length > 1) {
      root.append(h("ol", {class: "nbest", "aria-label": "n-best list"},
        ...hyps.map((hy, i) => h("li", {},
          h("button", {type: "button", class: "hyp", "data-index": i, "aria-pressed": String(i === k),
                       onclick: () => onChange({...sel, hyp: i})},
            h("span", {class: "out"}, hy.output === "" ? "∅" : hy.output),
            h("span", {class: "score"}, hy.score.toFixed(4)))))));
    }
    const view = chosen(payload, {...sel, hyp: k});
    if (!view) {
      root.append(h("p", {class: "muted"}, "This model has no attention to show."));
      return;
    }
    const cross = best.cross_attention, enc = payload.encoder_attention;
    const stack = sel.view === "encoder" && enc ? enc : cross;
    const controls = h("div", {class: "controls"});
    if (enc) {
      controls.append(select("view", "view", [["cross", "cross-attention"], ["encoder", "encoder self-attention"]],
                             sel.view, e => onChange({...sel, view: e.target.value})));
    }
    if (stack && stack.length > 1) {
      const layer = sel.layer === null ? stack.length - 1 : sel.layer;
      controls.append(select("layer", "layer", stack.map((_, i) => [i, `layer ${i + 1}`]), layer,
                             e => onChange({...sel, layer: +e.target.value})));
    }
    if (stack && stack[0].length > 1) {
      controls.append(select("head", "head",
        [["avg", "average over heads"], ...stack[0].map((_, i) => [i, `head ${i + 1}`])], sel.head,
        e => onChange({...sel, head: e.target.value === "avg" ? "avg" : +e.target.value})));
    }
    if (controls.children.length) root.append(controls);
    const caption = h("p", {class: "caption"}, view.title);
    if (view.window) {
      caption.append(h("span", {class: "window-note"},
        ` · ${info.attention} window [p_t − ${view.window.width}, p_t + ${view.window.width}] outlined, ● at p_t`));
    }
    root.append(caption);
    const shape = payload.source_shape;
    if (shape && shape.kind === "image" && view.rowAxis === "output") {  // a strip of overlays, not a grid of cells
      const hover = h("div", {class: "hover", "aria-live": "polite"}, "Point at an overlay to read its token.");
      const strip = ImageStrip.draw(payload.file_url || null, view.matrix, shape, view.rows, c => {
        hover.textContent = c === null ? "Point at an overlay to read its token." :
          `output “${Heatmap.shown(c.token)}” (${c.step + 1}) looks most at row ${c.row + 1}, column ${c.col + 1} ` +
          `of the ${shape.grid[0]} × ${shape.grid[1]} cells: ${Number(c.weight).toFixed(4)}`;
      });
      root.append(strip, hover);
      return;
    }
    if (shape && shape.kind === "audio" && view.rowAxis === "output") {  // the spectrogram over the frames' attention
      const hover = h("div", {class: "hover", "aria-live": "polite"}, "Point at a row to read its token.");
      const speech = Spectrogram.draw(payload.file_url || null, payload.spectrogram, view.matrix, shape, view.rows, c => {
        hover.textContent = c === null ? "Point at a row to read its token." :
          `output “${Heatmap.shown(c.token)}” (${c.step + 1}) looks most at listener step ${c.peak + 1} of ` +
          `${shape.grid[0]} (${c.seconds[0]}–${c.seconds[1]} s): ${Number(c.weight).toFixed(4)}`;
      });
      root.append(speech, hover);
      return;
    }
    const hover = h("div", {class: "hover", "aria-live": "polite"}, "Point at a cell to read its weight.");
    const svg = Heatmap.draw({...view, onHover: c => {
      hover.textContent = c === null ? "Point at a cell to read its weight." :
        `${view.colAxis} “${Heatmap.shown(c.colToken)}” (${c.col + 1}) → ${view.rowAxis} ` +
        `“${Heatmap.shown(c.rowToken)}” (${c.row + 1}): ${Number(c.weight).toFixed(4)}`;
    }});
    root.append(h("div", {class: "heat"}, svg), hover);
    const base = `attention-${info.name.replace(/[^\w.-]+/g, "_")}-${k + 1}`;
    root.append(h("div", {class: "downloads"},
      h("button", {type: "button", class: "download-png", onclick: () => Heatmap.downloadPNG(svg, base + ".png")}, "PNG"),
      h("button", {type: "button", class: "download-svg", onclick: () => Heatmap.downloadSVG(svg, base + ".svg")}, "SVG")));
  }

  return {render, initial, chosen, h};
})();
