"""Exercises: one number of the lesson asked of the student, checked, and a wrong answer
diagnosed. Questions are pure data built from one trace (questions.py holds the model; one
builder per kind; mistakes.py computes what each common mistake gives; sets.py chooses cells)."""
