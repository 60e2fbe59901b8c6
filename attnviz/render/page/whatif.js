// The lesson page's "What if" mode: the student changes a number of X, W_Q, W_K, W_V or W_O
// and every step computed from them follows at once. attnviz puts X, the weights (and biases)
// and the mask of the layer the page opened on into the page data in full precision (float64
// numbers, attnviz/render/page/page_whatif.py); this script redoes the textbook path on them in
// plain JavaScript, in float64 as numpy does: Q = X·W_Q (+ b_Q), K, V alike, scores = Q·Kᵀ,
// scaled = scores / √d_k, weights = softmax over each row with the row's maximum subtracted
// (masked pairs −∞, so exp gives 0), Z = weights·V, Concat = [Z_1 | … | Z_h], output =
// Concat·W_O (+ b_O). It holds no sentence: every text is attnviz's, in DATA.whatif.text.
// It runs after page.js, in the same script, and uses its helpers (make, byId, fill, layer).
"use strict";

const WHATIF = DATA.whatif;
const WTEXT = WHATIF.text;
const EDITABLE = ["X", "W_Q", "W_K", "W_V", "W_O"];
const COMPUTED = ["Q", "K", "V", "scores", "scaled", "weights", "Z", "concat", "output"];
const CHANGED_BY = 1e-12; // a number "changed" when it moved by more than this
const DRAG_START = 4; // px a pointer moves before a press is a drag, not a click

const whatIf = {
  on: false,
  original: null, // the inputs as attnviz gave them: {X: Float64Array, …}
  inputs: null, // the inputs as the student left them
  baseline: null, // the steps computed here from the original inputs
  computed: null, // the steps computed here from the inputs
  saved: null, // the picture's packed weights before the first change, for the reset
  cells: [], // the shown cells: [td, array name, head or null, flat index, editable]
  editing: null, // the cell being typed into
  drag: null, // a press on a cell: {cell, x, value, moved}
};

// -- the arithmetic ------------------------------------------------------------------------------

// Head ``head``'s projection of X [n, d_model] by w [heads, d_model, d_k] (+ b [heads, d_k]):
// [n, d_k], row after row.
function project(x, w, b, head) {
  const { n, dModel, dK } = WHATIF.sizes;
  const out = new Float64Array(n * dK);
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < dK; c++) {
      let total = 0;
      for (let m = 0; m < dModel; m++) total += x[i * dModel + m] * w[(head * dModel + m) * dK + c];
      out[i * dK + c] = b ? total + b[head * dK + c] : total;
    }
  }
  return out;
}

// Every step from ``inputs`` (X, W_Q, W_K, W_V, W_O: flat Float64Arrays in the trace's shapes):
// per head Q, K, V [n, d_k] (K and V per key/value head), scores, scaled, weights [n, n] and
// Z [n, d_k]; Concat [n, h·d_k] and output [n, d_model].
function whatIfSteps(inputs) {
  const { n, dModel, nHeads, nKvHeads, dK } = WHATIF.sizes;
  const bias = (key) => (WHATIF.biases[key] ? WHATIF.biases[key].values : null); // plain arrays
  const steps = { Q: [], K: [], V: [], scores: [], scaled: [], weights: [], Z: [] };
  for (let g = 0; g < nKvHeads; g++) {
    steps.K.push(project(inputs.X, inputs.W_K, bias("b_K"), g));
    steps.V.push(project(inputs.X, inputs.W_V, bias("b_V"), g));
  }
  const root = Math.sqrt(dK);
  for (let h = 0; h < nHeads; h++) {
    const q = project(inputs.X, inputs.W_Q, bias("b_Q"), h);
    const g = kvHead(h);
    const [k, v] = [steps.K[g], steps.V[g]];
    const scores = new Float64Array(n * n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        let total = 0;
        for (let c = 0; c < dK; c++) total += q[i * dK + c] * k[j * dK + c];
        scores[i * n + j] = total;
      }
    }
    const scaled = scores.map((score) => score / root);
    const weights = softmaxRows(scaled, n);
    const z = new Float64Array(n * dK);
    for (let i = 0; i < n; i++) {
      for (let c = 0; c < dK; c++) {
        let total = 0;
        for (let j = 0; j < n; j++) total += weights[i * n + j] * v[j * dK + c];
        z[i * dK + c] = total;
      }
    }
    steps.Q.push(q);
    steps.scores.push(scores);
    steps.scaled.push(scaled);
    steps.weights.push(weights);
    steps.Z.push(z);
  }
  const width = nHeads * dK;
  const concat = new Float64Array(n * width);
  steps.Z.forEach((z, h) => {
    for (let i = 0; i < n; i++) for (let c = 0; c < dK; c++) concat[i * width + h * dK + c] = z[i * dK + c];
  });
  const output = new Float64Array(n * dModel);
  const bO = bias("b_O");
  for (let i = 0; i < n; i++) {
    for (let m = 0; m < dModel; m++) {
      let total = 0;
      for (let c = 0; c < width; c++) total += concat[i * width + c] * inputs.W_O[c * dModel + m];
      output[i * dModel + m] = bO ? total + bO[m] : total;
    }
  }
  return { ...steps, concat, output };
}

// The key/value head query head ``head`` reads: head // (h / G) (grouped-query attention).
function kvHead(head) {
  return Math.floor(head / (WHATIF.sizes.nHeads / WHATIF.sizes.nKvHeads));
}

// softmax along each row of scaled [n, n]: w_ij = exp(s_ij − max_j' s_ij') / Σ_j exp(…), a
// masked pair's score −∞ first (exp(−∞) = 0).
function softmaxRows(scaled, n) {
  const weights = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    const row = [];
    for (let j = 0; j < n; j++) row.push(WHATIF.mask && !WHATIF.mask[i][j] ? -Infinity : scaled[i * n + j]);
    const most = Math.max(...row);
    const exponentials = row.map((s) => Math.exp(s - most));
    const total = exponentials.reduce((sum, e) => sum + e, 0);
    exponentials.forEach((e, j) => (weights[i * n + j] = e / total));
  }
  return weights;
}

// -- the numbers as attnviz prints them ---------------------------------------------------------

// ``value`` at ``decimals`` as attnviz's format_number writes it: fixed point, an exact tie to
// even (Python's rounding of the number's exact binary value), no negative zero, scientific from
// a million up.
function formatNumber(value, decimals) {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 1e6) {
    const [mantissa, exponent] = value.toExponential(decimals).split("e");
    const sign = exponent.startsWith("-") ? "-" : "+";
    return `${mantissa}e${sign}${exponent.replace(/^[+-]/, "").padStart(2, "0")}`;
  }
  const size = Math.abs(value);
  let text = size.toFixed(decimals); // the nearest; of two, the larger
  // toFixed(100) is the exact binary value's decimals (for any double that can tie here).
  const exact = size.toFixed(100);
  const point = exact.indexOf(".");
  const rest = exact.slice(point + 1 + decimals);
  if (/^50*$/.test(rest)) {
    const down = decimals === 0 ? exact.slice(0, point) : exact.slice(0, point + 1 + decimals);
    if (Number(down[down.length - 1]) % 2 === 0) text = down;
  }
  return value < 0 && Number(text) !== 0 ? "-" + text : text;
}

// -- the mode's section --------------------------------------------------------------------------

function buildWhatIf() {
  const toggle = byId("whatif-mode");
  toggle.textContent = WTEXT.whatIf;
  if (!WHATIF.available) {
    toggle.title = WHATIF.reason;
    toggle.classList.add("unavailable");
  }
  toggle.addEventListener("click", () => {
    whatIf.on = !whatIf.on;
    toggle.setAttribute("aria-pressed", String(whatIf.on));
    byId("whatif").hidden = !whatIf.on;
    // Out of the mode the picture shows the layer as given; back in it, the changed numbers.
    if (!WHATIF.available) return;
    if (whatIf.on && whatIf.computed !== whatIf.baseline) showWeights(whatIf.computed.weights);
    if (!whatIf.on) restorePicture();
    renderWhatIf();
  });
  byId("whatif-title").textContent = WTEXT.whatIfTitle;
  byId("whatif-reset").textContent = WTEXT.reset;
  byId("whatif-reset").addEventListener("click", resetWhatIf);
  if (!WHATIF.available) {
    byId("whatif-intro").textContent = WHATIF.reason;
    byId("whatif-reset").hidden = true;
    return;
  }
  byId("whatif-intro").textContent = WTEXT.intro + " " + WTEXT.highlight;
  byId("whatif-kept").textContent = WTEXT.notRecomputed;
  byId("whatif-precision").textContent = WTEXT.precision || "";
  whatIf.original = {};
  for (const key of EDITABLE) whatIf.original[key] = Float64Array.from(WHATIF.inputs[key].values);
  whatIf.inputs = Object.fromEntries(EDITABLE.map((key) => [key, whatIf.original[key].slice()]));
  whatIf.baseline = whatIfSteps(whatIf.original);
  whatIf.computed = whatIf.baseline;
  document.addEventListener("pointermove", dragMove);
  document.addEventListener("pointerup", dragEnd);
}

// The tables of the head chosen, every number computed here, the inputs editable.
function renderWhatIf() {
  if (!whatIf.on || !WHATIF.available) return;
  const tables = byId("whatif-tables");
  tables.replaceChildren();
  whatIf.cells = [];
  whatIf.editing = null;
  if (state.layer !== WHATIF.layer) {
    tables.append(make("p", "note", fill(WTEXT.otherLayer, { layer: DATA.layers[WHATIF.layer].name })));
    return;
  }
  const { dModel, nHeads, dK } = WHATIF.sizes;
  const words = DATA.rows.map((row) => row.word);
  const keys = DATA.columns.map((column) => column.word);
  const dims = (count) => Array.from({ length: count }, (_, index) => String(index + 1));
  const shown = [["X", null, words, dims(dModel)]];
  if (state.head === ALL_HEADS) {
    tables.append(make("p", "note", WTEXT.chooseHead));
  } else {
    const h = DATA.heads[state.head];
    const g = kvHead(h);
    shown.push(
      ["W_Q", h, dims(dModel), dims(dK)],
      ["W_K", g, dims(dModel), dims(dK)],
      ["W_V", g, dims(dModel), dims(dK)],
      ["Q", h, words, dims(dK)],
      ["K", g, words, dims(dK)],
      ["V", g, words, dims(dK)],
      ["scores", h, words, keys],
      ["scaled", h, words, keys],
      ["weights", h, words, keys],
      ["Z", h, words, dims(dK)],
    );
  }
  shown.push(["concat", null, words, dims(nHeads * dK)], ["W_O", null, dims(nHeads * dK), dims(dModel)]);
  shown.push(["output", null, words, dims(dModel)]);
  for (const [name, head, rows, columns] of shown) tables.append(...whatIfTable(name, head, rows, columns));
  refreshWhatIf();
}

// One array's table: its title, its rows and columns labelled, a cell per number; an input's
// cells can be changed (clicked and typed, or dragged).
function whatIfTable(name, head, rows, columns) {
  const node = make("table", "numbers whatif-table");
  node.dataset.array = name;
  const header = make("tr");
  header.append(make("th"), ...columns.map((label) => make("th", "", label)));
  node.append(header);
  const editable = EDITABLE.includes(name);
  rows.forEach((label, r) => {
    const row = make("tr");
    row.append(make("th", "", label));
    columns.forEach((_, c) => {
      const index = (head === null || !editable ? 0 : head * rows.length * columns.length) + r * columns.length + c;
      const cell = make("td", editable ? "editable" : "");
      cell.dataset.array = name;
      cell.dataset.index = String(index);
      if (name === "weights" && WHATIF.mask && !WHATIF.mask[r][c]) cell.classList.add("masked");
      if (editable) editableCell(cell, name, index, label, columns[c]);
      whatIf.cells.push([cell, name, editable ? null : head, index, editable]);
      row.append(cell);
    });
    node.append(row);
  });
  const block = make("div", "whatif-block");
  const scroller = make("div", "table-scroll");
  scroller.append(node);
  block.append(make("h3", "", fill(WTEXT[name], headNames(head))), scroller);
  return [block];
}

function headNames(head) {
  // W_K, W_V, K and V are the chosen head's (its key/value head's, shared in grouped-query
  // attention): the chosen head names them.
  const chosen = state.head === ALL_HEADS ? null : state.head;
  const headText = head === null || chosen === null ? "" : headName(chosen);
  return { head: headText, dK: WHATIF.sizes.dK, heads: WHATIF.sizes.nHeads };
}

// The current number of a shown cell.
function cellValue(name, head, index) {
  if (EDITABLE.includes(name)) return whatIf.inputs[name][index];
  const computed = whatIf.computed[name];
  return head === null ? computed[index] : computed[head][index];
}

function baselineValue(name, head, index) {
  if (EDITABLE.includes(name)) return whatIf.original[name][index];
  const computed = whatIf.baseline[name];
  return head === null ? computed[index] : computed[head][index];
}

// Every shown cell's text and highlight from the numbers now; the status and the picture too.
function refreshWhatIf() {
  for (const [cell, name, head, index, editable] of whatIf.cells) {
    if (cell === whatIf.editing) continue;
    const value = cellValue(name, head, index);
    cell.textContent = formatNumber(value, WHATIF.decimals);
    const moved = Math.abs(value - baselineValue(name, head, index)) > CHANGED_BY;
    cell.classList.toggle(editable ? "edited" : "changed", moved);
    if (editable) cell.setAttribute("aria-label", editLabel(cell, value));
  }
  const edited = EDITABLE.reduce((count, key) => count + differing(whatIf.inputs[key], whatIf.original[key]), 0);
  let changed = 0;
  for (const key of COMPUTED) {
    const now = whatIf.computed[key];
    const before = whatIf.baseline[key];
    changed += Array.isArray(now) ? now.reduce((count, a, h) => count + differing(a, before[h]), 0) : differing(now, before);
  }
  byId("whatif-status").textContent = edited ? fill(WTEXT.changedCount, { edited, changed }) : "";
}

function differing(now, before) {
  let count = 0;
  for (let i = 0; i < now.length; i++) if (Math.abs(now[i] - before[i]) > CHANGED_BY) count++;
  return count;
}

function editLabel(cell, value) {
  return fill(WTEXT.editLabel, {
    matrix: cell.dataset.array,
    row: cell.dataset.row,
    column: cell.dataset.column,
    value: formatNumber(value, WHATIF.decimals),
  });
}

// -- changing a number ---------------------------------------------------------------------------

function editableCell(cell, name, index, row, column) {
  cell.tabIndex = 0;
  cell.dataset.row = row;
  cell.dataset.column = column;
  cell.addEventListener("pointerdown", (event) => {
    if (cell === whatIf.editing || event.button !== 0) return;
    event.preventDefault();
    whatIf.drag = { cell, name, index, x: event.clientX, value: whatIf.inputs[name][index], moved: false };
  });
  cell.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && cell !== whatIf.editing) {
      event.preventDefault();
      openEditor(cell, name, index);
    }
  });
}

// A drag left or right changes the number smoothly: one shown digit's unit (10^−decimals) per
// pixel.
function dragMove(event) {
  const drag = whatIf.drag;
  if (!drag) return;
  const dx = event.clientX - drag.x;
  if (!drag.moved && Math.abs(dx) < DRAG_START) return;
  drag.moved = true;
  const limit = WHATIF.largest;
  setInput(drag.name, drag.index, Math.min(limit, Math.max(-limit, drag.value + dx * 10 ** -WHATIF.decimals)));
}

function dragEnd() {
  const drag = whatIf.drag;
  whatIf.drag = null;
  if (drag && !drag.moved) openEditor(drag.cell, drag.name, drag.index);
}

// The cell becomes a text field holding the number in full; Enter (or leaving it) keeps what was
// typed when it is a number within the bounds, Escape keeps the number as it was.
function openEditor(cell, name, index) {
  const input = make("input", "whatif-input");
  input.type = "text";
  input.inputMode = "decimal";
  input.value = String(whatIf.inputs[name][index]);
  input.setAttribute("aria-label", cell.getAttribute("aria-label") || "");
  whatIf.editing = cell;
  cell.replaceChildren(input);
  input.focus();
  input.select();
  const close = () => {
    whatIf.editing = null;
    refreshWhatIf();
    cell.focus();
  };
  input.addEventListener("keydown", (event) => {
    // The field's keys are its own: not the cell's Enter, nor the page's arrows for the steps.
    event.stopPropagation();
    if (event.key === "Escape") {
      event.preventDefault();
      close();
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (commit(input, name, index)) close();
    }
  });
  input.addEventListener("blur", () => {
    if (whatIf.editing === cell && commit(input, name, index)) close();
  });
}

// The typed number, or null (a sentence said) when it is not a number within the bounds.
function commit(input, name, index) {
  const text = input.value.trim().replace(/\u2212/g, "-");
  const number = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : NaN;
  let problem = "";
  if (!Number.isFinite(number)) problem = WTEXT.notANumber;
  else if (Math.abs(number) > WHATIF.largest) problem = fill(WTEXT.tooLarge, { largest: WHATIF.largestText });
  input.setAttribute("aria-invalid", String(problem !== ""));
  input.title = problem;
  if (problem) {
    byId("whatif-status").textContent = problem;
    return false;
  }
  setInput(name, index, number);
  return true;
}

// One input changed: every step computed again, the tables, the status and the picture redrawn.
function setInput(name, index, value) {
  whatIf.inputs[name][index] = value;
  whatIf.computed = whatIfSteps(whatIf.inputs);
  refreshWhatIf();
  showWeights(whatIf.computed.weights);
}

function resetWhatIf() {
  for (const key of EDITABLE) whatIf.inputs[key].set(whatIf.original[key]);
  whatIf.computed = whatIf.baseline;
  refreshWhatIf();
  restorePicture();
}

// The picture's and the row's weights as given.
function restorePicture() {
  if (!whatIf.saved) return;
  const numbers = DATA.layers[WHATIF.layer].numbers;
  for (const [key, saved] of Object.entries(whatIf.saved)) Object.assign(numbers[key], saved);
  whatIf.saved = null;
  drawPicture();
  renderRow();
}

// The picture's lines and bars and the row's weights, from ``weights`` [h][n·n]: the layer's
// packed tables rewritten as the integers of the weights' printed text (page_numbers.py), the
// tables as given kept for the reset.
function showWeights(weights) {
  const numbers = DATA.layers[WHATIF.layer].numbers;
  const tables = ["weights", "lines"].filter((key) => numbers[key]);
  if (!whatIf.saved) {
    whatIf.saved = Object.fromEntries(tables.map((key) => [key, { values: numbers[key].values, texts: numbers[key].texts }]));
  }
  const { n } = WHATIF.sizes;
  for (const key of tables) {
    const table = numbers[key];
    const values = new Float64Array(table.values.length);
    DATA.heads.forEach((head, shown) => {
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          values[cell(shown, i, j)] = Number(formatNumber(weights[head][i * n + j], table.decimals).replace(".", ""));
        }
      }
    });
    Object.assign(table, { values, texts: {} });
  }
  if (state.layer === WHATIF.layer) {
    drawPicture();
    renderRow();
  }
}

// For the tests: every input and every step as the page holds them, in full (JSON's numbers are
// the shortest text that reads back as the same double).
function whatIfNumbers() {
  const plain = (array) => (Array.isArray(array) ? array.map(plain) : Array.from(array));
  const inputs = Object.fromEntries(EDITABLE.map((key) => [key, plain(whatIf.inputs[key])]));
  const computed = Object.fromEntries(COMPUTED.map((key) => [key, plain(whatIf.computed[key])]));
  return JSON.stringify({ inputs, computed });
}
