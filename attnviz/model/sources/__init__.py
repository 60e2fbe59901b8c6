"""Where a model's weights come from: a Hugging Face folder, a GGUF file, an Ollama store, or a
folder of attnviz's own toy models. Each is a ``Source`` (source.py); this package's own
import is light, for ``shipped.py`` is read by a lesson with random weights."""
