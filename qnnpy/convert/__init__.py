"""PyTorch op converters: the table in ``ops`` and the walk in ``converter``."""
