// attnviz generation page: shows the step the slider points at. Every word, number and sentence
// comes from the JSON Python wrote (render/page/generation_page.py); words are set as text.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("attnviz-data").textContent);
  const slider = document.getElementById("step");

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function paragraph(runs) {
    const node = element("p");
    for (const [text, style] of runs) node.appendChild(element("span", style || "", text));
    return node;
  }

  function bars(row) {
    const table = element("table", "bars");
    row.labels.forEach(function (label, i) {
      const line = element("tr");
      line.appendChild(element("th", "", label));
      const cell = element("td");
      const bar = element("span", "bar");
      bar.style.width = (row.lengths[i] * 12).toFixed(2) + "em";
      cell.appendChild(bar);
      line.appendChild(cell);
      line.appendChild(element("td", "number", row.texts[i]));
      table.appendChild(line);
    });
    return table;
  }

  function table(found) {
    const box = element("div", "sideways");
    box.appendChild(element("p", "caption", found.title));
    const node = element("table", "numbers");
    const head = element("tr");
    head.appendChild(element("th"));
    for (const column of found.columns) head.appendChild(element("th", "", column));
    if (found.sums) head.appendChild(element("th", "", "Σ"));
    node.appendChild(head);
    found.rows.forEach(function (label, r) {
      const line = element("tr");
      line.appendChild(element("th", "", label));
      found.cells[r].forEach(function (text, c) {
        const cell = element("td", "", text);
        if (found.colours) {
          cell.style.color = found.colours[r][c][0];
          cell.style.background = found.colours[r][c][1];
        }
        line.appendChild(cell);
      });
      if (found.sums) line.appendChild(element("td", "", found.sums[r]));
      node.appendChild(line);
    });
    box.appendChild(node);
    return box;
  }

  function draw(into, blocks) {
    into.replaceChildren();
    for (const [kind, value] of blocks) {
      if (kind === "h") into.appendChild(element("h2", "", value));
      else if (kind === "p") into.appendChild(paragraph(value));
      else if (kind === "b") into.appendChild(bars(value));
      else if (kind === "t") into.appendChild(table(value));
    }
  }

  function show(index) {
    const step = data.steps[index];
    slider.value = String(index);
    document.getElementById("step-title").textContent = step.label;
    const text = document.getElementById("text");
    text.replaceChildren();
    const shade = new Map(step.shaded);
    for (let position = 0; position < step.count; position++) {
      const held = step.held.some(function (run) {
        return run[0] <= position && position < run[1];
      });
      const state = position === step.new ? "new" : held ? "held" : "out";
      const chip = element("span", "token " + state, data.tokens[position]);
      if (shade.has(position)) {
        const [colour, background, weight] = data.shades[shade.get(position)];
        chip.style.color = colour;
        chip.style.background = background;
        chip.title = weight;
      }
      if (position === step.query) chip.classList.add("query");
      text.appendChild(chip);
    }
    document.getElementById("cache-line").textContent = step.cache;
    document.getElementById("cache-fill").style.width = (step.fill * 100).toFixed(1) + "%";
    draw(document.getElementById("blocks"), step.blocks);
  }

  draw(document.getElementById("introduction"), data.introduction);
  document.getElementById("legend").textContent = data.legend;
  draw(document.getElementById("ending"), data.ending);
  slider.addEventListener("input", function () {
    show(Number(slider.value));
  });
  document.getElementById("previous").addEventListener("click", function () {
    show(Math.max(0, Number(slider.value) - 1));
  });
  document.getElementById("next").addEventListener("click", function () {
    show(Math.min(data.steps.length - 1, Number(slider.value) + 1));
  });
  show(Number(slider.value));
})();
