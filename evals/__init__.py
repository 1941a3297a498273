"""Each paper's evaluation protocol: datasets, judges, metrics, reports.

Holds: what a benchmark or an evaluation needs to reproduce a paper's tables (its judges'
prompts name the table they carry), one subfolder per paper.
Not here: anything the graphs need at run time (evals import graphs, never the reverse).
"""
