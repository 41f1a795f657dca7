"use strict";
// Attention over an image: one overlay per output step, the image the run read (an upload) with
// that step's weights over the grid of cells laid on it (each step scaled to its own largest
// weight), labelled with its token; hovering an overlay tells the token, its most attended cell
// and that weight. shape: the answer's source_shape {kind, size: [height, width], grid: [rows,
// columns]}; the attention's S columns are the grid's cells column by column, each covering
// size / grid pixels: k = column * rows + row. Without the image (a page written offline) the cells are drawn alone.
const ImageStrip = (() => {
  const HEIGHT = 64;  // pixels each overlay is drawn high

  function overlay(canvas, image, weights, shape) {
    const [rows, cols] = shape.grid, [height, width] = shape.size;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    if (image) ctx.drawImage(image, 0, 0, canvas.width, canvas.height);
    const top = Math.max(...weights, 1e-12);
    const cw = canvas.width * (width / cols) / width, ch = canvas.height * (height / rows) / height;
    weights.forEach((w, k) => {
      ctx.fillStyle = `rgba(255, 69, 0, ${(0.7 * w / top).toFixed(3)})`;
      ctx.fillRect(Math.floor(k / rows) * cw, (k % rows) * ch, cw, ch);
    });
  }

  // draw(imageURL or null, attention (T x S), shape, rows (T labels), onHover(step or null)) -> div.strip
  function draw(url, attention, shape, rows, onHover) {
    const [height, width] = shape.size;
    const box = document.createElement("div");
    box.className = "strip";
    const canvases = attention.map((weights, t) => {
      const figure = document.createElement("figure");
      const canvas = document.createElement("canvas");
      canvas.height = HEIGHT;
      canvas.width = Math.max(8, Math.round(HEIGHT * width / height));
      canvas.className = "overlay";
      canvas.dataset.step = t;
      const caption = document.createElement("figcaption");
      caption.textContent = Heatmap.shown(rows[t]);
      figure.append(canvas, caption);
      box.append(figure);
      const k = weights.indexOf(Math.max(...weights));
      canvas.addEventListener("mouseenter", () => {
        figure.classList.add("lit");
        if (onHover) onHover({step: t, token: rows[t], row: k % shape.grid[0], col: Math.floor(k / shape.grid[0]),
                              weight: weights[k]});
      });
      canvas.addEventListener("mouseleave", () => { figure.classList.remove("lit"); if (onHover) onHover(null); });
      return canvas;
    });
    const paint = image => canvases.forEach((c, t) => overlay(c, image, attention[t], shape));
    if (url) {
      const image = new Image();
      image.onload = () => { paint(image); box.dataset.drawn = "true"; };
      image.onerror = () => { paint(null); box.dataset.drawn = "true"; };
      image.src = url;
    } else {
      paint(null);
      box.dataset.drawn = "true";
    }
    return box;
  }

  return {draw};
})();
