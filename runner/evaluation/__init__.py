"""One submission end to end (algorithm or predictions, then the evaluation container, then checked
metrics) and the queue that runs each submission exactly once.

Knows: runner.errors, tree, execution. Must not import: ranking, site, pullrequests, cli.
"""
