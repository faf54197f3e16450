"""Value classes: instances equal, and hashed, by a key."""


def by_key(cls):
    """Class decorator: instances of ``cls`` (or of its subclasses) are equal
    when their ``_key()`` are, and hash as their key does."""
    def __eq__(self, other):
        return isinstance(other, cls) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    cls.__eq__, cls.__hash__ = __eq__, __hash__
    return cls
