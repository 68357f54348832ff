"""The pipeline, top to bottom: discover -> extract -> graph -> checks -> postprocess.

`cli.py` calls `analyse` (check) and `build` (graph, why, report); nothing here imports the CLI.
"""
