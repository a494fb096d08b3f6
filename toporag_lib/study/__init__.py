"""The study: what the notebooks call (profiles, the papermill runner, presets, reports, plots, the paper's numbers).

It imports the method; the method never imports it.
"""
