"""Importing ``layers`` and ``zoo`` is cheap: names load from their modules on first use."""

import subprocess
import sys

import pytest


def imported_after(code):
    """Runs ``code`` in a fresh interpreter; returns the top-level modules it loaded."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(done.stdout.split())


def test_errors_and_data_load_without_tensorflow():
    loaded = imported_after(
        "import layers, zoo, layers.errors, zoo.data, zoo.training.files"
    )
    assert "tensorflow" not in loaded and "keras" not in loaded


def test_a_name_loads_its_module_on_first_use():
    loaded = imported_after("from layers import ZooError\nfrom zoo import HParams")
    assert {"layers.errors", "zoo.training.hparams", "tensorflow"} <= loaded
    assert "zoo.models" not in loaded  # HParams needs no model


def test_an_unknown_name_is_an_attribute_error():
    import layers

    with pytest.raises(AttributeError, match="module 'layers' has no attribute 'Nope'"):
        layers.Nope  # noqa: B018
    assert "Encoder" in dir(layers)


def test_every_public_name_is_exported_from_the_top_level_package():
    import zoo

    missing = [name for name in zoo.__all__ if getattr(zoo, name, None) is None]
    assert not missing
    from zoo import ZooLayer, restore_scope, share  # whatever room they live in

    assert ZooLayer.__module__ == "zoo.sharing.keras"
    assert share.__module__ == "zoo.sharing.share"
    assert restore_scope.__module__ == "zoo.sharing.restore"
