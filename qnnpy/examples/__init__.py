"""Small, self-contained example models used by the notebooks, tests and user guide."""
