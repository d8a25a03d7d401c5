"""Leaderboards from results: grand-challenge's ranking, challengeR's methods, bootstrap uncertainty,
and the leaderboard as a table. Pure functions over tree records.

Knows: runner.errors, tree. Must not import: execution, evaluation, site, pullrequests, cli.
"""
