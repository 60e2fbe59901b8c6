// The attnviz lesson page. Every number and every sentence on it was computed, formatted and
// written by attnviz in Python and embedded as data (attnviz/render/page/page_data.py): the lesson's
// own steps, their worked examples, and the page's few texts. The tables of numbers (weights,
// contributions, rollout: layers × heads × n² of each) come as the integers their printed text
// is without the point, deflated (attnviz/render/page/page_numbers.py); this script only puts the
// point back. It chooses what to show for the word, key, head, layer and step asked for, and
// draws the lines; it holds no sentence. Words are always set as text (textContent), never
// parsed as HTML, so markup in a sentence stays text. It loads nothing.
"use strict";

const DATA = JSON.parse(document.getElementById("attnviz-data").textContent);
const TEXT = DATA.text; // every sentence the page says around the lesson, from attnviz
const ALL_HEADS = -1;
const STEPS = DATA.steps.length;
const ELLIPSIS = "…";
const FONT_SIZES = [14, 16, 18, 20, 24, 28, 32]; // px; 16 is the browser's usual size
const THINNEST = DATA.thinnest; // lighter weights draw no line, as in `attnviz heatmap --style lines`

// A weight for drawing, in a picture: of the lines' table, at its decimals (page_data.py,
// LINE_DECIMALS).
function lineWeight(picture, head, row, column) {
  const numbers = picture.tables();
  const lines = numbers.lines || numbers.weights;
  return lines.values[cellOf(picture.words, head, row, column)] / 10 ** lines.decimals;
}
const ARRAYS = { Uint8Array, Int8Array, Uint16Array, Int16Array, Int32Array, Float64Array };

const state = {
  layer: DATA.start.layer,
  head: DATA.start.head, // an index into DATA.heads, or ALL_HEADS
  row: DATA.start.row, // the chosen word: a row of the picture
  preview: null, // a row hovered or focused: its lines are drawn until the pointer leaves
  key: null, // the key position chosen for the scores, scaled and weights steps; null: the one the word attends to most
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

// -- the tables of numbers -----------------------------------------------------------------------

// A packed table's integers, inflated once: its base64 deflated bytes, little-endian.
async function unpack(packed) {
  const bytes = Uint8Array.from(atob(packed.data), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  const buffer = await new Response(stream).arrayBuffer();
  packed.values = new ARRAYS[packed.type](buffer);
}

function unpackAll() {
  const tables = [];
  for (const entry of DATA.layers) {
    tables.push(...Object.values(entry.numbers).filter((table) => table !== null));
    if (entry.rollout) tables.push(entry.rollout);
  }
  for (const entry of DATA.compare ? DATA.compare.picture.layers : []) {
    tables.push(...Object.values(entry).filter((table) => table !== null));
  }
  return Promise.all(tables.map(unpack));
}

// The printed text of number ``index`` of a packed table: its integer with the point put back
// at the table's decimals ("-" for a negative number, as attnviz prints it), or the text it
// came as (−∞, nan, a number of a million or more).
function printed(packed, index) {
  const text = packed.texts[index];
  if (text !== undefined) return text;
  const integer = packed.values[index];
  const decimals = packed.decimals;
  let digits = String(Math.abs(integer)).padStart(decimals + 1, "0");
  if (decimals > 0) digits = digits.slice(0, -decimals) + "." + digits.slice(-decimals);
  return (integer < 0 ? "-" : "") + digits;
}

// The flat index of [head, row, column] in a layer's table of shown heads × rows × columns.
function cell(head, row, column) {
  return cellOf(DATA, head, row, column);
}

// The same in a table of ``words``' rows and columns (A's, the page's own, or B's).
function cellOf(words, head, row, column) {
  return (head * words.rows.length + row) * words.columns.length + column;
}

// A row of a packed table, as texts: of a head's table, or of rollout's [rows, columns].
function printedRow(packed, head, row) {
  const start = head === null ? row * DATA.columns.length : cell(head, row, 0);
  return DATA.columns.map((_, column) => printed(packed, start + column));
}

// -- what is chosen ------------------------------------------------------------------------------

function layer() {
  return DATA.layers[state.layer];
}

function shownHeads() {
  return state.head === ALL_HEADS ? DATA.heads.map((_, index) => index) : [state.head];
}

// The chosen word's worked examples in the chosen head; undefined in a layer the page does not
// work out (page_worked.py says which).
function query() {
  const queries = layer().heads[state.head].queries;
  return queries && queries[state.row];
}

function chosenKey() {
  return state.key === null ? layer().heads[state.head].keys[state.row] : state.key;
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

// From "All steps", either direction starts at the first step.
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

// The pictures: A's, and on a page of two sentences B's beside it, drawn alike from their own
// words and weights (B's in the layer and heads chosen for A). ``words``: rows, columns and
// masked cells; ``changed``: which of them the other sentence does not have.
const PICTURE_A = {
  queries: "queries",
  keys: "keys",
  lines: "lines",
  words: DATA,
  tables: () => layer().numbers,
  changed: DATA.compare && DATA.compare.links.changedA,
};
const PICTURE_B = DATA.compare && {
  queries: "queries-b",
  keys: "keys-b",
  lines: "lines-b",
  words: DATA.compare.picture,
  tables: () => DATA.compare.picture.layers[state.layer],
  changed: DATA.compare.links.changedB,
};

function buildWords() {
  DATA.rows.forEach((row, index) => listed("queries", queryWord(row.word, index)));
  DATA.columns.forEach((column) => {
    // The worked examples follow the trace's own positions: a merged word's first piece.
    const key = keyWord("button", column.word);
    key.addEventListener("click", () => {
      state.key = column.positions[0];
      render();
    });
    listed("keys", key);
  });
  if (PICTURE_B) {
    // B's word on the left chooses the word of A it stands for (its partner, or the word changed
    // in its place); its keys are shown, not chosen: the worked steps are A's.
    PICTURE_B.words.rows.forEach((row, index) => {
      listed("queries-b", queryWord(row.word, DATA.compare.links.rowInA[index]));
    });
    PICTURE_B.words.columns.forEach((column) => listed("keys-b", keyWord("span", column.word)));
  }
  for (const picture of [PICTURE_A, PICTURE_B].filter((shown) => shown && shown.changed)) {
    const tint = (list, flags) =>
      byId(list)
        .querySelectorAll(".word")
        .forEach((word, index) => word.classList.toggle("changed", flags[index]));
    tint(picture.queries, picture.changed.rows);
    tint(picture.keys, picture.changed.columns);
  }
}

function listed(list, node) {
  const item = make("li");
  item.append(node);
  byId(list).append(item);
}

// A word on the left that chooses A's row ``row``: hovering or tabbing to it previews the row's
// lines, a click or Enter chooses it; a word of B's that stands for no word of A (row null)
// chooses nothing.
function queryWord(word, row) {
  const button = make("button", "word", word);
  button.type = "button";
  if (row === null) {
    button.disabled = true;
    button.title = TEXT.onlyInB;
    return button;
  }
  button.addEventListener("click", () => {
    state.row = row;
    state.key = null;
    render();
  });
  const preview = (on) => () => {
    state.preview = on ? row : null;
    drawPicture();
  };
  button.addEventListener("mouseenter", preview(true));
  button.addEventListener("mouseleave", preview(false));
  button.addEventListener("focus", preview(true));
  button.addEventListener("blur", preview(false));
  return button;
}

// A key: its word, its weight and its bar, in a ``tag`` (a button; a span when only shown).
function keyWord(tag, word) {
  const key = make(tag, "word key");
  if (tag === "button") key.type = "button";
  key.append(make("span", "label", word), make("span", "weight"), make("span", "bar"));
  return key;
}

// The longest word a row has (in characters): the picture's title keeps the height it takes.
const LONGEST_WORD = DATA.rows
  .map((row) => row.word)
  .reduce((longest, word) => (word.length > longest.length ? word : longest), "");

// A box kept as high as ``text`` makes it, whatever text it shows next: the text is set and
// measured, and its height left as the box's min-height.
function keepHeight(node, text) {
  node.style.minHeight = "";
  node.textContent = text;
  node.style.minHeight = node.offsetHeight + "px";
}

function drawPicture() {
  const row = state.preview === null ? state.row : state.preview;
  const heads = shownHeads();
  const single = heads.length === 1;
  const chosen = single && row === state.row ? DATA.keyColumn[chosenKey()] : null;
  // Every text first, then the lines: a text's width can move the words (B's picture goes
  // under A's when its weights no longer leave room beside it).
  const drawn = [[PICTURE_A, row]];
  markQueries(PICTURE_A, state.row, row);
  weighKeys(PICTURE_A, row, heads, chosen);
  if (PICTURE_B) {
    const inB = DATA.compare.links.rowInB;
    markQueries(PICTURE_B, inB[state.row], inB[row]);
    weighKeys(PICTURE_B, inB[row], heads, null);
    byId("caption-b").textContent =
      inB[row] === null ? fill(TEXT.pictureNotInB, { word: DATA.rows[row].word }) : TEXT.pictureB;
    drawn.push([PICTURE_B, inB[row]]);
  }

  const where = DATA.layers.length > 1 ? layer().name + ", " : "";
  const titled = (word) =>
    fill(TEXT.pictureTitle, { word, where, head: single ? headName(heads[0]) : TEXT.everyHead });
  const title = byId("picture-title");
  keepHeight(title, titled(LONGEST_WORD));
  title.textContent = titled(DATA.rows[row].word);
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
  if (DATA.compare) legend.append(TEXT.legendChanged);
  for (const [picture, shown] of drawn) drawLines(picture, shown, heads);
  hideAnswers(); // tryit.js
}

// A picture's words on the left: ``chosen`` (a row) pressed, ``shown`` (the row drawn, one
// hovered) previewed; either may be null (B has no word there).
function markQueries(picture, chosen, shown) {
  byId(picture.queries)
    .querySelectorAll("button")
    .forEach((button, index) => {
      button.setAttribute("aria-pressed", String(index === chosen));
      button.classList.toggle("previewed", index === shown && index !== chosen);
    });
}

// Whether the pair (row, column) of a picture's words is masked; no row, none.
function isMaskedIn(words, row, column) {
  return row !== null && words.maskedCells !== null && words.maskedCells[row][column];
}

// A picture's keys for its row ``row`` (null: none) in ``heads``: each one's weight and bar
// when one head is shown; the key in column ``chosen`` (or none) framed.
function weighKeys(picture, row, heads, chosen) {
  const weighed = heads.length === 1 && row !== null;
  // A weight Try it asks (tryit.js): its row's weights and bars would show it (they sum to 1).
  const asked = weighed && picture === PICTURE_A && hidesRow(heads[0], row);
  const words = picture.words;
  byId(picture.keys)
    .querySelectorAll(".key")
    .forEach((key, column) => {
      const masked = isMaskedIn(words, row, column);
      const at = weighed ? cellOf(words, heads[0], row, column) : null;
      key.classList.toggle("masked", masked);
      if (key.tagName === "BUTTON") key.setAttribute("aria-pressed", String(column === chosen));
      key.querySelector(".weight").textContent = masked
        ? TEXT.masked
        : weighed
          ? asked
            ? HIDDEN
            : printed(picture.tables().weights, at)
          : "";
      const bar = key.querySelector(".bar");
      bar.hidden = !weighed || masked || asked;
      if (weighed) {
        // A share of the bar's column (--bar in page.css): all of it for a weight of 1.
        bar.style.width = `calc(var(--bar) * ${lineWeight(picture, heads[0], row, column)})`;
        bar.style.backgroundColor = DATA.headColours[DATA.heads[heads[0]]];
      }
      key.title = masked ? TEXT.maskedTitle : "";
    });
}

// A picture's lines for its row ``row`` (null: none) in ``heads``: from the word to every key
// it gives THINNEST or more, as thick and as opaque as the weight.
function drawLines(picture, row, heads) {
  const words = picture.words;
  const keys = byId(picture.keys).querySelectorAll(".key");
  const svg = byId(picture.lines);
  svg.replaceChildren();
  if (row === null) return;
  const box = svg.getBoundingClientRect();
  svg.setAttribute("viewBox", `0 0 ${box.width} ${box.height}`);
  const middle = (node) => {
    const rect = node.getBoundingClientRect();
    return rect.top + rect.height / 2 - box.top;
  };
  const scale = FONT_SIZES[state.font] / 16;
  const from = middle(byId(picture.queries).querySelectorAll("button")[row]);
  // Each head's lines end a little apart, so heads going to the same word stay visible.
  const spread = Math.min(keys[0].getBoundingClientRect().height / (heads.length + 1), 4 * scale);
  heads.forEach((head, rank) => {
    const offset = (rank - (heads.length - 1) / 2) * spread;
    if (picture === PICTURE_A && hidesRow(head, row)) return; // tryit.js: a weight asked
    words.columns.forEach((_, column) => {
      const weight = lineWeight(picture, head, row, column);
      if (weight < THINNEST || isMaskedIn(words, row, column)) return;
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
  renderTryIt(); // tryit.js
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
// The output step's example is the word's in every head; the others are a picked head's. A layer the page
// does not work out, and a key of a long row without a line, say how to get their numbers.
function workedLines(example) {
  const first = ["projection", "dot_product", "scaling", "softmax", "weighted_sum", "output_sum"];
  const carried = example === "output_sum" ? layer().output !== null : query() !== undefined;
  if (!carried) return first.includes(example) ? [make("p", "note", notWorked())] : [];
  const perKey = ["dot_product", "scaling", "softmax"];
  if (perKey.includes(example) && !(chosenKey() in query().keys)) {
    if (example !== "dot_product") return [];
    const word = DATA.queryQuoted[DATA.rows[state.row].position];
    const values = { word, key: DATA.keyQuoted[chosenKey()], thinnest: THINNEST, most: DATA.workedKeys };
    return [make("p", "note", fill(TEXT.keyNotWorked, values))];
  }
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

// Where the worked numbers of a head this page leaves out are.
function notWorked() {
  const head = state.head === ALL_HEADS ? 0 : state.head;
  const number = DATA.heads[head] + 1;
  const many = DATA.layers.length > 1;
  const options = many
    ? fill(TEXT.openLayerHead, { layer: state.layer + 1, head: number })
    : fill(TEXT.openHead, { head: number });
  return fill(TEXT.headNotWorked, {
    where: many ? layer().name + ", " : "",
    head: headName(head),
    worked: DATA.workedHeads,
    total: DATA.layers.length * DATA.heads.length,
    options,
  });
}

// A key's pieces of the scores, scaled and weights steps (page_worked.py, query_data): the decimals of each step and
// the numbers printed at them.
function pair(key) {
  const [dot, score, scale, scoreAt, scaled, softmax, shifted, exp, weight] = query().keys[key];
  return { dot, score, scale, scoreAt, scaled, softmax, shifted, exp, weight };
}

function dotProduct(key) {
  const numbers = pair(key);
  // q's and k's numbers at the decimals at which this pair's written-out sum holds.
  const terms = layer().heads[state.head].dotTerms[numbers.dot];
  const k = terms.k[key];
  const products = terms.q[state.row].map((q, c) => (q === ELLIPSIS ? q : `${q}×${k[c]}`));
  const counted = products.includes(ELLIPSIS) ? fill(TEXT.terms, { count: DATA.sizes.dScore }) : "";
  const name = DATA.queryNames[DATA.rows[state.row].position];
  return `q_${name} · k_${DATA.keyNames[key]}${counted} = ${products.join(" + ")} = ${numbers.score}`;
}

function scalingLine(key) {
  const numbers = pair(key);
  const root = layer().heads[state.head].roots[numbers.scale];
  return `${numbers.scoreAt} / ${root} = ${numbers.scaled}`;
}

function softmaxLine(key) {
  const numbers = pair(key);
  // The row's pieces at the decimals at which this weight's numerator, sum and division hold.
  const parts = query().softmaxAt[numbers.softmax];
  const terms = parts.shifted.map((shifted) => (shifted === null ? ELLIPSIS : `exp(${shifted})`));
  return (
    `exp(${numbers.shifted}) / (${terms.join(" + ")}) = ${numbers.exp} / ` +
    `${parts.total} = ${numbers.weight}`
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
  const numbers = layer().numbers;
  const norms = single ? printedRow(numbers.norms, heads[0], state.row) : [];
  const shares = single ? printedRow(numbers.shares, heads[0], state.row) : [];
  const weights = single ? printedRow(numbers.weights, heads[0], state.row) : [];
  const rolled = rollout ? printedRow(rollout, null, state.row) : [];
  const asked = single && hidesRow(heads[0], state.row); // tryit.js: a weight of the row asked
  const rows = DATA.columns.map((column, index) => {
    const masked = DATA.maskedCells !== null && DATA.maskedCells[state.row][index];
    const all = [
      column.word,
      single ? (masked ? TEXT.masked : asked ? HIDDEN : weights[index]) : "",
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
  hideAnswers(); // tryit.js
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
  renderWhatIf(); // whatif.js
}

unpackAll().then(() => {
  byId("hint").textContent = TEXT.hint;
  document.body.classList.toggle("compared", Boolean(DATA.compare));
  byId("picture-b").hidden = !DATA.compare;
  byId("caption-a").hidden = !DATA.compare;
  byId("caption-a").textContent = DATA.compare ? TEXT.pictureA : "";
  buildControls();
  buildWhatIf(); // whatif.js
  buildTryIt(); // tryit.js
  buildWords();
  resize(0);
  render();
  document.body.dataset.ready = "true"; // for the tests and screenshots: drawn
});
