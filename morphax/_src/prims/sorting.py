"""Placeholder: primitives of the 'sorting' family are being written."""

__all__: list = []
