"""``flow.utils``: data loading (``flow.utils.data``)."""

from . import data

__all__ = ["data"]
