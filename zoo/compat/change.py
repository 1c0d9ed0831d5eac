"""One change :func:`zoo.compat.install` makes: an attribute of a module or class, or
an entry of a mapping (``sys.modules``), and how to put it back."""

from typing import Any, NamedTuple

ABSENT = object()  # what a target held before install(): nothing


class Change(NamedTuple):
    """``target.key = value`` (an attribute), or ``target[key] = value`` (a dict).

    Attributes:
        name: what the change is called in install()'s list, e.g.
            ``"tensorflow.compat.v1.layers"``.
        target: a module or class, or a dict such as ``sys.modules``.
        key: the attribute or key.
        value: what install() puts there.
        replace: False: only where nothing is there yet.
    """

    name: str
    target: Any
    key: str
    value: Any
    replace: bool = True

    def current(self):
        """What the target holds now, or :data:`ABSENT`."""
        if isinstance(self.target, dict):
            return self.target.get(self.key, ABSENT)
        return getattr(self.target, self.key, ABSENT)

    def put(self, value):
        """Puts ``value`` there; :data:`ABSENT` removes the attribute or key."""
        is_dict = isinstance(self.target, dict)
        if value is ABSENT:
            if is_dict:
                self.target.pop(self.key, None)
            else:
                delattr(self.target, self.key)
        elif is_dict:
            self.target[self.key] = value
        else:
            setattr(self.target, self.key, value)
