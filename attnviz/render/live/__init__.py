"""What moves: the progress bar of a long read (progress.py), ``attnviz train`` live
(training_view.py) and as a GIF (animation.py), and ``attnviz demo`` (demo.py)."""
