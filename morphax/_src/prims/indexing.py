"""Placeholder: primitives of the 'indexing' family are being written."""

__all__: list = []
