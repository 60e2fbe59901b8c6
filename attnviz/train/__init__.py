"""Training a tiny transformer in numpy: the tasks, each step's backward pass, Adam, the loop."""
