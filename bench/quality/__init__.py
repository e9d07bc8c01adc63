"""The memory-quality benchmark: datasets replayed through memadmin's real services.

``data`` holds the dataset shape both sources produce, ``locomo`` reads a LoCoMo-format
file, ``synthetic`` generates the support-agent year, ``policies`` says what each
compared policy is, and ``replay`` runs one (dataset, mode, policy, budget) replay.
The scenario (``bench.scenarios.quality``) fans replays out and builds the table.
"""
