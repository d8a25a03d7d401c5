"""Host ML challenges from a git repository: model, sandbox, evaluation, ranking, pages, cli."""

__version__ = "0.1.0"
