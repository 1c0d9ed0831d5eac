"""TF 1.15's ``tf.contrib.training.HParams``: named hyperparameters, typed by their
first value, overridden from a ``"name=value,..."`` string, a dict or JSON.

The rules are TF 1.15's: an int hparam takes no float, a float takes an int, a
bool takes ``true``/``false``/``True``/``False`` or an integer (0 is False), a
str takes no number; a list hparam takes only lists (``x=[1,2]``) and a scalar
one none. Every error is a :class:`~layers.errors.ZooError` (a ``ValueError``,
as TF 1.15's were) whose message holds TF 1.15's words (``Could not parse
hparam 'n' of type 'int' with value 'x'``). Not TensorFlow's graph inputs: for
hyperparameters changed without rebuilding, see :class:`zoo.training.HParams`.

Usage::

    hparams = HParams(n_layer=12, learning_rate=0.1, activations=["relu"])
    hparams.parse("n_layer=6,activations=[tanh,relu]")
    hparams.override_from_dict({"learning_rate": 1})  # 1.0
"""

import json
import numbers
import re

from layers.errors import ZooError

__all__ = ["HParams", "parse_values"]

_PARAM = re.compile(
    r"(?P<name>[a-zA-Z][\w.]*)\s*=\s*((?P<val>[^,\[]*)|\[(?P<vals>[^\]]*)\])($|,\s*)"
)


def _parse_value(name, value_type, text, values):
    """``text`` as ``value_type`` (bool: true/false or an integer).

    Raises:
        ZooError: ``text`` is not of that type.
    """
    try:
        if value_type is not bool:
            return value_type(text)
        if text in ("true", "True", "false", "False"):
            return text.startswith(("t", "T"))
        return bool(int(text))
    except (TypeError, ValueError):
        raise ZooError(
            f"HParams.parse: Could not parse hparam '{name}' of type "
            f"'{value_type.__name__}' with value '{text}' in {values}; write "
            f"{name}=<{value_type.__name__}>"
        ) from None


def parse_values(values, type_map, ignore_unknown=False):
    """Parses ``"name=value,name=[v1,v2],..."`` by the types of ``type_map``.

    Args:
        values: the string.
        type_map: ``{name: type}`` (of the list's elements for a list hparam).
        ignore_unknown: skip names not in ``type_map`` instead of raising.

    Returns:
        ``{name: value or list of values}``.

    Raises:
        ZooError: a malformed string, an unknown or repeated name, or a value
            not of its hparam's type.
    """
    parsed, position = {}, 0
    while position < len(values):
        match = _PARAM.match(values, position)
        if not match:
            raise ZooError(
                f"HParams.parse: Malformed hyperparameter value: {values[position:]}; "
                "expected name=value or name=[v1,v2] pairs separated by commas"
            )
        position = match.end()
        name, single, many = match.group("name", "val", "vals")
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ZooError(
                f"HParams.parse: Unknown hyperparameter type for {name}; expected one "
                f"of {sorted(type_map)} (add_hparam adds one)"
            )
        if name in parsed:
            raise ZooError(
                f"HParams.parse: Multiple assignments to variable '{name}' in {values}; "
                "assign it once"
            )
        if many is None:
            parsed[name] = _parse_value(name, type_map[name], single, values)
        else:
            elements = filter(None, re.split("[ ,]", many))
            parsed[name] = [_parse_value(name, type_map[name], e, values) for e in elements]
    return parsed


def _cast(name, param_type, value):
    """``value`` as ``param_type`` where TF 1.15 allowed it (an int for a float).

    Raises:
        ZooError: a number for a str, a str for a number, a bool for a number or
            the reverse, a float for an int.
    """
    if isinstance(value, param_type) or param_type is type(None):
        return value
    refused = (
        (issubclass(param_type, (str, bytes)) and not isinstance(value, (str, bytes)))
        or issubclass(param_type, bool) != isinstance(value, bool)
        or (issubclass(param_type, numbers.Integral)
            and not isinstance(value, numbers.Integral))
        or (issubclass(param_type, numbers.Number)
            and not isinstance(value, numbers.Number))
    )  # fmt: skip
    if refused:
        raise ZooError(
            f"HParams: Could not cast hparam '{name}' of type '{param_type}' from value "
            f"{value!r}; expected a {param_type.__name__}"
        )
    return param_type(value)


class HParams:
    """Hyperparameters as attributes, each typed by its first value.

    Args:
        hparam_def: TF 1.15's ``HParamDef`` protocol buffer: not supported.
        model_structure: kept as given (``get_model_structure``).
        **kwargs: ``name=value`` (int, float, bool, str, or a non-empty list of
            one of them).

    Raises:
        ZooError: a ``hparam_def``, a reserved name, or an empty list.
    """

    _HAS_DYNAMIC_ATTRIBUTES = True  # pytype's word, as TF 1.15 had it

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise ZooError(
                "HParams: expected keyword values, found a hparam_def protocol buffer "
                "(HParamDef is not provided); pass HParams(**values)"
            )
        self._hparam_types = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        """Adds hyperparameter ``name`` with ``value`` (its type from then on).

        Raises:
            ZooError: ``name`` is an attribute already, or ``value`` an empty list.
        """
        if getattr(self, name, None) is not None:
            raise ZooError(
                f"HParams: Hyperparameter name is reserved: {name}; expected a name "
                "that is no attribute of HParams yet (set_hparam changes a value)"
            )
        if isinstance(value, (list, tuple)):
            if not value:
                raise ZooError(
                    f"HParams: Multi-valued hyperparameters cannot be empty: {name}; "
                    "give at least one value (its type types the list)"
                )
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        """Sets an existing hyperparameter, cast to its type as TF 1.15 did.

        Raises:
            KeyError: no such hyperparameter (as TF 1.15).
            ZooError: a list for a scalar, a scalar for a list, or a value of a
                type that does not cast.
        """
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, list) != is_list:
            raise ZooError(
                f"HParams: Must {'' if is_list else 'not '}pass a list for "
                f"{'multi' if is_list else 'single'}-valued parameter: {name}; found "
                f"{value!r}"
            )
        if is_list:
            setattr(self, name, [_cast(name, param_type, v) for v in value])
        else:
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name):
        """Removes hyperparameter ``name``, if there is one."""
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values):
        """Overrides from ``"name=value,name=[v1,v2]"`` (see :func:`parse_values`).

        Returns:
            This object.

        Raises:
            ZooError: a malformed string, an unknown name, or a wrong type.
        """
        type_map = {name: kind for name, (kind, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, type_map))

    def override_from_dict(self, values_dict):
        """Sets each ``name: value`` of ``values_dict`` with :meth:`set_hparam`.

        Returns:
            This object.
        """
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def set_model_structure(self, model_structure):
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def to_json(self, indent=None, separators=None, sort_keys=False):
        """The values as JSON (callables left out, as TF 1.15 did)."""

        def plain(value):
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items() if not callable(v)}
            if isinstance(value, list):
                return [plain(v) for v in value if not callable(v)]
            return value

        return json.dumps(plain(self.values()), indent=indent, separators=separators,
                          sort_keys=sort_keys)  # fmt: skip

    def parse_json(self, values_json):
        """Overrides from a JSON object of ``name: value``.

        Returns:
            This object.
        """
        return self.override_from_dict(json.loads(values_json))

    def values(self):
        """``{name: value}`` of every hyperparameter."""
        return {name: getattr(self, name) for name in self._hparam_types}

    def get(self, key, default=None):
        """The value of ``key``, or ``default`` when there is none.

        Raises:
            ZooError: ``default`` is not of the hyperparameter's type.
        """
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            kind = f"list<{param_type}>" if is_list else str(param_type)
            refusal = (
                f"HParams.get: Hparam '{key}' of type '{kind}' is incompatible with "
                f"default={default}"
            )
            if is_list != isinstance(default, list):
                raise ZooError(f"{refusal}; expected a default of the same kind")
            try:
                for value in default if is_list else [default]:
                    _cast(key, param_type, value)
            except ZooError as err:
                raise ZooError(f"{refusal}. {err}") from None
        return getattr(self, key)

    def __contains__(self, key):
        return key in self._hparam_types

    def __str__(self):
        return ",".join(f"{key}={value}" for key, value in self.values().items())

    def __repr__(self):
        return f"{type(self).__name__}({sorted(self.values().items())})"
