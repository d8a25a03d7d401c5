"""Submissions by pull request: the rules a submission must pass, GitHub through PyGithub, git as
the workflows use it, and the comments that go back to a pull request.

Knows: runner.errors, tree, ranking. Must not import: execution, evaluation, site, cli.
"""
