"""A first try that forgets to write its masks: the evaluation says what is missing."""

from pathlib import Path

print(f"found {len(list(Path('/input').glob('*.npy')))} cases, writing nothing")
