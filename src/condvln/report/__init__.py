"""Reports people look at: per-episode trajectory maps and one self-contained HTML file.

:mod:`.viz` draws an episode's map (``condvln viz``), :mod:`.results` finds the evaluated runs
of a results folder, :mod:`.plots` draws the charts and :mod:`.html` writes the page
(``condvln report``; templates in ``templates/``). The report reads results folders only.
"""
