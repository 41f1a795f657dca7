"use strict";
// Attention over speech: the utterance's log-mel spectrogram as the model read it (the answer's
// spectrogram, frames x bands) with a line at each output token's most attended listener step,
// under it one row per output step of its weights over the listener's steps on the same time
// axis, and the audio itself to play (the upload). shape: the answer's source_shape {kind:
// "audio", size: [frames], grid: [steps]}; step i covers frames [i * frames / steps, (i + 1) *
// frames / steps), 10 ms each. Hovering a row tells the token, its most attended step, the
// seconds it covers and that weight.
const Spectrogram = (() => {
  const BAND_PX = 3, ROW_PX = 16, MIN_WIDTH = 360, FRAME_SECONDS = 0.01;

  // magma-like: black, purple, orange, pale yellow
  const STOPS = [[0, 0, 4], [81, 18, 124], [183, 55, 121], [252, 137, 97], [252, 253, 191]];
  function colour(v) {
    const x = Math.min(Math.max(v, 0), 1) * (STOPS.length - 1), i = Math.min(Math.floor(x), STOPS.length - 2);
    const f = x - i, a = STOPS[i], b = STOPS[i + 1];
    return a.map((c, j) => Math.round(c + f * (b[j] - c)));
  }

  function paintSpectrogram(canvas, spectrogram) {
    const frames = spectrogram.length, bands = spectrogram[0].length;
    let low = Infinity, high = -Infinity;
    spectrogram.forEach(f => f.forEach(v => { low = Math.min(low, v); high = Math.max(high, v); }));
    const ctx = canvas.getContext("2d"), image = ctx.createImageData(canvas.width, canvas.height);
    for (let x = 0; x < canvas.width; x++) {
      const frame = spectrogram[Math.min(frames - 1, Math.floor(x * frames / canvas.width))];
      for (let y = 0; y < canvas.height; y++) {
        const band = bands - 1 - Math.min(bands - 1, Math.floor(y * bands / canvas.height));  // low bands at the bottom
        const [r, g, b] = colour((frame[band] - low) / Math.max(high - low, 1e-9));
        const at = 4 * (y * canvas.width + x);
        image.data.set([r, g, b, 255], at);
      }
    }
    ctx.putImageData(image, 0, 0);
  }

  // draw(audioURL or null, spectrogram (frames x bands), attention (T x S), shape, rows (T labels),
  //      onHover(step or null)) -> div.speech
  function draw(url, spectrogram, attention, shape, rows, onHover) {
    const frames = shape.size[0], steps = shape.grid[0];
    const width = Math.max(MIN_WIDTH, 2 * frames), stepPx = width / steps;
    const box = document.createElement("div");
    box.className = "speech";
    if (url) {
      const audio = document.createElement("audio");
      audio.controls = true;
      audio.src = url;
      box.append(audio);
    }
    const spec = document.createElement("canvas");
    spec.className = "spectrogram";
    spec.width = width;
    spec.height = BAND_PX * (spectrogram && spectrogram.length ? spectrogram[0].length : 40);
    const ctx = spec.getContext("2d");
    if (spectrogram && spectrogram.length) paintSpectrogram(spec, spectrogram);
    const peaks = attention.map(w => w.indexOf(Math.max(...w)));
    ctx.strokeStyle = "rgba(127, 219, 255, 0.9)";
    peaks.forEach(k => { ctx.beginPath(); ctx.moveTo((k + 0.5) * stepPx, 0); ctx.lineTo((k + 0.5) * stepPx, spec.height); ctx.stroke(); });
    const grid = document.createElement("canvas");
    grid.className = "frames-attention";
    grid.width = width;
    grid.height = ROW_PX * attention.length;
    const g = grid.getContext("2d");
    attention.forEach((weights, t) => weights.forEach((w, i) => {
      g.fillStyle = Heatmap.color(w);
      g.fillRect(i * stepPx, t * ROW_PX, Math.ceil(stepPx), ROW_PX);
    }));
    const labels = document.createElement("div");
    labels.className = "frame-rows";
    rows.slice(0, attention.length).forEach(r => {
      const label = document.createElement("span");
      label.textContent = Heatmap.shown(r);
      label.style.height = ROW_PX + "px";
      labels.append(label);
    });
    grid.addEventListener("mousemove", e => {
      const t = Math.min(attention.length - 1, Math.floor(e.offsetY / ROW_PX));
      const k = peaks[t], seconds = [k, k + 1].map(i => (i * frames / steps * FRAME_SECONDS).toFixed(2));
      if (onHover) onHover({step: t, token: rows[t], peak: k, seconds, weight: attention[t][k]});
    });
    grid.addEventListener("mouseleave", () => { if (onHover) onHover(null); });
    const lower = document.createElement("div");
    lower.className = "frames";
    lower.append(labels, grid);
    const upper = document.createElement("div");
    upper.className = "frames";
    const spacer = document.createElement("div");
    spacer.className = "frame-rows";
    upper.append(spacer, spec);
    box.append(upper, lower);
    box.dataset.drawn = "true";
    return box;
  }

  return {draw};
})();
