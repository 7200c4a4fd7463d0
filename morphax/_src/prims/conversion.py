"""Placeholder: primitives of the 'conversion' family are being written."""

__all__: list = []
