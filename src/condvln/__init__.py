"""CondVLN: conditional branching in vision-language navigation.

The pipeline runs one way: scene sources → :class:`~condvln.scene.model.Scene` → scene graph →
conditional programs → episodes → simulator runs → metrics.
"""

__version__ = "0.1.0"

import sys as _sys

GYM_ENV_ID = "condvln/CondVLN-v0"
"""The Gymnasium id of :class:`condvln.gym.env.CondVLNEnv`."""


def _register_gym_env() -> None:
    import gymnasium
    from gymnasium.envs.registration import WrapperSpec

    if GYM_ENV_ID not in gymnasium.registry:
        # each episode's step budget as a TimeLimit (condvln.gym.wrappers.BudgetTimeLimit)
        budget = WrapperSpec("BudgetTimeLimit", "condvln.gym.wrappers:BudgetTimeLimit", {})
        gymnasium.register(
            id=GYM_ENV_ID,
            entry_point="condvln.gym.env:CondVLNEnv",
            additional_wrappers=(budget,),
        )


class _RegisterWithGymnasium:
    """Registers the environment right after ``gymnasium`` is imported (never imports it).

    A meta path finder with no imports of its own: ``condvln-gymnasium.pth`` (see setup.py)
    imports this package at every interpreter start, so that ``gymnasium.make`` finds the
    environment without ``import condvln``.
    """

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if name != "gymnasium":
            return None
        _sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec(name)
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
elif not any(type(f).__name__ == "_RegisterWithGymnasium" for f in _sys.meta_path):
    _sys.meta_path.insert(0, _RegisterWithGymnasium())
