"""What every other part of seqlab shares, and nothing else: :mod:`~seqlab.core.padding` (the special
token ids and masks), :mod:`~seqlab.core.checks` (the input errors) and :mod:`~seqlab.core.device`
(device, mode and seeds). A core module imports only core modules.
"""
