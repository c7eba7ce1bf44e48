"""seqlab: the small library behind the course "From RNNs to attention".

Conventions everywhere: ``batch_first=True``; B batch, S source length, T target length, H hidden,
V vocabulary; ``pad_id = 0``; masks are bool with True at real tokens. In every model, ``hidden_size``
is the size of the decoder state and of each encoder output (a bidirectional encoder gives each
direction half); the recurrent layers (``seqlab.rnn``, ``seqlab.encoder.Encoder``) keep torch.nn's
meaning, the size of one direction.

Three parts, each in its own place (the README's tables say more):

* the models that learners read, with their training and decoding, in this package, in the order the
  chapters teach them: ``rnn`` and ``memory`` (chapter 1); ``encoder`` and ``tagging`` (2); ``decoder``,
  ``seq2seq``, ``decoding``, ``train`` and ``length_sweep`` (3); ``attention``, ``attention_decoder``
  and ``plot`` (4, 5); ``pointer`` and ``summary`` (6); ``multihead`` and ``transformer`` (8); and,
  everywhere, ``padding`` (special ids and masks), ``checks`` (input errors) and ``device`` (device,
  mode and seeds);
* the data they train on: ``seqlab.data`` (vocabularies, batching, one module per generated task);
* the course's grading machinery, which no learner needs to open: ``seqlab.grading``.
"""

from seqlab.device import pick_device, seed_everything

__version__ = "0.2.0"  # the one place the version is written (pyproject.toml reads it)
__all__ = ["pick_device", "seed_everything"]
