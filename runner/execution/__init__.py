"""Running containers: the executor interface, its Docker implementation and an in-process fake,
measurement (memory, GPU), untrusted outputs copied safely, image builds and the base image.

Knows: runner.errors. Must not import: tree (it knows nothing of challenges), evaluation, ranking,
site, pullrequests, cli. The only part of the package that imports `docker`.
"""
