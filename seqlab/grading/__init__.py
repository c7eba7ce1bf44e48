"""The course's grading machinery: nothing here is needed to learn from the book.

* :mod:`seqlab.grading.assertions` and :mod:`seqlab.grading.references`: what the exercises' test
  cells use (``check_tensor``, ``disabled`` and the lists of references each exercise switches off);
  both names are importable from ``seqlab.grading`` itself, as the exercises do;
* :mod:`seqlab.grading.autograde` and :mod:`seqlab.grading.cli`: ``seqlab grade PATH``, which grades
  one notebook in a throwaway nbgrader course;
* :mod:`seqlab.grading.nbgrader_plugins`: the executor that ``nbgrader_config.py`` gives nbgrader, so
  that grading survives a cell that kills the kernel.
"""

from seqlab.grading.assertions import check_tensor, split_directions
from seqlab.grading.references import (
    ATTENTION_OPTIONAL_REFERENCES,
    ATTENTION_REFERENCES,
    BIDIRECTIONAL_OPTIONAL_REFERENCES,
    BIDIRECTIONAL_REFERENCES,
    DECODER_REFERENCES,
    GRU_OPTIONAL_REFERENCES,
    GRU_REFERENCES,
    LOSS_OPTIONAL_REFERENCES,
    LOSS_REFERENCES,
    LSTM_OPTIONAL_REFERENCES,
    LSTM_REFERENCES,
    POINTER_REFERENCES,
    POOLING_OPTIONAL_REFERENCES,
    POOLING_REFERENCES,
    SCORER_REFERENCES,
    TRANSFORMER_OPTIONAL_REFERENCES,
    TRANSFORMER_REFERENCES,
    DisabledError,
    disabled,
)

__all__ = [
    "ATTENTION_OPTIONAL_REFERENCES",
    "ATTENTION_REFERENCES",
    "BIDIRECTIONAL_OPTIONAL_REFERENCES",
    "BIDIRECTIONAL_REFERENCES",
    "DECODER_REFERENCES",
    "GRU_OPTIONAL_REFERENCES",
    "GRU_REFERENCES",
    "LOSS_OPTIONAL_REFERENCES",
    "LOSS_REFERENCES",
    "LSTM_OPTIONAL_REFERENCES",
    "LSTM_REFERENCES",
    "POINTER_REFERENCES",
    "POOLING_OPTIONAL_REFERENCES",
    "POOLING_REFERENCES",
    "SCORER_REFERENCES",
    "TRANSFORMER_OPTIONAL_REFERENCES",
    "TRANSFORMER_REFERENCES",
    "DisabledError",
    "check_tensor",
    "disabled",
    "split_directions",
]
