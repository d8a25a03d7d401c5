"""The challenge tree: typed records, their schemas, YAML read safely, the store on disk, git history,
the folder layout, and what a phase allows now (its window, what may be shown of a result).

Knows: runner.errors. Must not import: execution, evaluation, ranking, site, pullrequests, cli.
"""
