// The attnviz lesson page. Every number and every sentence on it was computed, formatted and
// written by attnviz in Python and embedded as data (attnviz/render/page_data.py): the lesson's
// own steps, their worked examples for every word and key, and the page's few texts. This
// script only chooses which of them to show for the word, key, head, layer and step asked for,
// and draws the lines; it holds no sentence. Words are always set as text (textContent), never
// parsed as HTML, so markup in a sentence stays text. It loads nothing.
"use strict";

const DATA = JSON.parse(document.getElementById("attnviz-data").textContent);
const TEXT = DATA.text; // every sentence the page says around the lesson, from attnviz
const ALL_HEADS = -1;
const STEPS = DATA.steps.length;
const ELLIPSIS = "…";
const FONT_SIZES = [14, 16, 18, 20, 24, 28, 32]; // px; 16 is the browser's usual size
const THINNEST = 0.005; // lighter weights draw no line, as in `attnviz heatmap --style lines`

const state = {
  layer: DATA.start.layer,
  head: DATA.start.head, // an index into DATA.heads, or ALL_HEADS
  row: DATA.start.row, // the chosen word: a row of the picture
  preview: null, // a row hovered or focused: its lines are drawn until the pointer leaves
  key: null, // the key position chosen for steps 3 to 5; null: the one the word attends to most
  step: 0, // 0: every step at once; 1 to 7: that step alone, for a projector
  font: 1, // an index into FONT_SIZES
};

const byId = (id) => document.getElementById(id);

function make(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A text of attnviz's with each {name} replaced by values[name].
function fill(template, values) {
  return template.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? values[name] : whole));
}

function worked(text, className) {
  return make("p", "worked" + (className ? " " + className : ""), text);
}

// -- what is chosen ------------------------------------------------------------------------------

function layer() {
  return DATA.layers[state.layer];
}

function shownHeads() {
  return state.head === ALL_HEADS ? DATA.heads.map((_, index) => index) : [state.head];
}

function query() {
  return layer().heads[state.head].queries[state.row];
}

function chosenKey() {
  return state.key === null ? query().key : state.key;
}

function headName(index) {
  return fill(TEXT.headName, { head: DATA.heads[index] + 1 });
}

// -- the controls --------------------------------------------------------------------------------

function buildControls() {
  const layers = byId("layer");
  DATA.layers.forEach((entry, index) => layers.append(new Option(entry.name, index)));
  layers.value = state.layer;
  byId("layer-choice").hidden = DATA.layers.length < 2;
  layers.addEventListener("change", () => {
    state.layer = Number(layers.value);
    render();
  });

  const heads = byId("head");
  if (DATA.heads.length > 1) heads.append(new Option(TEXT.allHeads, ALL_HEADS));
  DATA.heads.forEach((_, index) => heads.append(new Option("", index)));
  nameHeads();
  heads.value = state.head;
  heads.addEventListener("change", () => {
    state.head = Number(heads.value);
    render();
  });

  byId("smaller").addEventListener("click", () => resize(-1));
  byId("larger").addEventListener("click", () => resize(+1));
  byId("previous").addEventListener("click", () => go(-1));
  byId("next").addEventListener("click", () => go(+1));
  byId("all-steps").addEventListener("click", () => {
    state.step = 0;
    renderSteps();
  });
  document.addEventListener("keydown", (event) => {
    // A list box keeps its own arrow keys, and the browser its shortcuts (Alt+← is Back);
    // presenters' remotes send PageUp and PageDown.
    if (event.target instanceof HTMLSelectElement) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const moves = { ArrowRight: +1, PageDown: +1, ArrowLeft: -1, PageUp: -1 };
    if (event.key in moves) {
      event.preventDefault();
      go(moves[event.key]);
    }
  });
  window.addEventListener("resize", drawPicture);
}

// The head menu names each head's type in the layer shown (cross-attention has none).
function nameHeads() {
  const types = layer().headTypes;
  const options = [...byId("head").options].filter((option) => Number(option.value) !== ALL_HEADS);
  options.forEach((option, index) => {
    const head = DATA.heads[index] + 1;
    // Heads that share K and V (grouped-query attention) say which key/value head they read.
    const sharing = DATA.kvHeads ? fill(TEXT.headSharing, { kv: DATA.kvHeads[index] }) : "";
    option.textContent =
      (types
        ? fill(TEXT.headOptionTyped, { head, type: types[index].type })
        : fill(TEXT.headOption, { head })) + sharing;
  });
}

// From "All steps", either direction starts at step 1.
function go(direction) {
  state.step = state.step === 0 ? 1 : Math.min(STEPS, Math.max(1, state.step + direction));
  renderSteps();
}

function resize(direction) {
  state.font = Math.min(FONT_SIZES.length - 1, Math.max(0, state.font + direction));
  document.documentElement.style.fontSize = FONT_SIZES[state.font] + "px";
  byId("smaller").disabled = state.font === 0;
  byId("larger").disabled = state.font === FONT_SIZES.length - 1;
  drawPicture();
}

// -- the words and their lines -------------------------------------------------------------------

function buildWords() {
  DATA.rows.forEach((row, index) => {
    const button = make("button", "word", row.word);
    button.type = "button";
    button.addEventListener("click", () => {
      state.row = index;
      state.key = null;
      render();
    });
    // Hovering or tabbing to a word previews its lines; a click or Enter chooses it.
    const preview = (on) => () => {
      state.preview = on ? index : null;
      drawPicture();
    };
    button.addEventListener("mouseenter", preview(true));
    button.addEventListener("mouseleave", preview(false));
    button.addEventListener("focus", preview(true));
    button.addEventListener("blur", preview(false));
    const item = make("li");
    item.append(button);
    byId("queries").append(item);
  });
  DATA.columns.forEach((column) => {
    const button = make("button", "word key");
    button.type = "button";
    button.append(make("span", "label", column.word), make("span", "weight"), make("span", "bar"));
    // The worked examples follow the trace's own positions: a merged word's first piece.
    button.addEventListener("click", () => {
      state.key = column.positions[0];
      render();
    });
    const item = make("li");
    item.append(button);
    byId("keys").append(item);
  });
}

function drawPicture() {
  const row = state.preview === null ? state.row : state.preview;
  const heads = shownHeads();
  const single = heads.length === 1;
  const chosen = single ? DATA.keyColumn[chosenKey()] : null;
  const queries = byId("queries").querySelectorAll("button");
  queries.forEach((button, index) => {
    button.setAttribute("aria-pressed", String(index === state.row));
    button.classList.toggle("previewed", index === row && index !== state.row);
  });
  const keys = byId("keys").querySelectorAll("button");
  keys.forEach((button, column) => {
    const masked = DATA.maskedCells !== null && DATA.maskedCells[row][column];
    const weight = single ? layer().heads[heads[0]].weights[row][column] : "";
    button.classList.toggle("masked", masked);
    button.setAttribute("aria-pressed", String(single && column === chosen && row === state.row));
    button.querySelector(".weight").textContent = masked ? TEXT.masked : weight;
    const bar = button.querySelector(".bar");
    bar.hidden = !single || masked;
    if (single) {
      bar.style.width = 4 * layer().heads[heads[0]].lines[row][column] + "em";
      bar.style.backgroundColor = DATA.headColours[DATA.heads[heads[0]]];
    }
    button.title = masked ? TEXT.maskedTitle : "";
  });

  const svg = byId("lines");
  svg.replaceChildren();
  const box = svg.getBoundingClientRect();
  svg.setAttribute("viewBox", `0 0 ${box.width} ${box.height}`);
  const middle = (node) => {
    const rect = node.getBoundingClientRect();
    return rect.top + rect.height / 2 - box.top;
  };
  const scale = FONT_SIZES[state.font] / 16;
  const from = middle(queries[row]);
  // Each head's lines end a little apart, so heads going to the same word stay visible.
  const spread = Math.min(keys[0].getBoundingClientRect().height / (heads.length + 1), 4 * scale);
  heads.forEach((head, rank) => {
    const weights = layer().heads[head].lines[row];
    const offset = (rank - (heads.length - 1) / 2) * spread;
    weights.forEach((weight, column) => {
      const masked = DATA.maskedCells !== null && DATA.maskedCells[row][column];
      if (weight < THINNEST || masked) return;
      const line = document.createElementNS(svg.namespaceURI, "line");
      line.setAttribute("x1", 2);
      line.setAttribute("y1", from + offset);
      line.setAttribute("x2", box.width - 2);
      line.setAttribute("y2", middle(keys[column]) + offset);
      line.setAttribute("stroke", DATA.headColours[DATA.heads[head]]);
      line.setAttribute("stroke-width", scale * (0.75 + 9 * weight));
      line.setAttribute("stroke-opacity", 0.3 + 0.7 * weight);
      line.setAttribute("stroke-linecap", "round");
      svg.append(line);
    });
  });

  const word = DATA.rows[row].word;
  const where = DATA.layers.length > 1 ? layer().name + ", " : "";
  byId("picture-title").textContent = fill(TEXT.pictureTitle, {
    word,
    where,
    head: single ? headName(heads[0]) : TEXT.everyHead,
  });
  const legend = byId("legend");
  legend.replaceChildren();
  if (single) {
    legend.append(DATA.hidden ? fill(TEXT.legendHidden, { hidden: DATA.hidden }) : TEXT.legendOne);
  } else {
    for (const head of heads) {
      const swatch = make("span", "swatch");
      swatch.style.backgroundColor = DATA.headColours[DATA.heads[head]];
      const item = make("span", "legend-item");
      item.append(swatch, headName(head));
      legend.append(item, " ");
    }
    legend.append(TEXT.legendAll);
  }
  legend.append(fill(TEXT.legendThin, { thinnest: THINNEST }));
  if (DATA.maskedCells !== null) legend.append(TEXT.legendMasked);
}

// -- the steps -----------------------------------------------------------------------------------

// A paragraph of the lesson: runs of [text, style, slot]; a slot names the lesson's example word,
// replaced by the word and key picked here.
function lessonParagraph(runs) {
  const node = make("p");
  for (const [text, style, slot] of runs) {
    const shown = slot ? slotText(slot) : text;
    node.append(style ? make("span", style, shown) : shown);
  }
  return node;
}

// The key slots appear only in a head's own steps, where a head is picked.
function slotText(slot) {
  const position = DATA.rows[state.row].position;
  const names = {
    query: () => DATA.queryNames[position],
    "query!r": () => DATA.queryQuoted[position],
    key: () => DATA.keyNames[chosenKey()],
    "key!r": () => DATA.keyQuoted[chosenKey()],
    tables: () => "", // the page draws no tables: what the lesson says of them is left out
  };
  return names[slot]();
}

// What a step's heading calls it: its number, or an optional step's label ("6b").
function stepLabel(step) {
  return step.label === undefined ? String(step.number) : step.label;
}

function renderSteps() {
  const steps = byId("steps");
  steps.replaceChildren();
  steps.classList.toggle("one-step", state.step !== 0);
  DATA.steps.forEach((step, index) => {
    const article = make("article", "step");
    article.id = "step-" + stepLabel(step);
    article.hidden = state.step !== 0 && state.step !== index + 1;
    if (step.perHead && state.head === ALL_HEADS) {
      article.append(make("h2", "", step.heading), make("p", "note", TEXT.chooseHead));
    } else {
      const written = layer().steps[index];
      const blocks = step.perHead ? written.heads[state.head] : written.blocks;
      article.append(...blocks.flatMap(drawBlock));
      // A step about the lesson's example word says so when another word is picked.
      if (step.example !== undefined && DATA.rows[state.row].position !== step.example) {
        const word = DATA.queryQuoted[step.example];
        article.insertBefore(make("p", "note", fill(TEXT.exampleWord, { word })), article.children[1]);
      }
    }
    steps.append(article);
  });
  const shown = DATA.steps[state.step - 1];
  byId("step-label").textContent =
    state.step === 0
      ? TEXT.allSteps
      : fill(TEXT.stepOf, { step: stepLabel(shown), steps: DATA.lastStep });
  byId("previous").disabled = state.step <= 1;
  byId("next").disabled = state.step === STEPS;
  byId("all-steps").disabled = state.step === 0;
}

function drawBlock([kind, content, fixed]) {
  if (kind === "h") return [make("h2", "", content)];
  if (kind === "p") return [lessonParagraph(content)];
  if (kind === "t") return numbersTable(content);
  // An example about one word whatever is picked (a turned pair of rotary positions) comes as
  // its text.
  if (kind === "w") return fixed === undefined ? workedLines(content) : [worked(fixed)];
  return [];
}

// A worked example of the lesson, for the word and key picked; the numbers are the data's, as
// formatted there. An example this page does not know how to redo for another word is left out.
// Step 7's example is the word's in every head; the others are a picked head's.
function workedLines(example) {
  const lines = {
    projection: () => [worked(query().projection)],
    dot_product: () => [worked(dotProduct(chosenKey()))],
    scaling: () => [
      worked(scalingLine(chosenKey())),
      ...(isMasked(chosenKey()) ? [worked(TEXT.maskedPair, "masked")] : []),
    ],
    softmax: () => [worked(softmaxLine(chosenKey()), isMasked(chosenKey()) ? "masked" : "")],
    weighted_sum: () => [worked(query().sum)],
    weighted_sum_element: () => [worked(query().element)],
    output_sum: () => [worked(layer().output[state.row])],
  };
  return example in lines ? lines[example]() : [];
}

// A table of the lesson as the terminal prints it: its title, words and numbers, all from the
// data; masked cells hatched, weights shaded as there.
function numbersTable(matrix) {
  const node = make("table", "numbers");
  const header = make("tr");
  header.append(make("th"), ...matrix.columns.map((word) => make("th", "", word)));
  if (matrix.sums) header.append(make("th", "", "Σ"));
  node.append(header);
  matrix.cells.forEach((cells, r) => {
    const row = make("tr");
    row.append(make("th", "", matrix.rows[r]));
    cells.forEach((text, c) => {
      const cell = make("td", matrix.masked && matrix.masked[r][c] ? "masked" : "", text);
      if (matrix.colours) {
        cell.style.color = matrix.colours[r][c][0];
        cell.style.backgroundColor = matrix.colours[r][c][1];
      }
      row.append(cell);
    });
    if (matrix.sums) row.append(make("td", "", matrix.sums[r]));
    node.append(row);
  });
  const scroller = make("div", "table-scroll");
  scroller.append(node);
  return [make("h3", "", matrix.title), scroller];
}

function dotProduct(key) {
  const words = query();
  // q's and k's numbers at the decimals at which this pair's written-out sum holds.
  const terms = layer().heads[state.head].dotTerms[words.dot[key]];
  const k = terms.k[key];
  const products = terms.q[state.row].map((q, c) => (q === ELLIPSIS ? q : `${q}×${k[c]}`));
  const counted = products.includes(ELLIPSIS) ? fill(TEXT.terms, { count: DATA.sizes.dK }) : "";
  const name = DATA.queryNames[DATA.rows[state.row].position];
  return `q_${name} · k_${DATA.keyNames[key]}${counted} = ${products.join(" + ")} = ${words.score[key]}`;
}

function scalingLine(key) {
  const words = query();
  const root = layer().heads[state.head].roots[words.scale[key]];
  return `${words.scoreAt[key]} / ${root} = ${words.scaled[key]}`;
}

function softmaxLine(key) {
  const words = query();
  // The row's pieces at the decimals at which this weight's numerator, sum and division hold.
  const parts = words.softmaxAt[words.softmax[key]];
  const terms = DATA.softmaxShown.map((j) => (j === null ? ELLIPSIS : `exp(${parts.shifted[j]})`));
  return (
    `exp(${parts.shifted[key]}) / (${terms.join(" + ")}) = ${parts.exps[key]} / ` +
    `${parts.total} = ${words.weight[key]}`
  );
}

function isMasked(key) {
  return DATA.maskedKeys !== null && DATA.maskedKeys[state.row][key];
}

// -- beside the row: what each word adds, rollout, the head's type, the caution --------------------

function table(node, header, rows, titles) {
  const head = make("tr");
  header.forEach((text, index) => {
    const cell = make("th", "", text);
    if (titles) cell.title = titles[index];
    head.append(cell);
  });
  node.replaceChildren(head);
  for (const cells of rows) {
    const row = make("tr", cells.className || "");
    cells.forEach((text, index) => row.append(make(index === 0 ? "th" : "td", "", text)));
    node.append(row);
  }
}

function renderRow() {
  const heads = shownHeads();
  const single = heads.length === 1;
  const word = DATA.rows[state.row].word;
  const rollout = layer().rollout;
  const where = DATA.layers.length > 1 ? layer().name + ", " : "";
  byId("row-title").textContent = fill(TEXT.rowTitle, {
    word,
    where,
    head: single ? headName(heads[0]) : TEXT.everyHead,
  });
  const types = layer().headTypes;
  byId("head-type").textContent = single && types ? types[heads[0]].why : "";
  // Which columns: a head's weight, contribution and share; rollout when the page has layers.
  const shown = [0, ...(single ? [1, 2, 3] : []), ...(rollout ? [4] : [])];
  const contribution = single ? layer().heads[heads[0]].contribution : null;
  const note = single ? contribution.notes[state.row] : null;
  // A row's contributions, shares and rollout come as one string each, numbers between spaces.
  const split = (text) => (text === undefined ? [] : text.split(" "));
  const norms = single ? split(contribution.norms[state.row]) : [];
  const shares = single ? split(contribution.shares[state.row]) : [];
  const rolled = rollout ? split(rollout[state.row]) : [];
  const rows = DATA.columns.map((column, index) => {
    const masked = DATA.maskedCells !== null && DATA.maskedCells[state.row][index];
    const all = [
      column.word,
      single ? (masked ? TEXT.masked : layer().heads[heads[0]].weights[state.row][index]) : "",
      single ? norms[index] : "",
      single ? shares[index] : "",
      rollout ? rolled[index] : "",
    ];
    const cells = shown.map((c) => all[c]);
    if (note && note.column === String(index)) cells.className = "parked";
    return cells;
  });
  const titles = shown.map((c) => TEXT.rowColumnTitles[c]);
  table(byId("row-table"), shown.map((c) => TEXT.rowColumns[c]), shown.length > 1 ? rows : [], titles);
  byId("row-table").hidden = shown.length === 1;
  let said = single ? "" : TEXT.rowChooseHead;
  if (note) {
    said = fill(TEXT.contributionDisagrees, {
      ...note,
      key: DATA.columns[Number(note.column)].word,
      word,
    });
  } else if (note === 0) {
    said = fill(TEXT.contributionAgrees, { n: DATA.sizes.nKeys });
  }
  byId("contribution-note").textContent = said;
  byId("contribution-about").textContent = single
    ? fill(TEXT.contributionAbout, { word, total: contribution.totals[state.row] })
    : "";
  byId("rollout-note").textContent = rollout
    ? fill(TEXT.rolloutAbout, { word, layer: state.layer + 1 })
    : "";
  byId("caveat").textContent = DATA.caveat ? fill(DATA.caveat, { word }) : "";
}

// -- the second sentence ---------------------------------------------------------------------------

function renderComparison() {
  const compared = DATA.compare;
  byId("compare").hidden = !compared;
  if (!compared) return;
  const focus = compared.focus;
  byId("compare-title").textContent = fill(TEXT.compareTitle, { sentence: compared.sentence });
  byId("compare-about").textContent = compared.about;
  byId("compare-summary").textContent = compared.summary;
  const heads = shownHeads();
  const change =
    heads.length === 1
      ? compared.changes.find((c) => c.layer === state.layer && c.head === heads[0])
      : undefined;
  const where = DATA.layers.length > 1 ? layer().name + ", " : "";
  byId("compare-row-title").textContent = change
    ? fill(TEXT.compareRowTitle, { focus, where, head: headName(heads[0]) })
    : fill(TEXT.compareChooseHead, { focus });
  table(byId("compare-row"), TEXT.compareColumns, change ? change.rows : []);
  byId("compare-row").hidden = !change;
  byId("compare-worked").textContent = change ? change.worked : "";
  byId("compare-worked").hidden = !change;
  byId("compare-said").textContent = change ? change.said : "";

  const ranked = compared.changes.slice(0, compared.ranked);
  const top =
    ranked.length < compared.changes.length
      ? fill(TEXT.compareTop, { shown: ranked.length, total: compared.changes.length })
      : "";
  byId("compare-ranked-title").textContent = fill(TEXT.compareRankedTitle, { focus, top });
  const rows = ranked.map((c) => {
    const types = DATA.layers[c.layer].headTypes;
    const cells = [
      fill(TEXT.compareHeadName, { layer: c.layer + 1, head: DATA.heads[c.head] + 1 }),
      types ? types[c.head].type : "",
      c.tv,
      c.topA,
      c.wA,
      c.topB,
      c.wB,
      c.moves,
    ];
    if (c === change) cells.className = "chosen";
    return cells;
  });
  const node = byId("compare-ranked");
  table(node, TEXT.compareRankedColumns, rows);
  // A head of the ranking, clicked (or chosen with Enter), is shown above and in the picture.
  [...node.querySelectorAll("tr")].slice(1).forEach((row, index) => {
    const choose = () => {
      state.layer = ranked[index].layer;
      state.head = ranked[index].head;
      render();
    };
    row.tabIndex = 0;
    row.addEventListener("click", choose);
    row.addEventListener("keydown", (event) => {
      if (event.key === "Enter") choose();
    });
  });
}

// -- everything ----------------------------------------------------------------------------------

function renderAbout() {
  const about = byId("about-text");
  about.replaceChildren(...layer().header.map((runs) => lessonParagraph(runs)));
  byId("weights-note").textContent = layer().weightsNote;
}

function render() {
  byId("layer").value = state.layer;
  nameHeads();
  byId("head").value = state.head;
  renderAbout();
  drawPicture();
  renderRow();
  renderComparison();
  renderSteps();
}

byId("hint").textContent = TEXT.hint;
buildControls();
buildWords();
resize(0);
render();
