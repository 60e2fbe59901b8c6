"""The library's commands, one module each: what to compute, which outputs to write (checked
before the work, written all or none), in the library's words (``head=3``).

``explain`` (and its Explanation), ``cross``, ``lesson``, ``heatmap``, ``page``, ``heads``,
``compare``, ``scaling``, ``demo``, ``ablate``, ``divisors`` and ``train``: each module holds
the Python function attnviz exports and ``run``, the one call its command-line command makes
(attnviz.cli parses the options, calls ``run`` and picks the exit code). Nothing is imported
here: ``attnviz explain`` loads only the modules it runs.
"""
