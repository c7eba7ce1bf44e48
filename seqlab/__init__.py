"""seqlab: the small library behind the course "From RNNs to attention".

Conventions everywhere: ``batch_first=True``; B batch, S source length, T target length, H hidden,
V vocabulary; ``pad_id = 0``; masks are bool with True at real tokens.

Modules, in the order the chapters teach them:

* ``seqlab.rnn``: RNN, LSTM and GRU cells and layers from scratch (chapter 1).
* ``seqlab.memory``: the long-lag memory task and the classifier that chapter 1 trains on it.
* ``seqlab.device``: pick CUDA when present; seed everything.
* ``seqlab.checks``: shape checks with clear errors.
* ``seqlab.grading``: helpers for the autograded exercises' tests.
"""

from seqlab.device import pick_device, seed_everything

__version__ = "0.1.0"
__all__ = ["pick_device", "seed_everything"]
