"""tf.contrib.training.HParams: TF 1.15's parsing and typing rules and its errors."""

import json

import pytest

from layers.errors import ZooError
from zoo.compat.contrib.training import HParams, parse_values


def gpt_hparams():
    """As GPT-2's default_hparams() makes them."""
    return HParams(n_vocab=0, n_ctx=1024, n_embd=768, n_head=12, n_layer=12)


def test_parse_overrides_by_each_hparams_type():
    hparams = HParams(lr=0.1, layers=2, name="adam", debug=False, sizes=[3, 4])
    assert hparams.parse("lr=1,layers=5, name=sgd,debug=true,sizes=[7 8,9]") is hparams
    assert hparams.values() == {"lr": 1.0, "layers": 5, "name": "sgd", "debug": True,
                                "sizes": [7, 8, 9]}  # fmt: skip
    assert type(hparams.lr) is float
    hparams.parse("debug=0")
    assert hparams.debug is False
    hparams.parse("debug=True")
    assert hparams.debug is True


@pytest.mark.parametrize(
    "values, words",
    [
        ("n_layer=x", "Could not parse hparam 'n_layer' of type 'int' with value 'x' in "
         "n_layer=x"),
        ("n_layer=1.5", "Could not parse hparam 'n_layer' of type 'int' with value '1.5'"),
        ("n_ctx=[1,2]", "Must not pass a list for single-valued parameter: n_ctx"),
        ("depth=3", "Unknown hyperparameter type for depth"),
        ("n_head=2,n_head=3", "Multiple assignments to variable 'n_head'"),
        ("n_head", "Malformed hyperparameter value: n_head"),
    ],
)  # fmt: skip
def test_parse_errors_say_tf_1_15s_words(values, words):
    with pytest.raises(ZooError, match="^HParams") as err:
        gpt_hparams().parse(values)
    assert words in str(err.value)


def test_set_casts_as_tf_1_15_did_and_refuses_what_it_refused():
    hparams = HParams(lr=0.1, steps=10, name="a", on=True, sizes=[1.0])
    hparams.override_from_dict({"lr": 3, "sizes": [2, 5]})
    assert hparams.lr == 3.0 and type(hparams.lr) is float
    assert hparams.sizes == [2.0, 5.0]
    refusals = {"steps": 2.5, "name": 3, "on": 1, "lr": "fast", "sizes": 1.0}
    for name, value in refusals.items():
        with pytest.raises(ZooError, match=f"hparam '{name}'|parameter: {name}"):
            hparams.set_hparam(name, value)
    with pytest.raises(KeyError):
        hparams.set_hparam("missing", 1)


def test_json_round_trip_and_add_del_get():
    hparams = gpt_hparams()
    hparams.add_hparam("activation", "gelu")
    text = hparams.to_json(sort_keys=True)
    assert json.loads(text)["activation"] == "gelu"
    other = gpt_hparams()
    other.add_hparam("activation", "relu")
    assert other.parse_json(text).values() == hparams.values()
    hparams.del_hparam("activation")
    assert "activation" not in hparams and "n_head" in hparams
    assert hparams.get("activation", "x") == "x" and hparams.get("n_head", 1) == 12
    with pytest.raises(ZooError, match="Hparam 'n_head' of type .* incompatible with"):
        hparams.get("n_head", "twelve")
    with pytest.raises(ZooError, match="Hyperparameter name is reserved: values"):
        hparams.add_hparam("values", 1)
    with pytest.raises(ZooError, match="cannot be empty: sizes"):
        hparams.add_hparam("sizes", [])


def test_parse_values_without_an_object():
    assert parse_values("a=1,b=[x,y]", {"a": int, "b": str}) == {"a": 1, "b": ["x", "y"]}
    assert parse_values("a=1,c=2", {"a": int}, ignore_unknown=True) == {"a": 1}
