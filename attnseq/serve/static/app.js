"use strict";
// The served page: a source sentence decoded by every chosen run, side by side. The address
// bar always holds a permalink (?text=...&beam=5&run=...&hyp=...&view=...&layer=...&head=...)
// that reproduces what is on screen.
(() => {
  const $ = id => document.getElementById(id);
  const form = $("form"), textInput = $("text"), beamInput = $("beam"), nbestInput = $("nbest");
  const fileInput = $("file");
  const ACCEPT = {image: "image/*", audio: "audio/wav,audio/x-wav,.wav"};  // what the file field offers, by input kind
  let fileURL = null;       // the chosen file, for the runs whose sources are files (an image, a WAV)
  const panels = $("panels"), message = $("message");
  let runs = [];            // GET /runs
  let shown = [];           // [{info, payload, sel}] in the order of the panels

  function chosenRuns() {
    const boxes = [...document.querySelectorAll("#runs input[type=checkbox]")];
    const names = boxes.filter(b => b.checked).map(b => b.value);
    return runs.filter(r => names.includes(r.name));
  }

  function permalink() {
    const p = new URLSearchParams();
    p.set("text", textInput.value);
    p.set("beam", beamInput.value || "1");
    if (nbestInput.value) p.set("n", nbestInput.value);
    shown.forEach(s => p.append("run", s.info.name));
    if (shown.length) {
      p.set("hyp", shown.map(s => s.sel.hyp + 1).join(","));
      p.set("view", shown.map(s => s.sel.view).join(","));
      p.set("layer", shown.map(s => s.sel.layer === null ? "last" : s.sel.layer + 1).join(","));
      p.set("head", shown.map(s => s.sel.head === "avg" ? "avg" : s.sel.head + 1).join(","));
    }
    const url = "?" + p.toString();
    history.replaceState(null, "", url);
    $("permalink").href = url;
  }

  function draw(i) {
    const s = shown[i];
    Panel.render(panels.children[i], s.info, s.payload, s.sel, sel => {
      s.sel = sel;
      draw(i);
      permalink();
    });
  }

  // a run whose sources are files gets the chosen file (POST translate/file), the others the text
  function request(info, body) {
    if (!info.input || info.input === "text") {
      return fetch("translate", {method: "POST", headers: {"Content-Type": "application/json"},
                                 body: JSON.stringify({...body, run: info.name})});
    }
    const query = new URLSearchParams({run: info.name});
    for (const k of ["beam_size", "n_best"]) if (body[k] !== undefined) query.set(k, body[k]);
    return fetch("translate/file?" + query, {method: "POST", body: fileInput.files[0]});
  }

  async function decode(info, body) {
    if (info.input && info.input !== "text" && !fileInput.files.length) {
      return {error: `Choose an ${info.input} file: ${info.name} reads ${info.input}s.`};
    }
    try {
      const r = await request(info, body);
      const answer = await r.json().catch(() => ({error: `HTTP ${r.status}: the server's answer is not JSON`}));
      if (r.ok && answer.source_shape) answer.file_url = fileURL;
      return r.ok ? answer : {error: answer.error || `HTTP ${r.status}`, field: answer.field};
    } catch (err) {
      return {error: `The server did not answer (${err.message}).`};
    }
  }

  // translate(selections): decode the text with each chosen run; selections (optional) are
  // the panels' selections to restore, by panel order (from a permalink).
  async function translate(selections) {
    message.textContent = "";
    message.hidden = true;
    const chosen = chosenRuns();
    if (!chosen.length) {
      message.textContent = "Choose at least one run.";
      message.hidden = false;
      return;
    }
    const body = {text: textInput.value, beam_size: parseInt(beamInput.value || "1", 10)};
    if (nbestInput.value) body.n_best = parseInt(nbestInput.value, 10);
    if (!Number.isFinite(body.beam_size)) delete body.beam_size;
    if (body.n_best !== undefined && !Number.isFinite(body.n_best)) delete body.n_best;
    document.body.classList.add("busy");
    const answers = await Promise.all(chosen.map(info => decode(info, body)));
    document.body.classList.remove("busy");
    const errors = answers.map(a => a.error);
    if (errors.every(e => e) && new Set(errors).size === 1) {  // one problem with the request itself
      message.textContent = errors[0];
      message.hidden = false;
      shown = [];
      panels.replaceChildren();
      permalink();
      return;
    }
    shown = chosen.map((info, i) => ({info, payload: answers[i],
                                       sel: (selections && selections[i]) || Panel.initial()}));
    panels.replaceChildren(...shown.map(() => document.createElement("section")));
    panels.dataset.count = shown.length;
    shown.forEach((_, i) => draw(i));
    permalink();
  }

  function selectionsFrom(params, count) {
    const list = key => (params.get(key) || "").split(",");
    const [hyp, view, layer, head] = ["hyp", "view", "layer", "head"].map(list);
    return Array.from({length: count}, (_, i) => ({
      hyp: Math.max(0, (parseInt(hyp[i], 10) || 1) - 1),
      view: view[i] === "encoder" ? "encoder" : "cross",
      layer: layer[i] && layer[i] !== "last" && parseInt(layer[i], 10) > 0 ? parseInt(layer[i], 10) - 1 : null,
      head: head[i] && head[i] !== "avg" && parseInt(head[i], 10) > 0 ? parseInt(head[i], 10) - 1 : "avg",
    }));
  }

  async function start() {
    try {
      runs = await (await fetch("runs")).json();
    } catch (err) {
      message.textContent = `Cannot read the runs from the server (${err.message}).`;
      message.hidden = false;
      return;
    }
    const params = new URLSearchParams(location.search);
    const wanted = params.getAll("run");
    const box = $("runs");
    box.replaceChildren(...runs.map(r => {
      const on = wanted.length ? wanted.includes(r.name) : true;
      return Panel.h("label", {class: "run", title: r.path},
        Panel.h("input", {type: "checkbox", value: r.name, checked: on}), " ", r.name);
    }));
    box.hidden = runs.length < 2;
    const files = runs.filter(r => r.input && r.input !== "text");
    fileInput.hidden = !files.length;
    fileInput.accept = [...new Set(files.map(r => ACCEPT[r.input] || ""))].filter(Boolean).join(",");
    textInput.hidden = files.length === runs.length;
    fileInput.addEventListener("change", () => {
      if (fileURL) URL.revokeObjectURL(fileURL);
      fileURL = fileInput.files.length ? URL.createObjectURL(fileInput.files[0]) : null;
      if (fileURL) translate();
    });
    const widest = Math.max(...runs.map(r => r.max_beam));
    beamInput.max = nbestInput.max = widest;
    beamInput.value = params.get("beam") || String(runs[0] ? runs[0].default_beam : 1);
    if (params.get("n")) nbestInput.value = params.get("n");
    form.addEventListener("submit", e => { e.preventDefault(); translate(); });
    if (params.has("text")) {
      textInput.value = params.get("text");
      await translate(selectionsFrom(params, chosenRuns().length));
    }
    document.body.dataset.ready = "true";
  }

  start();
})();
