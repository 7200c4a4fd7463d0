"""Placeholder: primitives of the 'dot' family are being written."""

__all__: list = []
