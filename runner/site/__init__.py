"""The static site: pages generated from the tree and its results into a staging folder, kept
between runs where their inputs did not change, then built by MkDocs or Zensical, and served.

Knows: runner.errors, codekey, tree, ranking. Must not import: execution, evaluation, pullrequests, cli.
"""
