"""seqlab: the small library behind the course "From RNNs to attention".

Conventions everywhere: ``batch_first=True``; B batch, S source length, T target length, H hidden,
V vocabulary; ``pad_id = 0``; masks are bool with True at real tokens. ``hidden_size`` is a recurrent
state's size, torch.nn's meaning (one direction of a layer or encoder); a model that decodes takes its
decoder's, and gives a bidirectional encoder half of it per direction (``seqlab.models.rnn`` writes the
rule down).

Five parts, each in its own folder (the README's tables list every module):

* ``seqlab.models``: the models that learners read, with their decoding, in the order the chapters
  teach them;
* ``seqlab.experiments``: what the chapters run on the models: the training loop, each chapter's
  experiment, the checks that guard a chapter's claims, the plots;
* ``seqlab.core``: the conventions and helpers every part shares: ``padding`` (special ids and masks),
  ``checks`` (input errors), ``device`` (device, mode and seeds);
* ``seqlab.data``: the data they train on (vocabularies, batching, one module per generated task);
* ``seqlab.grading``: the course's grading machinery, which no learner needs to open.
"""

from seqlab.core.device import pick_device, seed_everything

__version__ = "0.2.0"  # the one place the version is written (pyproject.toml reads it)
__all__ = ["pick_device", "seed_everything"]
