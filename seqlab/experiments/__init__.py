"""The experiments the chapters run on the models: they train, measure and plot.

* :mod:`~seqlab.experiments.train`: the one training loop (``fit``), the sequence loss and ``evaluate``;
* :mod:`~seqlab.experiments.memory` (chapter 1), :mod:`~seqlab.experiments.tagging` (2),
  :mod:`~seqlab.experiments.length_sweep` (3, 4, 8), :mod:`~seqlab.experiments.summary` (6),
  :mod:`~seqlab.experiments.applications` (7): each chapter's experiment, on a task of :mod:`seqlab.data`;
* :mod:`~seqlab.experiments.claims`: the checks that guard a chapter's sentences (over seeds, fair in size);
* :mod:`~seqlab.experiments.plot`: attention heatmaps.

Experiments may import the models, the core and the data; nothing in the models imports them.
"""
