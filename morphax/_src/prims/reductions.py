"""Placeholder: primitives of the 'reductions' family are being written."""

__all__: list = []
