"use strict";
// The page `attnseq plot attention RUN --input FILE --html OUT.html` writes: the data is in the
// page itself (script#attnseq-data), one panel per input line, no server.
(() => {
  const data = JSON.parse(document.getElementById("attnseq-data").textContent);
  const root = document.getElementById("panels");
  data.items.forEach(payload => {
    const section = document.createElement("section");
    root.append(section);
    let sel = Panel.initial();
    const draw = () => {
      Panel.render(section, {...data.run, name: `${payload.source}`}, payload, sel, s => { sel = s; draw(); });
    };
    draw();
  });
  document.body.dataset.ready = "true";
})();
