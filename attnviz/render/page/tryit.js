// The lesson page's "Try it" mode: in each step one number of the chosen head is hidden and
// asked. attnviz builds each question in Python (attnviz.exercise, as `attnviz exercise` asks it)
// and puts into the page data its text, the numbers shown, the answer, the tolerance, the
// mistakes' and slips' numbers and every sentence of its verdicts (page_tryit.py). This script
// only compares numbers, by the rule of Question.check: right within the tolerance; else the
// mistakes that fit best; else the first slip that gives the number. It holds no sentence.
// It runs after page.js and whatif.js, in the same script, and uses their helpers.
"use strict";

const TRYIT = DATA.tryit;
const TRYTEXT = TRYIT.text;
const SLACK = 1e-9; // as Question.within: a distance over the tolerance by float noise still fits

const tryIt = {
  on: false,
  answers: {}, // the verdict shown for each question (by its index), kept across redraws
};

function buildTryIt() {
  const toggle = byId("tryit-mode");
  toggle.textContent = TRYTEXT.tryIt;
  if (!TRYIT.available) {
    toggle.title = TRYIT.reason;
    toggle.classList.add("unavailable");
  }
  toggle.addEventListener("click", () => {
    tryIt.on = !tryIt.on;
    toggle.setAttribute("aria-pressed", String(tryIt.on));
    if (tryIt.on && whatIf.on) byId("whatif-mode").click(); // one mode at a time
    render(); // the picture and the row too: they hide the numbers asked
  });
  byId("whatif-mode").addEventListener("click", () => {
    if (whatIf.on && tryIt.on) toggle.click();
  });
}

// Within the question's tolerance of ``target`` (Question.within).
function within(question, value, target) {
  return Math.abs(value - target) <= question.tolerance * (1 + SLACK) + SLACK;
}

// The verdict on ``value``: {right, mistakes (their keys), lines}, as Question.check gives it.
function verdict(question, value) {
  const given = generalNumber(value);
  if (within(question, value, question.answer)) {
    return { right: true, mistakes: [], lines: [question.right, ...question.solution] };
  }
  const lines = [fill(question.wrong, { given })];
  const fitting = question.mistakes.filter(
    (m) => within(question, value, m.value) && !within(question, m.value, question.answer),
  );
  if (fitting.length) {
    // The best fitting reading, the first of equals; every one as close as it within the tolerance.
    const best = fitting.reduce((a, m) => (Math.abs(value - m.value) < Math.abs(value - a.value) ? m : a));
    const named = fitting.filter((m) => within(question, m.value, best.value));
    const name = named.map((m) => m.name).join(TRYTEXT.or);
    const numbers = named.map((m) => m.valueText).join(TRYTEXT.and);
    lines.push(fill(question.mistake, { given, name, numbers }), ...question.solution);
    return { right: false, mistakes: named.map((m) => m.key), lines };
  }
  lines.push(...question.solution);
  let slip = null;
  question.slips.forEach((s, index) => {
    if (within(question, value, s.value) && (slip === null || s.checkpoint < question.slips[slip].checkpoint)) {
      slip = index;
    }
  });
  if (slip === null) {
    lines.push(question.noSlip);
  } else {
    const found = question.slips[slip];
    const checkpoint = question.checkpoints[found.checkpoint];
    lines.push(fill(question.slip, { label: checkpoint.label, right: checkpoint.right, what: found.what }));
  }
  return { right: false, mistakes: [], lines };
}

// ``value`` as Python's f"{value:g}" writes it (Question.check writes a student's number so):
// six significant digits rounded half to even on the exact binary value, trailing zeros left
// out, in fixed point for exponents −4 to 5 and as 1.5e+06 otherwise.
function generalNumber(value) {
  if (Number.isNaN(value)) return "nan";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  const sign = value < 0 || Object.is(value, -0) ? "-" : "";
  if (value === 0) return sign + "0";
  const size = Math.abs(value);
  let [mantissa, exponent] = size.toExponential(5).split("e"); // the nearest; of two, the larger
  const exact = size.toExponential(100); // the exact binary value's digits (any that can tie)
  if (/^50*$/.test(exact.replace(".", "").slice(6).split("e")[0])) {
    const down = exact.slice(0, 7); // d.ddddd
    if (Number(down[down.length - 1]) % 2 === 0) [mantissa, exponent] = [down, exact.split("e")[1]];
  }
  const power = Number(exponent);
  const digits = mantissa.replace(".", "");
  let text;
  if (power >= 0 && power < 6) {
    const fraction = digits.slice(power + 1).replace(/0+$/, "");
    text = digits.slice(0, power + 1) + (fraction ? "." + fraction : "");
  } else if (power < 0 && power >= -4) {
    text = "0." + ("0".repeat(-power - 1) + digits).replace(/0+$/, "");
  } else {
    const shown = mantissa.replace(/\.?0+$/, "");
    text = `${shown}e${power < 0 ? "-" : "+"}${String(Math.abs(power)).padStart(2, "0")}`;
  }
  return sign + text;
}

// The questions of the chosen head in the steps drawn by page.js: called after each redraw.
function renderTryIt() {
  document.body.classList.toggle("trying", tryIt.on);
  if (tryIt.on) askQuestions();
  hideAnswers();
}

function askQuestions() {
  if (TRYIT.available) byId("steps").prepend(make("p", "about tryit-intro", TRYTEXT.intro));
  for (const article of byId("steps").querySelectorAll("article.step")) {
    const index = DATA.steps.findIndex((step) => "step-" + stepLabel(step) === article.id);
    const key = DATA.steps[index].key;
    const box = make("section", "tryit");
    if (!TRYIT.available) {
      if (index === 0) article.append(make("p", "note", TRYIT.reason));
      continue;
    }
    if (state.layer !== TRYIT.layer) {
      if (index === 0) article.append(make("p", "note", fill(TRYTEXT.otherLayer, { layer: DATA.layers[TRYIT.layer].name })));
      continue;
    }
    const asked = TRYIT.questions
      .map((question, number) => [question, number])
      .filter(([question]) => question.step === key && (question.head === null || question.head === state.head));
    if (!asked.length && DATA.steps[index].perHead && state.head === ALL_HEADS && TRYIT.questions.some((q) => q.step === key)) {
      article.append(make("p", "note", TRYTEXT.chooseHead));
    }
    for (const [question, number] of asked) {
      box.append(...questionNodes(question, number));
      article.classList.toggle("asking", !(number in tryIt.answers));
    }
    if (asked.length) article.append(box);
    for (const left of TRYIT.leftOut) {
      if (left.step === key && (left.head === null || left.head === state.head)) {
        article.append(make("p", "note", fill(TRYTEXT.leftOut, left)));
      }
    }
  }
}

// A question: its sentence, the numbers it gives, a field, Check, and its verdict if answered.
function questionNodes(question, number) {
  const nodes = [make("p", "question", question.text)];
  nodes[0].dataset.asks = String(number);
  for (const given of question.givens) {
    const table = make("table", "numbers given");
    const labels = make("tr");
    labels.append(make("th", "", given.name), ...given.labels.map((label) => make("th", "", label)));
    const values = make("tr");
    values.append(make("th"), ...given.values.map((value) => make("td", "", value)));
    table.append(labels, values);
    const scroller = make("div", "table-scroll");
    scroller.append(table);
    scroller.dataset.asks = String(number);
    nodes.push(scroller);
  }
  const form = make("div", "answer");
  const field = make("input", "tryit-input");
  field.type = "text";
  field.inputMode = "decimal";
  field.dataset.question = String(number);
  field.setAttribute("aria-label", TRYTEXT.yourAnswer);
  const check = make("button", "tryit-check", TRYTEXT.check);
  check.type = "button";
  const said = make("div", "verdict");
  said.dataset.question = String(number);
  said.setAttribute("aria-live", "polite");
  const judge = () => {
    const text = field.value.trim().replace(/\u2212/g, "-");
    const value = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : NaN;
    field.setAttribute("aria-invalid", String(!Number.isFinite(value)));
    if (!Number.isFinite(value)) {
      said.replaceChildren(make("p", "note", TRYTEXT.notANumber));
      return;
    }
    tryIt.answers[number] = { value: text, verdict: verdict(question, value) };
    render(); // its number, hidden until now, is shown again everywhere
    byId("steps").querySelector(`.tryit-input[data-question="${number}"]`).focus({ preventScroll: true });
  };
  field.addEventListener("keydown", (event) => {
    event.stopPropagation(); // the field's arrows are its own, not the page's steps
    if (event.key === "Enter") judge();
  });
  check.addEventListener("click", judge);
  const answered = tryIt.answers[number];
  if (answered) {
    field.value = answered.value;
    showVerdict(said, answered.verdict);
  }
  form.append(field, check);
  nodes.push(form, said);
  return nodes;
}

function showVerdict(node, judged) {
  node.replaceChildren(...judged.lines.map((line, index) => make("p", index === 0 ? "said" : "worked", line)));
  node.classList.toggle("right", judged.right);
  node.classList.toggle("wrong", !judged.right);
  node.dataset.right = String(judged.right);
  node.dataset.mistakes = judged.mistakes.join(" ");
  node.dataset.explanation = judged.lines.join("\n");
}

// -- the asked numbers, hidden everywhere else until answered ----------------------------------

const HIDDEN = "?";
const NUMBER = /[-\u2212]?\d+(?:\.\d+)?(?:e[+-]?\d+)?/g; // a number as the page prints it
let hiddenTexts = []; // [text node, its text before its numbers were hidden]

// The questions whose numbers are hidden, [question, its index]: while Try it is on, those of
// the layer asked about not yet answered, of the head shown (all of them when every head is).
function unanswered() {
  if (!tryIt.on || !TRYIT.available || state.layer !== TRYIT.layer) return [];
  return TRYIT.questions
    .map((question, number) => [question, number])
    .filter(([question, number]) => !(number in tryIt.answers))
    .filter(([question]) => question.head === null || state.head === ALL_HEADS || question.head === state.head);
}

// Whether the weights of picture row ``row`` in head ``head`` (an index into DATA.heads) are
// hidden: a weight of the row is asked (its bars and lines would show it, and, as a row sums to
// 1, so would the row's other weights).
function hidesRow(head, row) {
  const position = DATA.rows[row].position;
  return unanswered().some(([q]) => q.step === "weights" && q.head === head && q.where[3] === position);
}

// Whether unanswered question ``q``'s numbers are hidden in what ``asking`` (a question; null:
// the rest of the page) shows: everywhere but in an unanswered question of its step or before,
// which needs its numbers (a later step's question can always be answered first).
function hidesIn(q, asking) {
  if (asking === null || TRYIT.questions.indexOf(asking) in tryIt.answers) return true;
  const rank = (question) => DATA.steps.findIndex((step) => step.key === question.step);
  return rank(q) < rank(asking);
}

// Every number on the page printed as an unanswered question's answer (or its cell's own value)
// at any of the page's decimals, set as HIDDEN; the texts hidden before put back first. A
// question's own sentence and givens hide only the answers asked in earlier steps, so the
// questions can be answered step by step. Called after each drawing of the picture, row or steps.
function hideAnswers() {
  for (const [node, text] of hiddenTexts) if (node.isConnected) node.data = text;
  hiddenTexts = [];
  const questions = unanswered();
  if (!questions.length) return;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent.closest("script, style")) continue;
    const owner = parent.closest("[data-asks]");
    const asking = owner ? TRYIT.questions[Number(owner.dataset.asks)] : null;
    const hides = new Set(questions.filter(([q]) => hidesIn(q, asking)).flatMap(([q]) => q.hides));
    const text = node.data.replace(NUMBER, (number) => (hides.has(number) ? HIDDEN : number));
    if (text !== node.data) {
      hiddenTexts.push([node, node.data]);
      node.data = text;
    }
  }
}
