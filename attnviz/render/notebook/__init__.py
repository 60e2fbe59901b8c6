"""A trace as HTML for a notebook cell (cell.py): what an Explanation shows as
``_repr_html_``."""
