"""Analyses over traces: which heads send a word's attention where (heads), what kind of head
each is (head_types: previous-token, sinks, broad, …, and a focus word's specificity), what each
word contributes to an output beside its weight (contribution), attention rolled out across
layers (rollout), and the √d_k experiment (scaling)."""
