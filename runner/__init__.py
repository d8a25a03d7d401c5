"""Host ML challenges from a git repository: the tree, the sandbox, evaluation, ranking, the site, pull requests.

Stages, lowest first; knowledge flows one way (tests/test_layers.py checks it):

- `errors`: the one error base and retry policy; `codekey`: which code made a cached thing (every cache's key).
- `tree`: the challenge tree's records, schemas, files, history and rules of time and visibility.
- `settings`: the runner's settings, each declared once (option, variable, default, help); read by `cli`
  from its options and environment, and given to the stages below as values.
- `execution`: runs containers (Docker behind a small executor interface); knows nothing of challenges.
- `evaluation`: one submission end to end, and the queue, on top of tree and execution.
- `ranking`: leaderboards and challengeR's methods, from tree records.
- `site` and `pullrequests`: what the public reads (pages) and what goes back to a pull request.
- `cli`: the `challenge` command, one call per workflow step.
"""

__version__ = "0.1.0"
