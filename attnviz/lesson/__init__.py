"""What the step-by-step lesson says: its sentences, tables and worked examples, as blocks.

    steps.py     the one table of steps (number, key, title, per head, arrays, examples)
    build.py     lesson(trace, selection, options): the header, then each step of the table
    writer.py    what every step writes with (LessonWriter)
    header.py    the opening; notes.py, sentences said in several steps
    <key>.py     each step: tokens, qkv, scores, scaled, weights, z, output, focus
    focus_notes.py  the end of the focus view: own-word rows, rollout, the caution
    blocks.py    the blocks; examples.py, how a worked example reads; options.py, LessonOptions

Every number comes from the trace and the worked examples from attnviz.worked; nothing here
computes attention or draws: the surfaces in attnviz/render/ draw the blocks. Kept light: the
command line's options import attnviz.lesson.options without the writers.
"""
