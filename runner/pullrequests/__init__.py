"""Submissions by pull request: the rules a submission must pass, GitHub through PyGithub, git as
the workflows use it, the comments that go back to a pull request, and where each workflow may run
(the public repository's on GitHub-hosted runners, evaluations from a private runner repository).

Knows: runner.errors, tree, ranking. Must not import: execution, evaluation, site, cli.
"""
