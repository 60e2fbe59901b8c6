"""Worksheets drawn from exercise Questions: sheet.py (the sheet as data and the words every
format shares), pdf.py (matplotlib, A4 or Letter), html.py (one offline file, print CSS),
markdown.py, moodle.py (GIFT and Moodle XML quizzes)."""
