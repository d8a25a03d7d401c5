"""Running containers: the executor interface and its Docker implementation, measurement (memory, GPU),
untrusted outputs copied safely, image builds and the base image. The in-process fake executor the fast
tests use lives with them (tests/fake_executor.py), as grand-challenge keeps its fake backend out.

Knows: runner.errors. Must not import: tree (it knows nothing of challenges), evaluation, ranking,
site, pullrequests, cli. The only part of the package that imports `docker`.
"""
