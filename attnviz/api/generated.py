"""What ``attnviz.generate`` returns: the run (attnviz.generation.result.Generation) with how its
lesson tells it; in a notebook it displays its page, a slider over its steps, and ``to_html()``
is that page, as ``attnviz generate --page`` writes it. The run itself stays a plain record:
the display lives here, not in it."""

from __future__ import annotations

from dataclasses import dataclass

from attnviz.api.explanation import Page
from attnviz.arguments import given
from attnviz.errors import AttnvizError
from attnviz.generation.result import Generation
from attnviz.lesson.generation import Telling
from attnviz.lesson.generation_steps import WrittenSteps, written_steps

#: What the note on a page too large for a notebook cell says to do.
SAVED_BY = "attnviz generate … --page writing.html"
SMALLER = "ask for fewer new tokens (<code>attnviz.generate(…, tokens=N)</code>)"


@dataclass(frozen=True, eq=False)
class GeneratedText(Generation):
    """A generation (every field of Generation) and what its lesson needs to tell it:
    ``telling`` (the model, the layer and head shown, how tokens are chosen) and ``prompt``
    (as typed)."""

    telling: Telling | None = None
    prompt: str = ""

    def __repr__(self) -> str:
        return (
            f"<GeneratedText: {self.model}, {len(self.prompt_ids)} prompt tokens and "
            f"{len(self.tokens)} new: {''.join(self.texts)!r}>"
        )

    def steps(self) -> WrittenSteps:
        """The prefill pass and each new token as the page's slider shows them."""
        if self.telling is None:
            raise AttnvizError(
                "This generation was made without its lesson; make it with attnviz.generate()."
            )
        return written_steps(self.telling, self, self.prompt)

    def to_html(self, *, decimals: int = 3) -> str:
        """The page: one self-contained HTML document (inline script and style, nothing loaded
        from a network) with a slider over the prefill pass and every new token."""
        from attnviz.render.page.generation_page import generation_page_html

        given(decimals=decimals)
        return generation_page_html(self.steps(), decimals)

    def page(self, *, decimals: int = 3) -> Page:
        """The page as an object: ``.save(path)`` writes it, a notebook displays it."""
        return Page(self.to_html(decimals=decimals), saved_by=SAVED_BY, smaller=SMALLER)

    def _repr_html_(self) -> str:
        """The notebook view (Jupyter, VS Code, Colab): the page in a frame of its own."""
        return self.page()._repr_html_()
