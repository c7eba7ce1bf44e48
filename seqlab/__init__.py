"""seqlab: the small library behind the course "From RNNs to attention".

Conventions everywhere: ``batch_first=True``; B batch, S source length, T target length, H hidden,
V vocabulary; ``pad_id = 0``; masks are bool with True at real tokens.

Modules, in the order the chapters teach them (the README's table says more):

* chapter 1: ``seqlab.rnn`` (cells and layers from scratch), ``seqlab.memory`` (the long-lag task);
* chapter 2: ``seqlab.data`` (vocabularies, batches, generated tasks), ``seqlab.encoder``, ``seqlab.tagging``;
* chapter 3: ``seqlab.seq2seq``, ``seqlab.decoding`` (greedy, beam), ``seqlab.train``, ``seqlab.length_sweep``;
* chapters 4 and 5: ``seqlab.attention`` (scorers, masked softmax), ``seqlab.attention_seq2seq``, ``seqlab.plot``;
* chapter 6: ``seqlab.pointer`` (pointer-generator, coverage), ``seqlab.summary`` (ROUGE and friends);
* everywhere: ``seqlab.device`` (CUDA when present, seeds), ``seqlab.checks`` (shape errors);
* exercises: ``seqlab.grading`` (helpers for hidden tests), ``seqlab.autograde`` and ``seqlab.cli``
  (``seqlab grade PATH``), ``seqlab.nbgrader_plugins`` (grading that survives a dead kernel).
"""

from seqlab.device import pick_device, seed_everything

__version__ = "0.1.0"
__all__ = ["pick_device", "seed_everything"]
