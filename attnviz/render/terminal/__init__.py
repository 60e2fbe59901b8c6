"""The terminal: the lesson drawn with Rich (lesson.py; --svg by terminal_svg.py, in the
colours of theme.py), its matrix tables (tables.py) and text (text.py), and the reports of
``heads`` (heads_report.py), ``compare`` (compare_report.py), ``scaling`` and what every report
shares (reports.py), ``heads --ablate`` (ablation_report.py) and ``train --explain-step``
(training_step.py)."""
