"""CondVLN: conditional branching in vision-language navigation.

The pipeline runs one way: scene sources → :class:`~condvln.scene.model.Scene` → scene graph →
conditional programs → episodes → simulator runs → metrics.
"""

__version__ = "0.1.0"

import importlib.util as _importlib_util
import sys as _sys
from importlib.abc import MetaPathFinder as _MetaPathFinder

GYM_ENV_ID = "condvln/CondVLN-v0"
"""The Gymnasium id of :class:`condvln.agents.gym_env.CondVLNEnv`."""


def _register_gym_env() -> None:
    import gymnasium

    if GYM_ENV_ID not in gymnasium.registry:
        gymnasium.register(id=GYM_ENV_ID, entry_point="condvln.agents.gym_env:CondVLNEnv")


class _RegisterWithGymnasium(_MetaPathFinder):
    """Registers the environment right after ``gymnasium`` is imported (never imports it)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name != "gymnasium":
            return None
        _sys.meta_path.remove(self)
        spec = _importlib_util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module: object) -> None:
            exec_module(module)  # type: ignore[arg-type]
            _register_gym_env()

        spec.loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


if "gymnasium" in _sys.modules:
    _register_gym_env()
elif _importlib_util.find_spec("gymnasium") is not None:
    _sys.meta_path.insert(0, _RegisterWithGymnasium())
