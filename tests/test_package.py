"""The attnviz package itself: every public name resolves, lazily, and a public function whose
name a submodule shares (``lesson``) stays the function whatever has been imported."""

from __future__ import annotations

import pkgutil
import sys
from types import FunctionType

import pytest

import attnviz
from attnviz.api.lesson import lesson as the_lesson


def test_every_public_name_resolves() -> None:
    for name in attnviz.__all__:
        assert getattr(attnviz, name) is not None, name
    assert set(attnviz.__all__) <= set(dir(attnviz))


def test_every_public_name_a_submodule_shares_is_kept_by_the_package_class() -> None:
    submodules = {module.name for module in pkgutil.iter_modules(attnviz.__path__)}
    shared = submodules & set(attnviz.__all__)
    assert shared == {"lesson", "exercise"}  # a new one needs its own line in attnviz._Package
    for name in shared:
        assert isinstance(vars(type(attnviz)).get(name), attnviz._SharedName), name


def test_the_import_systems_setting_of_the_subpackage_leaves_the_function() -> None:
    """What importlib does after the first import of attnviz.lesson: setattr on the parent."""
    setattr(attnviz, "lesson", sys.modules["attnviz.lesson"])  # noqa: B010 (as importlib does)
    assert attnviz.lesson is the_lesson
    from attnviz import lesson

    assert lesson is the_lesson and isinstance(lesson, FunctionType)


def test_another_value_set_on_the_shared_name_is_kept_and_undone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stand_in = object()
    monkeypatch.setattr(attnviz, "lesson", stand_in)
    assert attnviz.lesson is stand_in
    monkeypatch.undo()
    assert attnviz.lesson is the_lesson


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        attnviz.no_such_name  # noqa: B018


def test_dir_lists_the_public_names_and_not_the_packages_helpers() -> None:
    import attnviz

    listed = dir(attnviz)
    assert set(attnviz.__all__) <= set(listed)
    assert not {"sys", "ModuleType", "import_module", "TYPE_CHECKING", "annotations"} & set(listed)
