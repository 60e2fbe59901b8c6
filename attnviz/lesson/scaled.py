"""The scaled step, in each head: the scores divided by √d_k, why, and what this head's numbers
show."""

from __future__ import annotations

from attnviz.lesson.blocks import Matrix
from attnviz.lesson.notes import mask_sentence, scale_names, scaling_brief, scaling_sentence
from attnviz.lesson.writer import HeadView, LessonWriter


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    assert head is not None
    root = lesson.number(head.examples.scaling.sqrt_d_k)
    name = scale_names(lesson.trace)[1]
    return f"Scale by {name} = √{lesson.trace.score_width} = {root}"


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, selection, h = lesson.trace, lesson.selection, head.h
    masked = trace.mask is not None and not trace.mask.all()
    table = Matrix(
        selection.pairs(trace.scaled[head.index], masked=trace.masked if masked else None),
        f"scaled{h} = scores{h} / {scale_names(trace)[1]}" + (", masked" if masked else ""),
        lesson.tokens,
        lesson.keys,
        masked=selection.masked_pairs(trace.masked) if masked else None,
    )
    if not lesson.first_head(head):
        lesson.worked_line("scaling", lesson.text.scaling(head.examples.scaling))
        lesson.show(table)
        return
    if lesson.brief:
        lesson.say(scaling_brief(lesson, head.index), " For example:")
    else:
        lesson.say(scaling_sentence(lesson, head.index))
        _, root, vectors, _ = scale_names(trace)
        lesson.say(
            f"The divisor is {root} = √{trace.score_width}, the width of {vectors}"
            + (", as DeepSeek-V2 divides," if trace.d_rope else "")
            + " not the square "
            "root of the number of words: it is the same for every sentence (attnviz scaling "
            "shows what dividing by √n, n the number of words, would do: the same query and "
            "key would weigh differently as words were added, and long sentences would come out "
            "flat). For example:"
        )
    lesson.worked_line("scaling", lesson.text.scaling(head.examples.scaling))
    lesson.rounding_note()
    if masked:
        lesson.note(mask_sentence(trace))
    lesson.show(table)
