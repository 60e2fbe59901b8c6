"""The lesson page (``attnviz page``): one self-contained HTML file (page.py) with its script
and style (page.js, page.css); its data (page_data.py): numbers packed (page_numbers.py), the
rows beside a word (page_rows.py), the steps (page_steps.py), the worked examples
(page_worked.py) and a second sentence (page_compare.py)."""
