"""The boards everyone reads, stored per generation (``models``): ranked task boards with CIs and
significance tiers, the benchmark average board, the skills board, compare, CSV. The top app: it reads the
catalogue (``benchmark``) and the scored entries (``submissions``)."""
