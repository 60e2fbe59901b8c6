"""What ``attnviz.explain`` and ``attnviz.cross`` return: the trace of the layer asked for,
every layer of the run, what is shown of it and what the person should be told; in a notebook
it displays its lesson, and ``to_html()`` is its interactive page. The trace itself stays a
plain record (attnviz.trace): the display lives here, not in it."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from attnviz.arguments import given, output_file
from attnviz.errors import AttnvizError
from attnviz.labels import plural
from attnviz.lesson.options import LessonOptions
from attnviz.limits import MAX_NOTEBOOK_PAGE_BYTES
from attnviz.options import ViewOptions
from attnviz.results import Analyses, Analysis
from attnviz.selection import ALL_HEADS, Selection, select
from attnviz.trace import AttentionTrace


@dataclass(frozen=True, eq=False)
class Explanation:
    """A trace as asked for, with what its views start from.

    ``trace`` is the layer shown (a model's ``layer``, the last by default); ``layers`` every
    layer of the run (one for the random layer); ``view`` what was asked to be shown (heads,
    focus word, hidden and merged tokens) and ``selection`` what that is of ``trace``;
    ``notes`` what the command line prints on stderr (the API also warns them).
    """

    trace: AttentionTrace
    layers: tuple[AttentionTrace, ...]
    view: ViewOptions
    selection: Selection
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        shown = self.selection.heads
        heads = (
            plural(len(shown), "head")
            if len(shown) == self.trace.n_heads
            else "head " + ", ".join(str(head + 1) for head in shown)
        )
        focus = self.selection.focus
        following = f", following {focus.label!r}" if focus is not None else ""
        layer = f"layer {self.layers.index(self.trace) + 1} of {len(self.layers)}, " * (
            len(self.layers) > 1
        )
        return (
            f"<Explanation: {self.trace.n_tokens} tokens, {layer}{heads}{following}; "
            f"weights {self.trace.provenance.weights.describe(with_layer=False)}>"
        )

    def lesson_options(self, options: LessonOptions) -> LessonOptions:
        """``options`` as this explanation's lesson takes them: every head in full when the view
        asked for every head (--head all)."""
        if self.view.head == ALL_HEADS and not options.every_head:
            return replace(options, every_head=True)
        return options

    def check_lesson(self, options: LessonOptions) -> None:
        """Refuse a lesson too large to tell (attnviz.limits.check_lesson), counting the heads
        it shows in full and those that give the focus word's rows, before it is written."""
        from attnviz.lesson.options import heads_by_rows, heads_in_full
        from attnviz.limits import check_lesson

        options = self.lesson_options(options)
        shown = self.selection
        in_full = len(heads_in_full(shown.heads, options))
        by_rows = len(heads_by_rows(self.trace.n_heads, shown.heads, options))
        check_lesson(in_full, shown.n_rows, shown.n_columns, by_rows)

    def analyses(self, wanted: Collection[Analysis]) -> Analyses:
        """What the analyses ``wanted`` found of ``layers`` (the focus rows as ``selection``
        shows them), each computed once for this explanation, whichever surfaces show it."""
        from attnviz.analysis.analyses import analyze

        found = analyze(self.layers, wanted, self.selection, self.__dict__.get("_analyses"))
        object.__setattr__(self, "_analyses", found)  # a memo: the fields stay as they were
        return found

    def lesson_analyses(self) -> Analyses | None:
        """What the lesson's focus view shows of the analyses (for_lesson: the contributions
        and head types of ``trace``, the rollout through ``layers``), each computed once for
        this explanation; None when no word is followed, and the lesson needs none."""
        from attnviz.analysis.analyses import for_lesson

        if self.selection.focus is None:
            return None
        known = self.__dict__.get("_analyses")
        found = for_lesson(self.layers, self.trace, self.selection, known)
        object.__setattr__(self, "_analyses", found)
        return found

    @property
    def is_model_run(self) -> bool:
        """Whether ``layers`` are every layer of a model run (the notebook's overview)."""
        return len(self.layers) > 1

    def _repr_html_(self) -> str:
        """The notebook view (Jupyter, VS Code, Colab): the sentence and provenance, the shown
        heads' weights, the focus word's weights and z, the heatmap; see render/notebook/cell.py."""
        from attnviz.analysis.analyses import NOTEBOOK
        from attnviz.render.notebook.cell import trace_html

        found = self.analyses(NOTEBOOK)
        return trace_html(self.trace, self.selection, self.lesson_analyses() or found)

    def to_html(self, *, decimals: int = 2) -> str:
        """The interactive lesson page, as ``attnviz page`` writes it: one self-contained HTML
        document (inline script and style, nothing loaded from a network), showing what
        ``view`` shows and, for a model run, every layer."""
        given(decimals=decimals)
        return self.page_html(LessonOptions(decimals=decimals))

    def page_html(self, options: LessonOptions) -> str:
        """``to_html`` with the decimals already checked (as the command line has them)."""
        from attnviz.analysis.analyses import PAGE
        from attnviz.render.page.page import page_html

        if not self.trace.tokens:
            raise AttnvizError("This trace has no words, so there is no page to draw.")
        return page_html(self.analyses(PAGE), self.trace, self.selection, options.decimals)


class Page:
    """An interactive page (``attnviz page``, ``attnviz generate --page``): ``html`` is the
    document, ``save(path)`` writes it, and in a notebook it displays itself in an isolated
    frame. ``saved_by`` is the command that writes it and ``smaller`` how to make one small
    enough for a notebook cell, as the note on a page too large to embed says them."""

    def __init__(
        self,
        html: str,
        *,
        saved_by: str = "attnviz page … -o lesson.html",
        smaller: str = (
            "keep one head (<code>attnviz.explain(…, head=N)</code>) or use a shorter text"
        ),
    ) -> None:
        self.html = html
        self.saved_by = saved_by
        self.smaller = smaller

    def __repr__(self) -> str:
        return f"<attnviz page: {len(self.html):,} characters of HTML; .save(path) writes it>"

    def _repr_html_(self) -> str:
        """The page in an iframe of its own: its script and style stay inside it (the page's own
        Content-Security-Policy still applies), and it cannot reach the notebook. A page larger,
        framed, than limits.MAX_NOTEBOOK_PAGE_BYTES is not embedded: a note says how large it is
        and how to save it whole."""
        import html as markup

        framed = markup.escape(self.html, quote=True)
        framed_bytes = len(framed.encode("utf-8"))
        if framed_bytes > MAX_NOTEBOOK_PAGE_BYTES:
            return self._too_large_note(framed_bytes)
        return (
            '<iframe sandbox="allow-scripts" style="width:100%;height:760px;border:1px solid #ddd" '
            f'title="attnviz lesson page" srcdoc="{framed}"></iframe>'
        )

    def _too_large_note(self, framed_bytes: int) -> str:
        """What a notebook shows instead of a page too large to embed: one offline paragraph."""
        return (
            '<div class="attnviz-page-note" style="font-family:system-ui,sans-serif;padding:8px '
            '12px;border:1px solid #ddd;border-radius:6px">'
            f"<p>This page takes {framed_bytes / 1e6:.1f} MB in a notebook cell, more "
            f"than the {MAX_NOTEBOOK_PAGE_BYTES / 1e6:.0f} MB attnviz embeds there, so it is not "
            "shown here. Save it whole and open it in a browser (it works offline): "
            f'<code>.save("lesson.html")</code>, or <code>{self.saved_by}</code> on '
            f"the command line. For a page small enough to show here, {self.smaller}.</p></div>"
        )

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (.html), atomically; AttnvizError for a folder, another
        extension or an unwritable place, with nothing written."""
        from attnviz.files import atomic_write, check_output_path

        target = output_file("path", path)
        check_output_path(target, (".html", ".htm"), "The page")
        atomic_write(target, lambda temporary: temporary.write_text(self.html, encoding="utf-8"))
        return target


#: What lesson(), heatmap(), page() and heads() take: what explain() or cross() return, or a
#: bare trace (shown whole: every head, the default focus word).
Shown = Explanation | AttentionTrace


def explanation_of(shown: object, function: str) -> Explanation:
    """What explain() or cross() returned, or a bare trace shown whole."""
    if isinstance(shown, Explanation):
        return shown
    if isinstance(shown, AttentionTrace):
        view = ViewOptions()
        return Explanation(shown, (shown,), view, select(shown, view))
    raise AttnvizError(
        f"{function}() takes a trace, as attnviz.explain(sentence) returns it (or its .trace); "
        f"got {type(shown).__name__}."
    )


def warn(notes: Iterable[str], stacklevel: int = 3) -> None:
    """What the command line prints as notes on stderr, as warnings."""
    for message in notes:
        warnings.warn(message, UserWarning, stacklevel=stacklevel)


def told(explanation: Explanation) -> Explanation:
    """``explanation``, its notes warned to the caller of the public function."""
    warn(explanation.notes, stacklevel=4)
    return explanation
