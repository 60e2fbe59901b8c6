"""Renderers: each takes an AttentionTrace and draws it; none computes attention."""
