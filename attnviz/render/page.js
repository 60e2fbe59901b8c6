// The attnviz lesson page. Every number on it was computed and formatted by attnviz in Python
// and embedded as data (attnviz/render/page.py says at which decimals, and why the arithmetic
// shown holds); this script only chooses which of them to show for the word, key, head, layer
// and step asked for, and draws the lines. Words are always set as text (textContent), never
// parsed as HTML, so markup in a sentence stays text. It loads nothing.
"use strict";

const DATA = JSON.parse(document.getElementById("attnviz-data").textContent);
const ALL_HEADS = -1;
const STEPS = 7;
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

// A paragraph of text runs, each with the lesson's style ("note", "bold", "italic", "dim").
function paragraph(runs, className) {
  const node = make("p", className);
  for (const [text, style] of runs) node.append(style ? make("span", style, text) : text);
  return node;
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
  return "head " + (DATA.heads[index] + 1);
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
  if (DATA.heads.length > 1) heads.append(new Option("All heads", ALL_HEADS));
  DATA.heads.forEach((head, index) => heads.append(new Option("Head " + (head + 1), index)));
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
    button.querySelector(".weight").textContent = masked ? "masked" : weight;
    const bar = button.querySelector(".bar");
    bar.hidden = !single || masked;
    if (single) {
      bar.style.width = 4 * layer().heads[heads[0]].lines[row][column] + "em";
      bar.style.backgroundColor = DATA.headColours[DATA.heads[heads[0]]];
    }
    button.title = masked ? "masked: −∞ before the softmax, so its weight is 0" : "";
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
  byId("picture-title").textContent = single
    ? `Where does “${word}” look? (${where}${headName(heads[0])})`
    : `Where does “${word}” look? (${where}every head)`;
  const legend = byId("legend");
  legend.replaceChildren();
  if (single) {
    legend.append(
      "Line thickness and opacity, and the bar: the attention weight. The row sums to 1" +
        (DATA.hidden ? ` with ${DATA.hidden}, left out here.` : "."),
    );
  } else {
    for (const head of heads) {
      const swatch = make("span", "swatch");
      swatch.style.backgroundColor = DATA.headColours[DATA.heads[head]];
      const item = make("span", "legend-item");
      item.append(swatch, headName(head));
      legend.append(item, " ");
    }
    legend.append("· thickness and opacity: the weight.");
  }
  legend.append(` Weights under ${THINNEST} draw no line.`);
  if (DATA.maskedCells !== null) legend.append(" Hatched: masked (weight 0).");
}

// -- the steps -----------------------------------------------------------------------------------

function prose(text) {
  return make("p", "", text);
}

function renderSteps() {
  const steps = byId("steps");
  steps.replaceChildren();
  steps.classList.toggle("one-step", state.step !== 0);
  const row = DATA.rows[state.row];
  const name = DATA.queryNames[row.position]; // the worked examples' name: a merged word's piece
  const contents = [
    ["Tokens and embeddings X", ...tokens(row, name)],
    ...HEAD_STEPS.map(([title, step]) => [
      title,
      ...(state.head === ALL_HEADS ? [make("p", "note", CHOOSE_A_HEAD)] : step(name)),
    ]),
    ["Concatenate the heads and project with W_O", ...output(name)],
  ];
  contents.forEach(([title, ...nodes], index) => {
    const article = make("article", "step");
    article.id = "step-" + (index + 1);
    article.hidden = state.step !== 0 && state.step !== index + 1;
    article.append(make("h2", "", `Step ${index + 1} · ${title}`), ...nodes);
    steps.append(article);
  });
  byId("step-label").textContent =
    state.step === 0 ? "All steps" : `Step ${state.step} of ${STEPS}`;
  byId("previous").disabled = state.step <= 1;
  byId("next").disabled = state.step === STEPS;
  byId("all-steps").disabled = state.step === 0;
}

// Each step's nodes; the numbers in the worked lines are the data's, as formatted there.

function tokens(row, name) {
  const sizes = DATA.sizes;
  const piece = DATA.merged && name !== row.word ? ` (its first piece, “${name}”)` : "";
  return [
    prose(
      `${layer().input} X has shape [n, d_model] = [${sizes.n}, ${sizes.dModel}]; ` +
        `“${row.word}”${piece} is row ${row.position + 1}. Its row is the same in every ` +
        "head; the heads differ from step 2 on.",
    ),
  ];
}

function queryKeyValue(name) {
  const sizes = DATA.sizes;
  const bias = (matrix) => (DATA.biases ? ` + b_${matrix}` : "");
  return [
    prose(
      `Head ${DATA.heads[state.head] + 1} projects each row of X with its own matrices W_Q, ` +
        `W_K and W_V, each [d_model, d_k] = [${sizes.dModel}, ${sizes.dK}]: ` +
        `q = x·W_Q${bias("Q")}, k = x·W_K${bias("K")}, v = x·W_V${bias("V")}` +
        (DATA.cross ? " (k and v from the source sentence's rows)" : "") +
        `, each of d_k = ${sizes.dK} numbers. A query asks what a word is looking for, a key ` +
        `says what it offers, a value is what it passes on. The first number of q_${name}:`,
    ),
    worked(query().projection),
  ];
}

function rawScore(name) {
  const key = chosenKey();
  const words = query();
  // q's and k's numbers at the decimals at which this pair's written-out sum holds.
  const terms = layer().heads[state.head].dotTerms[words.dot[key]];
  const k = terms.k[key];
  const products = terms.q[state.row].map((q, c) => (q === "…" ? "…" : `${q}×${k[c]}`));
  const counted = products.includes("…") ? ` (${DATA.sizes.dK} terms)` : "";
  return [
    prose(
      `How well the query of “${name}” matches the key of “${DATA.keyNames[key]}”: the sum ` +
        "of their numbers multiplied pairwise. Click a word on the right for another key.",
    ),
    worked(
      `q_${name} · k_${DATA.keyNames[key]}${counted} = ${products.join(" + ")} = ` +
        words.score[key],
    ),
  ];
}

function scaled(name) {
  const key = chosenKey();
  const words = query();
  const root = layer().heads[state.head].roots[words.scale[key]];
  const nodes = [
    prose(
      `Divide by √d_k = √${DATA.sizes.dK} = ${layer().root}. Why: if the components of q ` +
        "and k were independent with mean 0 and variance 1 (the paper's assumption), q·k " +
        "would have variance d_k, pushing the softmax towards one-hot rows with vanishing " +
        "gradients; dividing by √d_k brings that variance back to 1.",
    ),
    worked(`${words.scoreAt[key]} / ${root} = ${words.scaled[key]}`),
  ];
  if (isMasked(key)) {
    nodes.push(
      worked("masked: −∞", "masked"),
      make("p", "note", `This pair is masked, so the softmax sees −∞. ${DATA.maskSentence}`),
    );
  }
  return nodes;
}

function softmax(name) {
  const key = chosenKey();
  const words = query();
  // The row's pieces at the decimals at which this weight's numerator, sum and division hold.
  const parts = words.softmaxAt[words.softmax[key]];
  const terms = DATA.softmaxShown.map((j) => (j === null ? "…" : `exp(${parts.shifted[j]})`));
  return [
    prose(
      `The weight of “${DATA.keyNames[key]}” in the row of “${name}” is exp of its scaled ` +
        "score over the sum of exp of the whole row's, so the row's weights are non-negative " +
        "and sum to 1. Each scaled score has the row's largest subtracted first, which " +
        "changes nothing but keeps exp() from overflowing; a masked score is −∞, and " +
        "exp(−∞) = 0." +
        (DATA.hidden ? ` The sum runs over every token, ${DATA.hidden} included.` : ""),
    ),
    worked(
      `numerator: exp(${parts.shifted[key]}) = ${parts.exps[key]}`,
      isMasked(key) ? "masked" : "",
    ),
    worked(
      `denominator, over all ${DATA.sizes.nKeys} keys: ${terms.join(" + ")} = ${parts.total}`,
    ),
    worked(`weight: ${parts.exps[key]} / ${parts.total} = ${words.weight[key]}`),
  ];
}

function weightedSum(name) {
  return [
    prose(
      `The output of head ${DATA.heads[state.head] + 1} for “${name}” is every word's value ` +
        "vector v weighted by the row of weights, largest first" +
        (DATA.hidden ? ` (${DATA.hidden} included, as computed)` : "") +
        ":",
    ),
    worked(query().sum),
    prose("Its first number, worked out:"),
    worked(query().element),
  ];
}

function output(name) {
  const sizes = DATA.sizes;
  return [
    prose(
      `Concat puts the ${sizes.nHeads} heads' outputs z side by side: [n, h·d_k] = ` +
        `[${sizes.n}, ${sizes.concat}]. W_O [h·d_k, d_model] = ` +
        `[${sizes.concat}, ${sizes.dModel}] mixes them back into d_model = ${sizes.dModel} ` +
        `numbers: output = Concat·W_O${DATA.biases ? " + b_O" : ""}. Its rows for head h, ` +
        "W_O^(h), carry z_h into the output, so each output number is a sum of every head's " +
        `part. The first number of the output of “${name}”:`,
    ),
    worked(layer().output[state.row]),
    prose(
      "This is the attention sublayer's output. A transformer layer then adds it back to its " +
        "input (the residual connection) and applies a feed-forward block, with LayerNorms " +
        "around them.",
    ),
  ];
}

// Steps 2 to 6 happen in each head: with every head's lines shown, they wait for one.
const HEAD_STEPS = [
  ["Query, key and value", queryKeyValue],
  ["Raw score q·k", rawScore],
  ["Scale by √d_k", scaled],
  ["Softmax: the attention weight", softmax],
  ["z, the weighted sum of the values", weightedSum],
];
const CHOOSE_A_HEAD = "This step happens in each head separately: choose a head.";

function isMasked(key) {
  return DATA.maskedKeys !== null && DATA.maskedKeys[state.row][key];
}

// -- everything ----------------------------------------------------------------------------------

function renderAbout() {
  const about = byId("about-text");
  about.replaceChildren(...layer().header.map((runs) => paragraph(runs)));
  byId("weights-note").textContent = layer().weightsNote;
}

function render() {
  byId("layer").value = state.layer;
  byId("head").value = state.head;
  renderAbout();
  drawPicture();
  renderSteps();
}

byId("hint").textContent =
  "Click a word on the left to see where it looks and work out its numbers, a word on the " +
  "right to work out its weight. Keys: Tab, Enter, and ← → for the steps.";
buildControls();
buildWords();
resize(0);
render();
