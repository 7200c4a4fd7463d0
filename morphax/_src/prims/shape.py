"""Placeholder: primitives of the 'shape' family are being written."""

__all__: list = []
