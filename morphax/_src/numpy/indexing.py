"""Placeholder: NumPy indexing (gather) and `.at[]` updates (scatter) are being written."""

__all__: list = []
