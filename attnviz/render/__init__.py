"""Renderers, a folder per surface; each draws traces, lesson blocks and analyses it is handed,
and none computes attention or imports attnviz.analysis (the API computes the analyses once,
attnviz.analysis.analyses, and hands them to every surface that shows them):

- ``terminal/``: the lesson drawn with Rich (--step, --svg, --html), its tables and text, the
  theme, and the reports of ``heads``, ``compare``, ``scaling``, ``heads --ablate`` and
  ``train --explain-step``;
- ``figures/``: matplotlib pictures: heatmaps, one head, the layers × heads grid, plots, the
  compare figure, what a heatmap measures, and what every figure shares;
- ``page/``: the lesson page (``attnviz page``): its data, numbers, rows, steps, worked
  examples and second sentence, with its script and style;
- ``slides/``: --slides, the lesson's steps as 16:9 pictures;
- ``notebook/``: a trace as HTML for a notebook cell;
- ``live/``: what moves: the progress bar, the live training view, its GIF, the demo;
- ``options.py``: how a picture is asked to render a trace (shared by figures and the CLI).
"""
