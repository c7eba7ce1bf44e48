"""The course's grading machinery: nothing here is needed to learn from the book.

* :mod:`seqlab.grading.assertions`: what the exercises' test cells use (``check_tensor``), importable
  from ``seqlab.grading`` itself, as the exercises do;
* :mod:`seqlab.grading.autograde` and :mod:`seqlab.grading.cli`: ``seqlab grade PATH``, which grades
  one notebook in a throwaway nbgrader course;
* :mod:`seqlab.grading.nbgrader_plugins`: the executor that ``nbgrader_config.py`` gives nbgrader, so
  that grading survives a cell that kills the kernel.
"""

from seqlab.grading.assertions import check_tensor

__all__ = ["check_tensor"]
