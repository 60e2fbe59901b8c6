"""Analyses over traces: which heads send a word's attention where, and the √d_k experiment."""
